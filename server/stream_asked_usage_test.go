package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// sentStreamOptions is the stream_options of the last body up received, nil when it had none.
func sentStreamOptions(t *testing.T, up *fake) map[string]any {
	t.Helper()
	so, _ := up.lastBody(t)["stream_options"].(map[string]any)
	return so
}

// TestStreamUsageAskedByGateway: an OpenAI-compatible server sends a stream's usage only when
// asked (stream_options.include_usage, as OpenAI and vLLM do). For a chat or completions stream
// whose client did not ask, the gateway asks for it itself, keeping the client's other
// stream_options members, and keeps the usage-only chunk (choices: []) that then comes to itself:
// the key's tpm is charged the stream's real usage (the next request is refused, Used 150) and the
// metrics count it once, while the client's stream has no usage chunk, as before. Without the
// gateway asking, such a stream was charged its prompt's lower bound and counted nothing. A client
// that asked gets its usage chunk exactly once, counted once.
func TestStreamUsageAskedByGateway(t *testing.T) {
	const prompt, completion = 100, 50
	for _, tc := range []struct {
		name, path, options string
		want                map[string]any // the stream_options the upstream gets
		clientUsage         int            // usage chunks the client sees
	}{
		{"unasked", "/v1/chat/completions", "", map[string]any{"include_usage": true}, 0},
		{"null options", "/v1/chat/completions", `,"stream_options":null`, map[string]any{"include_usage": true}, 0},
		{"other options kept", "/v1/chat/completions", `,"stream_options":{"include_obfuscation":false}`,
			map[string]any{"include_obfuscation": false, "include_usage": true}, 0},
		{"empty options", "/v1/chat/completions", `,"stream_options":{ }`, map[string]any{"include_usage": true}, 0},
		{"include_usage false", "/v1/chat/completions", `,"stream_options":{"include_usage":false,"x":1}`,
			map[string]any{"include_usage": true, "x": float64(1)}, 0},
		{"asked", "/v1/chat/completions", `,"stream_options":{"include_usage":true}`, map[string]any{"include_usage": true}, 1},
		{"completions", "/v1/completions", "", map[string]any{"include_usage": true}, 0},
		{"think-tags", "/v1/chat/completions", "", map[string]any{"include_usage": true}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newFake(t, "up")
			up.set(usageHandler(prompt, completion, false, false))
			extra := []string{`model = "m"`}
			if tc.name == "think-tags" { // the usage chunk goes through the think block's splitter first
				extra = append(extra, `reasoning = "think-tags"`)
			}
			g := newGateway(t, usageKeyConfig(prompt+completion, target("up", up.url(), "private", extra...)), nil)
			key := []string{"Authorization", "Bearer hk-k"}
			body := `{"model":"r","stream":true` + tc.options + `,"messages":[{"role":"user","content":"hi"}]}`
			if tc.path == "/v1/completions" {
				body = `{"model":"r","stream":true` + tc.options + `,"prompt":"hi"}`
			}
			rep := g.post(t, tc.path, body, key...)
			if rep.status != 200 || !strings.Contains(string(rep.body), "hello") {
				t.Fatalf("stream: %d %s", rep.status, rep.body)
			}
			if got := sentStreamOptions(t, up); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("upstream got stream_options %v, want %v", got, tc.want)
			}
			if m := up.lastBody(t)["model"]; m != "m" {
				t.Errorf("upstream got model %v, want the target's m", m)
			}
			if n := strings.Count(string(rep.body), `"usage"`); n != tc.clientUsage {
				t.Errorf("the client got %d usage members, want %d:\n%s", n, tc.clientUsage, rep.body)
			}
			if n := strings.Count(string(rep.body), `"choices":[]`); n != tc.clientUsage {
				t.Errorf("the client got %d chunks without choices, want %d:\n%s", n, tc.clientUsage, rep.body)
			}
			if !strings.HasSuffix(string(rep.body), "data: [DONE]\n\n") {
				t.Errorf("the stream does not end with [DONE]:\n%s", rep.body)
			}
			streamUsageCounted(t, g, prompt, completion, func() reply { return g.post(t, tc.path, body, key...) })
		})
	}
}

// TestStreamUsageRefusedOptions: a server that refuses the stream_options the gateway added (a
// strict OpenAI-compatible server answering 400 with an error naming the field) is asked again
// at once without them, and the client is served as it would have been had the gateway not asked;
// the stream is then charged as one without usage. A target with stream_usage = false is never
// asked: its body goes as the client wrote it (with the target's model), in one request.
func TestStreamUsageRefusedOptions(t *testing.T) {
	strict := refusesStreamOptions
	tooLong := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"message":"This model's maximum context length is 8 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`)
	}
	body := `{"model":"r","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	key := []string{"Authorization", "Bearer hk-k"}
	for _, tc := range []struct {
		name  string
		extra []string
		hits  int64
	}{
		{"refused", nil, 2},
		{"stream_usage false", []string{"stream_usage = false"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newFake(t, "up")
			up.set(strict)
			g := newGateway(t, usageKeyConfig(1000, target("up", up.url(), "private", tc.extra...)), nil)
			rep := g.post(t, "/v1/chat/completions", body, key...)
			if rep.status != 200 || !strings.Contains(string(rep.body), `" up"`) {
				t.Fatalf("stream: %d %s", rep.status, rep.body)
			}
			if n := up.hits.Load(); n != tc.hits {
				t.Errorf("upstream got %d requests, want %d", n, tc.hits)
			}
			if so := sentStreamOptions(t, up); so != nil {
				t.Errorf("the request served had stream_options %v, want none", so)
			}
			up.mu.Lock()
			got := string(up.bodies[len(up.bodies)-1])
			up.mu.Unlock()
			if want := strings.Replace(body, `"r"`, `"up"`, 1); got != want {
				t.Errorf("the request served was %s, want the client's %s", got, want)
			}
		})
	}

	// A 400 that does not name the added field is the client's answer, asked once.
	t.Run("another 400", func(t *testing.T) {
		up := newFake(t, "up")
		up.set(tooLong)
		g := newGateway(t, usageKeyConfig(1000, target("up", up.url(), "private")), nil)
		if rep := g.post(t, "/v1/chat/completions", body, key...); rep.status != http.StatusBadRequest {
			t.Errorf("stream: %d %s, want the upstream's 400", rep.status, rep.body)
		}
		if n := up.hits.Load(); n != 1 {
			t.Errorf("upstream got %d requests, want 1", n)
		}
	})
}

// refusesStreamOptions is a strict OpenAI-compatible server: a body with stream_options is
// answered 400 naming the field; any other is served by okHandler.
func refusesStreamOptions(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	if _, ok := m["stream_options"]; ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"message":"Unrecognized request argument supplied: stream_options","type":"invalid_request_error"}}`)
		return
	}
	okHandler("up")(w, r)
}
