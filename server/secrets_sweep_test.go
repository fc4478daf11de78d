package server_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/hayula/gateway/server"
)

// TestSecretsSweep: with a client key and an upstream key that upstreams repeat back in every
// way they can (error bodies, a non-JSON answer, an error event mid-stream), neither key is in
// anything the gateway writes: the debug log, any answer's body or headers (chat, streams,
// embeddings, responses, explain, /v1/models, /metrics, /healthz), and the client's key never
// reaches a target.
func TestSecretsSweep(t *testing.T) {
	const clientKey, upstreamKey = "hk-sweep-client-secret-1d2c", "sk-sweep-upstream-secret-9b8a"
	var logs syncBuffer
	echoErr := func(status int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"error":{"message":"got %q %q","type":"x","param":null,"code":"c"}}`, r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"))
		}
	}
	e401, e500, html, midstream, ok := newFake(t, "e401"), newFake(t, "e500"), newFake(t, "html"), newFake(t, "mid"), newFake(t, "ok")
	e401.set(echoErr(401))
	e500.set(echoErr(500))
	html.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<html>debug: Authorization=%s</html>", r.Header.Get("Authorization"))
	})
	midstream.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`+"\n\n")
		fmt.Fprintf(w, `data: {"error":{"message":"denied for %s"}}`+"\n\n", r.Header.Get("Authorization"))
	})
	key := `api_key_env = "SWEEP_KEY"`
	cfg := target("e401", e401.url(), "private", key) + target("e500", e500.url(), "private", key) +
		target("html", html.url(), "private", key) + target("mid", midstream.url(), "private", key) +
		target("ok", ok.url(), "private") +
		"[routes.fail]\ntargets = [\"e401\", \"e500\", \"html\"]\n[routes.mid]\ntargets = [\"mid\"]\n" +
		"[routes.ok]\ntargets = [\"ok\"]\n[routes.e500]\ntargets = [\"e500\"]\n" +
		"[[keys]]\nname = \"k\"\nsha256 = \"" + sha256hex(clientKey) + "\"\n"
	g := newGateway(t, cfg, map[string]string{"SWEEP_KEY": upstreamKey}, func(o *server.Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	var out strings.Builder
	for _, auth := range [][]string{{"Authorization", "Bearer " + clientKey}, {"X-Api-Key", clientKey}} {
		for _, c := range []struct{ method, path, body string }{
			{"POST", "/v1/chat/completions", `{"model":"fail","messages":[{"role":"user","content":"hi"}]}`},
			{"POST", "/v1/chat/completions", `{"model":"fail","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
			{"POST", "/v1/chat/completions", `{"model":"e500","messages":[{"role":"user","content":"hi"}]}`},
			{"POST", "/v1/chat/completions", `{"model":"mid","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
			{"POST", "/v1/chat/completions", `{"model":"ok","messages":[{"role":"user","content":"hi"}]}`},
			{"POST", "/v1/chat/completions", `{"model":"ok","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
			{"POST", "/v1/embeddings", `{"model":"ok","input":"x"}`},
			{"POST", "/v1/responses", `{"model":"fail","input":"hi"}`},
			{"POST", "/v1/responses", `{"model":"mid","input":"hi","stream":true}`},
			{"POST", "/v1/route/explain", `{"model":"fail","messages":[{"role":"user","content":"hi"}]}`},
			{"GET", "/v1/models", ""},
			{"GET", "/metrics", ""},
			{"GET", "/healthz", ""},
		} {
			rep := g.do(t, c.method, c.path, c.body, append([]string{"Content-Type", "application/json"}, auth...)...)
			fmt.Fprintf(&out, "%s %s → %d %v\n%s\n", c.method, c.path, rep.status, rep.header, rep.body)
		}
	}
	for _, f := range []*fake{e401, e500, html, midstream, ok} {
		f.mu.Lock()
		for _, h := range f.headers {
			for k, vs := range h {
				if strings.Contains(strings.Join(vs, " "), clientKey) {
					t.Errorf("target %s was sent the client's key in %s", f.name, k)
				}
			}
		}
		f.mu.Unlock()
	}
	if e401.hits.Load() == 0 || midstream.hits.Load() == 0 || html.hits.Load() == 0 {
		t.Fatal("the echoing upstreams were not asked: the test would prove nothing")
	}
	for what, text := range map[string]string{"answers": out.String(), "log": logs.String()} {
		for _, k := range []string{clientKey, upstreamKey} {
			if strings.Contains(text, k) {
				t.Errorf("the %s hold %s:\n%s", what, k, text)
			}
		}
	}
}
