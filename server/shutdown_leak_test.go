package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hayula/gateway/server"
)

// TestStopPastGraceEndsStalledStreams: a gateway told to stop while a stream is under way on an
// upstream that has stalled after its first event cuts the stream off once the grace has
// passed: Serve returns, the upstream sees its request cancelled, the client's connection ends,
// and nothing of the request is left running once the gateway has closed (goleak). For every
// adapter, on every endpoint it serves that streams.
func TestStopPastGraceEndsStalledStreams(t *testing.T) {
	first := map[string]map[string]string{
		"openai": {
			"chat":        `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}` + "\n\n",
			"completions": `data: {"id":"c","object":"text_completion","model":"m","choices":[{"index":0,"text":"hi","finish_reason":null}]}` + "\n\n",
		},
		"ollama": {"chat": `{"model":"m","created_at":"2026-11-30T12:00:00Z","message":{"role":"assistant","content":"hi"},"done":false}` + "\n"},
		"saif":   {"chat": `data: {"text":"Use ","specialist":"webapp"}` + "\n\n"},
	}
	first["openai"]["responses"] = first["openai"]["chat"]
	first["ollama"]["responses"] = first["ollama"]["chat"]
	first["saif"]["responses"] = first["saif"]["chat"]
	first["saif"]["completions"] = first["saif"]["chat"]
	bodies := map[string][2]string{
		"chat":        {"/v1/chat/completions", `{"model":"r","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		"completions": {"/v1/completions", `{"model":"r","stream":true,"prompt":"hi"}`},
		"responses":   {"/v1/responses", `{"model":"r","stream":true,"input":"hi"}`},
	}
	for _, adapter := range []string{"openai", "ollama", "saif"} {
		for _, ep := range []string{"chat", "completions", "responses"} {
			event, ok := first[adapter][ep]
			if !ok {
				continue // ollama serves no completions
			}
			t.Run(adapter+"/"+ep, func(t *testing.T) {
				ignore := goleak.IgnoreCurrent()
				t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
				started, gone, end := make(chan struct{}), make(chan struct{}), make(chan struct{})
				defer close(end)
				up := newFake(t, adapter)
				up.set(func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					if adapter == "ollama" {
						w.Header().Set("Content-Type", "application/x-ndjson")
					} else {
						w.Header().Set("Content-Type", "text/event-stream")
					}
					fmt.Fprint(w, event)
					w.(http.Flusher).Flush()
					close(started)
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
					"idle_timeout = \"1h\"\ntools = false\nvision = false\n\n[routes.r]\ntargets = [\"t\"]\n", adapter, url), nil)
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				served := make(chan error, 1)
				go func() { served <- server.Serve(ctx, ln, g.srv.Handler(), 50*time.Millisecond, nil) }()

				c, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				path, body := bodies[ep][0], bodies[ep][1]
				fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
					path, len(body), body)
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d", resp.StatusCode)
				}
				select {
				case <-started:
				case <-time.After(10 * time.Second):
					t.Fatal("the upstream got no request")
				}
				cancel()
				select {
				case err := <-served:
					if err != nil {
						t.Errorf("Serve: %v", err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("Serve did not return once its grace had passed")
				}
				select {
				case <-gone:
				case <-time.After(10 * time.Second):
					t.Error("the upstream's request was not cancelled")
				}
				_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
				if _, err := io.Copy(io.Discard, resp.Body); err == nil {
					t.Error("the stream ended as if whole; it was cut off")
				}
			})
		}
	}
}
