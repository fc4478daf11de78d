package server_test

// The SSE relay review: an OpenAI upstream's stream in shapes the SSE spec allows (CRLF, a bare
// CR, mixed line ends; comments, event/id/retry fields, data without a space, multi-line data; a
// data line far longer than any read buffer), written as chunked transfer encoding one piece at a
// time, the upstream going on only once the test saw on the client's side every event the
// pieces so far complete: nothing is held back, lost or duplicated, every event reaches the
// client as one well-formed "data:" line, and the stream ends with data: [DONE] or, when the
// upstream broke it off, with a stream_interrupted error event and no [DONE].

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// gatedPiece is what the upstream writes in one go, and the events the client must then have
// (payloads as relayed) before the upstream writes the next piece.
type gatedPiece struct {
	wire   string
	events []string
}

// How a gated upstream ends its answer once its pieces are out.
const (
	endChunked  = iota // the terminating chunk, then close
	endClose           // close after the last whole chunk, without the terminating chunk
	endCutChunk        // a chunk that announces more bytes than come, then close
	endPlain           // the answer is not chunked: it runs to the close
	endRaw             // chunked, the pieces written as they are: their chunk framing is theirs
)

// gatedUpstream answers one streamed chat request with pieces, each written as one chunk (or as
// is, for endPlain), waiting after each for the test to send on next.
func gatedUpstream(t *testing.T, pieces []gatedPiece, end int) (url string, written <-chan int, next chan<- struct{}) {
	t.Helper()
	wr := make(chan int, len(pieces))
	nx := make(chan struct{})
	url = rawServe(t, func(c net.Conn, _ string, done <-chan struct{}) {
		head := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
		if end == endPlain {
			head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
		}
		if _, err := io.WriteString(c, head); err != nil {
			return
		}
		for i, p := range pieces {
			w := p.wire
			if end != endPlain && end != endRaw {
				w = fmt.Sprintf("%x\r\n%s\r\n", len(w), w)
			}
			if _, err := io.WriteString(c, w); err != nil {
				return
			}
			wr <- i
			select {
			case <-nx:
			case <-done:
				return
			}
		}
		switch end {
		case endChunked:
			_, _ = io.WriteString(c, "0\r\n\r\n")
			<-done // the gateway's to close
		case endRaw:
			<-done
		case endCutChunk:
			_, _ = io.WriteString(c, "40\r\nda")
		}
	})
	return url, wr, nx
}

// clientEvents posts a stream request to g and returns a reader of its events, each checked
// to be one "data: " line and a blank line.
func clientEvents(t *testing.T, g *gateway, body string) (func() (string, error), func()) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(g.ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second)) // a hang fails, nothing is timed
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"+
		"Content-Length: %d\r\n\r\n%s", len(body), body)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	body2 := bufio.NewReaderSize(resp.Body, 64)
	read := func() (string, error) {
		line, err := body2.ReadString('\n')
		if err != nil {
			return line, err
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || strings.ContainsRune(data, '\r') {
			return line, fmt.Errorf("not a data line: %q", line)
		}
		blank, err := body2.ReadString('\n')
		if err != nil || blank != "\n" {
			return line + blank, fmt.Errorf("event not closed by a blank line: %q %v", blank, err)
		}
		return strings.TrimSuffix(data, "\n"), nil
	}
	return read, func() { c.Close() }
}

func relayChunk(content, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"` +
		content + `"},"finish_reason":` + f + `}]}`
}

func TestSSERelayShapes(t *testing.T) {
	a, b, fin := relayChunk("مرحبا", ""), relayChunk("👋🏽 café", ""), relayChunk("!", "stop")
	big := relayChunk(strings.Repeat("x", 1<<20), "")
	errEv := `{"error":{"message":"CUDA out of memory","type":"server_error","code":500}}`
	const interrupted = "error: stream_interrupted"
	type tc struct {
		name   string
		pieces []gatedPiece
		end    int
		last   string // "[DONE]" or interrupted
	}
	cases := []tc{
		{"lf", []gatedPiece{{"data: " + a + "\n\n", []string{a}}, {"data: " + b + "\n\n", []string{b}},
			{"data: " + fin + "\n\n", []string{fin}}, {"data: [DONE]\n\n", nil}}, endChunked, "[DONE]"},
		{"crlf, cut after the blank line's CR", []gatedPiece{{"data: " + a + "\r\n\r", []string{a}}, {"\ndata: " + b + "\r\n\r", []string{b}},
			{"\ndata: " + fin + "\r\n\r\n", []string{fin}}, {"data: [DONE]\r\n\r\n", nil}}, endChunked, "[DONE]"},
		{"cr", []gatedPiece{{"data: " + a + "\r\r", []string{a}}, {"data: " + b + "\r\r", []string{b}},
			{"data: " + fin + "\r\r", []string{fin}}, {"data: [DONE]\r\r", nil}}, endChunked, "[DONE]"},
		{"mixed", []gatedPiece{{"data: " + a + "\r\n\n", []string{a}}, {"data: " + b + "\n\r", []string{b}},
			{"data: " + fin + "\r\r\n", []string{fin}}, {"data: [DONE]\n\r\n", nil}}, endChunked, "[DONE]"},
		{"fields", []gatedPiece{{": keep-alive\n\nevent: message\nid: 1\nretry: 3000\ndata:" + a + "\n\n", []string{a}},
			{": keep-alive\n\n", nil}, {"id: 2\ndata:" + b + "\n\n", []string{b}}, {"data: " + fin + "\n\ndata:[DONE]\n\n", []string{fin}}}, endChunked, "[DONE]"},
		{"multi-line data", []gatedPiece{{"data: {\"id\":\"c1\",\ndata: \"choices\":[]}\n\n", []string{`{"id":"c1", "choices":[]}`}},
			{"data: " + fin + "\n\n", []string{fin}}, {"data: [DONE]\n\n", nil}}, endChunked, "[DONE]"},
		{"1 MiB line", []gatedPiece{{"data: " + big + "\n\n", []string{big}}, {"data: " + fin + "\n\n", []string{fin}},
			{"data: [DONE]\n\n", nil}}, endChunked, "[DONE]"},
		{"error mid-stream", []gatedPiece{{"data: " + a + "\n\n", []string{a}}, {"data: " + errEv + "\n\n", nil}}, endChunked, interrupted},
		{"no [DONE], finished, terminated", []gatedPiece{{"data: " + a + "\n\n", []string{a}}, {"data: " + fin + "\n\n", []string{fin}}}, endChunked, "[DONE]"},
		{"no [DONE], finished, to the close", []gatedPiece{{"data: " + a + "\n\n", []string{a}}, {"data: " + fin + "\n\n", []string{fin}}}, endPlain, "[DONE]"},
		{"no [DONE], unfinished", []gatedPiece{{"data: " + a + "\n\n", []string{a}}, {"data: " + b + "\n\n", []string{b}}}, endChunked, interrupted},
		{"closed mid-event", []gatedPiece{{"data: " + a + "\n\n", []string{a}}, {"data: " + fin[:20], nil}}, endPlain, interrupted},
		{"closed mid-event, chunked", []gatedPiece{{"data: " + a + "\n\n", []string{a}}, {"data: " + fin[:20], nil}}, endChunked, interrupted},
		{"chunk cut", []gatedPiece{{"data: " + a + "\n\n", []string{a}}, {"data: " + b + "\n\n", []string{b}}}, endCutChunk, interrupted},
		// The last chunk comes with the events, its trailer section's end later (a trailer field
		// the upstream writes once it has it): the events are not held back for it.
		{"trailer after the last chunk", []gatedPiece{{relayWireChunk("data: " + a + "\n\n"), []string{a}},
			{relayWireChunk("data: "+fin+"\n\n") + relayWireChunk("data: [DONE]\n\n") + "0\r\n", []string{fin, "[DONE]"}},
			{"X-Trailer: 1\r\n\r\n", nil}}, endRaw, ""},
		// One chunk holds two events, the second sent later (a proxy passing the upstream's
		// framing on as its bytes come): the first is not held back for the rest of the chunk.
		{"events inside one chunk", []gatedPiece{{relayWireChunk("data: " + a + "\n\n"), []string{a}},
			{fmt.Sprintf("%x\r\n", len("data: "+b+"\n\ndata: "+fin+"\n\n")) + "data: " + b + "\n\n", []string{b}},
			{"data: " + fin + "\n\n\r\n", []string{fin}},
			{relayWireChunk("data: [DONE]\n\n") + "0\r\n\r\n", []string{"[DONE]"}}}, endRaw, ""},
		{"closed without the last chunk", []gatedPiece{{"data: " + a + "\n\n", []string{a}}, {"data: " + b + "\n\n", []string{b}}}, endClose, interrupted},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			url, written, next := gatedUpstream(t, c.pieces, c.end)
			// No idle timeout: an event held back waits for the next piece, which never comes
			// until the client has it, and the client's deadline fails the test.
			g := newGateway(t, strings.Replace(hostileConfig("openai", url), `idle_timeout = "10s"`, `idle_timeout = "0s"`, 1), nil)
			read, closeClient := clientEvents(t, g, usageBody("up", false))
			defer closeClient()
			got := func() string {
				t.Helper()
				ev, err := read()
				if err != nil {
					t.Fatalf("reading an event: %v (%q)", err, clip(ev))
				}
				if strings.HasPrefix(ev, `{"error":`) {
					if !strings.Contains(ev, `"code":"stream_interrupted"`) {
						t.Fatalf("error event %q", ev)
					}
					return interrupted
				}
				return ev
			}
			for i, p := range c.pieces {
				if w := <-written; w != i {
					t.Fatalf("piece %d written, want %d", w, i)
				}
				for _, want := range p.events {
					if ev := got(); ev != want {
						t.Fatalf("after piece %d: event %q, want %q", i, clip(ev), clip(want))
					}
				}
				if i < len(c.pieces)-1 {
					next <- struct{}{}
				}
			}
			close(next)
			if c.last == "" {
				return // the test's events ended it
			}
			if ev := got(); ev != c.last && !(c.last == interrupted && ev == interrupted) {
				t.Fatalf("the stream ends with %q, want %q", clip(ev), c.last)
			}
			if rest, err := read(); err != io.EOF || rest != "" {
				t.Fatalf("after the end: %q, %v", clip(rest), err)
			}
		})
	}
}

func relayWireChunk(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}
