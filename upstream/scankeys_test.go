package upstream

import (
	"strings"
	"testing"
)

// benchChunk is the bench's fake upstream's content chunk (bench/upstream.go), the event whose
// scan --count counts.
const benchChunk = `{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1764460800,"model":"fake-model",` +
	`"system_fingerprint":"fp_bench","choices":[{"index":0,"delta":{"content":" token7"},"logprobs":null,"finish_reason":null}]}`

// scanKeysEvents are events of the shapes a stream brings: the bench's chunk, a short one, the
// usage chunk, and chunks with a long English or Arabic content, whose text is most of the
// bytes scanned.
var scanKeysEvents = []struct{ name, ev string }{
	{"bench chunk", benchChunk},
	{"short chunk", chunkHello},
	{"usage chunk", chunkUsage},
	{"English 1KB", `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"` +
		strings.Repeat("The router reads the request, and every target that must not serve it is removed first. ", 12)[:1024] +
		`"},"finish_reason":null}]}`},
	{"Arabic 1KB", `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"` +
		strings.Repeat("يقرأ الموجّه الطلب ثم يزيل كل هدف لا يجوز أن يخدمه. ", 20)[:1024] +
		`"},"finish_reason":null}]}`},
}

// BenchmarkScanKeys is the one pass over each event of a stream passed through (openaiStream.Next).
func BenchmarkScanKeys(b *testing.B) {
	for _, e := range scanKeysEvents {
		b.Run(e.name, func(b *testing.B) {
			data := []byte(e.ev)
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				scanKeys(data)
			}
		})
	}
}
