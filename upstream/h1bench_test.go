package upstream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hayula/gateway/core"
)

// rawUpstream is a loopback HTTP/1.1 server that answers every request with fixed bytes: a
// chat.completion, or (for a request that accepts text/event-stream) a chunked SSE stream. It
// reads requests with ReadSlice and writes prebuilt answers, so that it allocates nothing per
// request and a benchmark's allocs/op are the client's.
type rawUpstream struct {
	ln            net.Listener
	answer, sse   []byte
	wg            sync.WaitGroup
	mu            sync.Mutex
	conns         map[net.Conn]struct{}
	closed        bool
	acceptedConns int
}

func newRawUpstream(tb testing.TB) *rawUpstream {
	tb.Helper()
	chat := `{"id":"chatcmpl-bench","object":"chat.completion","created":1764460800,"model":"fake-model",` +
		`"system_fingerprint":"fp_bench","choices":[{"index":0,"message":{"role":"assistant","content":` +
		`"This is a fixed answer from the benchmark's fake upstream. It is about as long as a short reply ` +
		`from a chat model, so that copying it costs what copying a real answer costs."},"logprobs":null,` +
		`"finish_reason":"stop"}],"usage":{"prompt_tokens":212,"completion_tokens":38,"total_tokens":250}}`
	return newRawUpstreamAnswering(tb, "application/json", chat)
}

// newRawUpstreamAnswering is newRawUpstream whose whole answer, to any request that does not ask
// for an event stream, is chat, of content type ct.
func newRawUpstreamAnswering(tb testing.TB, ct, chat string) *rawUpstream {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	// The headers net/http's server sends, in its order.
	answer := "HTTP/1.1 200 OK\r\nContent-Type: " + ct + "\r\nDate: Mon, 01 Dec 2025 00:00:00 GMT\r\n" +
		"Content-Length: " + strconv.Itoa(len(chat)) + "\r\n\r\n" + chat
	sse := "HTTP/1.1 200 OK\r\nCache-Control: no-cache\r\nContent-Type: text/event-stream\r\n" +
		"Date: Mon, 01 Dec 2025 00:00:00 GMT\r\nTransfer-Encoding: chunked\r\n\r\n"
	const chunk = `{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1764460800,"model":"fake-model",` +
		`"system_fingerprint":"fp_bench","choices":[{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s}]}`
	for i := range 8 {
		delta := `{"content":" token` + strconv.Itoa(i) + `"}`
		if i == 0 {
			delta = `{"role":"assistant","content":""}`
		}
		ev := fmt.Sprintf("data: "+chunk+"\n\n", delta, "null")
		sse += strconv.FormatInt(int64(len(ev)), 16) + "\r\n" + ev + "\r\n"
	}
	tail := fmt.Sprintf("data: "+chunk+"\n\ndata: [DONE]\n\n", "{}", `"stop"`)
	sse += strconv.FormatInt(int64(len(tail)), 16) + "\r\n" + tail + "\r\n0\r\n\r\n"
	u := &rawUpstream{ln: ln, answer: []byte(answer), sse: []byte(sse), conns: map[net.Conn]struct{}{}}
	u.wg.Add(1)
	go u.accept()
	tb.Cleanup(u.close)
	return u
}

func (u *rawUpstream) url() string { return "http://" + u.ln.Addr().String() }

func (u *rawUpstream) accept() {
	defer u.wg.Done()
	for {
		c, err := u.ln.Accept()
		if err != nil {
			return
		}
		u.mu.Lock()
		if u.closed {
			u.mu.Unlock()
			_ = c.Close()
			return
		}
		u.conns[c] = struct{}{}
		u.acceptedConns++
		u.mu.Unlock()
		u.wg.Add(1)
		go u.serve(c)
	}
}

func (u *rawUpstream) serve(c net.Conn) {
	defer u.wg.Done()
	defer func() {
		u.mu.Lock()
		delete(u.conns, c)
		u.mu.Unlock()
		_ = c.Close()
	}()
	br := bufio.NewReaderSize(c, 8<<10)
	for {
		length, stream := 0, false
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			if len(line) <= 2 {
				break
			}
			if name, value, ok := bytes.Cut(line, []byte(":")); ok {
				value = bytes.TrimSpace(value)
				switch {
				case bytes.EqualFold(name, []byte("Content-Length")):
					length, _ = strconv.Atoi(string(value))
				case bytes.EqualFold(name, []byte("Accept")):
					stream = string(value) == "text/event-stream"
				}
			}
		}
		if _, err := br.Discard(length); err != nil {
			return
		}
		out := u.answer
		if stream {
			out = u.sse
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

func (u *rawUpstream) accepted() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.acceptedConns
}

func (u *rawUpstream) close() {
	_ = u.ln.Close()
	u.mu.Lock()
	u.closed = true
	for c := range u.conns {
		_ = c.Close()
	}
	u.mu.Unlock()
	u.wg.Wait()
}

// benchChatBody is a chat request of about 1 KB, as the live bench sends.
func benchChatBody(stream bool) []byte {
	content := strings.Repeat("Tell me about the weather in a few words. ", 22)
	s := `{"model":"auto","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"` +
		content + `"}],"max_tokens":64`
	if stream {
		s += `,"stream":true`
	}
	return []byte(s + "}")
}

// BenchmarkH1Chat measures one whole chat attempt through the synchronous client against a
// loopback upstream that answers at once: the request written, the answer read, the connection
// pooled again. The upstream allocates nothing per request, so allocs/op are the client's (and
// the context.WithCancel each request gets, as the gateway's server gives one). The request
// carries an ID, as every request the server sends does.
func BenchmarkH1Chat(b *testing.B) {
	for _, stream := range []bool{false, true} {
		name := "json"
		if stream {
			name = "sse"
		}
		b.Run(name, func(b *testing.B) {
			u := newRawUpstream(b)
			tg := &core.Target{Name: "bench", Adapter: core.AdapterOpenAI, URL: u.url() + "/v1", Model: "fake-model",
				Timeout: 120 * time.Second, Stats: &core.Stats{}} // config's default timeout
			s := NewSet([]*core.Target{tg}, Options{})
			b.Cleanup(s.Close)
			req := &core.Request{Model: "auto", Stream: stream, Body: benchChatBody(stream)}
			attempt := func() error {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				resp, err := s.ChatID(ctx, tg, req, "req_0123456789abcdef01234567") // as the server asks
				if err != nil {
					return err
				}
				if !stream {
					if len(resp.Body) == 0 {
						return errors.New("empty answer")
					}
					resp.Release() // as the server does once the answer is written
					return nil
				}
				defer resp.Stream.Close()
				n := 0
				for {
					_, err := resp.Stream.Next()
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						return err
					}
					n++
				}
				if n != 9 {
					return fmt.Errorf("%d events, want 9", n)
				}
				return nil
			}
			if err := attempt(); err != nil { // the connection dialled outside the loop
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := attempt(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if n := u.accepted(); n != 1 {
				b.Errorf("upstream accepted %d connections, want 1 (reused)", n)
			}
		})
	}
}

// BenchmarkReadAnswer reads the bench upstream's JSON answer, head and body, as a connection's
// answers follow one another: one reader, one arena of heads, one header map filled in turn.
func BenchmarkReadAnswer(b *testing.B) {
	u := newRawUpstream(b)
	r := &replay{b: u.answer}
	br := bufio.NewReaderSize(r, 4<<10)
	var hs heads
	var h http.Header
	body := make([]byte, 1<<10)
	b.ReportAllocs()
	for b.Loop() {
		a := answer{header: h}
		if err := readResponse(br, http.MethodPost, &hs, &a); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(a.resp.Body, body[:a.resp.ContentLength]); err != nil {
			b.Fatal(err)
		}
		h = a.resp.Header
	}
}

// replay reads b over and over.
type replay struct {
	b   []byte
	off int
}

func (r *replay) Read(p []byte) (int, error) {
	n := copy(p, r.b[r.off:])
	r.off = (r.off + n) % len(r.b)
	return n, nil
}
