package jsonx

import "testing"

func TestNonEmptyArray(t *testing.T) {
	for _, tc := range []struct {
		body string
		want bool
	}{
		{`{"id":"x","choices":[{"index":0}]}`, true},
		{`{"id":"x","choices": [ {"index":0} ] }`, true},
		{`{"choices":[1]}`, true},
		{`{"id":"x","choices":[]}`, false},
		{`{"id":"x","choices":[ ]}`, false},
		{`{"id":"x","choices":null}`, false},
		{`{"id":"x","choices":{"0":1}}`, false},
		{`{"id":"x","choices":"[1]"}`, false},
		{`{"id":"x"}`, false},
		{`{"id":"x","nested":{"choices":[1]}}`, false}, // only the top level counts
		{`{"id":"[\"choices\":[1]","x":1}`, false},     // nor a string that looks like it
		{`{"ch\u006fices":[1]}`, true},                 // an escaped key names it too
		{`{"choices":[],"choices":[1]}`, false},        // the first one decides
		{`{"id":"x","choices":`, false},
		{`{"id":"x","choices":[`, false},
		{`[{"choices":[1]}]`, false},
		{``, false},
	} {
		if got := NonEmptyArray([]byte(tc.body), "choices"); got != tc.want {
			t.Errorf("NonEmptyArray(%s) = %v, want %v", tc.body, got, tc.want)
		}
	}
}

func BenchmarkNonEmptyArray(b *testing.B) {
	body := []byte(`{"id":"chatcmpl-bench","object":"chat.completion","created":1764460800,"model":"fake-model","system_fingerprint":"fp_bench","choices":[{"index":0,"message":{"role":"assistant","content":"This is a fixed answer from the benchmark's fake upstream. It is about as long as a short reply."},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":212,"completion_tokens":38,"total_tokens":250}}`)
	for b.Loop() {
		if !NonEmptyArray(body, "choices") {
			b.Fatal("no choices")
		}
	}
}
