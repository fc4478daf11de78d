package server_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/hayula/gateway/server"
)

// TestUpstreamKeyEchoRedacted: an upstream that repeats the gateway's key in its error (LiteLLM's
// "Received API Key = …", a server that quotes the Authorization header it refused) must not hand
// that key to the client, whose answer carries the upstream's message, nor to the log, whose
// "attempt failed" line carries the whole error.
func TestUpstreamKeyEchoRedacted(t *testing.T) {
	const upstreamKey = "sk-upstream-secret-456"
	echo := func(status int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			a := r.Header.Get("Authorization")
			fmt.Fprintf(w, `{"error":{"message":"refused %s","type":"t %s","param":"p %s","code":"c %s"}}`, a, a, a, a)
		}
	}
	for _, status := range []int{400, 401, 429, 500} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d stream=%v", status, stream), func(t *testing.T) {
				var logs syncBuffer
				a, b := newFake(t, "a"), newFake(t, "b")
				a.set(echo(status))
				b.set(echo(status))
				cfg := target("a", a.url(), "private", `api_key_env = "UP_KEY"`) +
					target("b", b.url(), "private", `api_key_env = "UP_KEY2"`) +
					"[routes.r]\ntargets = [\"a\", \"b\"]\n"
				g := newGateway(t, cfg, map[string]string{"UP_KEY": upstreamKey, "UP_KEY2": upstreamKey + "-b"},
					func(o *server.Options) {
						o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
					})
				rep := g.post(t, "/v1/chat/completions",
					fmt.Sprintf(`{"model":"r","stream":%v,"messages":[{"role":"user","content":"hi"}]}`, stream))
				if rep.status != status {
					t.Fatalf("status %d, want %d: %s", rep.status, status, rep.body)
				}
				if a.hits.Load() == 0 {
					t.Fatal("the upstream was not asked: the test would prove nothing")
				}
				if strings.Contains(string(rep.body), upstreamKey) {
					t.Errorf("the client's answer holds the upstream key: %s", rep.body)
				}
				if msg, _ := rep.errorField(t, "message").(string); !strings.HasPrefix(msg, "refused ") {
					t.Errorf("message %q: the rest of the upstream's message should stay", msg)
				}
				if out := logs.String(); !strings.Contains(out, "attempt failed") || strings.Contains(out, upstreamKey) {
					t.Errorf("the log holds the upstream key (or no attempt line):\n%s", out)
				}
			})
		}
	}
}

// TestUpstreamKeyEchoRedactedMidStream: the same for an error event after the first chunk, which
// ends the client's stream with the upstream's message.
func TestUpstreamKeyEchoRedactedMidStream(t *testing.T) {
	const upstreamKey = "sk-upstream-secret-456"
	var logs syncBuffer
	up := newFake(t, "a")
	up.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"a\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hi\"},\"finish_reason\":null}]}\n\n")
		fmt.Fprintf(w, "data: {\"error\":{\"message\":\"key %s revoked\"}}\n\n", r.Header.Get("Authorization"))
	})
	g := newGateway(t, target("a", up.url(), "private", `api_key_env = "UP_KEY"`)+"[routes.r]\ntargets = [\"a\"]\n",
		map[string]string{"UP_KEY": upstreamKey}, withLog(&logs))
	rep := g.post(t, "/v1/chat/completions", `{"model":"r","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if rep.status != 200 || !strings.Contains(string(rep.body), "stream_interrupted") || !strings.Contains(string(rep.body), "revoked") {
		t.Fatalf("status %d, want 200 ending in the upstream's error event: %s", rep.status, rep.body)
	}
	if strings.Contains(string(rep.body), upstreamKey) {
		t.Errorf("the client's stream holds the upstream key: %s", rep.body)
	}
	if out := logs.String(); !strings.Contains(out, "stream broke off") || strings.Contains(out, upstreamKey) {
		t.Errorf("the log holds the upstream key (or no stream line):\n%s", out)
	}
}

// TestExplainHidesUpstreamAddress: /v1/route/explain, open to every client that may use the
// route, says why a target failed its health checks by a cause, as an error answer does
// (errmap's connCause), never by the check's error text, which names the upstream's address.
func TestExplainHidesUpstreamAddress(t *testing.T) {
	alive, dead := newFake(t, "alive"), newFake(t, "dead")
	alive.set(withHealth("alive", healthOK))
	deadURL := dead.url()
	dead.srv.Close()
	g := newGateway(t, target("dead", deadURL, "private")+target("alive", alive.url(), "private")+
		"[routes.r]\ntargets = [\"dead\", \"alive\"]\n", nil)
	for range 3 {
		g.checkAll()
	}
	rep := g.post(t, "/v1/route/explain", `{"model":"r","messages":[{"role":"user","content":"hi"}]}`)
	if rep.status != 200 {
		t.Fatalf("explain: status %d: %s", rep.status, rep.body)
	}
	body := string(rep.body)
	if !strings.Contains(body, "3 failed health checks") || !strings.Contains(body, `"filter": "cooldown"`) {
		t.Fatalf("dead is not unavailable and dropped: the test would prove nothing:\n%s", body)
	}
	addr := strings.TrimPrefix(strings.TrimSuffix(deadURL, "/v1"), "http://")
	if strings.Contains(body, addr) || strings.Contains(body, "/v1/models") {
		t.Errorf("explain names the upstream's address %s or its health path:\n%s", addr, body)
	}
	if strings.Count(body, "(last: dead: health check: connection refused)") != 2 {
		t.Errorf("health_detail and the drop's reason should each name the cause, connection refused:\n%s", body)
	}
}

// TestUpstreamKeyEchoCutRedacted: an answer the adapter cannot read is quoted by its start (200
// bytes of a body, 120 of a stream line) in the client's error and the log. An upstream that
// echoes the Authorization header there, with the cut falling inside the key, once handed the
// key's first bytes to both: the server's redaction looks for the whole key, and the cut left
// only a piece of it. The key is redacted before the cut.
func TestUpstreamKeyEchoCutRedacted(t *testing.T) {
	const upstreamKey = "sk-upstream-0123456789abcdefghijklmnopqrstuvwxyz"
	piece := upstreamKey[:16] // what a cut inside the key would keep of it
	echo := func(adapter string, stream bool, cut int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			// The cut falls within the key: "Bearer " and the key's first 20 bytes are kept.
			pad := strings.Repeat("x", cut-len("Bearer ")-20)
			switch {
			case adapter == "ollama":
				w.Header().Set("Content-Type", "application/x-ndjson")
				fmt.Fprintf(w, "%s%s\n", pad, r.Header.Get("Authorization"))
			default:
				w.Header().Set("Content-Type", "text/plain")
				fmt.Fprintf(w, "%s%s", pad, r.Header.Get("Authorization"))
			}
		}
	}
	tests := []struct {
		name, adapter string
		stream        bool
		cut           int
	}{
		{"openai not JSON", "openai", false, 200},
		{"openai stream not SSE", "openai", true, 200},
		{"ollama stream line not JSON", "ollama", true, 120},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs syncBuffer
			up := newFake(t, "a")
			up.set(echo(tc.adapter, tc.stream, tc.cut))
			cfg := fmt.Sprintf("[targets.a]\nadapter = %q\nurl = %q\nclass = \"private\"\napi_key_env = \"UP_KEY\"\n\n"+
				"[routes.r]\ntargets = [\"a\"]\n", tc.adapter, strings.TrimSuffix(up.url(), "/v1"))
			if tc.adapter == "openai" {
				cfg = target("a", up.url(), "private", `api_key_env = "UP_KEY"`) + "[routes.r]\ntargets = [\"a\"]\n"
			}
			g := newGateway(t, cfg, map[string]string{"UP_KEY": upstreamKey}, withLog(&logs))
			rep := g.post(t, "/v1/chat/completions",
				fmt.Sprintf(`{"model":"r","stream":%v,"messages":[{"role":"user","content":"hi"}]}`, tc.stream))
			if up.hits.Load() == 0 || !strings.Contains(string(rep.body), "xxxx") {
				t.Fatalf("the answer does not quote the upstream's: the test would prove nothing: %d %s", rep.status, rep.body)
			}
			if strings.Contains(string(rep.body), piece) {
				t.Errorf("the client's answer holds a piece of the upstream key: %s", rep.body)
			}
			if out := logs.String(); strings.Contains(out, piece) {
				t.Errorf("the log holds a piece of the upstream key:\n%s", out)
			}
		})
	}
}
