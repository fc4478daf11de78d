package conformance

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeOptions aims the suite at srv with a private transport, so no idle
// connection outlives the test.
func fakeOptions(t *testing.T, srv *httptest.Server) Options {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return Options{
		BaseURL:        srv.URL,
		APIKey:         fakeKey,
		EmbeddingModel: fakeEmbed,
		Strict:         true,
		Now:            fakeNow,
		HTTPClient:     &http.Client{Transport: tr},
	}
}

func runAgainst(t *testing.T, o Options) *Report {
	t.Helper()
	rep, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}

// notPassing maps every check that did not PASS to its result.
func notPassing(rep *Report) map[string]Result {
	out := map[string]Result{}
	for _, c := range rep.Checks {
		if c.Result != Pass {
			out[c.ID] = c.Result
		}
	}
	return out
}

// baseline is what a conforming server cannot pass: nothing ever answered
// 429, so the Retry-After check has nothing to judge.
func baseline() map[string]Result { return map[string]Result{"errors.retry_after": Skip} }

func TestConformingServerPassesEveryCheck(t *testing.T) {
	_, srv := newFake(t)
	rep := runAgainst(t, fakeOptions(t, srv))
	if diff := cmp.Diff(baseline(), notPassing(rep)); diff != "" {
		for _, c := range rep.Checks {
			if c.Evidence != nil {
				t.Logf("%s: expected %s; seen %s", c.ID, c.Evidence.Expected, c.Evidence.Seen)
			}
		}
		t.Fatalf("non-passing checks (-want +got):\n%s", diff)
	}
	if len(rep.Checks) < 50 {
		t.Errorf("%d checks, the issue asks for at least 50", len(rep.Checks))
	}
	if rep.Model != fakeModel {
		t.Errorf("model discovered = %q, want the first id of /v1/models %q", rep.Model, fakeModel)
	}
	if rep.ExitCode() != 0 {
		t.Errorf("exit code %d, want 0", rep.ExitCode())
	}
}

// TestBrokenServerFailsExactlyTheExpectedChecks proves the suite can fail:
// each deliberate violation must fail (or, for SHOULD, warn) exactly the
// checks named here, and nothing else.
func TestBrokenServerFailsExactlyTheExpectedChecks(t *testing.T) {
	tests := []struct {
		fault fault
		want  map[string]Result
		// quoted: the excerpt of that check must show this (the faulty
		// chunk, not merely the first ones).
		quoted map[string]string
	}{
		{faultNoDone, map[string]Result{
			"chat.stream.done":        Fail,
			"completions.stream.done": Fail,
		}, map[string]string{"chat.stream.done": `"finish_reason":"stop"`}},
		{faultWrongObject, map[string]Result{
			"chat.object": Fail,
		}, nil},
		{faultFlatError, map[string]Result{
			"errors.shape": Fail,
			// The SDK finds no "error" envelope, so no message or type.
			"sdk.error": Fail,
			// Nothing left to judge code and param on.
			"errors.strict.code":  Skip,
			"errors.strict.param": Skip,
		}, nil},
		{faultUsageEveryChunk, map[string]Result{
			"chat.stream.usage.absent":    Warn,
			"chat.stream.usage.elsewhere": Fail,
		}, nil},
		{faultNoRole, map[string]Result{
			// The reference makes delta.role optional and no SDK needs it: OpenAI's own first
			// delta carries it, so its absence warns.
			"chat.stream.role.first": Warn,
		}, nil},
		{faultIDChanges, map[string]Result{
			"chat.stream.id": Fail,
			// openai-go's accumulator refuses a chunk of another completion.
			"sdk.stream": Fail,
		}, map[string]string{"chat.stream.id": "chatcmpl-fake2"}},
		{faultArgsObject, map[string]Result{
			"tools.required.arguments": Fail,
			"tools.named.arguments":    Fail,
			"tools.stream.arguments":   Fail,
		}, map[string]string{"tools.stream.arguments": `"arguments":{"zone":"UTC"}`}},
	}
	for _, tt := range tests {
		t.Run(string(tt.fault), func(t *testing.T) {
			_, srv := newFake(t, tt.fault)
			rep := runAgainst(t, fakeOptions(t, srv))
			want := baseline()
			for id, r := range tt.want {
				want[id] = r
			}
			if diff := cmp.Diff(want, notPassing(rep)); diff != "" {
				t.Errorf("non-passing checks (-want +got):\n%s", diff)
			}
			for _, c := range rep.Checks {
				if c.Result == Fail && (c.Evidence == nil || c.Evidence.Expected == "" || c.Evidence.Seen == "" || c.Evidence.Excerpt == "") {
					t.Errorf("%s failed without full evidence: %+v", c.ID, c.Evidence)
				}
			}
			for id, s := range tt.quoted {
				if c, _ := rep.Result(id); c.Evidence == nil || !strings.Contains(c.Evidence.Excerpt, s) {
					t.Errorf("%s excerpt does not quote %s:\n%+v", id, s, c.Evidence)
				}
			}
			if rep.ExitCode() != 1 && hasFail(tt.want) {
				t.Errorf("exit code %d, want 1", rep.ExitCode())
			}
		})
	}
}

func hasFail(m map[string]Result) bool {
	for _, r := range m {
		if r == Fail {
			return true
		}
	}
	return false
}
