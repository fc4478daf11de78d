package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/server"
	"github.com/hayula/gateway/upstream"
)

// Request bodies are read into buffers the server reuses (serveOp): concurrent requests, some
// of which fall through to a second target, must each reach their upstreams and come back
// with their own bytes.
func TestConcurrentRequestsKeepTheirBodies(t *testing.T) {
	g, saif, r1, _ := threeChain(t)
	echo := func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		content := req.Messages[0].Content
		if strings.HasSuffix(content, "-fail") {
			http.Error(w, `{"error":{"message":"down"}}`, http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}]}`, content)
	}
	saif.set(echo)
	r1.set(func(w http.ResponseWriter, r *http.Request) {
		// The fallback answers what it was sent, without the marker that failed it on saif.
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}]}`,
			strings.TrimSuffix(req.Messages[0].Content, "-fail"))
	})
	var wg sync.WaitGroup
	errs := make(chan error, 16*25)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				token := fmt.Sprintf("w%d-r%d-%s", w, i, strings.Repeat("p", (w*37+i*11)%3000))
				content := token
				if i%5 == 0 {
					content += "-fail"
				}
				body := fmt.Sprintf(`{"model":"saif","messages":[{"role":"user","content":%q}]}`, content)
				rep := g.post(t, "/v1/chat/completions", body)
				var got struct {
					Choices []struct{ Message struct{ Content string } }
				}
				if err := json.Unmarshal(rep.body, &got); err != nil || rep.status != 200 || len(got.Choices) != 1 {
					errs <- fmt.Errorf("%s: status %d: %.200s", token[:8], rep.status, rep.body)
					return
				}
				if cl := rep.header.Get("Content-Length"); cl != strconv.Itoa(len(rep.body)) {
					errs <- fmt.Errorf("%s: Content-Length %q for %d bytes", token[:8], cl, len(rep.body))
					return
				}
				if got.Choices[0].Message.Content != token {
					errs <- fmt.Errorf("sent %.20s…, got back %.20s…", token, got.Choices[0].Message.Content)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// recordingUpstream answers every attempt and keeps a copy of the request view it was given.
type recordingUpstream struct {
	mu   sync.Mutex
	seen []core.Request
}

func (u *recordingUpstream) Chat(_ context.Context, _ *core.Target, req *core.Request) (*upstream.Response, error) {
	// A deep copy: the view's byte slices are in the body's buffer, which the server reuses.
	c := *req
	c.Body = bytes.Clone(req.Body)
	c.Messages = slices.Clone(req.Messages)
	for i := range c.Messages {
		c.Messages[i].Content = bytes.Clone(c.Messages[i].Content)
		c.Messages[i].ToolCalls = bytes.Clone(c.Messages[i].ToolCalls)
	}
	for _, raw := range []*json.RawMessage{&c.Params.Stop, &c.Params.ResponseFormat, &c.Params.ToolsRaw, &c.Params.ToolChoice,
		&c.Params.Functions, &c.Params.FunctionCall} {
		*raw = bytes.Clone(*raw)
	}
	for _, p := range []**float64{&c.Params.Temperature, &c.Params.TopP} {
		if *p != nil {
			v := **p
			*p = &v
		}
	}
	if c.Params.Seed != nil {
		v := *c.Params.Seed
		c.Params.Seed = &v
	}
	u.mu.Lock()
	u.seen = append(u.seen, c)
	u.mu.Unlock()
	return &upstream.Response{Body: []byte(`{"id":"x","object":"chat.completion","choices":[]}`)}, nil
}

// The request views are built in state the server reuses: a request that sends nothing optional
// after one that sent everything must reach the upstream with nothing of the first.
func TestReusedStateLeaksNothing(t *testing.T) {
	up := &recordingUpstream{}
	g := newGateway(t, target("solo", "http://solo.invalid/v1", "private")+"[routes.solo]\ntargets = [\"solo\"]\n",
		nil, func(o *server.Options) { o.Upstream = up })
	full := `{"model":"solo","stream":false,"messages":[{"role":"system","content":"be brief"},` +
		`{"role":"user","content":"first","name":"ann"},{"role":"assistant","content":"ok","tool_calls":[]},` +
		`{"role":"tool","tool_call_id":"c1","content":"42"}],"max_tokens":77,"max_completion_tokens":66,` +
		`"temperature":0.5,"top_p":0.9,"seed":7,"stop":["x"],"response_format":{"type":"json_object"},` +
		`"x-fallback-on":false,"x-route-hint":"poetry","x-hayula-privacy":"strict","user":"ann"}`
	bare := `{"model":"solo","messages":[{"role":"user","content":"second"}]}`
	// Pairs, because which state a request gets from the pool is up to sync.Pool.
	const pairs = 10
	for range pairs {
		for _, b := range []string{full, bare} {
			if rep := g.post(t, "/v1/chat/completions", b); rep.status != 200 {
				t.Fatalf("status %d: %s", rep.status, rep.body)
			}
		}
	}
	// Under the lock: the race detector does not see the answer's writev(2) order the upstream's
	// append before the client's read, as it sees a write(2)'s.
	up.mu.Lock()
	seen := up.seen
	up.mu.Unlock()
	if len(seen) != 2*pairs {
		t.Fatalf("upstream saw %d requests, want %d", len(seen), 2*pairs)
	}
	at := strings.Index(bare, `"solo"`)
	want := core.Request{Model: "solo", Body: []byte(bare), ModelAt: [2]int{at, at + len(`"solo"`)}, NoStreamOptions: true, CountsUsage: true, // metrics on
		KnownMembers: true, Validated: true, Messages: []core.Message{{Role: "user", Content: json.RawMessage(`"second"`)}}}
	for i := 1; i < len(seen); i += 2 {
		if diff := cmp.Diff(want, seen[i]); diff != "" {
			t.Fatalf("request %d (-want +got):\n%s", i, diff)
		}
	}
	if first := seen[0]; first.Params.Temperature == nil || !first.NoFallback || first.RouteHint != "poetry" ||
		len(first.Messages) != 4 || first.KnownMembers {
		t.Errorf("the first request did not carry what it sent, so the test proves nothing: %+v", first)
	}
}
