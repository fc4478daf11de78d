package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// cloudChain is a route local → paid, the homelab shape: a private server first, a paid cloud
// provider at the end of the chain. The local one is down (500) unless a test sets it.
func cloudChain(t *testing.T, extra string) (g *gateway, local, paid *fake) {
	t.Helper()
	local, paid = newFake(t, "local"), newFake(t, "paid")
	local.set(errHandler(500, "boom", "local down"))
	cfg := target("local", local.url(), "private") + target("paid", paid.url(), "public", `model = "m"`) +
		extra + "[routes.r]\ntargets = [\"local\", \"paid\"]\n"
	return newGateway(t, cfg, nil), local, paid
}

// openRouterStream is a stream as OpenRouter sends it: a ": OPENROUTER PROCESSING" comment while
// the provider has not answered, comments between chunks, its own fields (provider,
// native_finish_reason, usage.cost) on the chunks, and end for the last events.
func openRouterStream(end string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		fmt.Fprint(w, ": OPENROUTER PROCESSING\n\n")
		fl.Flush()
		fmt.Fprint(w, ": OPENROUTER PROCESSING\n\n")
		fl.Flush()
		fmt.Fprint(w, `data: {"id":"gen-1","provider":"DeepInfra","model":"m","object":"chat.completion.chunk","created":1,"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null,"native_finish_reason":null,"logprobs":null}]}`+"\n\n")
		fl.Flush()
		fmt.Fprint(w, ": OPENROUTER PROCESSING\n\n")
		fmt.Fprint(w, `data: {"id":"gen-1","provider":"DeepInfra","model":"m","object":"chat.completion.chunk","created":1,"choices":[{"index":0,"delta":{"role":"assistant","content":"lo"},"finish_reason":null,"native_finish_reason":null,"logprobs":null}]}`+"\n\n")
		fl.Flush()
		fmt.Fprint(w, end)
	}
}

const openRouterEnd = `data: {"id":"gen-1","provider":"DeepInfra","model":"m","object":"chat.completion.chunk","created":1,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"stop","native_finish_reason":"stop","logprobs":null}]}` + "\n\n" +
	": OPENROUTER PROCESSING\n\n" +
	`data: {"id":"gen-1","provider":"DeepInfra","model":"m","object":"chat.completion.chunk","created":1,"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,"cost":0.000042,"is_byok":false,"prompt_tokens_details":{"cached_tokens":0},"cost_details":{"upstream_inference_cost":null},"completion_tokens_details":{"reasoning_tokens":0}}}` + "\n\n" +
	"data: [DONE]\n\n"

// TestOpenRouterStreamRelayed: OpenRouter's comment lines, before the first chunk and between
// chunks, neither break the stream nor reach the client (they carry nothing; the gateway's own
// writes keep the client's connection live), and its own fields (provider, native_finish_reason,
// usage.cost) reach the client as they came. The usage chunk with empty choices that a client
// asked for with include_usage comes once, at the end, and the stream ends with [DONE].
func TestOpenRouterStreamRelayed(t *testing.T) {
	g, _, paid := cloudChain(t, "")
	paid.set(openRouterStream(openRouterEnd))
	rep := g.post(t, "/v1/chat/completions", `{"model":"r","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`)
	body := string(rep.body)
	if rep.status != 200 || rep.header.Get("x-hayula-chain") != "local→paid (served by paid)" {
		t.Fatalf("status %d chain %q: %s", rep.status, rep.header.Get("x-hayula-chain"), body)
	}
	for _, want := range []string{`"provider":"DeepInfra"`, `"native_finish_reason":"stop"`, `"cost":0.000042`, `"is_byok":false`, `"content":"Hel"`, `"content":"lo"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the client's stream lacks %s:\n%s", want, body)
		}
	}
	if strings.Contains(body, "OPENROUTER") {
		t.Errorf("a comment line reached the client:\n%s", body)
	}
	if n := strings.Count(body, `"usage"`); n != 1 {
		t.Errorf("%d usage chunks, want 1:\n%s", n, body)
	}
	if !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Errorf("the stream does not end with [DONE]:\n%s", body)
	}
}

// TestOpenRouterMidStreamError: after its 200 and some tokens, OpenRouter says a provider's
// failure in a data event with a top-level error and a choice finishing "error". The client must
// not read that as a normal end: it gets the tokens, then an error event, and no [DONE]; the
// stream counts as broken off.
func TestOpenRouterMidStreamError(t *testing.T) {
	g, _, paid := cloudChain(t, "")
	paid.set(openRouterStream(`data: {"id":"gen-1","object":"chat.completion.chunk","created":1,"model":"m","provider":"DeepInfra","error":{"code":502,"message":"Provider disconnected"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error","native_finish_reason":"error"}]}` + "\n\n" + "data: [DONE]\n\n"))
	rep := g.post(t, "/v1/chat/completions", `{"model":"r","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	body := string(rep.body)
	if !strings.Contains(body, `"content":"lo"`) {
		t.Fatalf("the tokens before the error did not reach the client:\n%s", body)
	}
	if strings.Contains(body, "[DONE]") {
		t.Errorf("a stream that failed ended with [DONE]:\n%s", body)
	}
	if !strings.Contains(body, `"error"`) || !strings.Contains(body, "Provider disconnected") {
		t.Errorf("the client's stream does not end with the provider's error:\n%s", body)
	}
	_, lines := scrape(t, g)
	if want := `hayula_stream_ends_total{endpoint="chat",route="r",target="paid",end="broke_off"} 1`; !lines[want] {
		t.Errorf("no %s", want)
	}
}

// TestInsufficientQuotaBenchesAtOnce: OpenAI's 429 insufficient_quota (the account is out of
// credit) does not pass by waiting. The first one benches the target for cooldown.max, so that the
// requests after it go straight to the next target instead of each paying a failing round trip
// (three of them, then a probe every 30s, 60s, … as for a burst's 429). A success after the
// cooldown clears it as any other.
func TestInsufficientQuotaBenchesAtOnce(t *testing.T) {
	openai, other := newFake(t, "openai"), newFake(t, "other")
	// OpenAI sends its per-minute limits' headers with every answer, this one too: they are not
	// what refused it, and must not make its bench a few milliseconds long.
	openai.set(realHandler(realError{status: 429,
		header: map[string]string{"X-Ratelimit-Remaining-Tokens": "29000", "X-Ratelimit-Reset-Tokens": "6ms",
			"X-Ratelimit-Remaining-Requests": "499", "X-Ratelimit-Reset-Requests": "120ms"},
		body: `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`}))
	cfg := target("openai", openai.url(), "public", `model = "m"`) + target("other", other.url(), "public", `model = "m"`) +
		"[cooldown]\nmax = \"10m\"\n\n[routes.r]\ntargets = [\"openai\", \"other\"]\n"
	g := newGateway(t, cfg, nil)
	if rep := g.chat(t, "r"); rep.status != 200 || rep.header.Get("x-hayula-chain") != "openai→other (served by other)" {
		t.Fatalf("first request: %d chain %q: %s", rep.status, rep.header.Get("x-hayula-chain"), rep.body)
	}
	st := g.srv.Health().Snapshot(mustTarget(t, g, "openai"))
	if !st.Cooling || st.Until.Sub(g.clock.Now()) != 10*time.Minute {
		t.Fatalf("one insufficient_quota should bench openai for cooldown.max (10m): %+v", st)
	}
	for range 3 {
		g.clock.Advance(time.Minute)
		if rep := g.chat(t, "r"); rep.status != 200 {
			t.Fatalf("status %d: %s", rep.status, rep.body)
		}
	}
	if n := openai.hits.Load(); n != 1 {
		t.Errorf("openai asked %d times while out of quota, want once", n)
	}
	g.clock.Advance(7*time.Minute + time.Second)
	openai.set(okHandler("openai"))
	if rep := g.chat(t, "r"); rep.header.Get("x-hayula-chain") != "openai" {
		t.Errorf("after the cooldown the probe should reach openai: chain %q", rep.header.Get("x-hayula-chain"))
	}
	if st := g.srv.Health().Snapshot(mustTarget(t, g, "openai")); st.Status != "healthy" || st.Cooldowns != 0 {
		t.Errorf("a success after the cooldown should clear it: %+v", st)
	}
}

// TestOpenAIRateLimitHeaders: OpenAI (and Groq) may answer a 429 without Retry-After, its wait
// only in x-ratelimit-reset-tokens/-requests ("45s", "6m0s"). The gateway reads the reset of the
// limit that ran out as a Retry-After: the target is benched for it at once, and a client that
// nothing else answered is told it. Before, such a 429 counted as one failure of three, and the
// client was told nothing of when to come back.
func TestOpenAIRateLimitHeaders(t *testing.T) {
	openai := newFake(t, "openai")
	openai.set(realHandler(realError{status: 429,
		header: map[string]string{"X-Ratelimit-Limit-Tokens": "30000", "X-Ratelimit-Remaining-Tokens": "0", "X-Ratelimit-Reset-Tokens": "44.5s",
			"X-Ratelimit-Limit-Requests": "500", "X-Ratelimit-Remaining-Requests": "499", "X-Ratelimit-Reset-Requests": "120ms"},
		body: `{"error":{"message":"Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Used 30000, Requested 120. Please try again in 44.5s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`}))
	g := newGateway(t, target("openai", openai.url(), "public", `model = "m"`)+"[routes.r]\ntargets = [\"openai\"]\n", nil)
	rep := g.chat(t, "r")
	if rep.status != 429 || rep.header.Get("Retry-After") != "45" {
		t.Errorf("client got %d with Retry-After %q, want 429 with 45: %s", rep.status, rep.header.Get("Retry-After"), rep.body)
	}
	st := g.srv.Health().Snapshot(mustTarget(t, g, "openai"))
	if !st.Cooling || st.Until.Sub(g.clock.Now()) != 44500*time.Millisecond {
		t.Errorf("a 429 whose tokens reset in 44.5s should bench openai for that long: %+v", st)
	}
}

// openRouterChoiceError is OpenRouter's answer whose provider failed while generating: a 200, the
// error on the choice (its response schema's choices[].error) and finish_reason "error", content as
// far as it got.
func openRouterChoiceError(content string) string {
	return fmt.Sprintf(`{"id":"gen-2","provider":"Chutes","model":"m","object":"chat.completion","created":1,"choices":[{"logprobs":null,"finish_reason":"error","native_finish_reason":"error","index":0,"message":{"role":"assistant","content":%q,"refusal":null},"error":{"code":502,"message":"Provider returned error","metadata":{"raw":"upstream connect error","provider_name":"Chutes"}}}],"usage":{"prompt_tokens":10,"completion_tokens":0,"total_tokens":10,"cost":0}}`, content)
}

// TestOpenRouterChoiceErrorMovesOn: an OpenRouter 200 whose only choice failed with nothing in it
// (finish_reason "error", the error on the choice) is no answer: the chain moves on, as for a 502,
// and the attempt counts as a server_error. Relayed, the client read an empty completion as a
// success. One with content in it goes as it came: the client reads its finish_reason.
func TestOpenRouterChoiceErrorMovesOn(t *testing.T) {
	or, next := newFake(t, "or"), newFake(t, "next")
	or.set(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, openRouterChoiceError(""))
	})
	cfg := target("or", or.url(), "public", `model = "m"`) + target("next", next.url(), "public", `model = "m"`) +
		"[routes.r]\ntargets = [\"or\", \"next\"]\n"
	g := newGateway(t, cfg, nil)
	rep := g.chat(t, "r")
	if rep.status != 200 || rep.header.Get("x-hayula-chain") != "or→next (served by next)" {
		t.Errorf("an empty answer that failed should move on: %d chain %q: %s", rep.status, rep.header.Get("x-hayula-chain"), rep.body)
	}
	_, lines := scrape(t, g)
	if want := `hayula_upstream_attempts_total{target="or",result="server_error"} 1`; !lines[want] {
		t.Errorf("no %s", want)
	}

	or.set(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, openRouterChoiceError("The answer began"))
	})
	rep = g.chat(t, "r")
	if rep.status != 200 || rep.header.Get("x-hayula-chain") != "or" || !strings.Contains(string(rep.body), `"finish_reason":"error"`) {
		t.Errorf("an answer with content should go as it came: %d chain %q: %s", rep.status, rep.header.Get("x-hayula-chain"), rep.body)
	}
}

// TestOpenRouterChoiceErrorInStream: the same in a stream, the error on the chunk's choice and no
// top-level error. As the first event it moves the chain on; after tokens the client's stream ends
// with an error event saying the provider's words, not with [DONE] as if whole.
func TestOpenRouterChoiceErrorInStream(t *testing.T) {
	const errChunk = `data: {"id":"gen-1","provider":"Chutes","model":"m","object":"chat.completion.chunk","created":1,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"error","native_finish_reason":"error","logprobs":null,"error":{"code":502,"message":"Provider returned error","metadata":{"provider_name":"Chutes"}}}]}` + "\n\n"
	g, _, paid := cloudChain(t, "")
	paid.set(openRouterStream(errChunk + "data: [DONE]\n\n"))
	rep := g.post(t, "/v1/chat/completions", `{"model":"r","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	body := string(rep.body)
	if !strings.Contains(body, `"content":"lo"`) {
		t.Fatalf("the tokens before the error did not reach the client:\n%s", body)
	}
	if strings.Contains(body, "[DONE]") || !strings.Contains(body, "Provider returned error") {
		t.Errorf("a stream whose choice failed must end with an error event, not [DONE]:\n%s", body)
	}
	_, lines := scrape(t, g)
	if want := `hayula_stream_ends_total{endpoint="chat",route="r",target="paid",end="broke_off"} 1`; !lines[want] {
		t.Errorf("no %s", want)
	}

	// As the first event: the chain moves on.
	or, next := newFake(t, "or"), newFake(t, "next")
	or.set(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, ": OPENROUTER PROCESSING\n\n"+errChunk+"data: [DONE]\n\n")
	})
	cfg := target("or", or.url(), "public", `model = "m"`) + target("next", next.url(), "public", `model = "m"`) +
		"[routes.r]\ntargets = [\"or\", \"next\"]\n"
	g = newGateway(t, cfg, nil)
	rep = g.post(t, "/v1/chat/completions", `{"model":"r","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if rep.header.Get("x-hayula-chain") != "or→next (served by next)" || !strings.Contains(string(rep.body), `"content":" next"`) {
		t.Errorf("a stream that failed at its first event should move on: chain %q:\n%s", rep.header.Get("x-hayula-chain"), rep.body)
	}
}

// TestShouldRetryFalse: OpenAI's SDKs obey an answer's x-should-retry: "false" is the server
// saying another try will not help (a proxy in front that has spent its own retries sends it
// too). A target with max_retries is then not asked again within the request; the chain moves on
// as the class says. Without the header the same 503 is retried.
func TestShouldRetryFalse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header map[string]string
		hits   int64
	}{
		{"x-should-retry false", map[string]string{"X-Should-Retry": "false"}, 1},
		{"x-should-retry true", map[string]string{"X-Should-Retry": "true"}, 4},
		{"none", nil, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, a, b, _ := realGateway(t, realError{status: 503, header: tc.header,
				body: `{"error":{"message":"The server is overloaded or not ready yet.","type":"server_error","param":null,"code":null}}`}, "max_retries = 3")
			g.chat(t, "r")
			if n := a.hits.Load(); n != tc.hits {
				t.Errorf("a asked %d times with max_retries 3, want %d", n, tc.hits)
			}
			if n := b.hits.Load(); n == 0 {
				t.Errorf("the chain did not move on to b")
			}
		})
	}
}

// TestOpenRouterWholeAnswerFields: a whole OpenRouter answer reaches the client as it came, its
// own fields with it (provider, native_finish_reason, usage.cost and its details).
func TestOpenRouterWholeAnswerFields(t *testing.T) {
	g, _, paid := cloudChain(t, "")
	const answer = `{"id":"gen-3","provider":"Groq","model":"m","object":"chat.completion","created":1,"system_fingerprint":null,"choices":[{"logprobs":null,"finish_reason":"stop","native_finish_reason":"stop","index":0,"message":{"role":"assistant","content":"Hello","refusal":null,"reasoning":null}}],"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11,"cost":0.0000123,"is_byok":false,"prompt_tokens_details":{"cached_tokens":0},"cost_details":{"upstream_inference_cost":null},"completion_tokens_details":{"reasoning_tokens":0}}}`
	paid.set(realHandler(realError{status: 200, body: answer}))
	rep := g.chat(t, "r")
	if rep.status != 200 || rep.header.Get("x-hayula-chain") != "local→paid (served by paid)" {
		t.Fatalf("status %d chain %q: %s", rep.status, rep.header.Get("x-hayula-chain"), rep.body)
	}
	if got := strings.TrimSpace(string(rep.body)); got != answer {
		t.Errorf("the answer was not relayed as it came:\n got %s\nwant %s", got, answer)
	}
}

// TestFinalErrorShouldRetry: when every target refused in a way a retry seconds later meets again
// (here both accounts out of credit), the client's answer says x-should-retry: false, and
// openai-go, with its default two retries, asks once: before, each SDK retry walked the whole
// chain again for the same two refusals. A failure a retry may mend (a plain rate limit) says
// nothing, and the SDK's own rule applies.
func TestFinalErrorShouldRetry(t *testing.T) {
	quota := `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`
	a, b := newFake(t, "a"), newFake(t, "b")
	a.set(realHandler(realError{status: 429, body: quota}))
	b.set(realHandler(realError{status: 429, body: quota}))
	cfg := target("a", a.url(), "public", `model = "m"`) + target("b", b.url(), "public", `model = "m"`) +
		"[routes.r]\ntargets = [\"a\", \"b\"]\n"
	g := newGateway(t, cfg, nil)
	rep := g.chat(t, "r")
	if rep.status != 429 || rep.header.Get("X-Should-Retry") != "false" {
		t.Fatalf("got %d x-should-retry %q, want 429 false: %s", rep.status, rep.header.Get("X-Should-Retry"), rep.body)
	}
	a.hits.Store(0)
	b.hits.Store(0)
	c := openai.NewClient(option.WithBaseURL(g.ts.URL+"/v1/"), option.WithAPIKey("unused"),
		option.WithHTTPClient(g.ts.Client()), option.WithMaxRetries(2))
	_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "r", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	if apiErr, ok := errors.AsType[*openai.Error](err); !ok || apiErr.StatusCode != 429 || apiErr.Code != "insufficient_quota" {
		t.Fatalf("SDK error %v, want the 429 insufficient_quota", err)
	}
	if na, nb := a.hits.Load(), b.hits.Load(); na != 1 || nb != 1 {
		t.Errorf("each target asked %d and %d times through the SDK, want once each", na, nb)
	}

	a.set(realHandler(realError{status: 500, body: `{"error":{"message":"overloaded","type":"server_error","code":"overloaded"}}`}))
	if rep := g.chat(t, "r"); rep.status != 503 || rep.header.Get("X-Should-Retry") != "" ||
		!strings.Contains(string(rep.body), "a: server_error (500 overloaded); b: rate_limit (429 insufficient_quota)") {
		t.Errorf("a server error beside a bill: got %d x-should-retry %q: %s", rep.status, rep.header.Get("X-Should-Retry"), rep.body)
	}
}

// TestFinalErrorShouldRetryNotWithTargetsUntried: a target of the route that health set aside
// (in its cooldown) was not tried: the other's bill is no reason to tell the SDK that a retry
// is futile, since the one set aside may take it once it recovers. The answer says nothing.
func TestFinalErrorShouldRetryNotWithTargetsUntried(t *testing.T) {
	quota := `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`
	a, b := newFake(t, "a"), newFake(t, "b")
	a.set(errHandler(500, "boom", "a down"))
	b.set(okHandler("b"))
	cfg := "[cooldown]\nfailures = 1\n" + target("a", a.url(), "public", `model = "m"`) + target("b", b.url(), "public", `model = "m"`) +
		"[routes.r]\ntargets = [\"a\", \"b\"]\n"
	g := newGateway(t, cfg, nil)
	if rep := g.chat(t, "r"); rep.status != 200 {
		t.Fatalf("a down, b up: got %d: %s", rep.status, rep.body)
	}
	b.set(realHandler(realError{status: 429, body: quota}))
	a.hits.Store(0)
	rep := g.chat(t, "r")
	if rep.status != 429 || a.hits.Load() != 0 {
		t.Fatalf("got %d with a asked %d times, want b's 429 and a, cooling down, not asked: %s", rep.status, a.hits.Load(), rep.body)
	}
	if h := rep.header.Get("X-Should-Retry"); h != "" {
		t.Errorf("x-should-retry %q with a set aside untried, want none", h)
	}
}
