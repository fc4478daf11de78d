package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// allocBytes is the heap bytes f allocates, read from the runtime's running total.
func allocBytes(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestResponsesInputLinear: the bridge joined a message's text parts, a function_call_output's
// parts and the leading system messages with s += t, so a Responses body of many tiny parts or
// developer messages (a few MB under max_body_bytes) made it allocate bytes quadratic in their
// number: 65,000 one-letter parts, a 2 MB body, allocated 2.3 GB. The test counts the bytes toChat
// allocates for n and 4n pieces: linear work grows about 4 times, quadratic 16.
func TestResponsesInputLinear(t *testing.T) {
	join := func(piece string, n int) string {
		return strings.TrimSuffix(strings.Repeat(piece+",", n), ",")
	}
	for _, tc := range []struct {
		name string
		body func(n int) string
	}{
		{"message parts", func(n int) string {
			return `{"model":"m","input":[{"role":"user","content":[` + join(`{"type":"input_text","text":"a"}`, n) + `]}]}`
		}},
		{"assistant parts", func(n int) string {
			return `{"model":"m","input":[{"role":"assistant","content":[` + join(`{"type":"output_text","text":"a"}`, n) + `]},{"role":"user","content":"hi"}]}`
		}},
		{"refusal parts", func(n int) string {
			return `{"model":"m","input":[{"role":"assistant","content":[` + join(`{"type":"refusal","refusal":"a"}`, n) + `]},{"role":"user","content":"hi"}]}`
		}},
		{"tool output parts", func(n int) string {
			return `{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},` +
				`{"type":"function_call_output","call_id":"c","output":[` + join(`{"type":"input_text","text":"a"}`, n) + `]}]}`
		}},
		{"reasoning summary parts", func(n int) string {
			return `{"model":"m","input":[{"role":"user","content":"hi"},{"type":"reasoning","summary":[` +
				join(`{"type":"summary_text","text":"a"}`, n) + `]},{"role":"assistant","content":"ok"},{"role":"user","content":"hi"}]}`
		}},
		{"reasoning between calls", func(n int) string {
			var calls, outputs strings.Builder
			for i := range n / 8 {
				fmt.Fprintf(&calls, `{"type":"reasoning","summary":[{"type":"summary_text","text":"a"}]},{"type":"function_call","call_id":"c%d","name":"f","arguments":"{}"},`, i)
				fmt.Fprintf(&outputs, `,{"type":"function_call_output","call_id":"c%d","output":"a"}`, i)
			}
			return `{"model":"m","input":[{"role":"user","content":"hi"},` + strings.TrimSuffix(calls.String(), ",") + outputs.String() + `]}`
		}},
		{"leading system messages", func(n int) string {
			return `{"model":"m","instructions":"be brief","input":[` + join(`{"role":"developer","content":"a"}`, n) + `,{"role":"user","content":"hi"}]}`
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [2]uint64
			var size [2]int
			for k, n := range []int{8000, 32000} {
				body := []byte(tc.body(n))
				size[k] = len(body)
				got[k] = allocBytes(func() {
					if _, e := (&responsesWriter{}).toChat(body); e != nil {
						t.Fatalf("toChat: %v", e.Message)
					}
				})
			}
			ratio := float64(got[1]) / float64(got[0])
			t.Logf("%d B body: %d B allocated; %d B body: %d B (%.1f times)", size[0], got[0], size[1], got[1], ratio)
			if ratio > 8 {
				t.Errorf("4 times the pieces allocated %.1f times the bytes (%d -> %d): not linear", ratio, got[0], got[1])
			}
		})
	}
}

// TestResponsesCallDeltaLinear: the bridge found the call a streamed tool call delta continues by
// looking at every call streamed so far, so an upstream streaming n calls (each whole, at index 0
// with its own id, as Ollama's OpenAI endpoint does, or each at an index of its own) cost n*n/2
// looks. The test counts them.
func TestResponsesCallDeltaLinear(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		delta func(i int) string
	}{
		{"each at index 0 with its own id", func(i int) string {
			return fmt.Sprintf(`{"index":0,"id":"call_%d","type":"function","function":{"name":"f","arguments":"{}"}}`, i)
		}},
		{"each at its own index", func(i int) string {
			return fmt.Sprintf(`{"index":%d,"id":"call_%d","type":"function","function":{"name":"f","arguments":"{}"}}`, i, i)
		}},
		{"named, then arguments", func(i int) string {
			if i%2 == 0 {
				return fmt.Sprintf(`{"index":%d,"id":"call_%d","type":"function","function":{"name":"f","arguments":""}}`, i/2, i)
			}
			return fmt.Sprintf(`{"index":%d,"function":{"arguments":"{}"}}`, i/2)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 4000
			rec := httptest.NewRecorder()
			rec.Header().Set("Content-Type", "text/event-stream")
			b := &responsesWriter{w: rec, stream: true}
			b.WriteHeader(http.StatusOK)
			for i := range n {
				ev := `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"tool_calls":[` +
					tc.delta(i) + `]},"finish_reason":null}]}` + "\n\n"
				if _, err := b.Write([]byte(ev)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := b.Write([]byte("data: [DONE]\n\n")); err != nil {
				t.Fatal(err)
			}
			if got := strings.Count(rec.Body.String(), "event: response.output_item.done\n"); got != len(b.calls) || got == 0 {
				t.Fatalf("%d items done for %d calls", got, len(b.calls))
			}
			t.Logf("%d deltas, %d calls: %d looks", n, len(b.calls), b.callSteps)
			if b.callSteps > 2*n {
				t.Errorf("%d deltas looked at %d calls (more than %d)", n, b.callSteps, 2*n)
			}
		})
	}
}

// TestResponsesNestedThinkingLinear: the bridge read a content part of type "thinking" by decoding
// its value as content again, so thinking parts nested in thinking parts (encoding/json allows
// 10,000 levels, a 330 KB answer or chunk) were each validated and copied once for every level
// above them: bytes quadratic in the depth, some 1.6 GB for the deepest. Only the first level's
// text is read (Magistral's thinking is a string or text parts). The test counts the bytes for d
// and 4d levels.
func TestResponsesNestedThinkingLinear(t *testing.T) {
	nested := func(d int) []byte {
		return []byte(`{"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":[` +
			strings.Repeat(`{"type":"thinking","thinking":[`, d) + `{"type":"text","text":"deep"}` + strings.Repeat(`]}`, d) +
			`,{"type":"text","text":"answer"}]},"finish_reason":"stop"}]}`)
	}
	var got [2]uint64
	for k, d := range []int{500, 2000} {
		body := nested(d)
		var a chatAnswer
		got[k] = allocBytes(func() {
			if err := json.Unmarshal(body, &a); err != nil {
				t.Fatal(err)
			}
		})
		if m := a.Choices[0].Message; m.text() != "answer" {
			t.Fatalf("depth %d: text %q", d, m.text())
		}
	}
	ratio := float64(got[1]) / float64(got[0])
	t.Logf("500 levels: %d B; 2000: %d B (%.1f times)", got[0], got[1], ratio)
	if ratio > 8 {
		t.Errorf("4 times the levels allocated %.1f times the bytes (%d -> %d): not linear", ratio, got[0], got[1])
	}
	// One level, as Magistral sends it, still reads.
	var a chatAnswer
	if err := json.Unmarshal([]byte(`{"choices":[{"message":{"content":[{"type":"thinking","thinking":[{"type":"text","text":"hm"}]},`+
		`{"type":"thinking","thinking":"then"},{"type":"text","text":"ok"}]}}]}`), &a); err != nil {
		t.Fatal(err)
	}
	if m := a.Choices[0].Message; m.text() != "ok" || m.thinking() != "hmthen" {
		t.Errorf("text %q thinking %q", m.text(), m.thinking())
	}
}

// tailWriter is an http.ResponseWriter that keeps only the last bytes written, for a test that
// streams more than it wants to hold.
type tailWriter struct {
	h    http.Header
	n    int
	tail []byte
}

func (w *tailWriter) Header() http.Header { return w.h }
func (w *tailWriter) WriteHeader(int)     {}
func (w *tailWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	w.tail = append(w.tail, p...)
	if len(w.tail) > 8<<10 {
		w.tail = append(w.tail[:0], w.tail[len(w.tail)-4<<10:]...)
	}
	return len(p), nil
}

// TestResponsesStreamOutputBounded: the Responses bridge keeps the text it streams, which the
// items' .done events and response.completed repeat, and that repetition cannot go once the text
// is longer than an event may be (maxEventData): the stream then ended at [DONE] with an error,
// but only after the bridge had kept every byte the upstream streamed, without a bound (a model
// looping without max_tokens, or an upstream that never ends). Now the stream ends as soon as the
// text is longer than that, with the same error event and response.failed, and the bridge keeps
// no more. Each kind of output counts: reasoning, message text and a call's arguments.
func TestResponsesStreamOutputBounded(t *testing.T) {
	t.Parallel()
	const piece = 4 << 20
	for _, tc := range []struct{ name, delta string }{
		{"text", `{"content":%q}`},
		{"reasoning", `{"reasoning_content":%q}`},
		{"call arguments", `{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":%q}}]}`},
		{"text and reasoning by turns", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := &tailWriter{h: http.Header{"Content-Type": {"text/event-stream"}}}
			b := &responsesWriter{w: w, stream: true}
			b.WriteHeader(http.StatusOK)
			text := strings.Repeat("x", piece)
			deltas := []string{tc.delta}
			if tc.delta == "" {
				deltas = []string{`{"content":%q}`, `{"reasoning_content":%q}`}
			}
			// Every piece of a kind is the same event: it is formatted once, not at each turn
			// (quoting 4 MiB under -race takes a while).
			evs := make([][]byte, len(deltas))
			for k, delta := range deltas {
				evs[k] = []byte(`data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":` +
					fmt.Sprintf(delta, text) + `,"finish_reason":null}]}` + "\n\n")
			}
			fed := 0
			for i := 0; i < 2*maxEventData/piece && !b.overLong; i++ {
				if _, err := b.Write(evs[i%len(evs)]); err != nil {
					t.Fatal(err)
				}
				fed += piece
			}
			if !b.overLong {
				t.Fatalf("%d MiB of output streamed and the bridge still keeps it for a response.completed "+
					"longer than %d bytes", fed>>20, maxEventData)
			}
			if fed > maxEventData+piece {
				t.Errorf("the stream ended after %d MiB of output, want at the first piece past %d bytes", fed>>20, maxEventData)
			}
			tail := string(w.tail)
			if !strings.Contains(tail, "event: error\n") || !strings.Contains(tail, `"code":"stream_interrupted"`) ||
				!strings.HasSuffix(tail, "\n\n") || !strings.Contains(tail[strings.LastIndex(tail, "event: "):], "event: response.failed\n") {
				t.Errorf("the stream ends %q, want the error event and response.failed", tail[max(0, len(tail)-600):])
			}
			if n := strings.Count(tail, "event: error\n"); n != 1 {
				t.Errorf("%d error events at the end, want 1", n)
			}
		})
	}
}
