package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// TestResponsesStreamUsage: a Responses stream's response.completed carries the usage its
// upstream reported, which the gateway asks for as it asks for any stream's it counts
// (stream_options.include_usage spliced in by the openai adapter, never for a target with
// stream_usage = false), whatever else counts it: with the metrics and a key's tpm on, the
// usage is counted and charged once as well, and with neither it is still asked. A target
// that takes stream_options gives the real usage, with its cached and reasoning tokens; one
// with stream_usage = false is sent no stream_options and the response's usage is null, in a
// stream that is otherwise whole; an ollama target's counts are the usage, as its server
// reports them unasked.
func TestResponsesStreamUsage(t *testing.T) {
	const details = `{"prompt_tokens":10,"completion_tokens":7,"total_tokens":17,` +
		`"prompt_tokens_details":{"cached_tokens":3},"completion_tokens_details":{"reasoning_tokens":4}}`
	// An OpenAI-compatible server: the usage-only chunk comes when stream_options asks for it.
	asked := func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			StreamOptions struct {
				IncludeUsage bool `json:"include_usage"`
			} `json:"stream_options"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range []string{`{"role":"assistant","content":"hel"}`, `{"content":"lo"}`} {
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", c)
		}
		fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
		if req.StreamOptions.IncludeUsage {
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":%s}\n\n", details)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
	ollama := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = io.WriteString(w, `{"model":"m","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":"hello"},"done":false}`+"\n")
		_, _ = io.WriteString(w, `{"model":"m","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":11,"eval_count":4}`+"\n")
	}
	openaiTarget := func(url string, extra ...string) string { return target("up", url+"/v1", "private", extra...) }
	ollamaTarget := func(url string, _ ...string) string {
		return "[targets.up]\nadapter = \"ollama\"\nurl = \"" + url + "\"\nclass = \"private\"\nmodel = \"m\"\n\n"
	}
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		target  func(url string, extra ...string) string
		extra   []string
		counted bool   // metrics on, and a key with a tpm
		options string // the stream_options the upstream gets, as JSON; "" for none
		usage   string // response.completed's usage, as JSON
		counts  [2]int // what the metrics count and the tpm charges
	}{
		{"openai counted", asked, openaiTarget, nil, true, `{"include_usage":true}`,
			`{"input_tokens":10,"input_tokens_details":{"cached_tokens":3},"output_tokens":7,"output_tokens_details":{"reasoning_tokens":4},"total_tokens":17}`,
			[2]int{10, 7}},
		{"openai uncounted", asked, openaiTarget, nil, false, `{"include_usage":true}`,
			`{"input_tokens":10,"input_tokens_details":{"cached_tokens":3},"output_tokens":7,"output_tokens_details":{"reasoning_tokens":4},"total_tokens":17}`,
			[2]int{}},
		{"stream_usage false", asked, openaiTarget, []string{"stream_usage = false"}, true, "", "null", [2]int{}},
		{"ollama", ollama, ollamaTarget, nil, true, "",
			`{"input_tokens":11,"input_tokens_details":{"cached_tokens":0},"output_tokens":4,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":15}`,
			[2]int{11, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newFake(t, "up")
			up.set(tc.handler)
			cfg := tc.target(up.srv.URL, tc.extra...) + "[routes.r]\ntargets = [\"up\"]\n"
			token := "unused"
			if tc.counted {
				cfg, token = keyBlock("k", "hk-k", "tpm = 1000000")+cfg, "hk-k"
			} else {
				cfg = "metrics = false\n" + cfg
			}
			g := newGateway(t, cfg, nil)
			c := sdkClient(g, token)
			st := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{Model: "r",
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
			var evs []responses.ResponseStreamEventUnion
			for st.Next() {
				evs = append(evs, st.Current())
			}
			if err := st.Err(); err != nil || len(evs) == 0 {
				t.Fatalf("stream: %v, %d events", err, len(evs))
			}
			checkEvents(t, evs)
			last := evs[len(evs)-1]
			if last.Type != "response.completed" || last.Response.OutputText() != "hello" {
				t.Fatalf("last event %s", last.RawJSON())
			}
			if u := last.Response.JSON.Usage.Raw(); u != tc.usage {
				t.Errorf("usage %s, want %s", u, tc.usage)
			}
			if n := up.hits.Load(); n != 1 {
				t.Errorf("upstream got %d requests, want 1", n)
			}
			body := up.lastBody(t)
			got := ""
			if so, ok := body["stream_options"]; ok {
				b, _ := json.Marshal(so)
				got = string(b)
			}
			if got != tc.options {
				t.Errorf("upstream got stream_options %q, want %q", got, tc.options)
			}
			if !tc.counted {
				return
			}
			key := []string{"Authorization", "Bearer hk-k"}
			want := []string{
				fmt.Sprintf(`hayula_key_tokens_total{key="k",kind="prompt"} %d`, tc.counts[0]),
				fmt.Sprintf(`hayula_key_tokens_total{key="k",kind="completion"} %d`, tc.counts[1]),
			}
			if tc.counts[0] == 0 {
				want = nil
			}
			var rep reply
			var lines map[string]bool
			settles(func() bool {
				rep, lines = scrape(t, g, key...)
				return len(want) == 0 || lines[want[len(want)-1]]
			})
			for _, w := range want {
				if !lines[w] {
					t.Errorf("no line %q in:\n%s", w, tokenLines(rep.body))
				}
			}
			if len(want) == 0 && strings.Contains(string(rep.body), `hayula_key_tokens_total{key="k"`) {
				t.Errorf("tokens counted for a stream without usage:\n%s", tokenLines(rep.body))
			}
		})
	}
}
