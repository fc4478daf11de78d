package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/hayula/gateway/core"
)

// TestSAIFAnswerIDs: an answer SAIF gave no id is named as OpenAI names its kind, "cmpl-" for a
// text_completion (as the streamed one already was) and "chatcmpl-" for a chat.completion.
func TestSAIFAnswerIDs(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"text":"hi","finish_reason":"stop","usage":{"prompt_tokens":1,"completion_tokens":1}}`)
	})
	tg := saifTarget(srv.URL)
	for _, tc := range []struct {
		op           core.Op
		body, object string
		prefix       string
	}{
		{core.OpCompletions, `{"model":"m","prompt":"x"}`, "text_completion", "cmpl-"},
		{core.OpChat, `{"model":"m","messages":[{"role":"user","content":"x"}]}`, "chat.completion", "chatcmpl-"},
	} {
		t.Run(tc.object, func(t *testing.T) {
			req := &core.Request{Op: tc.op, Body: []byte(tc.body)}
			if tc.op == core.OpChat {
				req = chatRequestOf(t, tc.body)
			}
			resp, err := newSet(t, tg).Chat(context.Background(), tg, req)
			if err != nil {
				t.Fatal(err)
			}
			var got struct{ ID, Object string }
			if err := json.Unmarshal(resp.Body, &got); err != nil {
				t.Fatal(err)
			}
			if got.Object != tc.object || !strings.HasPrefix(got.ID, tc.prefix) || strings.HasPrefix(got.ID, tc.prefix+"chatcmpl-") {
				t.Errorf("object %q id %q, want %s with an id %s…", got.Object, got.ID, tc.object, tc.prefix)
			}
		})
	}
}

// TestSAIFCompletionsRefusesEchoAndSuffix: SAIF completes the prompt and nothing else, so a
// completions request that asks for the prompt echoed, or for text inserted before a suffix, is
// refused before anything is sent instead of answered with a plain completion in its place.
func TestSAIFCompletionsRefusesEchoAndSuffix(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"text":"hi","finish_reason":"stop","usage":{"prompt_tokens":1,"completion_tokens":1}}`)
	})
	tg := saifTarget(srv.URL)
	for _, tc := range []struct{ body, param string }{
		{`{"prompt":"x","echo":true}`, "echo"},
		{`{"prompt":"x","suffix":"}"}`, "suffix"},
		{`{"prompt":"x","echo":false,"suffix":""}`, ""},
		{`{"prompt":"x","echo":null,"suffix":null}`, ""},
	} {
		t.Run(tc.body, func(t *testing.T) {
			_, err := newSet(t, tg).Chat(context.Background(), tg, &core.Request{Op: core.OpCompletions, Body: []byte(tc.body)})
			if tc.param == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			se, ok := errors.AsType[*core.StatusError](err)
			if !ok || se.Status != 400 || se.Param != tc.param || se.Code != "unsupported_value" {
				t.Fatalf("error %v, want 400 unsupported_value on %s", err, tc.param)
			}
		})
	}
}

// TestStatedLengthIsNotPreallocated: an answer whose head states a large Content-Length (within
// the 32 MiB limit) and then sends a few bytes must not make the gateway allocate the stated
// length before the bytes come: 40 bytes of head were 32 MiB of heap per request in flight.
func TestStatedLengthIsNotPreallocated(t *testing.T) {
	resp := &http.Response{ContentLength: 30 << 20, Body: io.NopCloser(strings.NewReader(`{"id":"x"}`))}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := readAnswer(context.Background(), &core.Target{Name: "t"}, resp)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Logf("readAnswer: %v", err) // a short body; what matters is what it allocated for it
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20 {
		t.Fatalf("allocated %d bytes for a stated 30 MiB that never came", got)
	}
}

// TestSAIFFinishReasonHasNoToolCalls: SAIF has no tools, so a finish_reason "tool_calls" it
// sends becomes "stop", whole and streamed: passed on, it told the client to run tool calls the
// message does not have (an SDK agent loop looks for them). "max_tokens" is "length", and
// "content_filter" stays.
func TestSAIFFinishReasonHasNoToolCalls(t *testing.T) {
	for in, want := range map[string]string{"tool_calls": "stop", "max_tokens": "length", "length": "length",
		"content_filter": "content_filter", "eos": "stop", "": "stop"} {
		srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			if strings.Contains(string(b), `"stream":true`) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, `data: {"text":"hi","specialist":"webapp"}`+"\n\n"+
					`data: {"done":true,"finish_reason":"`+in+`","usage":{"prompt_tokens":1,"completion_tokens":1}}`+"\n\n")
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"text":"hi","finish_reason":"`+in+`","usage":{"prompt_tokens":1,"completion_tokens":1}}`)
		})
		tg := saifTarget(srv.URL)
		resp, err := newSet(t, tg).Chat(context.Background(), tg, chatRequestOf(t, `{"model":"m","messages":[{"role":"user","content":"x"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		var whole struct {
			Choices []struct {
				FinishReason string `json:"finish_reason"`
			}
		}
		if err := json.Unmarshal(resp.Body, &whole); err != nil || len(whole.Choices) != 1 {
			t.Fatalf("%q: %s", in, resp.Body)
		}
		if whole.Choices[0].FinishReason != want {
			t.Errorf("%q whole: finish_reason %q, want %q", in, whole.Choices[0].FinishReason, want)
		}
		resp, err = newSet(t, tg).Chat(context.Background(), tg, chatRequestOf(t, `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		var last string
		for {
			c, err := resp.Stream.Next()
			if err != nil {
				break
			}
			if i := strings.Index(string(c), `"finish_reason":"`); i >= 0 {
				last = string(c)[i+len(`"finish_reason":"`):]
				last = last[:strings.IndexByte(last, '"')]
			}
		}
		resp.Stream.Close()
		if last != want {
			t.Errorf("%q stream: finish_reason %q, want %q", in, last, want)
		}
	}
}
