package server

import (
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
