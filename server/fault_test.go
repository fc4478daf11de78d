package server_test

// Fault injection on /v1/chat/completions, as a proxy's chaos suite writes it: an upstream that
// misbehaves once, in one exact way, byte by byte, on a raw listener, in front of a target that
// answers. Each misbehaviour is asked whole and streamed, by the official SDK and by a raw
// client, through the gateway's own HTTP/1.1 client and through net/http's (which carries an
// https:// or proxied target). Then the misbehaving target is asked on its own: once answered
// well, which the gateway must read rather than a leftover of the broken exchange on a reused
// connection; once misbehaving again, which is the client's error; once answered well again.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// faultAct is what a misbehaviour does with the connection once it has written its bytes.
type faultAct uint8

const (
	actClose faultAct = iota // close the connection
	actReset                 // close it with an RST
	actHold                  // keep it open: a next request on it is answered with garbage
	actKeep                  // the exchange was whole: the connection serves the next request
)

// faultUpstream answers its first and third requests with bad and every other one with a good
// completion (or stream) naming "bad", on a raw listener.
type faultUpstream struct {
	url   string
	bad   func(w io.Writer, stream bool) faultAct
	n     atomic.Int64 // requests read
	reuse atomic.Int64 // requests read on a connection held after a broken exchange
}

func newFaultUpstream(t *testing.T, bad func(w io.Writer, stream bool) faultAct) *faultUpstream {
	t.Helper()
	u := &faultUpstream{bad: bad}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() {
		close(done)
		ln.Close()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(2)
			go func() { defer wg.Done(); <-done; c.Close() }()
			go func() {
				defer wg.Done()
				defer c.Close()
				u.conn(c)
			}()
		}
	}()
	u.url = "http://" + ln.Addr().String() + "/v1"
	return u
}

func (u *faultUpstream) conn(c net.Conn) {
	br := bufio.NewReader(c)
	held := false
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, _ := io.ReadAll(req.Body)
		var r struct {
			Stream bool `json:"stream"`
		}
		_ = json.Unmarshal(body, &r)
		if held {
			u.reuse.Add(1)
			_, _ = io.WriteString(c, "HTTP/1.1 500 REUSED\r\nContent-Length: 6\r\n\r\nREUSED")
			return
		}
		if n := u.n.Add(1); n != 1 && n != 3 {
			writeGoodAnswer(c, r.Stream)
			continue
		}
		switch u.bad(c, r.Stream) {
		case actClose:
			return
		case actReset:
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			return
		case actHold:
			held = true
		case actKeep:
		}
	}
}

const (
	faultWhole = `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":"hello from bad"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":1,"completion_tokens":3,"total_tokens":4}}`
	faultEvent1 = `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,` +
		`"delta":{"role":"assistant","content":"hello"},"finish_reason":null}]}`
	faultEvent2 = `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,` +
		`"delta":{"content":" from bad"},"finish_reason":"stop"}]}`
	faultRole = `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,` +
		`"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
	faultEvents = "data: " + faultEvent1 + "\n\ndata: " + faultEvent2 + "\n\ndata: [DONE]\n\n"
)

// writeGoodAnswer writes a whole, keep-alive answer: a completion, or a stream of it.
func writeGoodAnswer(w io.Writer, stream bool) {
	if stream {
		fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(faultEvents), faultEvents)
		return
	}
	fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(faultWhole), faultWhole)
}

// lengthed is a 200 of ctype with body framed by its length.
func lengthed(ctype, body string) string {
	return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s", ctype, len(body), body)
}

func gzipped(s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(s))
	_ = zw.Close()
	return b.String()
}

// faultWant is what the client must get.
type faultWant uint8

const (
	wantNext  faultWant = iota // the next target's answer: the failure came before any byte went out
	wantBad                    // the misbehaving target's own answer, read whole
	wantCut                    // a stream that went out and ends with the gateway's error event
	wantError                  // an OpenAI-shaped error (the route has one target)
)

type faultCase struct {
	name string
	bad  func(w io.Writer, stream bool) faultAct
	// whole and stream: what the client gets.
	whole, stream faultWant
	// slow: the case ends by the target's timeout or idle_timeout.
	slow bool
	// h1Only, when set, says why the case is not run through net/http's client.
	h1Only string
	// status is the error's status when the misbehaving target is the route's only one: 502
	// unless said.
	status int
	// retryAfter is that error's Retry-After.
	retryAfter string
}

// streamSay is a misbehaviour only when streamed: writes sw and acts; a whole request gets a
// good answer.
func streamSay(sw string, act faultAct) func(w io.Writer, stream bool) faultAct {
	return func(w io.Writer, stream bool) faultAct {
		if !stream {
			writeGoodAnswer(w, false)
			return actKeep
		}
		_, _ = io.WriteString(w, sw)
		return act
	}
}

// say is a misbehaviour that writes s (sw when streamed, if not empty) and then acts.
func say(s, sw string, act faultAct) func(w io.Writer, stream bool) faultAct {
	return func(w io.Writer, stream bool) faultAct {
		out := s
		if stream && sw != "" {
			out = sw
		}
		_, _ = io.WriteString(w, out)
		return act
	}
}

func faultCases() []faultCase {
	sseHead := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
	errObj := `{"error":{"message":"The server had an error while processing your request","type":"server_error","param":null,"code":null}}`
	big := strings.Repeat("p", 1000)
	cases := []faultCase{
		{name: "reset before the head", bad: say("", "", actReset)},
		{name: "close before the head", bad: say("", "", actClose)},
		{name: "head then reset", bad: say("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 300\r\n\r\n",
			sseHead+"Transfer-Encoding: chunked\r\n\r\n", actReset)},
		{name: "Content-Length longer than the body, then close",
			bad: say("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n"+faultWhole[:40],
				sseHead+"Content-Length: 5000\r\n\r\n"+faultEvents[:30], actClose)},
		{name: "Content-Length longer than the body, then silence", slow: true, status: http.StatusGatewayTimeout,
			bad: say("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n"+faultWhole[:40],
				sseHead+"Content-Length: 5000\r\n\r\n"+faultEvents[:30], actHold)},
		{name: "chunked broken mid-chunk",
			bad: say("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n{\"id\":",
				sseHead+"Transfer-Encoding: chunked\r\n\r\n40\r\ndata: {\"id\"", actClose)},
		{name: "chunked with a garbage size",
			bad: say("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
				sseHead+"Transfer-Encoding: chunked\r\n\r\nzz\r\ndata: {}\r\n0\r\n\r\n", actHold)},
		{name: "a body that is not JSON", bad: say(lengthed("application/json", "<html>Bad Gateway</html>"),
			lengthed("text/html", "<html>Bad Gateway</html>"), actKeep)},
		{name: "a 200 with an OpenAI error object", bad: say(lengthed("application/json", errObj),
			lengthed("application/json", errObj), actKeep)},
		{name: "a 200 stream whose first event is an error", bad: say(lengthed("application/json", errObj),
			lengthed("text/event-stream", "data: "+errObj+"\n\n"), actKeep)},
		{name: "an empty stream without [DONE]", bad: say(lengthed("application/json", ""),
			lengthed("text/event-stream", ""), actKeep)},
		{name: "a stream that stops without [DONE] or a finish", whole: wantBad, stream: wantCut,
			bad: say(lengthed("application/json", faultWhole), lengthed("text/event-stream", "data: "+faultEvent1+"\n\n"), actKeep)},
		{name: "a stream that stops without [DONE] after its finish", whole: wantBad, stream: wantBad,
			bad: say(lengthed("application/json", faultWhole), lengthed("text/event-stream", "data: "+faultEvent1+"\n\ndata: "+faultEvent2+"\n\n"), actKeep)},
		{name: "data: {broken first", bad: say(lengthed("application/json", "{broken"),
			lengthed("text/event-stream", "data: {broken\n\n"), actKeep)},
		{name: "data: {broken after the first event", whole: wantBad, stream: wantCut,
			bad: say(lengthed("application/json", faultWhole), lengthed("text/event-stream", "data: "+faultEvent1+"\n\ndata: {broken\n\n"), actKeep)},
		{name: "data: {broken mid-stream, events after it", whole: wantBad, stream: wantCut,
			bad: say(lengthed("application/json", faultWhole), lengthed("text/event-stream",
				"data: "+faultEvent1+"\n\ndata: {broken\n\ndata: "+faultEvent2+"\n\ndata: [DONE]\n\n"), actKeep)},
		{name: "an error event mid-stream, events after it", whole: wantBad, stream: wantCut,
			bad: say(lengthed("application/json", faultWhole), lengthed("text/event-stream",
				"data: "+faultEvent1+"\n\ndata: "+errObj+"\n\ndata: "+faultEvent2+"\n\ndata: [DONE]\n\n"), actKeep)},
		{name: "a 2 MiB event", whole: wantBad, stream: wantBad,
			bad: func(w io.Writer, stream bool) faultAct {
				pad := strings.Repeat("x", 2<<20)
				if stream {
					ev := "data: " + strings.Replace(faultEvent1, `"hello"`, `"hello`+pad+`"`, 1) + "\n\ndata: " + faultEvent2 + "\n\ndata: [DONE]\n\n"
					_, _ = io.WriteString(w, lengthed("text/event-stream", ev))
				} else {
					_, _ = io.WriteString(w, lengthed("application/json", strings.Replace(faultWhole, `"hello from bad"`, `"hello`+pad+` from bad"`, 1)))
				}
				return actKeep
			}},
		{name: "100-continue before the answer", whole: wantBad, stream: wantBad,
			bad: func(w io.Writer, stream bool) faultAct {
				_, _ = io.WriteString(w, "HTTP/1.1 100 Continue\r\n\r\n")
				writeGoodAnswer(w, stream)
				return actKeep
			}},
		{name: "103 and 102 before the answer", whole: wantBad, stream: wantBad,
			bad: func(w io.Writer, stream bool) faultAct {
				_, _ = io.WriteString(w, "HTTP/1.1 103 Early Hints\r\nLink: </x>; rel=preload\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n")
				writeGoodAnswer(w, stream)
				return actKeep
			}},
		{name: "a 204", bad: say("HTTP/1.1 204 No Content\r\n\r\n", "", actKeep)},
		{name: "a 204 with a body", h1Only: "net/http's client may read a 204's body as the answer to the connection's next " +
			"request, before its reader sees the bytes as unsolicited and closes the connection: the next request fails once",
			bad: say("HTTP/1.1 204 No Content\r\nContent-Length: 12\r\n\r\n{\"id\":\"x\"}\r\n", "", actHold)},
		{name: "a 307", bad: say("HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:1/v1/chat/completions\r\nContent-Length: 0\r\n\r\n", "", actKeep)},
		{name: "a 503 with Retry-After", status: http.StatusServiceUnavailable, retryAfter: "1", bad: say("HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: application/json\r\n"+
			fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(errObj), errObj), "", actKeep)},
		{name: "headers over 64 KiB", bad: say("HTTP/1.1 200 OK\r\n"+strings.Repeat("X-Pad: "+big+"\r\n", 70)+
			fmt.Sprintf("Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(faultWhole), faultWhole), "", actHold)},
		{name: "accepts and never answers", slow: true, status: http.StatusGatewayTimeout, bad: say("", "", actHold)},
		{name: "a head dripped a byte at a time", slow: true, status: http.StatusGatewayTimeout,
			bad: func(w io.Writer, stream bool) faultAct {
				for _, b := range []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Drip: " + strings.Repeat("d", 200)) {
					if _, err := w.Write([]byte{b}); err != nil {
						return actClose
					}
					time.Sleep(20 * time.Millisecond)
				}
				return actHold
			}},
		{name: "gzip unasked", bad: func(w io.Writer, stream bool) faultAct {
			body, ct := faultWhole, "application/json"
			if stream {
				body, ct = faultEvents, "text/event-stream"
			}
			z := gzipped(body)
			fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s", ct, len(z), z)
			return actKeep
		}},
		{name: "HTTP/1.0 close-delimited", whole: wantBad, stream: wantBad,
			bad: func(w io.Writer, stream bool) faultAct {
				if stream {
					_, _ = io.WriteString(w, "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"+faultEvents)
				} else {
					_, _ = io.WriteString(w, "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n"+faultWhole)
				}
				return actClose
			}},
		{name: "a role chunk, then the close", whole: wantBad,
			bad: streamSay("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: "+faultRole+"\n\n", actClose)},
		{name: "a role chunk, then data: {broken", whole: wantBad,
			bad: say(lengthed("application/json", faultWhole), lengthed("text/event-stream", "data: "+faultRole+"\n\ndata: {broken\n\n"), actKeep)},
		{name: "a role chunk, then silence", whole: wantBad, slow: true, status: http.StatusGatewayTimeout,
			bad: streamSay("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: "+faultRole+"\n\n", actHold)},
		{name: "a stream to a whole request", stream: wantBad,
			bad: say(lengthed("text/event-stream", faultEvents), "", actKeep)},
		{name: "chunk extensions and a trailer", whole: wantBad, stream: wantBad,
			bad: func(w io.Writer, stream bool) faultAct {
				body, ct := faultWhole, "application/json"
				if stream {
					body, ct = faultEvents, "text/event-stream"
				}
				fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n"+
					"%x;name=\"v\"\r\n%s\r\n%x;e\r\n%s\r\n0\r\nX-T: 1\r\n\r\n", ct, 10, body[:10], len(body)-10, body[10:])
				return actKeep
			}},
		{name: "HTTP/1.1 close-delimited cut short", stream: wantCut,
			bad: say("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"+faultWhole[:60],
				"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\ndata: "+faultEvent1+"\n\n", actClose)},
	}
	for i := range cases {
		if cases[i].status == 0 {
			cases[i].status = http.StatusBadGateway
		}
	}
	return cases
}

// faultConfig is a route "chain" of bad then good, and "solo" of bad alone. The targets'
// timeout and idle_timeout are limit: short for a case that waits for them, and otherwise long
// enough that no exchange under -race on a busy machine meets them (a 2 MiB event at 500 ms did).
func faultConfig(badURL, goodURL string, limit time.Duration) string {
	tgt := func(name, url string) string {
		return target(name, url, "private", fmt.Sprintf("timeout = %q", limit), fmt.Sprintf("idle_timeout = %q", limit),
			`health_interval = "0s"`, "max_retries = 0")
	}
	return tgt("bad", badURL) + tgt("good", goodURL) +
		"[routes.chain]\ntargets = [\"bad\", \"good\"]\n[routes.solo]\ntargets = [\"bad\"]\n"
}

func TestFaultInjection(t *testing.T) {
	for _, fc := range faultCases() {
		for _, stream := range []bool{false, true} {
			for _, wire := range []string{"h1", "net/http"} {
				for _, client := range []string{"sdk", "raw"} {
					name := fmt.Sprintf("%s/%s/%s/stream=%t", fc.name, wire, client, stream)
					t.Run(name, func(t *testing.T) {
						if fc.slow && testing.Short() {
							t.Skip("waits for a timeout")
						}
						t.Parallel()
						bad := newFaultUpstream(t, fc.bad)
						good := newFake(t, "good")
						if wire == "net/http" && fc.h1Only != "" {
							t.Skip(fc.h1Only)
						}
						limit := 30 * time.Second
						if fc.slow {
							limit = 500 * time.Millisecond
						}
						g := newGateway(t, faultConfig(bad.url, good.url(), limit), nil, viaNetHTTP(t, wire == "net/http"))
						want := fc.whole
						if stream {
							want = fc.stream
						}
						faultCheck(t, g, fc, client, "chain", stream, want)
						// The misbehaving target asked again, alone: its next answer is a good one.
						faultCheck(t, g, fc, client, "solo", stream, wantBad)
						// Alone, the misbehaviour is the client's answer, and then gone again.
						alone := want
						if alone == wantNext {
							alone = wantError
						}
						faultCheck(t, g, fc, client, "solo", stream, alone)
						faultCheck(t, g, fc, client, "solo", stream, wantBad)
						if n := bad.reuse.Load(); n > 0 {
							t.Errorf("a connection held after a broken exchange was sent %d more requests", n)
						}
					})
				}
			}
		}
	}
}

// faultCheck asks model once through client and checks the answer against want.
func faultCheck(t *testing.T, g *gateway, fc faultCase, client, model string, stream bool, want faultWant) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wantChain := map[faultWant]string{wantNext: "bad→good (served by good)", wantBad: "bad", wantCut: "bad", wantError: "bad"}[want]
	if model == "solo" {
		wantChain = "bad"
	}
	// The 2 MiB event's padding comes between "hello" and the rest.
	textOK := func(text string) bool {
		switch want {
		case wantNext:
			return text == "hello from good"
		case wantBad:
			return strings.HasPrefix(text, "hello") && strings.HasSuffix(text, " from bad")
		}
		return text == "hello"
	}
	if client == "sdk" {
		var hdr http.Header
		c := openai.NewClient(option.WithBaseURL(g.ts.URL+"/v1/"), option.WithAPIKey("unused"),
			option.WithHTTPClient(g.ts.Client()), option.WithMaxRetries(0),
			option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
				resp, err := next(r)
				if resp != nil {
					hdr = resp.Header
				}
				return resp, err
			}))
		params := openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
		var text string
		var err error
		if stream {
			s := c.Chat.Completions.NewStreaming(ctx, params)
			var acc openai.ChatCompletionAccumulator
			for s.Next() {
				acc.AddChunk(s.Current())
			}
			err = s.Err()
			_ = s.Close()
			if len(acc.Choices) > 0 {
				text = acc.Choices[0].Message.Content
			}
		} else {
			var got *openai.ChatCompletion
			got, err = c.Chat.Completions.New(ctx, params)
			if err == nil && len(got.Choices) > 0 {
				text = got.Choices[0].Message.Content
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: the call did not end in 30s: %v", model, err)
		}
		switch want {
		case wantNext, wantBad:
			if err != nil || !textOK(text) {
				t.Fatalf("%s: err %v, text %.60q", model, err, text)
			}
		case wantError:
			var ae *openai.Error
			if !errors.As(err, &ae) || ae.StatusCode != fc.status || ae.Message == "" || ae.Type == "" {
				t.Fatalf("%s: err %T %v, want an OpenAI error of status %d", model, err, err, fc.status)
			}
			if got := hdr.Get("Retry-After"); got != fc.retryAfter {
				t.Errorf("%s: Retry-After %q, want %q", model, got, fc.retryAfter)
			}
		case wantCut:
			if err == nil || !strings.Contains(err.Error(), "stream_interrupted") || !textOK(text) {
				t.Fatalf("%s: err %v, text %.60q; want its first event then stream_interrupted", model, err, text)
			}
		}
		if got := hdr.Get("X-Hayula-Chain"); got != wantChain {
			t.Errorf("%s: x-hayula-chain %q, want %q", model, got, wantChain)
		}
		return
	}
	body := fmt.Sprintf(`{"model":%q,"stream":%t,"messages":[{"role":"user","content":"hi"}]}`, model, stream)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.ts.URL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := g.ts.Client().Do(req)
	if err != nil {
		t.Fatalf("%s: %v", model, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: reading the answer: %v (%.200q)", model, err, raw)
	}
	if got := resp.Header.Get("X-Hayula-Chain"); got != wantChain {
		t.Errorf("%s: x-hayula-chain %q, want %q", model, got, wantChain)
	}
	if want == wantError {
		rep := reply{status: resp.StatusCode, header: resp.Header, body: raw}
		if rep.status != fc.status || rep.errorField(t, "message") == "" {
			t.Fatalf("%s: status %d: %.300s, want an OpenAI error of status %d", model, rep.status, raw, fc.status)
		}
		if got := resp.Header.Get("Retry-After"); got != fc.retryAfter {
			t.Errorf("%s: Retry-After %q, want %q", model, got, fc.retryAfter)
		}
		return
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d: %.300s", model, resp.StatusCode, raw)
	}
	if !stream {
		var cc struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(raw, &cc); err != nil || len(cc.Choices) != 1 || !textOK(cc.Choices[0].Message.Content) {
			t.Fatalf("%s: %v: %.300s", model, err, raw)
		}
		return
	}
	var text strings.Builder
	var last string
	for _, l := range strings.Split(string(raw), "\n") {
		if l == "" {
			continue
		}
		d, ok := strings.CutPrefix(l, "data: ")
		if !ok {
			t.Fatalf("%s: line %.100q is no data line", model, l)
		}
		last = d
		if d == "[DONE]" {
			continue
		}
		var ev struct {
			Error   *struct{ Code string } `json:"error"`
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(d), &ev); err != nil {
			t.Fatalf("%s: event %.100q: %v", model, d, err)
		}
		for _, c := range ev.Choices {
			text.WriteString(c.Delta.Content)
		}
	}
	switch want {
	case wantNext, wantBad:
		if last != "[DONE]" || !textOK(text.String()) {
			t.Fatalf("%s: text %.60q, last event %.100q", model, text.String(), last)
		}
	case wantCut:
		if !strings.Contains(last, `"stream_interrupted"`) || !textOK(text.String()) {
			t.Fatalf("%s: text %.60q, last event %.100q; want an error event", model, text.String(), last)
		}
	}
}

// TestFaultSlowReaderHoldsBackUpstream: a client that stops reading a stream holds the upstream
// back, rather than the gateway reading the upstream's stream into its memory without bound:
// the upstream, which would send 96 MiB as fast as it can, is blocked well before that. Once
// the client reads again, it gets every event, in order, through [DONE].
func TestFaultSlowReaderHoldsBackUpstream(t *testing.T) {
	const (
		total = 96 << 20
		bound = 48 << 20 // socket buffers on both sides of the gateway, with room to spare
	)
	ev := "data: " + strings.Replace(faultEvent1, `"hello"`, `"`+strings.Repeat("x", 1000)+`"`, 1) + "\n\n"
	var written atomic.Int64
	finished := make(chan struct{})
	up := newFake(t, "up")
	up.set(func(w http.ResponseWriter, r *http.Request) {
		defer close(finished)
		w.Header().Set("Content-Type", "text/event-stream")
		for written.Load() < total {
			n, err := io.WriteString(w, ev)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
		_, _ = io.WriteString(w, "data: "+faultEvent2+"\n\ndata: [DONE]\n\n")
	})
	g := newGateway(t, target("up", up.url(), "private", `idle_timeout = "60s"`)+"[routes.up]\ntargets = [\"up\"]\n", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.ts.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"up","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	resp, err := g.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The client reads nothing: wait for the upstream's writes to stop growing (or to end, which
	// fails), within a generous bound.
	last, still := int64(-1), 0
	for deadline := time.Now().Add(time.Minute); still < 100 && time.Now().Before(deadline); {
		select {
		case <-finished:
			t.Fatalf("the upstream sent its whole %d MiB stream to a client that read none of it", total>>20)
		case <-time.After(10 * time.Millisecond):
		}
		if n := written.Load(); n == last {
			still++
		} else {
			last, still = n, 0
		}
	}
	if last > bound {
		t.Fatalf("the upstream got %d MiB out to a client that read nothing, more than %d MiB", last>>20, bound>>20)
	}
	t.Logf("held back at %.1f MiB", float64(last)/(1<<20))
	// The client reads again: every event comes, then [DONE].
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	events, done := 0, false
	for sc.Scan() {
		l := sc.Text()
		if l == "" {
			continue
		}
		if l == "data: [DONE]" {
			done = true
			continue
		}
		if !strings.HasPrefix(l, "data: {") {
			t.Fatalf("line %.100q", l)
		}
		events++
	}
	if err := sc.Err(); err != nil || !done || int64(events) != written.Load()/int64(len(ev))+1 {
		t.Fatalf("err %v, [DONE] %t, %d events of %d", err, done, events, written.Load()/int64(len(ev))+1)
	}
}
