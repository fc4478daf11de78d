package upstream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hayula/gateway/core"
)

// TestOllamaThinkBudget: Ollama's think as a positive whole number is a thinking-token budget,
// which the newest Ollama reads (types/model ThinkValue: a whole number above 0, a float that is
// one included). The adapter refused it with 400 invalid_type; it now goes to Ollama as an
// integer. 0, a negative number and a fraction Ollama refuses too, and so does the gateway,
// before asking, naming think and saying that false turns thinking off.
func TestOllamaThinkBudget(t *testing.T) {
	for _, tt := range []struct{ think, sent string }{
		{`1024`, `1024`}, {`2048.0`, `2048`}, {`4e3`, `4000`},
	} {
		a := &openaiOllama{t: ollamaTarget("http://127.0.0.1:1"), newID: func() string { return "x" }}
		out, err := a.translate(chatRequestOf(t, `{"messages":[{"role":"user","content":"x"}],"think":`+tt.think+`}`))
		if err != nil {
			t.Errorf("think %s: %v", tt.think, err)
			continue
		}
		if string(out.Think) != tt.sent {
			t.Errorf("think %s: sent %s, want %s", tt.think, out.Think, tt.sent)
		}
	}
	for _, v := range []string{`0`, `-5`, `1.5`, `0.0`, `1e300`} {
		a := &openaiOllama{t: ollamaTarget("http://127.0.0.1:1"), newID: func() string { return "x" }}
		_, err := a.translate(chatRequestOf(t, `{"messages":[{"role":"user","content":"x"}],"think":`+v+`}`))
		var se *core.StatusError
		if !errors.As(err, &se) || se.Status != 400 || se.Param != "think" || se.Code != "invalid_value" ||
			!strings.Contains(se.Message, "false") {
			t.Errorf("think %s: %#v, want 400 invalid_value at think", v, err)
		}
	}
}

// TestOllamaOlderThinkBudgetIsTheTargets: an Ollama before thinking budgets refuses a number of
// think while decoding ("think must be a boolean or string …"): the target's failure, which moves
// the chain on, as its refusal of a newer level is (TestOllamaOlderThinkLevelIsTheTargets).
func TestOllamaOlderThinkBudgetIsTheTargets(t *testing.T) {
	for _, msg := range []string{`think must be a boolean or string (\"high\", \"medium\", \"low\", true, or false)`,
		`think must be a boolean or string`} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":"`+msg+`"}`)
		}))
		tg := ollamaTarget(srv.URL)
		_, err := newSet(t, tg).Chat(context.Background(), tg, chatRequestOf(t, `{"messages":[{"role":"user","content":"x"}],"think":1024}`))
		srv.Close()
		var unmet *core.UnmetError
		var se *core.StatusError
		if !errors.As(err, &unmet) || !errors.As(err, &se) || se.Status != http.StatusBadRequest {
			t.Errorf("%s: err = %#v, want Ollama's 400 as the target's failure", msg, err)
		}
	}
}
