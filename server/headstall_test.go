package server_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestHeadOnlyStallAnswered: an upstream that sends a stream's head (200 and its media type) and
// then nothing fails the attempt once the target's idle_timeout has passed, before any byte has
// gone to the client, so the client gets a well-formed OpenAI error rather than a stream that
// never starts; the upstream's request is cancelled, and nothing is left running (goleak). For
// every adapter, on chat, completions (where served) and the Responses bridge.
func TestHeadOnlyStallAnswered(t *testing.T) {
	for _, adapter := range []string{"openai", "ollama", "saif"} {
		for _, ep := range []string{"chat", "completions", "responses"} {
			if ep == "completions" && adapter == "ollama" {
				continue
			}
			t.Run(adapter+"/"+ep, func(t *testing.T) {
				ignore := goleak.IgnoreCurrent()
				t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
				gone, end := make(chan struct{}), make(chan struct{})
				defer close(end)
				up := newFake(t, adapter)
				up.set(func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					if adapter == "ollama" {
						w.Header().Set("Content-Type", "application/x-ndjson")
					} else {
						w.Header().Set("Content-Type", "text/event-stream")
					}
					w.WriteHeader(http.StatusOK)
					w.(http.Flusher).Flush()
					select {
					case <-r.Context().Done():
						close(gone)
					case <-end:
					}
				})
				url := up.srv.URL
				if adapter == "openai" {
					url = up.url()
				}
				g := newGateway(t, fmt.Sprintf("[targets.t]\nadapter = %q\nurl = %q\nmodel = \"m\"\nclass = \"private\"\n"+
					"idle_timeout = \"100ms\"\ntools = false\nvision = false\n\n[routes.r]\ntargets = [\"t\"]\n", adapter, url), nil)
				path, body := "/v1/chat/completions", `{"model":"r","stream":true,"messages":[{"role":"user","content":"hi"}]}`
				switch ep {
				case "completions":
					path, body = "/v1/completions", `{"model":"r","stream":true,"prompt":"hi"}`
				case "responses":
					path, body = "/v1/responses", `{"model":"r","stream":true,"input":"hi"}`
				}
				rep := g.post(t, path, body)
				if rep.status < 500 {
					t.Fatalf("status %d, want a 5xx error: %s", rep.status, rep.body)
				}
				if !strings.Contains(rep.header.Get("Content-Type"), "application/json") {
					t.Errorf("Content-Type %q, want JSON", rep.header.Get("Content-Type"))
				}
				rep.errorField(t, "message")
				select {
				case <-gone:
				case <-time.After(10 * time.Second):
					t.Error("the upstream's request was not cancelled")
				}
			})
		}
	}
}
