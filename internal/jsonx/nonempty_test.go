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

func TestLast(t *testing.T) {
	for _, tc := range []struct {
		body, want string
		ok         bool
	}{
		{`{"id":"x","usage":{"p":1}}`, `{"p":1}`, true},
		{`{"id":"x","usage":{"p":1},"service_tier":"default","fp":"x"}`, `{"p":1}`, true},
		{`{"id":"x","usage" : {"p":1} }`, `{"p":1}`, true},           // spaced: found by the walk
		{`{"usage":{"p":1},"x":{"usage":{"p":2}}}`, `{"p":1}`, true}, // nested last: the walk
		{`{"x":{"usage":{"p":2}},"y":1}`, ``, false},                 // nested only
		{`{"usage":{"p":1},"usage":{"p":3}}`, `{"p":3}`, true},       // the last, as decoders keep
		{`{"a":"\"usage\":{\"p\":9}","usage":null}`, `null`, true},   // escaped text is no key
		{`{"a":"\"usage\":{\"p\":9}"}`, ``, false},
		{`{"usage":{"p":1}`, ``, false},
		{`{"a\"usage":{"p":1}}`, ``, false},  // a key that ends in "usage"
		{`{"a\\\\":1,"usage":2}`, `2`, true}, // a string that ends in a backslash before it
		{`{"usage"  :  {"p":1}  }`, `{"p":1}`, true},
		{`[{"usage":1}]`, ``, false},
	} {
		got, ok := Last([]byte(tc.body), "usage")
		if string(got) != tc.want || ok != tc.ok {
			t.Errorf("Last(%s) = %s, %v; want %s, %v", tc.body, got, ok, tc.want, tc.ok)
		}
	}
}
