package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/logfmt"
	"github.com/hayula/gateway/server"
	"github.com/hayula/gateway/upstream"
)

// The hot-path benchmarks drive server.Handler() in process, without sockets: what they measure is
// the gateway's own work per request (decode, route, filters, select, attempt, write), and their
// allocations are the gateway's alone. The bench harness (go run ./bench) measures the same path
// over loopback against a real client.

// benchConfig has the paper's three-target chain on every route auto can choose, so that filters
// run over a real chain while the first target serves.
const benchConfig = `
[targets.saif]
adapter = "openai"
url = "http://saif.bench/v1"
context_window = 32768

[targets.deepseek-r1]
adapter = "openai"
url = "http://deepseek.bench/v1"
context_window = 65536

[targets.averroes-q]
adapter = "openai"
url = "http://averroes.bench/v1"
context_window = 32768

[routes.saif]
targets = ["saif", "deepseek-r1", "averroes-q"]

[routes.deepseek-r1]
targets = ["deepseek-r1", "saif", "averroes-q"]

[routes.averroes-q]
targets = ["averroes-q", "deepseek-r1", "saif"]

[auto]
default = "averroes-q"
`

// benchBody is a chat request of about 1 KB: a system prompt and an English and Arabic user turn
// with a code fragment, as clients send.
func benchBody(b testing.TB, model string, stream bool) []byte {
	b.Helper()
	const prose = "I am preparing a short talk for my team about how we ship our web application. " +
		"ممكن تساعدني أرتب الأفكار بشكل منطقي؟ First I want to compare two ways of logging, then explain " +
		"why the old code called strcpy(buf, input) and whether that matters today. " +
		"بعد ذلك أريد أن أشرح الفرق بين الطريقتين بطريقة بسيطة للزملاء الجدد. Finally a few slides on " +
		"the history of the project, the people who built it, the budget and the timeline for next year. "
	type msg struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	req := struct {
		Model       string  `json:"model"`
		Messages    []msg   `json:"messages"`
		MaxTokens   int     `json:"max_tokens"`
		Temperature float64 `json:"temperature"`
		Stream      bool    `json:"stream,omitempty"`
	}{Model: model, MaxTokens: 256, Temperature: 0.2, Stream: stream,
		Messages: []msg{{"system", "You are a helpful assistant."}, {"user", strings.Repeat(prose, 2)}}}
	out, err := json.Marshal(req)
	if err != nil {
		b.Fatal(err)
	}
	if len(out) < 1000 || len(out) > 1400 {
		b.Fatalf("bench body is %d bytes, want about 1 KB", len(out))
	}
	return out
}

const benchAnswer = `{"id":"chatcmpl-bench","object":"chat.completion","created":1764460800,"model":"fake-model",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"A fixed answer of about the length of a ` +
	`short reply from a chat model."},"finish_reason":"stop"}],"usage":{"prompt_tokens":212,` +
	`"completion_tokens":38,"total_tokens":250}}`

const benchChunk = `{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1764460800,"model":"fake-model",` +
	`"choices":[{"index":0,"delta":{"content":" token"},"finish_reason":null}]}`

// fixedUpstream answers every attempt with the same non-streaming body, or with a stream of
// events chunks when the request streams.
type fixedUpstream struct {
	body   []byte
	events int
}

func (f *fixedUpstream) Chat(_ context.Context, _ *core.Target, req *core.Request) (*upstream.Response, error) {
	if req.Stream {
		return &upstream.Response{Stream: &repeatStream{left: f.events, payload: []byte(benchChunk)}}, nil
	}
	return &upstream.Response{Body: f.body}, nil
}

// repeatStream yields the same payload left times, then io.EOF.
type repeatStream struct {
	left    int
	payload []byte
}

func (s *repeatStream) Next() ([]byte, error) {
	if s.left <= 0 {
		return nil, io.EOF
	}
	s.left--
	return s.payload, nil
}

func (s *repeatStream) Close() error { return nil }

// sinkWriter is a ResponseWriter that keeps nothing but the status and a byte count, so that the
// benchmark's allocations are the handler's.
type sinkWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *sinkWriter) Header() http.Header { return w.h }
func (w *sinkWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *sinkWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.n += len(p)
	return len(p), nil
}
func (w *sinkWriter) Flush() {}

func (w *sinkWriter) reset() {
	clear(w.h)
	w.status, w.n = 0, 0
}

// bodyReader is a request body that can be rewound without allocating.
type bodyReader struct{ bytes.Reader }

func (*bodyReader) Close() error { return nil }

// benchServer builds the gateway over up (nil: the real upstream.Set over an in-memory dialer).
// log is the request logger; nil logs nothing, as the other benchmarks measure.
func benchServer(b testing.TB, up server.Upstream, log ...*slog.Logger) http.Handler {
	b.Helper()
	return benchNew(b, up, log...).Handler()
}

// benchNew is the server benchServer serves through.
func benchNew(b testing.TB, up server.Upstream, log ...*slog.Logger) *server.Server {
	b.Helper()
	cfg, err := config.Parse([]byte(benchConfig), "bench.toml", func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	if up == nil {
		set := upstream.NewSet(cfg.Targets, upstream.Options{Transport: memTransport()})
		b.Cleanup(set.Close)
		up = set
	}
	o := server.Options{Config: cfg, Upstream: up}
	if len(log) > 0 {
		o.Logger = log[0]
	}
	s, err := server.New(o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	return s
}

// serveLoop runs one request per iteration through h and checks the first answer.
func serveLoop(b *testing.B, h http.Handler, body []byte, wantStatus int) {
	b.Helper()
	br := &bodyReader{}
	req, err := http.NewRequest(http.MethodPost, "http://localhost/v1/chat/completions", br)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = int64(len(body))
	w := &sinkWriter{h: http.Header{}}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	checked := false
	for b.Loop() {
		br.Reset(body)
		w.reset()
		h.ServeHTTP(w, req)
		if !checked {
			if w.status != wantStatus || w.n == 0 {
				b.Fatalf("status %d, %d bytes; want %d with a body", w.status, w.n, wantStatus)
			}
			checked = true
		}
	}
}

// BenchmarkChat1KB is one 1 KB chat request through the handler: decode, route, filters, select,
// attempt, write. fake-upstream answers from memory, so it is the gateway's own cost; live goes
// through server.Live, the handler gateway serve swaps on a reload; logged adds
// the request log line as gateway serve writes it (logfmt, to a discarding writer); stream is a
// streamed answer of memEvents events; auto adds the classifier; upstream-set goes through the
// real OpenAI adapter and net/http client over an in-memory connection, so it adds the request
// the gateway builds and the answer it reads.
func BenchmarkChat1KB(b *testing.B) {
	answer := []byte(benchAnswer)
	b.Run("fake-upstream", func(b *testing.B) {
		serveLoop(b, benchServer(b, &fixedUpstream{body: answer}), benchBody(b, "saif", false), http.StatusOK)
	})
	b.Run("fake-upstream-live", func(b *testing.B) {
		// Through server.Live, as gateway serve does, so that a reload can replace the server.
		serveLoop(b, server.NewLive(benchNew(b, &fixedUpstream{body: answer})), benchBody(b, "saif", false), http.StatusOK)
	})
	b.Run("fake-upstream-logged", func(b *testing.B) {
		log := slog.New(logfmt.NewText(io.Discard, nil))
		serveLoop(b, benchServer(b, &fixedUpstream{body: answer}, log), benchBody(b, "saif", false), http.StatusOK)
	})
	b.Run("fake-upstream-stream", func(b *testing.B) {
		serveLoop(b, benchServer(b, &fixedUpstream{events: memEvents}), benchBody(b, "saif", true), http.StatusOK)
	})
	b.Run("auto", func(b *testing.B) {
		serveLoop(b, benchServer(b, &fixedUpstream{body: answer}), benchBody(b, "auto", false), http.StatusOK)
	})
	b.Run("unknown-model", func(b *testing.B) {
		serveLoop(b, benchServer(b, &fixedUpstream{body: answer}), benchBody(b, "nope", false), http.StatusNotFound)
	})
	b.Run("upstream-set", func(b *testing.B) {
		serveLoop(b, benchServer(b, nil), benchBody(b, "saif", false), http.StatusOK)
	})
	b.Run("upstream-set-stream", func(b *testing.B) {
		serveLoop(b, benchServer(b, nil), benchBody(b, "saif", true), http.StatusOK)
	})
}

// memTransport is an http.Transport whose connections are in memory: every request is answered
// by memAnswer. It keeps connections alive like a real upstream, so that the benchmark pays what
// a request on a warm pool pays.
func memTransport() *http.Transport {
	return &http.Transport{
		DialContext: func(context.Context, string, string) (net.Conn, error) {
			c := &memConn{}
			c.cond.L = &c.mu
			return c, nil
		},
		MaxIdleConnsPerHost: 64,
		DisableCompression:  true,
	}
}

// memEvents is the number of events in a stream memAnswer sends.
const memEvents = 16

// memAnswer is the upstream's answer to one raw HTTP request.
func memAnswer(req []byte) []byte {
	if bytes.Contains(req, []byte(`"stream":true`)) {
		var body bytes.Buffer
		for range memEvents {
			body.WriteString("data: " + benchChunk + "\n\n")
		}
		body.WriteString("data: " + strings.Replace(benchChunk, `"finish_reason":null`, `"finish_reason":"stop"`, 1) + "\n\n")
		body.WriteString("data: [DONE]\n\n")
		return []byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: " +
			strconv.Itoa(body.Len()) + "\r\n\r\n" + body.String())
	}
	return []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(benchAnswer)) + "\r\n\r\n" + benchAnswer)
}

// memConn is one in-memory connection to a fake upstream: what the client writes is collected
// until a whole request (head and Content-Length body) is there, and its answer is queued for
// reading.
type memConn struct {
	mu     sync.Mutex
	cond   sync.Cond
	in     []byte
	out    []byte
	closed bool
}

func (c *memConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	c.in = append(c.in, p...)
	for {
		n := requestLen(c.in)
		if n == 0 {
			break
		}
		c.out = append(c.out, memAnswer(c.in[:n])...)
		c.in = c.in[n:]
		c.cond.Broadcast()
	}
	return len(p), nil
}

func (c *memConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.out) == 0 && !c.closed {
		c.cond.Wait()
	}
	if len(c.out) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.out)
	c.out = c.out[n:]
	return n, nil
}

func (c *memConn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.cond.Broadcast()
	c.mu.Unlock()
	return nil
}

func (c *memConn) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (c *memConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2} }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

// requestLen is the length of the first whole request in b, or 0 when it is not all there yet.
func requestLen(b []byte) int {
	head := bytes.Index(b, []byte("\r\n\r\n"))
	if head < 0 {
		return 0
	}
	n := 0
	for _, line := range bytes.Split(b[:head], []byte("\r\n")) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if ok && strings.EqualFold(string(k), "Content-Length") {
			n, _ = strconv.Atoi(strings.TrimSpace(string(v)))
		}
	}
	if len(b) < head+4+n {
		return 0
	}
	return head + 4 + n
}
