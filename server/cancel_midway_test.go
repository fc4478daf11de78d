package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hayula/gateway/server"
	"github.com/hayula/gateway/upstream"
)

// TestStalledUpstreamReleased: a client that goes away while its upstream is stalled
// (headers, and for a stream a first event, sent, then nothing) ends the gateway's attempt: the
// upstream sees its request cancelled long before the target's idle_timeout (an hour there); and
// a client that waits gets its answer's end once idle_timeout (100 ms) has passed, the upstream
// connection closed. Both for every adapter, on chat and on the Responses bridge, streamed or
// whole; and on the legacy completions endpoint and embeddings where the adapter serves them.
// Through the gateway's own HTTP/1.1 client and through net/http's (an https:// or proxied
// target's). Nothing of the request is left running (goleak checks the goroutines).
func TestStalledUpstreamReleased(t *testing.T) {
	type stall struct {
		started chan struct{} // the upstream got the request
		gone    chan struct{} // its request's context was cancelled
	}
	stalled := func(s *stall, head func(w http.ResponseWriter, stream bool)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			head(w, strings.Contains(string(body), `"stream":true`))
			w.(http.Flusher).Flush()
			close(s.started)
			select {
			case <-r.Context().Done():
				close(s.gone)
			case <-time.After(30 * time.Second):
			}
		}
	}
	heads := map[string]func(w http.ResponseWriter, stream bool){
		"openai": func(w http.ResponseWriter, stream bool) {
			if stream {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}`+"\n\n")
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "1000")
			fmt.Fprint(w, `{"id":"c",`)
		},
		"ollama": func(w http.ResponseWriter, stream bool) {
			if stream {
				w.Header().Set("Content-Type", "application/x-ndjson")
				fmt.Fprint(w, `{"model":"m","created_at":"2026-11-30T12:00:00Z","message":{"role":"assistant","content":"hi"},"done":false}`+"\n")
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "1000")
			fmt.Fprint(w, `{"model":"m",`)
		},
		"saif": func(w http.ResponseWriter, stream bool) {
			if stream {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, `data: {"text":"Use ","specialist":"webapp"}`+"\n\n")
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "1000")
			fmt.Fprint(w, `{"id":"s1",`)
		},
	}
	for _, via := range []string{"h1", "net/http"} {
		for _, leave := range []bool{true, false} {
			for _, adapter := range []string{"openai", "ollama", "saif"} {
				for _, ep := range []string{"chat", "completions", "responses", "embeddings"} {
					if ep == "completions" && adapter == "ollama" || ep == "embeddings" && adapter == "saif" {
						continue // what the adapter does not serve (upstream.Serves)
					}
					for _, stream := range []bool{false, true} {
						if stream && ep == "embeddings" {
							continue
						}
						how := "client leaves"
						idle := "1h"
						if !leave {
							how, idle = "idle_timeout", "100ms"
						}
						t.Run(fmt.Sprintf("%s/%s/%s/%s/stream=%v", via, how, adapter, ep, stream), func(t *testing.T) {
							// Registered first, so checked last: once the gateway and the upstream
							// have closed, nothing of this request is left running.
							ignore := goleak.IgnoreCurrent()
							t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
							s := &stall{started: make(chan struct{}), gone: make(chan struct{})}
							up := newFake(t, adapter)
							up.set(stalled(s, heads[adapter]))
							url := up.srv.URL
							if adapter == "openai" {
								url = up.url()
							}
							g := newGateway(t, fmt.Sprintf("[targets.t]\nadapter = %q\nurl = %q\nmodel = \"m\"\nclass = \"private\"\n"+
								"idle_timeout = %q\ntools = false\nvision = false\n\n[routes.r]\ntargets = [\"t\"]\n", adapter, url, idle), nil, viaNetHTTP(t, via == "net/http"))
							path, body := "/v1/chat/completions", fmt.Sprintf(`{"model":"r","stream":%v,"messages":[{"role":"user","content":"hi"}]}`, stream)
							switch ep {
							case "completions":
								path, body = "/v1/completions", fmt.Sprintf(`{"model":"r","stream":%v,"prompt":"hi"}`, stream)
							case "responses":
								path, body = "/v1/responses", fmt.Sprintf(`{"model":"r","stream":%v,"input":"hi"}`, stream)
							case "embeddings":
								path, body = "/v1/embeddings", `{"model":"r","input":"hi"}`
							}
							ctx, cancel := context.WithCancel(context.Background())
							defer cancel()
							req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.ts.URL+path, strings.NewReader(body))
							if err != nil {
								t.Fatal(err)
							}
							req.Header.Set("Content-Type", "application/json")
							done := make(chan struct{})
							go func() {
								defer close(done)
								resp, err := g.ts.Client().Do(req)
								if err == nil {
									_, _ = io.Copy(io.Discard, resp.Body)
									resp.Body.Close()
								}
							}()
							select {
							case <-s.started:
							case <-time.After(10 * time.Second):
								t.Fatal("the upstream got no request")
							}
							if leave {
								cancel()
							}
							select {
							case <-s.gone:
							case <-time.After(10 * time.Second):
								t.Errorf("the upstream's request was not cancelled (%s)", how)
							}
							<-done
						})
					}
				}
			}
		}
	}
}

// viaNetHTTP has the gateway's attempts go through net/http's client (which carries a target
// that is https:// or proxied), with a Set the test closes, when on; the default otherwise.
func viaNetHTTP(t *testing.T, on bool) gwOption {
	return func(o *server.Options) {
		if !on {
			return
		}
		set := upstream.NewSet(o.Config.Targets, upstream.Options{Transport: &http.Transport{}})
		t.Cleanup(set.Close)
		o.Upstream = set
	}
}
