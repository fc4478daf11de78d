package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/server"
)

// chaosUpstream misbehaves at random: each request draws one behaviour.
type chaosUpstream struct {
	ollama bool // speaks Ollama's native API, not OpenAI's
	srv    *httptest.Server
	quit   chan struct{}
	mu     sync.Mutex
	rng    *rand.Rand
	conns  atomic.Int64 // open connections
	seen   sync.Map
	hist   [nChaos]atomic.Int64
}

const (
	cOK = iota
	cResetHead
	cResetBody
	cStallHead
	cStallBody
	cGarbage
	c500
	c429
	c503loading
	c413
	cSlow
	cCloseKA
	cGarbageMid
	cIdleClose // a whole answer, then the connection closed a moment later without a word
	cBadChunk  // a chunked stream whose chunk size is garbage
	cShortCL   // a Content-Length longer than the body, then silence
	c1xx       // an informational 103 before the answer
	cExtra     // a whole answer followed by an unsolicited second one on the same connection
	cHTTP10    // an HTTP/1.0 answer that ends when the connection closes
	cEmpty200  // a 200 with an empty body
	cBothLen   // Content-Length and Transfer-Encoding: chunked together
	nChaos
)

func newChaos(t *testing.T, seed uint64) *chaosUpstream {
	u := &chaosUpstream{quit: make(chan struct{}), rng: rand.New(rand.NewPCG(seed, seed))}
	u.srv = httptest.NewUnstartedServer(http.HandlerFunc(u.serve))
	u.srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			u.conns.Add(1)
		case http.StateClosed, http.StateHijacked:
			if _, loaded := u.seen.LoadOrStore(c, true); !loaded {
				u.conns.Add(-1)
			}
		}
	}
	u.srv.Start()
	t.Cleanup(func() {
		select {
		case <-u.quit:
		default:
			close(u.quit)
		}
		u.srv.CloseClientConnections()
		u.srv.Close()
	})
	return u
}

func (u *chaosUpstream) pick() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.rng.IntN(3) == 0 {
		return cOK
	}
	return u.rng.IntN(nChaos)
}

func (u *chaosUpstream) rng2() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.rng.IntN(1000)
}

func (u *chaosUpstream) wait(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-u.quit:
	case <-time.After(d):
	}
}

func resetConn(w http.ResponseWriter, partial string) {
	c, bw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if partial != "" {
		_, _ = bw.WriteString(partial)
		_ = bw.Flush()
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

func (u *chaosUpstream) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"list","data":[]}`)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	_ = json.Unmarshal(body, &req)
	b := u.pick()
	u.hist[b].Add(1)
	ctx := r.Context()
	switch b {
	case cResetHead:
		resetConn(w, "HTTP/1.1 200 OK\r\nContent-Ty")
		return
	case cResetBody:
		if req.Stream {
			resetConn(w, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"+chaosChunk(chatChunk(req.Model, "hi")))
		} else {
			resetConn(w, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{\"id\":\"x\",")
		}
		return
	case cStallHead:
		u.wait(ctx, 2*time.Second)
		return
	case cGarbage:
		resetConn(w, "SSH-2.0-OpenSSH_9.6\r\n\r\nnot http at all\x00\x01")
		return
	case c500:
		errHandler(500, "internal", "boom")(w, r)
		return
	case c429:
		w.Header().Set("Retry-After", "1")
		errHandler(429, "rate_limited", "slow down")(w, r)
		return
	case c503loading:
		errHandler(503, "model_loading", "Loading model")(w, r)
		return
	case c413:
		errHandler(413, "too_large", "payload too large")(w, r)
		return
	case cSlow:
		u.wait(ctx, 150*time.Millisecond)
	case cCloseKA:
		w.Header().Set("Connection", "close")
	case cIdleClose:
		c, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		var out string
		if req.Stream {
			out = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s"
			ev := chatChunk(req.Model, "hi") + "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
			out = fmt.Sprintf(out, len(ev), ev)
		} else {
			b := fmt.Sprintf(`{"id":"c1","object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`, req.Model)
			if strings.HasSuffix(r.URL.Path, "/embeddings") {
				b = `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1]}],"model":"m"}`
			} else if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
				b = `{"id":"t1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"hi","finish_reason":"stop","logprobs":null}]}`
			}
			out = fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(b), b)
		}
		_, _ = bw.WriteString(out)
		_ = bw.Flush()
		u.wait(ctx, time.Duration(u.rng2()%30)*time.Millisecond)
		_ = c.Close()
		return
	case cBadChunk:
		resetConn(w, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"+
			chaosChunk(chatChunk(req.Model, "hi"))+"zz\r\nbogus\r\n")
		return
	case cShortCL:
		c, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		_, _ = bw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"id\":\"c1\",")
		_ = bw.Flush()
		u.wait(ctx, 2*time.Second)
		_ = c.Close()
		return
	case cExtra:
		c, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		b := fmt.Sprintf(`{"id":"c1","object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`, req.Model)
		if req.Stream || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			resetConn(w, "")
			_ = c.Close()
			return
		}
		// One write: bytes that come later, after the gateway sent its next request on the
		// connection, cannot be told from that request's answer (nor can net/http tell them).
		leak := `{"id":"LEAK","object":"chat.completion","created":1,"model":"LEAK","choices":[{"index":0,"message":{"role":"assistant","content":"LEAK"},"finish_reason":"stop"}]}`
		_, _ = fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(b), b)
		_, _ = fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(leak), leak)
		_ = bw.Flush()
		u.wait(ctx, 2*time.Second)
		_ = c.Close()
		return
	case cHTTP10:
		c, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		if req.Stream && !u.ollama {
			_, _ = bw.WriteString("HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + chatChunk(req.Model, "hi") +
				"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
		} else {
			_, _ = bw.WriteString("HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"id\":\"c1\",\"object\":\"chat.completion\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}")
		}
		_ = bw.Flush()
		_ = c.Close()
		return
	case cEmpty200:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "0")
		return
	case cBothLen:
		c, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		_, _ = bw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n" +
			chaosChunk(`{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`) + "0\r\n\r\n")
		_ = bw.Flush()
		u.wait(ctx, 100*time.Millisecond)
		_ = c.Close()
		return
	case c1xx:
		w.Header().Set("Link", "</x>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
	}
	u.answer(w, r, req.Model, req.Stream, b)
}

func chaosChunk(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }

func chatChunk(model, word string) string {
	return fmt.Sprintf("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", model, word)
}

func (u *chaosUpstream) answer(w http.ResponseWriter, r *http.Request, model string, stream bool, b int) {
	ctx := r.Context()
	if u.ollama {
		w.Header().Set("Content-Type", "application/x-ndjson")
		if strings.HasSuffix(r.URL.Path, "/api/embed") {
			fmt.Fprintf(w, `{"model":%q,"embeddings":[[0.1,0.2]]}`, model)
			return
		}
		if !stream {
			fmt.Fprintf(w, `{"model":%q,"created_at":"2026-11-30T12:00:00Z","message":{"role":"assistant","content":"hi"},"done":true,"done_reason":"stop","prompt_eval_count":3,"eval_count":1}`, model)
			return
		}
		for i := 0; i < 4; i++ {
			fmt.Fprintf(w, "{\"model\":%q,\"created_at\":\"2026-11-30T12:00:00Z\",\"message\":{\"role\":\"assistant\",\"content\":\"w%d \"},\"done\":false}\n", model, i)
			w.(http.Flusher).Flush()
			if i == 1 {
				switch b {
				case cStallBody:
					u.wait(ctx, 2*time.Second)
					return
				case cGarbageMid:
					fmt.Fprint(w, "{not json\n")
					w.(http.Flusher).Flush()
				}
			}
		}
		fmt.Fprintf(w, "{\"model\":%q,\"created_at\":\"2026-11-30T12:00:00Z\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"done_reason\":\"stop\",\"prompt_eval_count\":3,\"eval_count\":4}\n", model)
		return
	}
	switch {
	case strings.HasSuffix(r.URL.Path, "/embeddings"):
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]}],"model":%q,"usage":{"prompt_tokens":1,"total_tokens":1}}`, model)
		return
	case strings.HasSuffix(r.URL.Path, "/completions") && !strings.HasSuffix(r.URL.Path, "/chat/completions"):
		if stream {
			w.Header().Set("Content-Type", "text/event-stream")
			for i := 0; i < 3; i++ {
				fmt.Fprintf(w, "data: {\"id\":\"t1\",\"object\":\"text_completion\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"text\":\"w%d\",\"finish_reason\":null,\"logprobs\":null}]}\n\n", model, i)
				w.(http.Flusher).Flush()
			}
			fmt.Fprint(w, "data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"t1","object":"text_completion","created":1,"model":%q,"choices":[{"index":0,"text":"hi","finish_reason":"stop","logprobs":null}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, model)
		return
	}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6}}`, model)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for i := 0; i < 4; i++ {
		fmt.Fprint(w, chatChunk(model, fmt.Sprintf("w%d ", i)))
		w.(http.Flusher).Flush()
		if i == 1 {
			switch b {
			case cStallBody:
				u.wait(ctx, 2*time.Second)
				return
			case cGarbageMid:
				fmt.Fprint(w, "data: {not json\n\n")
				w.(http.Flusher).Flush()
			}
		}
	}
	fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n", model)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// countFDs counts the process's open descriptors, less the sockets whose peer has closed
// (CLOSE_WAIT): the upstream client's pool keeps such a connection, bounded by its size, until
// it is taken (and found closed) or its idle timeout ends.
func countFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	closeWait := map[string]bool{}
	for _, f := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		b, _ := os.ReadFile(f)
		for _, l := range strings.Split(string(b), "\n")[1:] {
			if fs := strings.Fields(l); len(fs) > 9 && fs[3] == "08" {
				closeWait["socket:["+fs[9]+"]"] = true
			}
		}
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && closeWait[l] {
			continue
		}
		n++
	}
	return n
}

// TestChaosSoak runs the gateway in front of upstreams that misbehave at random, under clients
// that cancel or stop reading at random, and checks that every answer is well formed and that
// nothing is left behind.
func TestChaosSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak")
	}
	// A few seconds catch what the soak was written for; CHAOS_DURATION=60s is the long run.
	dur := 4 * time.Second
	if d, err := time.ParseDuration(os.Getenv("CHAOS_DURATION")); err == nil {
		dur = d
	}
	ups := []*chaosUpstream{newChaos(t, 1), newChaos(t, 2), newChaos(t, 3), newChaos(t, 4)}
	ups[3].ollama = true
	// gate answers the route no chaos client asks for, for the caps' check after the run: each
	// request is announced on arrived and held until release is closed.
	gate := newFake(t, "gate")
	arrived, release := make(chan struct{}, 8), make(chan struct{})
	gate.set(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default: // the rpm check's requests: nobody waits for them
		}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		okHandler("gate")(w, r)
	})
	refused, _ := net.Listen("tcp", "127.0.0.1:0")
	refusedURL := "http://" + refused.Addr().String() + "/v1"
	refused.Close()
	tgt := func(name, url string, retries int) string {
		return target(name, url, "private", `timeout = "300ms"`, `idle_timeout = "300ms"`, `health_interval = "0s"`,
			fmt.Sprintf("max_retries = %d", retries))
	}
	cfgText := tgt("a", ups[0].srv.URL+"/v1", 1) + tgt("b", ups[1].srv.URL+"/v1", 0) + tgt("c", ups[2].srv.URL+"/v1", 0) +
		tgt("dead", refusedURL, 1) + strings.Replace(tgt("o", ups[3].srv.URL, 1), `"openai"`, `"ollama"`, 1) +
		"[routes.chain]\ntargets = [\"dead\", \"a\", \"b\", \"c\"]\n" +
		"[routes.solo]\ntargets = [\"b\"]\n" +
		"[routes.ollama]\ntargets = [\"o\", \"c\"]\n" +
		target("gate", gate.url(), "private") + "[routes.hold]\ntargets = [\"gate\"]\n" +
		keyBlock("free", chaosFree) + keyBlock("conc", chaosConc, fmt.Sprintf("max_concurrent = %d", chaosMaxConc)) +
		keyBlock("rpm", chaosRPM, fmt.Sprintf("rpm = %d", chaosRPMLimit))
	cfg, err := config.Parse([]byte(cfgText), "chaos.toml", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	clock := &shiftClock{}
	s, err := server.New(server.Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		RetryBase: time.Millisecond, RetryMax: 20 * time.Millisecond, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	// serveLive's, with the h1 server's own log (a panic that escaped the handler) kept too.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(context.Background())
	ts := &live{URL: "http://" + ln.Addr().String(), stop: stop, done: make(chan error, 1),
		client: &http.Client{Transport: &keyedTransport{base: &http.Transport{MaxIdleConnsPerHost: 16}, token: chaosFree}}}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	go func() { ts.done <- server.Serve(sctx, ln, s.Handler(), 5*time.Second, logger) }()
	t.Cleanup(func() { ts.Close(); s.Close() })

	runtime.GC()
	baseG, baseFD := runtime.NumGoroutine(), countFDs()

	var (
		bad       sync.Map
		nOK       atomic.Int64
		nErr      atomic.Int64
		nCanceled atomic.Int64
		nStall    atomic.Int64
	)
	heads := &headCount{n: map[string]int64{}}
	var shutting, listenerGone atomic.Bool
	fail := func(kind, msg string) {
		// While the gateway shuts down, a refused or cut connection is the expected end.
		if shutting.Load() && strings.HasPrefix(kind, "conn ") {
			if strings.Contains(msg, "connection refused") {
				listenerGone.Store(true)
			}
			return
		}
		bad.LoadOrStore(kind+": "+msg, true)
	}
	deadline := time.Now().Add(dur)
	// The run lasts dur and, past it, until both caps have refused something (up to a minute
	// more): what the rpm key's four clients send in 4 s depends on the machine, and under
	// -race at GOMAXPROCS=1 beside other tests it was under the 30 a minute (no rpm 429, 3 runs
	// in 18). On a machine that hits both caps within dur, nothing changes.
	capsHit := func() bool { return heads.conc429.Load() > 0 && heads.rpm429.Load() > 0 }
	capsBy := deadline.Add(time.Minute)
	var stopClients atomic.Bool
	var wg sync.WaitGroup
	startClients := func(seed int) {
		for i := seed; i < seed+32; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(i), 99))
				// Most clients share a key without caps; some share the one whose
				// max_concurrent they outnumber, a few the one whose rpm they outrun.
				token := chaosFree
				switch i % 8 {
				case 0:
					token = chaosRPM
				case 1, 2:
					token = chaosConc
				}
				hc := &http.Client{Transport: &keyedTransport{base: &http.Transport{MaxIdleConnsPerHost: 4}, token: token, heads: heads, fail: fail}}
				defer hc.CloseIdleConnections()
				sdk := openai.NewClient(option.WithBaseURL(ts.URL+"/v1/"), option.WithAPIKey(token),
					option.WithHTTPClient(hc), option.WithMaxRetries(0))
				// Once a dial was refused the gateway's port is free, and on a machine where other
				// processes take ports all the time the next dial may reach a stranger that never
				// answers: the clients stop there, as the calls under way at the close are the ones
				// the shutdown is held to.
				for (time.Now().Before(deadline) || !capsHit() && time.Now().Before(capsBy)) && !stopClients.Load() && !listenerGone.Load() {
					model := "chain"
					switch rng.IntN(4) {
					case 0:
						model = "solo"
					case 1:
						model = "ollama"
					}
					ctx, cancel := context.WithCancel(context.Background())
					var cancelAt time.Duration
					if rng.IntN(5) == 0 {
						cancelAt = time.Duration(rng.IntN(400)) * time.Millisecond
						time.AfterFunc(cancelAt, cancel)
					}
					stall := rng.IntN(20) == 0
					if rng.IntN(25) == 0 {
						heads.none.Add(1) // the server may count it (a 499, most often), the client sees nothing
						rudeClient(ts.URL, token, rng)
						cancel()
						continue
					}
					switch rng.IntN(7) {
					case 0:
						got, err := sdk.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model,
							Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
						classifySDK(err, ctx, got != nil && len(got.Choices) > 0, got != nil && got.ID == "LEAK", fail, &nOK, &nErr, &nCanceled, "sdk chat")
					case 1:
						st := sdk.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: model,
							Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
						n := 0
						for st.Next() {
							n++
						}
						classifySDK(st.Err(), ctx, true, false, fail, &nOK, &nErr, &nCanceled, "sdk stream")
						st.Close()
					default:
						paths := []struct{ path, body string }{
							{"/v1/chat/completions", `{"model":%q,"messages":[{"role":"user","content":"hi"}]}`},
							{"/v1/chat/completions", `{"model":%q,"stream":true,"messages":[{"role":"user","content":"hi"}]}`},
							{"/v1/completions", `{"model":%q,"prompt":"hi"}`},
							{"/v1/completions", `{"model":%q,"prompt":"hi","stream":true}`},
							{"/v1/embeddings", `{"model":%q,"input":"hi"}`},
							{"/v1/route/explain", `{"model":%q,"messages":[{"role":"user","content":"hi"}]}`},
						}
						p := paths[rng.IntN(len(paths))]
						rawRequest(ctx, hc, ts.URL+p.path, fmt.Sprintf(p.body, model), stall, fail, &nOK, &nErr, &nCanceled, &nStall)
					}
					cancel()
				}
			}()
		}
	}
	stopScrapes := make(chan struct{})
	var scrapers sync.WaitGroup
	var nScrapes atomic.Int64
	for range 3 {
		scrapers.Add(1)
		go func() {
			defer scrapers.Done()
			scrapeDuring(ts.URL, stopScrapes, &nScrapes, fail)
		}()
	}
	startClients(0)
	wg.Wait()
	close(stopScrapes)
	scrapers.Wait()
	if nScrapes.Load() == 0 {
		t.Error("no scrape of /metrics during the run")
	}
	t.Logf("ok %d, errors %d, cancelled %d, stalled %d; scrapes %d; 429 for max_concurrent %d, for rpm %d",
		nOK.Load(), nErr.Load(), nCanceled.Load(), nStall.Load(), nScrapes.Load(), heads.conc429.Load(), heads.rpm429.Load())
	// The caps were hit, each by its own key only (keyedTransport fails a cap's 429 on another key).
	if heads.conc429.Load() == 0 || heads.rpm429.Load() == 0 {
		t.Errorf("the caps were not hit: 429 for max_concurrent %d, for rpm %d", heads.conc429.Load(), heads.rpm429.Load())
	}
	for _, u := range ups {
		var h []int64
		for i := range nChaos {
			h = append(h, u.hist[i].Load())
		}
		t.Logf("upstream behaviours %v, open conns %d", h, u.conns.Load())
	}
	bad.Range(func(k, _ any) bool {
		t.Errorf("%s", k)
		return true
	})

	// Everything settles within the timeouts (300 ms) plus the sweeper's ticks; the bound is
	// loose for a slow or busy CI machine (the loop ends as soon as it has settled).
	settle := time.Now().Add(15 * time.Second)
	var g, fd int
	var inflight map[string]int64
	for {
		ts.Client().CloseIdleConnections()
		runtime.GC()
		g, fd = runtime.NumGoroutine(), countFDs()
		inflight = explainInFlight(t, ts.Client(), ts.URL)
		ts.Client().CloseIdleConnections()
		busy := int64(0)
		for _, n := range inflight {
			busy += n
		}
		var upConns int64
		for _, u := range ups {
			upConns += u.conns.Load()
		}
		// Each pooled upstream connection holds one goroutine (the upstream's server) and two fds
		// (both ends, in this one process).
		if busy == 0 && g <= baseG+int(upConns) && fd <= baseFD+2*int(upConns) {
			t.Logf("settled: goroutines %d (base %d), fds %d (base %d), upstream conns %d", g, baseG, fd, baseFD, upConns)
			// The pool keeps no more connections than were ever busy at once: one per client.
			if upConns > 32 {
				t.Errorf("the upstreams have %d connections open for 32 clients", upConns)
			}
			if os.Getenv("CHAOS_STACKS") != "" {
				buf := make([]byte, 1<<20)
				t.Logf("%s", buf[:runtime.Stack(buf, true)])
			}
			break
		}
		if time.Now().After(settle) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("not settled: goroutines %d (base %d), fds %d (base %d), upstream conns %d, in flight %v\n%s",
				g, baseG, fd, baseFD, upConns, inflight, buf[:n])
		}
		time.Sleep(50 * time.Millisecond)
	}
	checkMetricsAfter(t, ts.URL, heads)
	checkCapsAfter(t, ts.URL, clock, arrived, release)

	// A shutdown under load: Serve drains what is in flight (5 s of grace) and every client's
	// call returns, answered or cut.
	shutting.Store(true)
	deadline = time.Now().Add(time.Minute)
	startClients(1000)
	for n := nOK.Load() + nErr.Load(); nOK.Load()+nErr.Load() < n+32; {
		time.Sleep(10 * time.Millisecond) // until the clients are under way
	}
	began := time.Now()
	// A shutdown that overruns its bound is seen rarely (once, 2m2s, in some 40 runs under
	// load) and not on demand: the goroutines' stacks at the bound are what the next one needs.
	var hung atomic.Pointer[[]byte]
	trap := time.AfterFunc(15*time.Second, func() {
		buf := make([]byte, 4<<20)
		buf = buf[:runtime.Stack(buf, true)]
		hung.Store(&buf)
	})
	ts.Close()
	stopClients.Store(true)
	wg.Wait()
	trap.Stop()
	t.Logf("shutdown under load: %v", time.Since(began))
	// Not hanging: the grace is 5 s, and a slow or busy CI machine gets room above it.
	if d := time.Since(began); d > 15*time.Second {
		var stacks []byte
		if p := hung.Load(); p != nil {
			stacks = *p
		}
		t.Errorf("shutdown and the clients' last calls took %v; the goroutines at 15 s:\n%s", d, stacks)
	}
	bad.Range(func(k, _ any) bool {
		t.Errorf("during shutdown: %s", k)
		bad.Delete(k)
		return true
	})
	if l := logs.String(); strings.Contains(l, "panic") {
		t.Errorf("a panic was logged:\n%s", grepLines(l, "panic"))
	}
}

func grepLines(s, word string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func explainInFlight(t *testing.T, hc *http.Client, base string) map[string]int64 {
	t.Helper()
	m := map[string]int64{}
	for _, route := range []string{"chain", "ollama"} {
		resp, err := hc.Post(base+"/v1/route/explain", "application/json",
			strings.NewReader(`{"model":"`+route+`","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		var x struct {
			Candidates []struct {
				Name     string `json:"name"`
				InFlight int64  `json:"in_flight"`
			} `json:"candidates"`
		}
		err = json.NewDecoder(resp.Body).Decode(&x)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range x.Candidates {
			m[c.Name] = c.InFlight
		}
	}
	return m
}

func classifySDK(err error, ctx context.Context, shaped, leaked bool, fail func(string, string), nOK, nErr, nCanceled *atomic.Int64, kind string) {
	switch {
	case err == nil && leaked:
		fail(kind, "an answer meant for another request")
	case err == nil && shaped:
		nOK.Add(1)
	case err == nil:
		fail(kind, "empty answer")
	case ctx.Err() != nil:
		nCanceled.Add(1)
	default:
		var ae *openai.Error
		if errors.As(err, &ae) && ae.Code != "" && ae.Message != "" {
			nErr.Add(1)
			return
		}
		msg := err.Error()
		if strings.Contains(msg, "stream_interrupted") || strings.Contains(msg, "broke off") {
			nErr.Add(1)
			return
		}
		var ne net.Error
		if errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			kind = "conn " + kind
		}
		fail(kind, fmt.Sprintf("%T %v", err, err))
	}
}

func rawRequest(ctx context.Context, hc *http.Client, url, body string, stall bool, fail func(string, string), nOK, nErr, nCanceled, nStall *atomic.Int64) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			nCanceled.Add(1)
			return
		}
		fail("conn "+url, err.Error())
		return
	}
	defer resp.Body.Close()
	if stall {
		// Read nothing for a while: the gateway must not hold anything for it but this request.
		nStall.Add(1)
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var last string
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "data: ") {
				last = l
				if l != "data: [DONE]" && !json.Valid([]byte(l[len("data: "):])) {
					fail("raw stream "+url, "event not JSON: "+l)
				}
			}
		}
		if ctx.Err() != nil {
			nCanceled.Add(1)
			return
		}
		if err := sc.Err(); err != nil {
			fail("conn stream "+url, err.Error())
			return
		}
		switch {
		case last == "data: [DONE]":
			nOK.Add(1)
		case strings.HasPrefix(last, `data: {"error":`):
			nErr.Add(1)
		default:
			fail("raw stream "+url, "ends with "+last)
		}
		return
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		if ctx.Err() != nil {
			nCanceled.Add(1)
			return
		}
		fail("conn "+url, err.Error())
		return
	}
	if bytes.Contains(b, []byte("LEAK")) {
		fail("raw "+url, "an answer meant for another request: "+string(b))
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		fail("raw "+url, fmt.Sprintf("status %d not JSON: %q", resp.StatusCode, b))
		return
	}
	if resp.StatusCode == 200 {
		if _, ok := m["choices"]; ok {
			nOK.Add(1)
			return
		}
		if _, ok := m["data"]; ok {
			nOK.Add(1)
			return
		}
		if _, ok := m["candidates"]; ok {
			nOK.Add(1)
			return
		}
		fail("raw "+url, fmt.Sprintf("200 without choices: %s", b))
		return
	}
	e, _ := m["error"].(map[string]any)
	if e == nil || e["message"] == nil || e["type"] == nil {
		fail("raw "+url, fmt.Sprintf("status %d not an OpenAI error: %s", resp.StatusCode, b))
		return
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := e[k]; !ok {
			fail("raw "+url, fmt.Sprintf("status %d error lacks %s: %s", resp.StatusCode, k, b))
			return
		}
	}
	nErr.Add(1)
}

// rudeClient sends part of a request and hangs up, or sends a whole one and leaves at once.
func rudeClient(base, token string, rng *rand.Rand) {
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		return
	}
	defer c.Close()
	body := `{"model":"chain","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	full := "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token + "\r\nContent-Type: application/json\r\nContent-Length: " +
		fmt.Sprint(len(body)) + "\r\n\r\n" + body
	switch rng.IntN(3) {
	case 0: // cut inside the head
		_, _ = c.Write([]byte(full[:rng.IntN(60)+1]))
	case 1: // cut inside the body
		_, _ = c.Write([]byte(full[:len(full)-rng.IntN(len(body)-1)-1]))
	default: // the whole request, then gone before the answer
		_, _ = c.Write([]byte(full))
	}
	if tc, ok := c.(*net.TCPConn); ok && rng.IntN(2) == 0 {
		_ = tc.SetLinger(0)
	}
}
