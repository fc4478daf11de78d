package upstream

import (
	"bytes"
	"strings"
	"testing"
)

// openAIAnswer is a whole answer in OpenAI's shape around text (raw JSON string content, escapes
// and all), as the bench's fake upstream writes one, with tail (members) before its usage.
func openAIAnswer(text, tail string) []byte {
	return []byte(`{"id":"chatcmpl-bench","object":"chat.completion","created":1764460800,"model":"fake-model",` +
		`"system_fingerprint":"fp_bench","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		text + `"},"logprobs":null,"finish_reason":"stop"}]` + tail +
		`,"usage":{"prompt_tokens":212,"completion_tokens":38,"total_tokens":250}}`)
}

func checkRaw(t *testing.T, body []byte) {
	t.Helper()
	e, a := rawErrorAbort(body)
	if we, wa := bytes.Contains(body, errorQuoted), bytes.Contains(body, abortQuoted); e != we || a != wa {
		t.Errorf("rawErrorAbort(%d bytes: ...%q) = %v, %v; bytes.Contains says %v, %v",
			len(body), body[max(0, len(body)-40):], e, a, we, wa)
	}
}

// TestRawErrorAbortAgrees: rawErrorAbort says what two bytes.Contains say, on answers short and
// long (text of quiet words, which IndexByte crosses), with the raw words, and near misses of
// them (with a '#', which swar.Is may take for a quote after a true one), at every place within
// the words it reads: in the answer's head, after text, and in its last bytes,
// which the word loop leaves to the byte loop.
func TestRawErrorAbortAgrees(t *testing.T) {
	prose := strings.Repeat("An answer of plain prose, a few sentences long. ", 100)
	jsonText := strings.Repeat(`{\"error\":null,\"abort\":0,\"a\":\"b\"} `, 100)
	words := []string{`"error"`, `"abort"`, `"errors"`, `"eror"`, `error"`, `"abort`, `"abor"t"`, `""`, `"#error"`, `"error#"`, `"#abort"`}
	for _, text := range []string{"", "short", prose[:900], prose, jsonText} {
		checkRaw(t, openAIAnswer(text, ""))
		for _, w := range words {
			for pad := 0; pad < 24; pad++ {
				checkRaw(t, openAIAnswer(text, `,"x`+strings.Repeat("y", pad)+`":`+w))
				checkRaw(t, openAIAnswer(strings.Repeat(" ", pad)+w+text, ""))
				checkRaw(t, openAIAnswer(text+strings.Repeat(" ", pad)+w, ""))
				body := openAIAnswer(text, "")
				checkRaw(t, append(append(body[:len(body):len(body)], strings.Repeat(" ", pad)...), w...))
			}
		}
	}
	// Both raw words found after a run of quiet words, in a dense head, and in the last bytes,
	// in an answer long and short.
	for _, text := range []string{prose, "short"} {
		body := openAIAnswer(text, `,"error":{"message":"x"},"f":"abort"`)
		if e, a := rawErrorAbort(body); !e || !a {
			t.Fatalf("rawErrorAbort of a %d-byte answer with both = %v, %v", len(body), e, a)
		}
	}
	if e, a := rawErrorAbort([]byte(`"abort""error"`)); !e || !a {
		t.Fatalf("rawErrorAbort of the two words alone = %v, %v", e, a)
	}
}

// FuzzRawErrorAbort holds rawErrorAbort to bytes.Contains, on the input as it is and padded
// with quiet words, which IndexByte crosses, before it and after it.
func FuzzRawErrorAbort(f *testing.F) {
	for _, s := range []string{`{"error":1}`, `"abort"`, `{"a":"x","b":"error"}`, `""""""""error"`} {
		f.Add([]byte(s), uint16(0))
	}
	f.Fuzz(func(t *testing.T, b []byte, pad uint16) {
		checkRaw(t, b)
		long := append(bytes.Repeat([]byte{' '}, 24+int(pad%1024)), b...) // three quiet words or more
		checkRaw(t, long)
		checkRaw(t, append(b[:len(b):len(b)], long...))
	})
}

// BenchmarkRawErrorAbort: the two raw searches of every whole answer, on the bench's answer, on
// one of 4 KB of prose, and on ones of 4 KB and 300 bytes of escaped JSON (a tool's or a JSON
// mode's text).
func BenchmarkRawErrorAbort(b *testing.B) {
	for _, bc := range []struct{ name, text string }{
		{"bench", "This is a fixed answer from the benchmark's fake upstream. It is about as long as a short reply " +
			"from a chat model, so that copying it costs what copying a real answer costs."},
		{"prose-4KB", strings.Repeat("An answer of plain prose, a few sentences long. ", 85)},
		{"json-4KB", strings.Repeat(`{\"name\":\"x\",\"v\":[1,2]} `, 140)},
		{"json-300B", strings.Repeat(`{\"name\":\"x\",\"v\":[1,2]} `, 10)},
	} {
		body := openAIAnswer(bc.text, "")
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if e, a := rawErrorAbort(body); e || a {
					b.Fatal("found a raw word")
				}
			}
		})
	}
}
