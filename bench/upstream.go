//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The fake upstream runs in its own process (this binary, re-executed with roleEnv set) rather
// than inside the load generator: on a 2-core machine the load generator's goroutines, timers and
// garbage collections would otherwise share one scheduler with the upstream's, so a burst of
// client work would delay the upstream's answers, and differently for the direct and gateway
// columns (the gateway column has fewer client requests in flight per second). Three processes —
// client, gateway, upstream — is also what a deployment looks like.
const (
	roleEnv      = "HAYULA_BENCH_ROLE"
	roleUpstream = "upstream"
)

// upstreamSpec says what the fake upstream answers.
type upstreamSpec struct {
	// Chunks is the number of content events of a fast stream.
	Chunks int
	// SlowChunks and SlowInterval shape the slow listener's streams: one event every interval.
	SlowChunks   int
	SlowInterval time.Duration
}

func (s upstreamSpec) args() []string {
	return []string{"-chunks", strconv.Itoa(s.Chunks), "-slow-chunks", strconv.Itoa(s.SlowChunks),
		"-slow-interval", s.SlowInterval.String()}
}

// upstreamMain is the fake upstream process: it listens on two loopback ports (fast and slow),
// prints "fast=ADDR slow=ADDR" on stdout, and serves until its stdin closes (the parent went away)
// or it gets a signal.
func upstreamMain(args []string) int {
	fs := flag.NewFlagSet("bench upstream", flag.ContinueOnError)
	var spec upstreamSpec
	fs.IntVar(&spec.Chunks, "chunks", 32, "content events per fast stream")
	fs.IntVar(&spec.SlowChunks, "slow-chunks", 20, "content events per slow stream")
	fs.DurationVar(&spec.SlowInterval, "slow-interval", 100*time.Millisecond, "time between slow events")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fast, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstream:", err)
		return 1
	}
	slow, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstream:", err)
		return 1
	}
	fu := newFakeUpstream(spec.Chunks, 0)
	su := newFakeUpstream(spec.SlowChunks, spec.SlowInterval)
	servers := []*http.Server{fu.server(), su.server()}
	go func() { _ = servers[0].Serve(fast) }()
	go func() { _ = servers[1].Serve(slow) }()
	fmt.Printf("fast=%s slow=%s\n", fast.Addr(), slow.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin) // returns when the parent closes the pipe or dies
	for _, s := range servers {
		_ = s.Close()
	}
	return 0
}

// fakeUpstream is an OpenAI-shaped chat server that does as little as possible: it reads the body,
// looks for "stream":true without decoding, and writes precomputed bytes. Its own cost is paid
// equally by the direct and the gateway columns, so it cancels out of the added latency.
type fakeUpstream struct {
	chat   []byte   // the non-streaming chat.completion
	events [][]byte // each a whole "data: …\n\n" event; the first carries the role and the first token
	tail   []byte   // the finishing chunk and [DONE], written with the last event
	// ollama holds the same answer in Ollama's native /api/chat shape, for a target with
	// adapter "ollama" (the Averroes-Q path): the whole answer and a stream's lines.
	ollama otherAnswers
	// saif holds it in the SAIF protocol's shape (CONFIG.md), for a target with adapter "saif"
	// (the paper's SAIF): the whole answer and a stream's events.
	saif     otherAnswers
	interval time.Duration
	// conns is how many connections have carried a chat request, to see connection churn
	// behind a proxy; the harness's /stats requests and a proxy's health checks are not counted.
	conns atomic.Int64
	bufs  sync.Pool
}

func newFakeUpstream(chunks int, interval time.Duration) *fakeUpstream {
	const chunk = `{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1764460800,"model":"fake-model",` +
		`"system_fingerprint":"fp_bench","choices":[{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s}]}`
	f := &fakeUpstream{interval: interval}
	f.bufs.New = func() any { b := make([]byte, 0, 8<<10); return &b }
	f.chat = []byte(`{"id":"chatcmpl-bench","object":"chat.completion","created":1764460800,"model":"fake-model",` +
		`"system_fingerprint":"fp_bench","choices":[{"index":0,"message":{"role":"assistant","content":` +
		`"` + chatContent + `"},"logprobs":null,` +
		`"finish_reason":"stop"}],"usage":{"prompt_tokens":212,"completion_tokens":38,"total_tokens":250}}`)
	for i := range max(chunks, 1) {
		delta := `{"content":" token` + strconv.Itoa(i) + `"}`
		if i == 0 {
			// The role with the first token: a first chunk with the role alone (vLLM's, sent
			// before the prefill) is held by the gateway until the first token's, which would
			// add the interval of a slow stream to its first byte and count every first event
			// held back. That wait is the model's, not the gateway's cost this bench measures.
			delta = `{"role":"assistant","content":" token0"}`
		}
		f.events = append(f.events, fmt.Appendf(nil, "data: "+chunk+"\n\n", delta, "null"))
	}
	f.tail = fmt.Appendf(nil, "data: "+chunk+"\n\ndata: [DONE]\n\n", "{}", `"stop"`)
	f.ollama = newOllamaAnswers(chunks)
	f.saif = newSAIFAnswers(chunks)
	return f
}

// chatContent is the content of the fake upstream's whole answer, in either shape.
const chatContent = "This is a fixed answer from the benchmark's fake upstream. It is about as long as a short reply " +
	"from a chat model, so that copying it costs what copying a real answer costs."

// otherAnswers is the fake upstream's answer in a protocol other than OpenAI's: the whole
// answer, and a stream's pieces (Ollama's lines, SAIF's events), each with its content type.
type otherAnswers struct {
	chat, chatType string
	pieces         [][]byte // a stream's, each flushed on its own; the last says done
	streamType     string
}

// serve writes the whole answer, or the stream's pieces, each flushed on its own as a model's
// tokens are.
func (a *otherAnswers) serve(ctx context.Context, w http.ResponseWriter, stream bool) {
	h := w.Header()
	if !stream {
		h.Set("Content-Type", a.chatType)
		h.Set("Content-Length", strconv.Itoa(len(a.chat)))
		_, _ = io.WriteString(w, a.chat)
		return
	}
	h.Set("Content-Type", a.streamType)
	if a.streamType == "text/event-stream" {
		h.Set("Cache-Control", "no-cache")
	}
	rc := http.NewResponseController(w)
	for _, p := range a.pieces {
		if ctx.Err() != nil {
			return
		}
		if _, err := w.Write(p); err != nil || rc.Flush() != nil {
			return
		}
	}
}

// newOllamaAnswers is the answer as Ollama's /api/chat writes it: one object, or ndjson lines.
func newOllamaAnswers(chunks int) otherAnswers {
	const head = `{"model":"fake-model","created_at":"2025-11-30T00:00:00.000000000Z","message":{"role":"assistant","content":%q},`
	const counts = `"done":true,"done_reason":"stop","total_duration":912345678,"load_duration":1234567,` +
		`"prompt_eval_count":212,"prompt_eval_duration":23456789,"eval_count":%d,"eval_duration":876543210}`
	o := otherAnswers{chat: fmt.Sprintf(head+counts, chatContent, 38), chatType: "application/json; charset=utf-8",
		streamType: "application/x-ndjson"}
	for i := range max(chunks, 1) {
		o.pieces = append(o.pieces, fmt.Appendf(nil, head+`"done":false}`+"\n", " token"+strconv.Itoa(i)))
	}
	o.pieces = append(o.pieces, fmt.Appendf(nil, head+counts+"\n", "", max(chunks, 1)))
	return o
}

// newSAIFAnswers is the answer as SAIF's /v1/completions writes it, the router's choice since
// the bench sends no hint: one object, or SSE events, the last the done event.
func newSAIFAnswers(chunks int) otherAnswers {
	const usage = `"usage":{"prompt_tokens":212,"completion_tokens":%d}}`
	s := otherAnswers{chat: fmt.Sprintf(`{"id":"saif-bench","specialist":"webapp","routed_by":"router","confidence":0.7,`+
		`"text":%q,"finish_reason":"stop",`+usage, chatContent, 38), chatType: "application/json", streamType: "text/event-stream"}
	for i := range max(chunks, 1) {
		s.pieces = append(s.pieces, fmt.Appendf(nil, "data: {\"text\":%q,\"specialist\":\"webapp\"}\n\n", " token"+strconv.Itoa(i)))
	}
	s.pieces = append(s.pieces, fmt.Appendf(nil, `data: {"done":true,"finish_reason":"stop",`+usage+"\n\n", max(chunks, 1)))
	return s
}

// ollamaStreamContent is what a stream's content adds up to, in any shape.
func ollamaStreamContent(chunks int) string {
	var b strings.Builder
	for i := range max(chunks, 1) {
		b.WriteString(" token" + strconv.Itoa(i))
	}
	return b.String()
}

// chatConnKey marks a connection's context with whether it has carried a chat request yet.
type chatConnKey struct{}

func (f *fakeUpstream) server() *http.Server {
	return &http.Server{
		Handler:           f,
		ReadHeaderTimeout: 10 * time.Second,
		ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
			return context.WithValue(ctx, chatConnKey{}, new(atomic.Bool))
		},
	}
}

// streamLen is the number of body bytes of one stream.
func (f *fakeUpstream) streamLen() int {
	n := len(f.tail)
	for _, e := range f.events {
		n += len(e)
	}
	return n
}

// streamBody is one stream's body bytes, as a client reads them.
func (f *fakeUpstream) streamBody() []byte {
	b := make([]byte, 0, f.streamLen())
	for _, e := range f.events {
		b = append(b, e...)
	}
	return append(b, f.tail...)
}

func (f *fakeUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ollama, saif := false, false
	switch {
	case r.URL.Path == "/v1/chat/completions" && r.Method == http.MethodPost:
	case r.URL.Path == "/api/chat" && r.Method == http.MethodPost:
		ollama = true
	case r.URL.Path == "/v1/completions" && r.Method == http.MethodPost:
		saif = true
	case r.URL.Path == "/stats":
		fmt.Fprintf(w, "{\"connections\":%d}\n", f.conns.Load())
		return
	case r.URL.Path == "/api/tags": // an ollama target's health check
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = io.WriteString(w, `{"models":[{"name":"fake-model","model":"fake-model","size":1}]}`)
		return
	case r.URL.Path == "/v1/health": // a saif target's health check
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"ok","loaded":["webapp"]}`)
		return
	case r.URL.Path == "/v1/models":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"fake-model","object":"model","created":1764460800,"owned_by":"bench"}]}`)
		return
	default:
		http.NotFound(w, r)
		return
	}
	if chatted, ok := r.Context().Value(chatConnKey{}).(*atomic.Bool); ok && !chatted.Swap(true) {
		f.conns.Add(1)
	}
	bp := f.bufs.Get().(*[]byte)
	body, err := readAll(r.Body, (*bp)[:0])
	stream := wantsStream(body)
	if bytes.Contains(body, closeMarker) {
		w.Header().Set("Connection", "close") // the proxy's next request needs a new connection
	}
	*bp = body[:0]
	f.bufs.Put(bp)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h := w.Header()
	if ollama {
		f.ollama.serve(r.Context(), w, stream)
		return
	}
	if saif {
		f.saif.serve(r.Context(), w, stream)
		return
	}
	if !stream {
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(f.chat)))
		_, _ = w.Write(f.chat)
		return
	}
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	f.stream(r.Context(), w)
}

// stream writes the events, each flushed on its own as a model's tokens are. Slow streams keep an
// absolute schedule (event k at start + k·interval) so that the client can tell a held-back event
// from timer drift.
func (f *fakeUpstream) stream(ctx context.Context, w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	start := time.Now()
	var timer *time.Timer
	for i, ev := range f.events {
		if f.interval > 0 && i > 0 {
			d := time.Until(start.Add(time.Duration(i) * f.interval))
			if timer == nil {
				timer = time.NewTimer(d)
				defer timer.Stop()
			} else {
				timer.Reset(d)
			}
			select {
			case <-timer.C:
			case <-ctx.Done():
				return
			}
		}
		if _, err := w.Write(ev); err != nil {
			return
		}
		if i == len(f.events)-1 {
			_, _ = w.Write(f.tail)
		}
		if rc.Flush() != nil {
			return
		}
	}
}

func readAll(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// closeMarker in a body asks the fake upstream to close the connection after its answer (see
// closingBody).
var closeMarker = []byte(`"user":"bench-close-after"`)

// closingBody is body with closeMarker as its first member.
func closingBody(body []byte) []byte {
	return append(append(append([]byte{'{'}, closeMarker...), ','), body[1:]...)
}

// wantsStream reports whether a chat body asks for a stream. The gateway passes the client's
// bytes through, so a scan for the member is enough and keeps the fake upstream cheap.
func wantsStream(body []byte) bool {
	i := bytes.Index(body, []byte(`"stream"`))
	if i < 0 {
		return false
	}
	rest := bytes.TrimLeft(body[i+len(`"stream"`):], " \t\r\n")
	if len(rest) == 0 || rest[0] != ':' {
		return false
	}
	return bytes.HasPrefix(bytes.TrimLeft(rest[1:], " \t\r\n"), []byte("true"))
}

// startUpstream re-executes this binary as the fake upstream and returns its two base addresses.
func startUpstream(spec upstreamSpec, logDir string) (*proc, string, string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, "", "", err
	}
	p, err := startProc("upstream", exe, spec.args(), []string{roleEnv + "=" + roleUpstream}, logDir)
	if err != nil {
		return nil, "", "", err
	}
	line, err := bufio.NewReader(p.stdout).ReadString('\n')
	if err != nil {
		p.stop()
		return nil, "", "", fmt.Errorf("fake upstream did not start: %w (see %s)", err, p.logPath)
	}
	var fast, slow string
	if _, err := fmt.Sscanf(line, "fast=%s slow=%s", &fast, &slow); err != nil {
		p.stop()
		return nil, "", "", fmt.Errorf("fake upstream said %q: %w", line, err)
	}
	return p, fast, slow, nil
}
