package conformance

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/conformance/conformancetest"
)

// reasoningSkips is what a server answering as OpenAI's reasoning models do cannot pass: it
// refuses max_tokens, stop and logprobs with a clear unsupported_parameter 400.
func reasoningSkips() map[string]Result {
	want := baseline()
	for _, id := range []string{"chat.max_tokens.length", "chat.max_tokens.respected", "chat.stop.excluded",
		"logprobs.content", "logprobs.top_count"} {
		want[id] = Skip
	}
	return want
}

// TestReasoningModelServerHasNoFail: OpenAI's reasoning models (o1, o3, o4-mini, the gpt-5
// family) refuse max_tokens, stop and logprobs with 400 unsupported_parameter. The suite sends
// max_completion_tokens once a server refuses max_tokens so, and skips, naming the refusal, the
// checks of the features the model does not take: OpenAI itself must not fail.
func TestReasoningModelServerHasNoFail(t *testing.T) {
	f := conformancetest.NewReasoningHandler()
	srv := newServer(t, f)
	rep := runAgainst(t, fakeOptions(t, srv))
	if diff := cmp.Diff(reasoningSkips(), notPassing(rep)); diff != "" {
		for _, c := range rep.Checks {
			if c.Result != Pass {
				t.Logf("%s %s: %s", c.ID, c.Result, c.Reason)
			}
		}
		t.Fatalf("non-passing checks (-want +got):\n%s", diff)
	}
	if rep.ExitCode() != 0 {
		t.Errorf("exit code %d, want 0", rep.ExitCode())
	}
	for _, c := range rep.Checks {
		if c.Result == Skip {
			t.Logf("%s: %s", c.ID, c.Reason)
		}
	}
	for id, param := range map[string]string{"chat.max_tokens.length": "max_tokens", "chat.stop.excluded": "stop", "logprobs.content": "logprobs"} {
		if c, _ := rep.Result(id); !strings.Contains(c.Reason, "'"+param+"'") || !strings.Contains(c.Reason, "400") {
			t.Errorf("%s skipped for %q; want the refusal of %s quoted", id, c.Reason, param)
		}
	}
}

// TestReasoningModelStillFailsWhatIsWrong: the reasoning fake with a fault fails the checks the
// plain fake fails with it, so sending max_completion_tokens hides nothing.
func TestReasoningModelStillFailsWhatIsWrong(t *testing.T) {
	tests := []struct {
		fault fault
		want  map[string]Result
	}{
		{faultNoDone, map[string]Result{"chat.stream.done": Fail, "completions.stream.done": Fail}},
		{faultWrongObject, map[string]Result{"chat.object": Fail}},
		{faultIDChanges, map[string]Result{"chat.stream.id": Fail, "sdk.stream": Fail}},
		{faultArgsObject, map[string]Result{"tools.required.arguments": Fail, "tools.named.arguments": Fail, "tools.stream.arguments": Fail}},
		{faultUsageEveryChunk, map[string]Result{"chat.stream.usage.absent": Warn, "chat.stream.usage.elsewhere": Fail}},
	}
	for _, tt := range tests {
		t.Run(string(tt.fault), func(t *testing.T) {
			srv := newServer(t, conformancetest.NewReasoningHandler(tt.fault))
			rep := runAgainst(t, fakeOptions(t, srv))
			want := reasoningSkips()
			for id, r := range tt.want {
				want[id] = r
			}
			if diff := cmp.Diff(want, notPassing(rep)); diff != "" {
				t.Errorf("non-passing checks (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUnclearRefusalStillFails: only a refusal that names the parameter as unsupported, the way
// OpenAI does, skips; any other 400 to max_tokens or stop fails as before.
func TestUnclearRefusalStillFails(t *testing.T) {
	tests := []struct {
		name  string
		field string
		code  any
		want  map[string]Result
	}{
		// A 400 to every request with max_tokens: nothing is sent again with
		// max_completion_tokens, and every chat request fails its gate.
		{"max_tokens without a code", "max_tokens", nil, nil},
		{"stop named as an invalid value", "stop", "invalid_value", map[string]Result{"chat.stop.excluded": Fail}},
		{"stop without a param", "stop", "unsupported_parameter", map[string]Result{"chat.stop.excluded": Fail}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newWrappedFake(t, func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					body, _ := io.ReadAll(r.Body)
					var req map[string]any
					_ = json.Unmarshal(body, &req)
					if _, ok := req[tt.field]; ok && r.URL.Path == "/v1/chat/completions" {
						var param any
						if tt.name != "stop without a param" {
							param = tt.field
						}
						writeJSON(w, 400, map[string]any{"error": map[string]any{
							"message": tt.field + " is wrong", "type": "invalid_request_error", "param": param, "code": tt.code}})
						return
					}
					r.Body = io.NopCloser(bytes.NewReader(body))
					h.ServeHTTP(w, r)
				})
			})
			rep := runAgainst(t, fakeOptions(t, srv))
			got := notPassing(rep)
			if tt.want == nil {
				if r, _ := rep.Result("chat.status"); r.Result != Fail {
					t.Errorf("chat.status %s, want FAIL: a 400 to max_tokens that does not say it is unsupported is no refusal", r.Result)
				}
				return
			}
			want := baseline()
			for id, r := range tt.want {
				want[id] = r
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("non-passing checks (-want +got):\n%s", diff)
			}
		})
	}
}

func newServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}
