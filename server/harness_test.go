package server_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/health"
	"github.com/hayula/gateway/server"
)

// Which tests call t.Parallel: the package's tests under -race take minutes, most of them in a
// few that move tens of MiB or walk hundreds of cases; run one after another, they left one of
// CI's two cores idle. A test may run in parallel when it builds its own gateway, upstreams and
// listeners (newGateway, newFake, rawServe: loopback, port 0), shares no mutable package-level
// state, and proves nothing by a process-wide figure or a timing. Go runs a package's parallel
// tests only once its last sequential top-level test has ended (t.Parallel: "in parallel with
// (and only with) other parallel tests"), so a test that must have the process to itself stays
// sequential: one that checks every goroutine (goleak.VerifyNone, runtime.NumGoroutine), open
// descriptors (TestChaosSoak), the bytes or allocations of the whole process (allocBytes,
// testing.AllocsPerRun), one that uses t.Setenv, and one whose proof rests on a wait that a
// busy core could stretch (TestFaultSlowReaderHoldsBackUpstream's second of stillness).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fake is an upstream whose behaviour a test can flip mid-run.
type fake struct {
	name    string
	srv     *httptest.Server
	hits    atomic.Int64
	mu      sync.Mutex
	handler http.HandlerFunc
	bodies  [][]byte
	headers []http.Header
}

func newFake(t *testing.T, name string) *fake {
	t.Helper()
	f := &fake{name: name}
	f.handler = okHandler(name)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.hits.Add(1)
		f.mu.Lock()
		f.bodies = append(f.bodies, b)
		f.headers = append(f.headers, r.Header.Clone())
		h := f.handler
		f.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		h(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) set(h http.HandlerFunc) {
	f.mu.Lock()
	f.handler = h
	f.mu.Unlock()
}

func (f *fake) lastBody(t *testing.T) map[string]any {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.bodies) == 0 {
		t.Fatalf("%s got no request", f.name)
	}
	var m map[string]any
	if err := json.Unmarshal(f.bodies[len(f.bodies)-1], &m); err != nil {
		t.Fatalf("%s got invalid JSON: %v", f.name, err)
	}
	return m
}

func (f *fake) url() string { return f.srv.URL + "/v1" }

// okHandler answers a chat completion (or a stream) that names the backend.
func okHandler(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if strings.HasSuffix(r.URL.Path, "/embeddings") {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,0.25]}],"model":%q,"usage":{"prompt_tokens":1,"total_tokens":1}}`, req.Model)
			return
		}
		if req.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
			for i, word := range []string{"hello", " from", " " + name} {
				delta := fmt.Sprintf(`{"content":%q}`, word)
				if i == 0 {
					delta = fmt.Sprintf(`{"role":"assistant","content":%q}`, word)
				}
				fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", req.Model, delta)
				w.(http.Flusher).Flush()
			}
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n", req.Model)
			fmt.Fprint(w, "data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"hello from %s"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6}}`, req.Model, name)
	}
}

// bigBodyOK answers a chat completion, as okHandler does unstreamed, without decoding the
// request: for tests whose requests are tens of MiB, which okHandler's decoding took seconds of
// under -race only to learn the model's name and that the request does not stream.
func bigBodyOK(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hello from %s"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6}}`, name)
	}
}

func errHandler(status int, code, msg string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":%q,"type":"upstream_test","param":null,"code":%q}}`, msg, code)
	}
}

// gateway is a gateway under test behind a real listener.
type gateway struct {
	srv   *server.Server
	ts    *live
	clock *health.ManualClock
}

type gwOption func(*server.Options)

func newGateway(t *testing.T, cfgText string, env map[string]string, opts ...gwOption) *gateway {
	t.Helper()
	cfg, err := config.Parse([]byte(cfgText), "test.toml", func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	clock := health.NewManualClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	o := server.Options{Config: cfg, Clock: clock, RetryBase: time.Millisecond, RetryMax: 50 * time.Millisecond,
		Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() }}
	for _, f := range opts {
		f(&o)
	}
	s, err := server.New(o)
	if err != nil {
		t.Fatalf("server: %v", err)
	}
	ts := serveLive(t, s.Handler())
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	return &gateway{srv: s, ts: ts, clock: clock}
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("reply is not JSON: %v: %s", err, r.body)
	}
	return m
}

// errorField returns error.<field> of an OpenAI-shaped error reply, failing on any other shape.
func (r reply) errorField(t *testing.T, field string) any {
	t.Helper()
	var e struct {
		Error map[string]any `json:"error"`
	}
	if err := json.Unmarshal(r.body, &e); err != nil || e.Error == nil {
		t.Fatalf("not an OpenAI error (status %d): %s", r.status, r.body)
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := e.Error[k]; !ok {
			t.Fatalf("error object lacks %q: %s", k, r.body)
		}
	}
	return e.Error[field]
}

func (g *gateway) post(t *testing.T, path, body string, hdr ...string) reply {
	t.Helper()
	return g.do(t, http.MethodPost, path, body, append([]string{"Content-Type", "application/json"}, hdr...)...)
}

// do sends method to path with body and the header pairs hdr, and reads the whole answer.
func (g *gateway) do(t *testing.T, method, path, body string, hdr ...string) reply {
	t.Helper()
	req, err := http.NewRequest(method, g.ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1] // net/http sends req.Host, not a Host field
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return g.send(t, req)
}

// openStream posts body to g's /v1/chat/completions with the header pairs hdr and reads the
// answer's first line; hangUp cancels the request and closes the answer, as a client that leaves.
func (g *gateway) openStream(t *testing.T, body string, hdr ...string) (hangUp func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.ts.URL+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := g.ts.Client().Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		cancel()
		resp.Body.Close()
		t.Fatalf("reading the stream's first line: %v", err)
	}
	return func() {
		cancel()
		resp.Body.Close()
	}
}

// send sends req, built for g.ts.URL, and reads the whole answer.
func (g *gateway) send(t *testing.T, req *http.Request) reply {
	t.Helper()
	resp, err := g.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

func (g *gateway) chat(t *testing.T, model string, hdr ...string) reply {
	t.Helper()
	return g.post(t, "/v1/chat/completions",
		fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hi there"}]}`, model), hdr...)
}

// target renders one [targets.NAME] block.
func target(name, url, class string, extra ...string) string {
	s := fmt.Sprintf("[targets.%s]\nadapter = \"openai\"\nurl = %q\nclass = %q\n", name, url, class)
	for _, e := range extra {
		s += e + "\n"
	}
	return s + "\n"
}

func sha256hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func decodeJSON(resp *http.Response, v any) error {
	return json.NewDecoder(resp.Body).Decode(v)
}

func mustTarget(t *testing.T, g *gateway, name string) *core.Target {
	t.Helper()
	tg, ok := g.srv.Config().Target(name)
	if !ok {
		t.Fatalf("no target %s", name)
	}
	return tg
}

// waitRelease makes a fake upstream's handler wait for release (a value on it, or its closing)
// or for its client, the gateway, to go away, whichever comes first; it reports whether release
// came.
// A handler that waits on release alone never returns once the test fails before releasing it:
// httptest.Server.Close, in the test's cleanup, then waits for that handler for ever, and the
// run hangs until go test's timeout with the failure never reported. With the context, the
// gateway's cleanup closing the client connections ends the handler (as stalledStream does).
func waitRelease(r *http.Request, release <-chan struct{}) bool {
	select {
	case <-release:
		return true
	case <-r.Context().Done():
		return false
	}
}

// settles waits for cond to hold: for what the server does after the client has its answer
// (the in-flight counts end after the answer is flushed), or a process does in its own time.
// The caller then checks the state itself, so a cond that never holds fails there, with its
// own message. The bound only ends a wait that would otherwise hang: a process's exit or a
// scrape under -race on a busy 2-core machine can take seconds, so it is a minute, not the two
// seconds it was.
func settles(cond func() bool) {
	for deadline := time.Now().Add(time.Minute); !cond() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
}

// parseText is text as a config file of the tests, which names no environment variable.
func parseText(t *testing.T, text string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(text), "test.toml", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// newServerWith is server.New(o), closed when the test ends.
func newServerWith(t *testing.T, o server.Options) *server.Server {
	t.Helper()
	s, err := server.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// reloadConfig is a gateway with route r and, when extra, route r2, over one target that the
// tests' holdingUpstream answers.
func reloadConfig(t *testing.T, extra bool) *config.Config {
	t.Helper()
	text := target("m", "http://127.0.0.1:1/v1", "private") + "[routes.r]\ntargets = [\"m\"]\n"
	if extra {
		text += "[routes.r2]\ntargets = [\"m\"]\n"
	}
	return parseText(t, text)
}

func newReloadServer(t *testing.T, cfg *config.Config, up server.Upstream, prev *server.Server) *server.Server {
	t.Helper()
	s, err := server.New(server.Options{Config: cfg, Upstream: up, Previous: prev})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// openHeldStream starts a streamed chat on model through h and returns the answer once its first
// event has come.
func openHeldStream(t *testing.T, h *live, model string) (*http.Response, *bufio.Reader, []byte) {
	t.Helper()
	resp, err := h.Client().Post(h.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"`+model+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	br := bufio.NewReader(resp.Body)
	var head []byte
	for !bytes.HasSuffix(head, []byte("\n\n")) {
		b, err := br.ReadByte()
		if err != nil {
			t.Fatalf("reading the first event: %v (%q)", err, head)
		}
		head = append(head, b)
	}
	return resp, br, head
}
