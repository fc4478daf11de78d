package conformancetest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/conformance/conformancetest"
)

// TestHandlerBasics pins what users of the fake rely on beyond the suite's checks: the key is
// enforced, Requests counts every request (rejected ones too), and a fault changes only its part.
func TestHandlerBasics(t *testing.T) {
	tests := []struct {
		name   string
		faults []conformancetest.Fault
		key    string
		path   string
		body   string
		status int
		want   string // a substring of the answer
	}{
		{"no key", nil, "", "/v1/models", "", 401, `"code":"invalid_api_key"`},
		{"models", nil, conformancetest.APIKey, "/v1/models", "", 200, `"id":"` + conformancetest.Model + `"`},
		{"chat", nil, conformancetest.APIKey, "/v1/chat/completions",
			`{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`, 200, `"content":"Hello there"`},
		{"unknown field", nil, conformancetest.APIKey, "/v1/chat/completions",
			`{"model":"fake-model","messages":[],"colour":"red"}`, 400, `"param":"colour"`},
		{"flat error", []conformancetest.Fault{conformancetest.FaultFlatError}, "", "/v1/models", "", 401, `"object":"error"`},
		{"no embeddings", []conformancetest.Fault{conformancetest.FaultNoEmbeddingsTools}, conformancetest.APIKey,
			"/v1/embeddings", `{"model":"fake-embed","input":"x"}`, 404, "404 page not found"},
		{"embeddings", nil, conformancetest.APIKey,
			"/v1/embeddings", `{"model":"fake-embed","input":["x","y"]}`, 200, `"index":1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := conformancetest.NewHandler(tt.faults...)
			method := http.MethodGet
			if tt.body != "" {
				method = http.MethodPost
			}
			r := httptest.NewRequest(method, tt.path, strings.NewReader(tt.body))
			if tt.key != "" {
				r.Header.Set("Authorization", "Bearer "+tt.key)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.status || !strings.Contains(w.Body.String(), tt.want) {
				t.Errorf("status %d, body %s; want %d containing %s", w.Code, w.Body, tt.status, tt.want)
			}
			if h.Requests() != 1 {
				t.Errorf("Requests() = %d, want 1", h.Requests())
			}
		})
	}
}

// TestStreamEndsWithDone: the stream is well framed without faults and loses only [DONE] under
// FaultNoDone.
func TestStreamEndsWithDone(t *testing.T) {
	body := `{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"max_tokens":1,"stream":true}`
	events := func(faults ...conformancetest.Fault) []string {
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+conformancetest.APIKey)
		w := httptest.NewRecorder()
		conformancetest.NewHandler(faults...).ServeHTTP(w, r)
		var out []string
		for _, ev := range strings.Split(strings.TrimSpace(w.Body.String()), "\n\n") {
			data := strings.TrimPrefix(ev, "data: ")
			if data == "[DONE]" {
				out = append(out, data)
				continue
			}
			var c struct {
				Choices []struct {
					Delta        map[string]any `json:"delta"`
					FinishReason *string        `json:"finish_reason"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(data), &c); err != nil || len(c.Choices) != 1 {
				t.Fatalf("bad event %q: %v", ev, err)
			}
			switch {
			case c.Choices[0].FinishReason != nil:
				out = append(out, "finish:"+*c.Choices[0].FinishReason)
			case c.Choices[0].Delta["role"] != nil:
				out = append(out, "role")
			default:
				out = append(out, fmt.Sprint("content:", c.Choices[0].Delta["content"]))
			}
		}
		return out
	}
	want := []string{"role", "content:Hello", "finish:length", "[DONE]"}
	if diff := cmp.Diff(want, events()); diff != "" {
		t.Errorf("stream (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want[:3], events(conformancetest.FaultNoDone)); diff != "" {
		t.Errorf("stream under FaultNoDone (-want +got):\n%s", diff)
	}
}

// TestReasoningHandlerRefusesAsOpenAI: the reasoning fake answers what OpenAI's reasoning models
// refuse with OpenAI's 400 (param and code), and serves max_completion_tokens and temperature 1.
func TestReasoningHandlerRefusesAsOpenAI(t *testing.T) {
	tests := []struct {
		name   string
		extra  string
		status int
		want   string
	}{
		{"max_tokens", `"max_tokens":2`, 400,
			`{"error":{"code":"unsupported_parameter","message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","param":"max_tokens","type":"invalid_request_error"}}`},
		{"stop", `"max_completion_tokens":2,"stop":["e"]`, 400, `"param":"stop"`},
		{"logprobs", `"max_completion_tokens":2,"logprobs":true`, 400, `"param":"logprobs"`},
		{"top_p", `"top_p":0.5`, 400, `"code":"unsupported_parameter"`},
		{"temperature", `"temperature":0.2`, 400,
			`{"error":{"code":"unsupported_value","message":"Unsupported value: 'temperature' does not support 0.2 with this model. Only the default (1) value is supported.","param":"temperature","type":"invalid_request_error"}}`},
		{"temperature 1", `"temperature":1,"max_completion_tokens":2`, 200, `"content":"Hello there"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"model":"fake-model","messages":[{"role":"user","content":"hi"}],` + tt.extra + `}`
			r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
			r.Header.Set("Authorization", "Bearer "+conformancetest.APIKey)
			w := httptest.NewRecorder()
			conformancetest.NewReasoningHandler().ServeHTTP(w, r)
			if w.Code != tt.status || !strings.Contains(w.Body.String(), tt.want) {
				t.Errorf("status %d, body %s; want %d containing %s", w.Code, w.Body, tt.status, tt.want)
			}
		})
	}
}
