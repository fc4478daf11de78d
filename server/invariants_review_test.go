package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hayula/gateway/server"
)

// invDoor is one way into the gateway's attempt loop: an endpoint, whole or streamed.
type invDoor struct {
	name, path string
	stream     bool
	body       func(model, extra string) string
}

var invDoors = []invDoor{
	{"chat", "/v1/chat/completions", false, func(m, x string) string {
		return `{"model":"` + m + `",` + x + `"messages":[{"role":"user","content":"zz-secret-prompt"}]}`
	}},
	{"chat stream", "/v1/chat/completions", true, func(m, x string) string {
		return `{"model":"` + m + `",` + x + `"stream":true,"messages":[{"role":"user","content":"zz-secret-prompt"}]}`
	}},
	{"completions", "/v1/completions", false, func(m, x string) string {
		return `{"model":"` + m + `",` + x + `"prompt":"zz-secret-prompt"}`
	}},
	{"completions stream", "/v1/completions", true, func(m, x string) string {
		return `{"model":"` + m + `",` + x + `"stream":true,"prompt":"zz-secret-prompt"}`
	}},
	{"embeddings", "/v1/embeddings", false, func(m, x string) string {
		return `{"model":"` + m + `",` + x + `"input":"zz-secret-prompt"}`
	}},
	{"responses", "/v1/responses", false, func(m, x string) string {
		return `{"model":"` + m + `",` + x + `"input":"zz-secret-prompt"}`
	}},
	{"responses stream", "/v1/responses", true, func(m, x string) string {
		return `{"model":"` + m + `",` + x + `"stream":true,"input":"zz-secret-prompt"}`
	}},
}

// invOK answers every endpoint the openai adapter sends to, whole or streamed, naming name.
func invOK(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct {
			Stream bool `json:"stream"`
		}
		_ = json.Unmarshal(body, &req)
		switch {
		case strings.HasSuffix(r.URL.Path, "/embeddings"):
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,0.25]}],"model":"m","usage":{"prompt_tokens":1,"total_tokens":1}}`)
		case strings.HasSuffix(r.URL.Path, "/chat/completions"):
			okHandler(name)(w, r)
		case req.Stream:
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"id\":\"t1\",\"object\":\"text_completion\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\"from %s\",\"finish_reason\":null,\"logprobs\":null}]}\n\n", name)
			fmt.Fprint(w, "data: {\"id\":\"t1\",\"object\":\"text_completion\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"stop\",\"logprobs\":null}]}\n\ndata: [DONE]\n\n")
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"t1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"from %s","finish_reason":"stop","logprobs":null}]}`, name)
		}
	}
}

// invFailures are upstream failure modes that must each end in a well-formed OpenAI answer.
var invFailures = []struct {
	name string
	h    http.HandlerFunc
}{
	{"reset mid-head", func(w http.ResponseWriter, _ *http.Request) { resetConn(w, "HTTP/1.1 200 OK\r\nContent-Ty") }},
	{"garbage", func(w http.ResponseWriter, _ *http.Request) { resetConn(w, "SSH-2.0-OpenSSH_9.6\r\n\r\n\x00\x01") }},
	{"empty 200", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
	}},
	{"html 200", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>Bad gateway zz-secret-prompt</body></html>")
	}},
	{"error in 200", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream bool `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"error":{"message":"boom","type":"server_error","code":null}}`)
	}},
	{"ends without done or finish", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream bool `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if !req.Stream {
			resetConn(w, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{\"id\":\"x\",")
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if strings.HasSuffix(r.URL.Path, "/chat/completions") {
			fmt.Fprint(w, chatChunk("m", "partial"))
		} else {
			fmt.Fprint(w, "data: {\"id\":\"t1\",\"object\":\"text_completion\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\"partial\",\"finish_reason\":null,\"logprobs\":null}]}\n\n")
		}
	}},
	{"sse for a whole request", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream bool `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.Stream {
			resetConn(w, "")
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, chatChunk("m", "x"))
		fmt.Fprint(w, "data: [DONE]\n\n")
	}},
	{"204", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }},
	{"vllm error object in 200", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"error","message":"boom","type":"InternalServerError","param":null,"code":500}`)
	}},
	{"json null", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `null`)
	}},
	{"json array", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `[]`)
	}},
	{"stream of nothing", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}},
}

// invWellFormed fails unless rep is an answer an OpenAI client can read: a JSON error object of
// OpenAI's shape for a non-200, or for a stream a body whose events are each JSON (or [DONE]) and
// that ends with [DONE], a final Responses event, or an error event.
func invWellFormed(t *testing.T, d invDoor, rep reply) {
	t.Helper()
	if rep.status != 200 {
		rep.errorField(t, "message")
		return
	}
	if !d.stream {
		var m map[string]any
		if err := json.Unmarshal(rep.body, &m); err != nil {
			t.Fatalf("200 whole answer is not JSON: %s", rep.body)
		}
		if m["error"] != nil {
			t.Fatalf("200 whole answer is an error: %s", rep.body)
		}
		return
	}
	var last string
	sc := bufio.NewScanner(bytes.NewReader(rep.body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		last = strings.TrimPrefix(line, "data: ")
		if last != "[DONE]" && !json.Valid([]byte(last)) {
			t.Fatalf("stream event is not JSON: %q", last)
		}
	}
	switch {
	case last == "[DONE]":
	case strings.Contains(last, `"error"`):
	case strings.Contains(last, `"type":"response.completed"`), strings.Contains(last, `"type":"response.failed"`),
		strings.Contains(last, `"type":"response.incomplete"`):
	default:
		t.Fatalf("stream ends with neither [DONE], a final event nor an error: %q\n%s", last, rep.body)
	}
}

// TestInvUpstreamFailureModesEveryDoor: every upstream failure mode, on every endpoint whole and
// streamed, falls through to a working second target, and when it is the only target ends in a
// well-formed OpenAI answer that is no success.
func TestInvUpstreamFailureModesEveryDoor(t *testing.T) {
	a, b := newFake(t, "a"), newFake(t, "b")
	b.set(invOK("b"))
	g := newGateway(t, target("a", a.url(), "private")+target("b", b.url(), "private")+
		"[cooldown]\nfailures = 1000\n\n[routes.r]\ntargets = [\"a\", \"b\"]\n[routes.one]\ntargets = [\"a\"]\n", nil)
	for _, f := range invFailures {
		a.set(f.h)
		for _, d := range invDoors {
			t.Run(f.name+"/"+d.name, func(t *testing.T) {
				rep := g.post(t, d.path, d.body("r", ""))
				invWellFormed(t, d, rep)
				if f.name == "ends without done or finish" && d.stream {
					// Its first event is an answer's start: past the point of no return, the
					// stream ends with an error event (invWellFormed) instead of falling through.
					if rep.status != 200 || !bytes.Contains(rep.body, []byte("stream_interrupted")) {
						t.Errorf("want an interrupted stream: %d %s", rep.status, rep.body)
					}
				} else if rep.status != 200 || rep.header.Get("x-hayula-target") != "b" {
					t.Errorf("did not fall through to b: %d %s %s", rep.status, rep.header.Get("x-hayula-chain"), rep.body)
				}
				rep = g.post(t, d.path, d.body("one", ""))
				invWellFormed(t, d, rep)
				if rep.status == 200 && (!d.stream || !bytes.Contains(rep.body, []byte("error"))) {
					t.Errorf("a failure answered as a success: %d %s", rep.status, rep.body)
				}
			})
		}
	}
}

// TestInvRestoreEveryDoor: endpoint failures (401, 402, 403, 404, 405, 410) and 413 move the chain on;
// when nothing answers, the client gets what README and errmap's documentation promise, on every
// endpoint whole and streamed: the first upstream's own error when every attempt failed alike,
// 400 context_length_exceeded for overflows, 503 all_targets_failed for a mix.
func TestInvRestoreEveryDoor(t *testing.T) {
	a, b := newFake(t, "a"), newFake(t, "b")
	g := newGateway(t, target("a", a.url(), "private")+target("b", b.url(), "private")+
		"[cooldown]\nfailures = 1000\n\n[routes.r]\ntargets = [\"a\", \"b\"]\n", nil)
	type want struct {
		status   int
		code     string
		message  string
		moveOn   bool // b is asked after a
		fromB200 bool
		// retry is the answer's x-should-retry: "false" when every target refused for good.
		retry string
	}
	cases := []struct {
		name   string
		sa, sb int // 0: b answers
		want   want
	}{
		{"401 then ok", 401, 0, want{status: 200, moveOn: true, fromB200: true}},
		{"402 then ok", 402, 0, want{status: 200, moveOn: true, fromB200: true}},
		{"403 then ok", 403, 0, want{status: 200, moveOn: true, fromB200: true}},
		{"404 then ok", 404, 0, want{status: 200, moveOn: true, fromB200: true}},
		{"410 then ok", 410, 0, want{status: 200, moveOn: true, fromB200: true}},
		{"413 then ok", 413, 0, want{status: 200, moveOn: true, fromB200: true}},
		{"401 twice", 401, 401, want{status: 401, code: "code-a", message: "message from a", moveOn: true}},
		{"402 twice", 402, 402, want{status: 402, code: "code-a", message: "message from a", moveOn: true}},
		{"403 twice", 403, 403, want{status: 403, code: "code-a", message: "message from a", moveOn: true}},
		{"404 twice", 404, 404, want{status: 404, code: "code-a", message: "message from a", moveOn: true}},
		{"410 twice", 410, 410, want{status: 410, code: "code-a", message: "message from a", moveOn: true}},
		{"413 twice", 413, 413, want{status: 400, code: "context_length_exceeded", message: "message from a", moveOn: true}},
		{"401 then 404", 401, 404, want{status: 503, code: "all_targets_failed", message: "all targets failed: a: endpoint (401 code-a); b: endpoint (404 code-b)", moveOn: true, retry: "false"}},
		{"401 then 500", 401, 500, want{status: 503, code: "all_targets_failed", message: "all targets failed: a: endpoint (401 code-a); b: server_error (500 code-b)", moveOn: true}},
		{"400 stops", 400, 401, want{status: 400, code: "code-a", message: "message from a"}},
		// An upstream's own timeout (OpenRouter's "Your request timed out", LiteLLM's Timeout):
		// class timeout, not a request error that another target would refuse too.
		{"408 then ok", 408, 0, want{status: 200, moveOn: true, fromB200: true}},
		{"408 twice", 408, 408, want{status: 408, code: "code-a", message: "message from a", moveOn: true}},
		// A url that is no OpenAI-compatible server (a web page, a GET-only proxy route).
		{"405 then ok", 405, 0, want{status: 200, moveOn: true, fromB200: true}},
		{"405 twice", 405, 405, want{status: 405, code: "code-a", message: "message from a", moveOn: true}},
	}
	for _, c := range cases {
		a.set(errHandler(c.sa, "code-a", "message from a"))
		if c.sb == 0 {
			b.set(invOK("b"))
		} else {
			b.set(errHandler(c.sb, "code-b", "message from b"))
		}
		for _, d := range invDoors {
			t.Run(c.name+"/"+d.name, func(t *testing.T) {
				hb := b.hits.Load()
				rep := g.post(t, d.path, d.body("r", ""))
				invWellFormed(t, d, rep)
				if asked := b.hits.Load() > hb; asked != c.want.moveOn {
					t.Errorf("b asked: %v, want %v", asked, c.want.moveOn)
				}
				if rep.status != c.want.status {
					t.Fatalf("status %d, want %d: %s", rep.status, c.want.status, rep.body)
				}
				if c.want.fromB200 {
					if rep.header.Get("x-hayula-target") != "b" {
						t.Errorf("served by %q", rep.header.Get("x-hayula-target"))
					}
					return
				}
				if got := rep.errorField(t, "code"); got != c.want.code {
					t.Errorf("code %v, want %s: %s", got, c.want.code, rep.body)
				}
				if got := rep.errorField(t, "message"); got != c.want.message {
					t.Errorf("message %v, want %s", got, c.want.message)
				}
				if got := rep.header.Get("X-Should-Retry"); got != c.want.retry {
					t.Errorf("x-should-retry %q, want %q", got, c.want.retry)
				}
			})
		}
	}
}

// TestInvFailOpenStrictEveryDoor: with every private target of a route benched (at different
// times) and its public one healthy, a strict request on every endpoint, whole and streamed, and
// through model auto, fails open to all the private targets, soonest to recover first (README:
// "Health never denies service"), and never to the public one; a plain request is served by the
// public one, which health kept.
func TestInvFailOpenStrictEveryDoor(t *testing.T) {
	t.Parallel()
	a, b, c, p := newFake(t, "a"), newFake(t, "b"), newFake(t, "c"), newFake(t, "p")
	p.set(invOK("p"))
	cfg := target("a", a.url(), "private") + target("b", b.url(), "private") + target("c", c.url(), "private") +
		target("p", p.url(), "public") + `
[cooldown]
failures = 1
base = "30s"
max = "300s"

[routes.ra]
targets = ["a"]
[routes.rb]
targets = ["b"]
[routes.rc]
targets = ["c"]
[routes.saif]
targets = ["a"]
[routes.deepseek-r1]
targets = ["b"]
[routes.r]
targets = ["a", "b", "c", "p"]
policy = "least-busy"

[auto]
default = "r"
`
	type door struct {
		invDoor
		model string
	}
	var doors []door
	for _, d := range invDoors {
		doors = append(doors, door{d, "r"})
		if d.path != "/v1/embeddings" {
			doors = append(doors, door{d, "auto"})
		}
	}
	for _, d := range doors {
		for _, how := range []struct {
			name, field string
			hdr         []string
		}{
			{"header", "", []string{"x-hayula-privacy", "strict"}},
			{"body", `"x-hayula-privacy":"strict",`, nil},
		} {
			t.Run(d.name+"/"+d.model+"/"+how.name, func(t *testing.T) {
				g := newGateway(t, cfg, nil)
				for _, f := range []*fake{a, b, c} {
					f.set(errHandler(500, "internal", "down"))
				}
				g.chat(t, "rc") // c cools until T+30s
				g.clock.Advance(2 * time.Second)
				g.chat(t, "ra") // a until T+32s
				g.clock.Advance(2 * time.Second)
				g.chat(t, "rb") // b until T+34s
				hp := p.hits.Load()
				rep := g.post(t, d.path, d.body(d.model, how.field), how.hdr...)
				invWellFormed(t, d.invDoor, rep)
				if got := rep.header.Get("x-hayula-chain"); got != "c→a→b" {
					t.Errorf("chain %q, want c→a→b (soonest to recover first, the public p never): %d %s", got, rep.status, rep.body)
				}
				if p.hits.Load() != hp {
					t.Fatalf("a strict request reached the public target")
				}
				if rep.status == 200 {
					t.Errorf("served with every private target failing: %s", rep.body)
				}
				// Not strict: the public target is healthy and serves.
				rep = g.post(t, d.path, d.body(d.model, ""))
				if rep.status != 200 || rep.header.Get("x-hayula-target") != "p" {
					t.Errorf("a plain request: %d %s %s", rep.status, rep.header.Get("x-hayula-chain"), rep.body)
				}
			})
		}
	}
}

// TestInvUpstreamFailureModesEveryAdapter: the failure modes of TestInvUpstreamFailureModesEveryDoor,
// and Ollama's own (an NDJSON stream cut before done, its {"error": …} in a 200), from an ollama
// and a saif target: each falls through to a working openai target, and alone ends in a
// well-formed OpenAI answer that is no success.
func TestInvUpstreamFailureModesEveryAdapter(t *testing.T) {
	t.Parallel()
	failures := append([]struct {
		name string
		h    http.HandlerFunc
	}{}, invFailures...)
	failures = append(failures,
		struct {
			name string
			h    http.HandlerFunc
		}{"ollama error in 200", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"error":"model runner has unexpectedly stopped"}`)
		}},
		struct {
			name string
			h    http.HandlerFunc
		}{"ndjson cut before done", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/x-ndjson")
			fmt.Fprint(w, `{"model":"m","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"part"},"done":false}`+"\n")
		}},
		struct {
			name string
			h    http.HandlerFunc
		}{"ndjson error line", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/x-ndjson")
			fmt.Fprint(w, `{"error":"an error was encountered while running the model"}`+"\n")
		}},
		struct {
			name string
			h    http.HandlerFunc
		}{"saif events cut before done", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"text\":\"part\",\"specialist\":\"webapp\"}\n\n")
		}},
	)
	for _, adapter := range []string{"ollama", "saif"} {
		a, b := newFake(t, "a"), newFake(t, "b")
		b.set(invOK("b"))
		g := newGateway(t, fmt.Sprintf("[targets.a]\nadapter = %q\nurl = %q\nmodel = \"m\"\ntools = false\nvision = false\n\n", adapter, a.srv.URL)+
			target("b", b.url(), "private")+
			"[cooldown]\nfailures = 1000\n\n[routes.r]\ntargets = [\"a\", \"b\"]\n[routes.one]\ntargets = [\"a\"]\n", nil)
		for _, f := range failures {
			a.set(f.h)
			for _, d := range invDoors {
				t.Run(adapter+"/"+f.name+"/"+d.name, func(t *testing.T) {
					ha := a.hits.Load()
					rep := g.post(t, d.path, d.body("r", ""))
					invWellFormed(t, d, rep)
					if a.hits.Load() > ha && (rep.status != 200 || rep.header.Get("x-hayula-target") != "b") &&
						!bytes.Contains(rep.body, []byte("stream_interrupted")) {
						t.Errorf("did not fall through to b: %d %s %s", rep.status, rep.header.Get("x-hayula-chain"), rep.body)
					}
					rep = g.post(t, d.path, d.body("one", ""))
					invWellFormed(t, d, rep)
					if rep.status == 200 && (!d.stream || !bytes.Contains(rep.body, []byte("error"))) {
						t.Errorf("a failure answered as a success: %d %s", rep.status, rep.body)
					}
				})
			}
		}
	}
}

// TestInvResponsesUnreadableAnswerFallsThrough: a chat answer the Responses bridge cannot read (a
// whole answer, or a stream's first chunk, whose content is a number) is an answer the gateway
// could not read, class server_error, before anything went to the client: the chain moves on
// to a target that answers, as it does for every other unreadable answer (CONFIG.md, failure
// classes). It was answered 502 bad_upstream_answer whole, though the next target could serve,
// and streamed, the chunk was dropped and an empty answer reported completed. Alone, the target's
// unreadable answer is the 502 bad_upstream_response that names it and the field.
func TestInvResponsesUnreadableAnswerFallsThrough(t *testing.T) {
	a, b := newFake(t, "a"), newFake(t, "b")
	b.set(invOK("b"))
	a.set(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream bool `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":5},\"finish_reason\":null}]}\n\n")
			fmt.Fprint(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":5},"finish_reason":"stop"}]}`)
	})
	g := newGateway(t, target("a", a.url(), "private")+target("b", b.url(), "private")+
		"[cooldown]\nfailures = 1000\n\n[routes.r]\ntargets = [\"a\", \"b\"]\n[routes.one]\ntargets = [\"a\"]\n", nil)
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			body := fmt.Sprintf(`{"model":"r","stream":%v,"input":"hi"}`, stream)
			rep := g.post(t, "/v1/responses", body)
			if rep.status != 200 || rep.header.Get("x-hayula-chain") != "a→b (served by b)" ||
				!bytes.Contains(rep.body, []byte("from b")) {
				t.Errorf("want b's answer after a's unreadable one: %d %q %s", rep.status, rep.header.Get("x-hayula-chain"), rep.body)
			}
			rep = g.post(t, "/v1/responses", strings.Replace(body, `"r"`, `"one"`, 1))
			if rep.status != http.StatusBadGateway || rep.errorField(t, "code") != "bad_upstream_response" {
				t.Fatalf("alone: %d %s, want 502 bad_upstream_response", rep.status, rep.body)
			}
			if msg, _ := rep.errorField(t, "message").(string); !strings.Contains(msg, "upstream a ") ||
				!strings.Contains(msg, "choices") || strings.Contains(msg, "struct") {
				t.Errorf("message %q: want the target and the field named, no Go types", msg)
			}
		})
	}
	// The chat endpoint passes an answer through as the upstream wrote it: unchanged.
	rep := g.post(t, "/v1/chat/completions", `{"model":"r","messages":[{"role":"user","content":"hi"}]}`)
	if rep.status != 200 || rep.header.Get("x-hayula-target") != "a" {
		t.Errorf("chat: %d %s %s", rep.status, rep.header.Get("x-hayula-chain"), rep.body)
	}
}

// TestInvRealErrorsEveryDoor: TestRealUpstreamErrors's corpus of real upstreams' error answers on
// the endpoints other than chat (completions, embeddings, Responses; whole and streamed): each
// moves the chain on or stops it by its class, and the client gets the upstream's own error with
// its status, or the guarded tail's answer for an overflow, as on chat.
func TestInvRealErrorsEveryDoor(t *testing.T) {
	t.Parallel()
	for _, e := range realErrors {
		for _, d := range invDoors {
			if d.path == "/v1/chat/completions" || e.streamOnly && !d.stream ||
				e.adapter == "ollama" && d.path == "/v1/completions" {
				continue
			}
			t.Run(e.name+"/"+d.name, func(t *testing.T) {
				g, a, b, tail := realGateway(t, e, "")
				tail.set(invOK("tail"))
				rep := g.post(t, d.path, d.body("r", ""))
				chain := rep.header.Get("x-hayula-chain")
				switch e.class {
				case "overflow":
					if rep.status != 200 || chain != "a→b→tail (served by tail)" {
						t.Fatalf("an overflow must reach the guarded tail: status %d chain %q: %.300s", rep.status, chain, rep.body)
					}
					return
				case "request":
					if b.hits.Load() != 0 || chain != "a" {
						t.Errorf("a request error moved the chain on: chain %q", chain)
					}
				default:
					if b.hits.Load() != 1 || tail.hits.Load() != 0 {
						t.Errorf("a %s must move on to b and not enter the tail: chain %q", e.class, chain)
					}
				}
				if a.hits.Load() != 1 {
					t.Errorf("a asked %d times", a.hits.Load())
				}
				want := e.status
				if want < 400 || want > 599 {
					want = 502
				}
				if e.clientStatus != 0 {
					want = e.clientStatus
				}
				if rep.status != want {
					t.Errorf("status %d, want %d: %.300s", rep.status, want, rep.body)
				}
				if got := rep.errorField(t, "message"); got != e.message {
					t.Errorf("message %q, want %q", got, e.message)
				}
			})
		}
	}
}

// TestInvFallbackOptionAddsNothing: a request asking for fallback (x-fallback-on true, yes, 1 or
// empty; header or body) on a route whose fallback_on leaves a class out, or with [] , gets no
// fallback the route does not give, on every endpoint: the failure is answered as it is and
// the next target is never asked (CONFIG.md: "it cannot turn it on where the route has it off").
func TestInvFallbackOptionAddsNothing(t *testing.T) {
	a, b := newFake(t, "a"), newFake(t, "b")
	a.set(errHandler(500, "internal", "down from a"))
	b.set(invOK("b"))
	g := newGateway(t, target("a", a.url(), "private")+target("b", b.url(), "private")+
		"[cooldown]\nfailures = 1000\n\n[routes.some]\ntargets = [\"a\", \"b\"]\nfallback_on = [\"connection\"]\n"+
		"[routes.none]\ntargets = [\"a\", \"b\"]\nfallback_on = []\n", nil)
	for _, route := range []string{"some", "none"} {
		for _, d := range invDoors {
			for _, opt := range []struct {
				field string
				hdr   []string
			}{
				{`"x-fallback-on":true,`, nil}, {`"x-fallback-on":"yes",`, nil}, {`"X-Fallback-On":"1",`, nil},
				{"", []string{"x-fallback-on", "true"}}, {"", []string{"x-fallback-on", ""}},
			} {
				hb := b.hits.Load()
				rep := g.post(t, d.path, d.body(route, opt.field), opt.hdr...)
				if b.hits.Load() != hb || rep.status != 500 || rep.errorField(t, "message") != "down from a" {
					t.Errorf("%s %s %s %v: %d %s, b asked %d times: want a's 500 as it is",
						route, d.name, opt.field, opt.hdr, rep.status, rep.body, b.hits.Load()-hb)
				}
			}
		}
	}
}

// TestInvLogHoldsNoContentEveryDoor: TestLogHoldsNoContent's upstreams that repeat a strict
// request's prompt in every way a failure can carry it, on the doors that test leaves out
// (completions and embeddings, whole and streamed; the Responses stream; model auto), with the
// log at debug: no line holds the prompt, and neither does any metric line.
func TestInvLogHoldsNoContentEveryDoor(t *testing.T) {
	const secret = "PROMPT-51d0-the-patient-has-hepatitis"
	echo := func(r *http.Request) string {
		b, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(b), secret) {
			return "the prompt did not arrive"
		}
		return "you said " + secret
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
		"status401": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(401)
			fmt.Fprintf(w, `<html>%s</html>`, echo(r))
		},
		"notjson": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, echo(r))
		},
		"error200": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"error":{"message":%q}}`, echo(r))
		},
		"firstevent": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"error\":{\"message\":%q}}\n\n", echo(r))
		},
		"midstream": func(w http.ResponseWriter, r *http.Request) {
			e := echo(r)
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, chatChunk("m", "the answer: "+secret))
			fmt.Fprintf(w, "data: {\"error\":{\"message\":%q}}\n\n", e)
		},
	}
	var cfg strings.Builder
	fakes := map[string]*fake{}
	for name, h := range handlers {
		f := newFake(t, name)
		f.set(h)
		fakes[name] = f
		cfg.WriteString(target(name, f.url(), "private"))
		fmt.Fprintf(&cfg, "[routes.%s]\ntargets = [%q]\nfallback_on = []\n\n", name, name)
	}
	ok := newFake(t, "ok")
	ok.set(invOK("ok"))
	cfg.WriteString(target("ok", ok.url(), "private") + "[routes.saif]\ntargets = [\"ok\"]\n[routes.deepseek-r1]\ntargets = [\"ok\"]\n")
	fmt.Fprintf(&cfg, "[routes.chain]\ntargets = [\"status500\", \"status401\", \"notjson\", \"error200\", \"ok\"]\n\n[auto]\ndefault = \"chain\"\n")
	var logs syncBuffer
	g := newGateway(t, cfg.String(), nil, func(o *server.Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	models := append(slices.Sorted(maps.Keys(handlers)), "chain", "auto")
	for _, m := range models {
		for _, d := range invDoors {
			if d.path == "/v1/chat/completions" || d.path == "/v1/responses" && !d.stream || m == "auto" && d.path == "/v1/embeddings" {
				continue // TestLogHoldsNoContent's
			}
			body := strings.ReplaceAll(d.body(m, ""), "zz-secret-prompt", secret)
			g.post(t, d.path, body, "x-hayula-privacy", "strict")
		}
	}
	for name, f := range fakes {
		if f.hits.Load() == 0 {
			t.Fatalf("target %s was not asked: the test would prove nothing", name)
		}
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
	if rep := g.do(t, http.MethodGet, "/metrics", ""); strings.Contains(string(rep.body), "PROMPT-51d0") {
		t.Errorf("a metric holds the prompt")
	}
}

// TestInvFailOpenTiesKeepConfiguredOrder: when every target of a route was benched at the same
// instant (one request failed them all), fail open tries them all in the route's configured
// order, whatever its policy, on every endpoint: soonest to recover first is a tie, and no
// policy reorders the targets health set aside.
func TestInvFailOpenTiesKeepConfiguredOrder(t *testing.T) {
	a, b, c := newFake(t, "a"), newFake(t, "b"), newFake(t, "c")
	for _, policy := range []string{"ordered", "weighted", "least-busy", "latency"} {
		for _, d := range invDoors {
			t.Run(policy+"/"+d.name, func(t *testing.T) {
				for _, f := range []*fake{a, b, c} {
					f.set(errHandler(500, "internal", "down"))
				}
				g := newGateway(t, target("a", a.url(), "private", "weight = 1")+target("b", b.url(), "private", "weight = 1")+
					target("c", c.url(), "private", "weight = 1000000")+
					"[cooldown]\nfailures = 1\nbase = \"30s\"\n\n[routes.r]\ntargets = [\"a\", \"b\", \"c\"]\npolicy = \""+policy+"\"\n"+
					"[routes.o]\ntargets = [\"a\", \"b\", \"c\"]\n", nil)
				if rep := g.chat(t, "o"); rep.header.Get("x-hayula-chain") != "a→b→c" {
					t.Fatalf("benching all three: chain %q", rep.header.Get("x-hayula-chain"))
				}
				rep := g.post(t, d.path, d.body("r", ""))
				invWellFormed(t, d, rep)
				if got := rep.header.Get("x-hayula-chain"); got != "a→b→c" {
					t.Errorf("chain %q, want a→b→c: %d %s", got, rep.status, rep.body)
				}
			})
		}
	}
}
