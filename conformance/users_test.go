package conformance

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/hayula/gateway/conformance/conformancetest"
)

// These tests take the view of someone who points the suite at vLLM, llama-server, Ollama, LM
// Studio, LiteLLM or OpenRouter: what those servers legitimately send must pass, and what breaks a
// client must fail with a reason that names the field.

// TestReasoningTokensInUsageSkipLogprobs: OpenAI's reasoning models show no reasoning text, only
// usage.completion_tokens_details.reasoning_tokens; spent on reasoning, the logprobs probe's four
// tokens leave no content, and logprobs.content is rightly empty.
func TestReasoningTokensInUsageSkipLogprobs(t *testing.T) {
	rw := streamRewrite{editJSON: func(req string, _ http.Header, b string) string {
		if !strings.Contains(req, `"logprobs":true`) {
			return b
		}
		return fmt.Sprintf(`{"id":"c","object":"chat.completion","created":%d,"model":%q,`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":""},"logprobs":{"content":[],"refusal":null},"finish_reason":"length"}],`+
			`"usage":{"prompt_tokens":7,"completion_tokens":4,"total_tokens":11,"completion_tokens_details":{"reasoning_tokens":4}}}`,
			conformancetest.Created, fakeModel)
	}}
	_, srv := newWrappedFake(t, func(h http.Handler) http.Handler { rw.next = h; return rw })
	o := fakeOptions(t, srv)
	o.Only = []string{"logprobs.*"}
	rep := runAgainst(t, o)
	if c, _ := rep.Result("logprobs.content"); c.Result != Skip {
		t.Errorf("logprobs.content = %s (%s), want SKIP: the tokens went to reasoning", c.Result, c.Reason)
	}
}
