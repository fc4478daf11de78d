package server_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestLogHoldsNoContent: upstreams that repeat the prompt back in every way a failure can carry
// it (an error body's message, type, code and param; a 2xx that is not JSON, or is an error
// object; a stream request answered with JSON; an error event before the first event and after
// it; an Ollama stream line that is not JSON) have it relayed to the client, whose own words they
// are, but never written to the log, at any level: a privacy-strict gateway's log holds no prompt
// or answer text. The answer of a target that serves is not logged either.
func TestLogHoldsNoContent(t *testing.T) {
	const secret = "PROMPT-8c1f-the-patient-has-hepatitis"
	echo := func(r *http.Request) string {
		b, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(b), secret) {
			return "the prompt did not arrive"
		}
		return "you said " + secret
	}
	chunk := func(content string) string {
		return `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"` +
			content + `"},"finish_reason":null}]}` + "\n\n"
	}
	handlers := map[string]http.HandlerFunc{
		"status": func(w http.ResponseWriter, r *http.Request) {
			e := echo(r)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"error":{"message":%q,"type":%q,"param":%q,"code":%q}}`, e, e, e, e)
		},
		"status500": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(500)
			fmt.Fprintf(w, `{"detail":%q}`, echo(r))
		},
		"notjson": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, echo(r))
		},
		"error200": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"error":{"message":%q}}`, echo(r))
		},
		"notsse": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":%q}}]}`, echo(r))
		},
		"firstevent": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"error\":{\"message\":%q}}\n\n", echo(r))
		},
		"midstream": func(w http.ResponseWriter, r *http.Request) {
			e := echo(r)
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, chunk("the answer: "+secret))
			fmt.Fprintf(w, "data: {\"error\":{\"message\":%q}}\n\n", e)
		},
		"ollamaline": func(w http.ResponseWriter, r *http.Request) {
			e := echo(r)
			w.Header().Set("Content-Type", "application/x-ndjson")
			fmt.Fprintf(w, "%s\n", e)
		},
		"ok": func(w http.ResponseWriter, r *http.Request) {
			e := echo(r)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}]}`, e)
		},
	}
	var cfg strings.Builder
	fakes := map[string]*fake{}
	for name, h := range handlers {
		f := newFake(t, name)
		f.set(h)
		fakes[name] = f
		if name == "ollamaline" {
			fmt.Fprintf(&cfg, "[targets.%s]\nadapter = \"ollama\"\nurl = %q\nclass = \"private\"\n\n", name, strings.TrimSuffix(f.url(), "/v1"))
		} else {
			cfg.WriteString(target(name, f.url(), "private"))
		}
		fmt.Fprintf(&cfg, "[routes.%s]\ntargets = [%q]\nfallback_on = []\n\n", name, name)
	}
	// A chain, so that the attempts' failures are logged on the way to an answer.
	cfg.WriteString("[routes.chain]\ntargets = [\"status500\", \"notjson\", \"error200\", \"ok\"]\n")
	var logs syncBuffer
	g := newGateway(t, cfg.String(), nil, withLog(&logs))
	type req struct{ route, path string }
	var reqs []req
	for name := range handlers {
		reqs = append(reqs, req{name, "/v1/chat/completions"}, req{name, "/v1/chat/completions#stream"}, req{name, "/v1/responses"})
	}
	reqs = append(reqs, req{"chain", "/v1/chat/completions"}, req{"chain", "/v1/chat/completions#stream"})
	relayed := 0
	for _, rq := range reqs {
		var body string
		switch rq.path {
		case "/v1/chat/completions":
			body = fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}]}`, rq.route, secret)
		case "/v1/chat/completions#stream":
			body = fmt.Sprintf(`{"model":%q,"stream":true,"messages":[{"role":"user","content":%q}]}`, rq.route, secret)
		default:
			body = fmt.Sprintf(`{"model":%q,"input":%q}`, rq.route, secret)
		}
		rep := g.post(t, strings.TrimSuffix(rq.path, "#stream"), body)
		if strings.Contains(string(rep.body), "you said "+secret) {
			relayed++
		}
	}
	for name, f := range fakes {
		if f.hits.Load() == 0 {
			t.Fatalf("target %s was not asked: the test would prove nothing", name)
		}
	}
	if relayed < len(handlers) {
		t.Fatalf("only %d answers relayed the upstream's words: the test would prove little", relayed)
	}
	out := logs.String()
	if !strings.Contains(out, "attempt failed") || !strings.Contains(out, "stream broke off") {
		t.Fatalf("no attempt or stream line was logged: the test would prove nothing:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, secret) {
			t.Errorf("the log holds the prompt:\n%s", line)
		}
	}
}
