package server_test

// A hostile or broken upstream behind the gateway: raw TCP servers that write exact bytes, and a
// raw client that reads the gateway's answer as bytes, so that nothing on either side tidies the
// wire for the test.

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawUpstream answers every request with answer(path), as it is, and closes the connection; an
// answer that ends in hold keeps the connection open until the test ends.
func rawUpstream(t *testing.T, answer func(path string) string) string {
	t.Helper()
	return rawServe(t, func(c net.Conn, path string, done <-chan struct{}) {
		a, hold := strings.CutSuffix(answer(path), hold)
		_, _ = io.WriteString(c, a)
		if hold {
			<-done
		}
	})
}

// rawServe accepts connections on loopback until the test ends and, for each, reads one request
// (its body dropped) and lets respond write what it will on the connection, which is closed after
// it returns, or when the test ends (done closed). It returns the base URL.
func rawServe(t *testing.T, respond func(c net.Conn, path string, done <-chan struct{})) string {
	t.Helper()
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
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				go func() { <-done; c.Close() }()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				respond(c, req.URL.Path, done)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// hold, at the end of a rawUpstream answer, keeps the connection open.
const hold = "\x00hold"

// rawChat sends a chat request to the gateway with hdr (lines "K: v") and returns its answer's
// head and body as they came, the body unchunked.
func rawChat(t *testing.T, g *gateway, model string, stream bool, hdr ...string) (head http.Header, raw string, body string) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(g.ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	b := fmt.Sprintf(`{"model":%q,"stream":%t,"messages":[{"role":"user","content":"hi"}]}`, model, stream)
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"+
		"Content-Length: %d\r\nConnection: close\r\n%s\r\n%s", len(b), strings.Join(append(hdr, ""), "\r\n"), b)
	all, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading the gateway's answer: %v (%q)", err, all)
	}
	rawHead, rawBody, ok := strings.Cut(string(all), "\r\n\r\n")
	if !ok {
		t.Fatalf("no head in %q", all)
	}
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(all))), nil)
	if err != nil {
		t.Fatalf("the gateway's answer does not parse: %v: %q", err, all)
	}
	defer resp.Body.Close()
	ub, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("the gateway's answer's body does not parse: %v: %q", err, rawBody)
	}
	return resp.Header, rawHead, string(ub)
}

// hostileFields are fields an upstream adds that must never reach the gateway's client.
const hostileFields = "Set-Cookie: sid=evil; Path=/\r\nAccess-Control-Allow-Origin: *\r\n" +
	"Access-Control-Allow-Credentials: true\r\nX-Hayula-Chain: evil\r\nX-Hayula-Route: evil\r\n" +
	"X-Hayula-Target: evil\r\nX-Hayula-Intent: evil\r\nX-Hayula-Specialist: evil\r\n" +
	"Connection: close\r\nKeep-Alive: timeout=1\r\nUpgrade: h2c\r\nTrailer: X-Evil\r\nX-Evil: 1\r\n"

// hostileConfig's timeouts are a backstop that no hostile answer here reaches when the gateway
// keeps to its limits: a 33 MiB answer read under -race on a loaded machine can wait 2 s for
// its next bytes (seen as a 504 in 4 of 4 runs of -count=4 beside other packages), so they are
// 10 s, which a test that wants a limit's answer still tells apart (a timeout's is a 504) well
// within rawChat's deadline.
func hostileConfig(adapter, url string) string {
	return fmt.Sprintf("allowed_origins = [\"https://chat.example.com\"]\n[targets.up]\nadapter = %q\nurl = %q\n"+
		"class = \"private\"\ntimeout = \"10s\"\nidle_timeout = \"10s\"\nmax_retries = 0\nhealth_interval = \"0s\"\n"+
		"[routes.up]\ntargets = [\"up\"]\n", adapter, url)
}

func withLength(head, body string) string {
	return fmt.Sprintf("HTTP/1.1 200 OK\r\n%sContent-Length: %d\r\n\r\n%s", head, len(body), body)
}

// TestHostileUpstreamFields: an upstream's own fields (cookies, CORS, the gateway's x-hayula-*,
// hop-by-hop and framing ones) never reach the client, whole or streamed, for every adapter; the
// client's CORS is the gateway's alone.
func TestHostileUpstreamFields(t *testing.T) {
	openaiWhole := `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`
	openaiStream := "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
	ollamaWhole := `{"model":"m","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"ok"},"done":true,"done_reason":"stop"}`
	saifWhole := `{"id":"s","specialist":"webapp","text":"ok","finish_reason":"stop","usage":{"prompt_tokens":1,"completion_tokens":1}}`
	saifStream := "data: {\"text\":\"ok\",\"specialist\":\"webapp\"}\n\ndata: {\"done\":true,\"finish_reason\":\"stop\"}\n\n"
	for _, tc := range []struct {
		name, adapter, answer string
		stream                bool
		specialist            string
	}{
		{"openai whole", "openai", withLength(hostileFields+"Content-Type: application/json\r\n", openaiWhole), false, ""},
		{"openai stream", "openai", "HTTP/1.1 200 OK\r\n" + hostileFields + "Content-Type: text/event-stream\r\n\r\n" + openaiStream, true, ""},
		{"ollama whole", "ollama", withLength(hostileFields+"Content-Type: application/json\r\n", ollamaWhole), false, ""},
		{"ollama stream", "ollama", "HTTP/1.1 200 OK\r\n" + hostileFields + "Content-Type: application/x-ndjson\r\n\r\n" + ollamaWhole + "\n", true, ""},
		{"saif whole", "saif", withLength(hostileFields+"Content-Type: application/json\r\n", saifWhole), false, "webapp"},
		{"saif stream", "saif", "HTTP/1.1 200 OK\r\n" + hostileFields + "Content-Type: text/event-stream\r\n\r\n" + saifStream, true, "webapp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := rawUpstream(t, func(string) string { return tc.answer })
			g := newGateway(t, hostileConfig(tc.adapter, url), nil)
			h, rawHead, body := rawChat(t, g, "up", tc.stream, "Origin: https://chat.example.com")
			if !strings.HasPrefix(rawHead, "HTTP/1.1 200 ") || !strings.Contains(body, "ok") {
				t.Fatalf("answer %q, body %q", rawHead, body)
			}
			for k, want := range map[string]string{
				"Set-Cookie": "", "Access-Control-Allow-Origin": "https://chat.example.com",
				"Access-Control-Allow-Credentials": "", "X-Hayula-Chain": "up", "X-Hayula-Route": "up",
				"X-Hayula-Target": "up", "X-Hayula-Intent": "", "X-Hayula-Specialist": tc.specialist,
				"Keep-Alive": "", "Upgrade": "", "Trailer": "", "X-Evil": "",
			} {
				if got := strings.Join(h[k], ", "); got != want {
					t.Errorf("%s: %q, want %q (head %q)", k, got, want, rawHead)
				}
			}
			// The client asked for the close itself; the gateway's own Connection field is the
			// only one, and its framing is one Content-Length or chunked, never both.
			if n := strings.Count(strings.ToLower(rawHead), "\r\nconnection:"); n > 1 {
				t.Errorf("%d Connection fields: %q", n, rawHead)
			}
			cl, te := h["Content-Length"], h["Transfer-Encoding"]
			if len(cl)+len(te) > 1 || strings.Contains(strings.ToLower(rawHead), "transfer-encoding") && len(cl) > 0 {
				t.Errorf("framing %q", rawHead)
			}
		})
	}
}

// TestHostileUpstreamStream: the line ends of an upstream's stream (a bare CR, which the SSE spec
// and the gateway's reader end a line at, mixed with CRLF and LF) never reach a client: an event
// spread over CR-framed data lines goes out as one "data:" line, which a client whose parser
// ends a line at a bare CR too (a browser's EventSource, the Python SDK) reads whole.
func TestHostileUpstreamStream(t *testing.T) {
	for _, tc := range []struct{ name, adapter, events string }{
		{"openai, a bare CR in a chunk", "openai",
			"data: {\"id\":\"c\",\rdata: \"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}],\r\ndata: \"x\":1}\r\rdata: [DONE]\r\r"},
		{"saif, a bare CR in a chunk", "saif",
			"data: {\"text\":\"ok\",\rdata: \"specialist\":\"webapp\"}\r\rdata: {\"done\":true,\"finish_reason\":\"stop\"}\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := rawUpstream(t, func(string) string {
				return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + tc.events
			})
			g := newGateway(t, hostileConfig(tc.adapter, url), nil)
			_, _, body := rawChat(t, g, "up", true)
			if strings.ContainsAny(body, "\r\x00") {
				t.Fatalf("a CR or NUL reached the client's events: %q", body)
			}
			// Every line is a data line or the blank one that ends an event, and the
			// gateway's [DONE] is the last event and the only one.
			lines := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n")
			for i, l := range lines {
				if l != "" && !strings.HasPrefix(l, "data: ") || l == "" && (i%2 == 0) {
					t.Fatalf("line %d %q is no event line: %q", i, l, body)
				}
			}
			if slices.Index(lines, "data: [DONE]") != len(lines)-1 || !strings.Contains(body, "ok") {
				t.Fatalf("events %q", body)
			}
		})
	}
}

// TestHostileSpecialist: SAIF's specialist, which the gateway copies into x-hayula-specialist,
// is the upstream's text: a line break in it must not split the head, and a huge one must not
// make the head one no client reads.
func TestHostileSpecialist(t *testing.T) {
	huge := strings.Repeat("w", 256<<10)
	for _, tc := range []struct {
		name, specialist string
		stream           bool
	}{
		{"whole, a line break", `web\r\nSet-Cookie: sid=evil`, false},
		{"stream, a line break", `web\r\nSet-Cookie: sid=evil`, true},
		{"whole, a NUL", `web\u0000app`, false},
		{"whole, 256 KiB", huge, false},
		{"stream, 256 KiB", huge, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := rawUpstream(t, func(string) string {
				if tc.stream {
					return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" +
						`data: {"text":"ok","specialist":"` + tc.specialist + "\"}\n\ndata: {\"done\":true,\"finish_reason\":\"stop\"}\n\n"
				}
				return withLength("Content-Type: application/json\r\n", `{"id":"s","specialist":"`+tc.specialist+
					`","text":"ok","finish_reason":"stop","usage":{"prompt_tokens":1,"completion_tokens":1}}`)
			})
			g := newGateway(t, hostileConfig("saif", url), nil)
			h, rawHead, _ := rawChat(t, g, "up", tc.stream)
			if len(h["Set-Cookie"]) > 0 || strings.ContainsAny(rawHead, "\x00") {
				t.Fatalf("head %q", rawHead)
			}
			// 8 KiB is what many clients and proxies allow a field (nginx's large buffers,
			// Node's whole head is 16 KiB).
			if len(rawHead) > 8<<10 {
				t.Fatalf("a head of %d bytes", len(rawHead))
			}
		})
	}
}

// TestHostileUpstreamStalls: an upstream that answers without end (informational answers, a head,
// a whole body, a chunk of 2^63 bytes) fails the attempt at the limit it crosses, as an answer the
// gateway could not read, instead of holding the request until the target's timeouts (10 s here,
// which the failure names) or growing the gateway's memory without bound.
func TestHostileUpstreamStalls(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 33<<20)
	for _, tc := range []struct{ name, adapter, answer, want string }{
		{"1xx without end", "openai", strings.Repeat("HTTP/1.1 102 Processing\r\n\r\n", 1000) + hold, "more than 5 informational answers"},
		{"a head without end", "openai", "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-Pad: "+strings.Repeat("p", 1000)+"\r\n", 100) + hold, "head over 65536 bytes"},
		{"a 2^63-byte chunk", "openai", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"8000000000000000\r\n{" + big + hold, "larger than 32 MiB"},
		{"a whole body to the close", "ollama", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{" + big + hold, "larger than 32 MiB"},
		{"a Content-Length of 2^62", "saif", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4611686018427387904\r\n\r\n{" + hold,
			`Content-Length: \"4611686018427387904\"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := rawUpstream(t, func(string) string { return tc.answer })
			g := newGateway(t, hostileConfig(tc.adapter, url), nil)
			_, rawHead, body := rawChat(t, g, "up", false)
			if !strings.HasPrefix(rawHead, "HTTP/1.1 502 ") || !strings.Contains(body, `"code":"bad_upstream_response"`) ||
				!strings.Contains(body, tc.want) {
				t.Fatalf("want a 502 bad_upstream_response saying %q, got %q %q", tc.want, rawHead, body)
			}
		})
	}
}

// TestHostileUpstreamOddAnswers: answers that are not a completion, or framed two ways, are a
// 502 or the completion they frame, and never reach the client as they are.
func TestHostileUpstreamOddAnswers(t *testing.T) {
	obj := `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`
	for _, tc := range []struct {
		name, answer string
		status       string
	}{
		{"a protocol switch", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n" + obj + hold, "502"},
		{"204", "HTTP/1.1 204 No Content\r\n\r\n" + obj, "502"},
		{"two lengths", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 3\r\nContent-Length: 300\r\n\r\n" + obj, "502"},
		{"a length and chunked", fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 3\r\n"+
			"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(obj), obj), "200"},
		{"gzip", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\n{}}\r\n0\r\n\r\n", "502"},
		{"obs-fold", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n Set-Cookie: a=1\r\n" + fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(obj), obj), "502"},
		{"a bare LF head", "HTTP/1.1 200 OK\nContent-Type: application/json\n" + fmt.Sprintf("Content-Length: %d\n\n%s", len(obj), obj), "200"},
		{"a NUL in a field", "HTTP/1.1 200 OK\r\nX-A: a\x00b\r\nContent-Type: application/json\r\n" + fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(obj), obj), "502"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := rawUpstream(t, func(string) string { return tc.answer })
			g := newGateway(t, hostileConfig("openai", url), nil)
			h, rawHead, body := rawChat(t, g, "up", false)
			if !strings.HasPrefix(rawHead, "HTTP/1.1 "+tc.status+" ") || len(h["Set-Cookie"]) > 0 || len(h["Upgrade"]) > 0 {
				t.Fatalf("%q %q", rawHead, body)
			}
			if tc.status == "200" && body != obj {
				t.Fatalf("body %q", body)
			}
		})
	}
}

// TestHostileHugeEvent: an event or line over 32 MiB ends the stream with the gateway's error
// event, once the first event went out, rather than being buffered without end.
func TestHostileHugeEvent(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 33<<20)
	for _, tc := range []struct{ name, adapter, answer string }{
		{"openai", "openai", "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" +
			"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\ndata: {\"a\":\"" + big + hold},
		{"openai, many short lines", "openai", "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" +
			"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\n" + strings.Repeat("data: "+strings.Repeat("x", 1000)+"\n", 34<<10) + hold},
		{"ollama", "ollama", "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n\r\n" +
			`{"model":"m","message":{"role":"assistant","content":"ok"},"done":false}` + "\n{\"a\":\"" + big + hold},
		{"saif", "saif", "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" +
			"data: {\"text\":\"ok\",\"specialist\":\"webapp\"}\n\ndata: {\"a\":\"" + big + hold},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := rawUpstream(t, func(string) string { return tc.answer })
			g := newGateway(t, hostileConfig(tc.adapter, url), nil)
			_, rawHead, body := rawChat(t, g, "up", true)
			if !strings.HasPrefix(rawHead, "HTTP/1.1 200 ") || !strings.Contains(body, "ok") ||
				!strings.Contains(body, "32 MiB") || strings.Contains(body, "[DONE]") {
				t.Fatalf("%q %.300q", rawHead, body)
			}
		})
	}
}
