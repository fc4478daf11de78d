package server

import (
	"net/http"
	"testing"
)

// discardSSE is the client's writer of a Responses stream, counting what it is given.
type discardSSE struct {
	h http.Header
	n int
}

func (w *discardSSE) Header() http.Header { return w.h }
func (w *discardSSE) WriteHeader(int)     {}
func (w *discardSSE) Write(p []byte) (int, error) {
	w.n += len(p)
	return len(p), nil
}
func (w *discardSSE) Flush() {}

const (
	bridgeTextEvent = "data: " + `{"id":"chatcmpl-8f2a","object":"chat.completion.chunk","created":1767366245,"model":"averroes-q",` +
		`"choices":[{"index":0,"delta":{"content":" token"},"logprobs":null,"finish_reason":null}]}` + "\n\n"
	bridgeThinkEvent = "data: " + `{"id":"chatcmpl-8f2a","object":"chat.completion.chunk","created":1767366245,"model":"deepseek-r1",` +
		`"choices":[{"index":0,"delta":{"reasoning_content":" token"},"logprobs":null,"finish_reason":null}]}` + "\n\n"
	bridgeFinishEvent = "data: " + `{"id":"chatcmpl-8f2a","object":"chat.completion.chunk","created":1767366245,"model":"averroes-q",` +
		`"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}` + "\n\n"
	bridgeUsageEvent = "data: " + `{"id":"chatcmpl-8f2a","object":"chat.completion.chunk","created":1767366245,"model":"averroes-q",` +
		`"choices":[],"usage":{"prompt_tokens":26,"completion_tokens":298,"total_tokens":324}}` + "\n\n"
)

// bridgeStream is a Responses stream opened and its first event (the item and part it opens)
// written, so that the next event of the same kind is one delta event.
func bridgeStream(tb testing.TB, event string) (*responsesWriter, *discardSSE) {
	w := &discardSSE{h: http.Header{"Content-Type": {"text/event-stream"}}}
	b := &responsesWriter{w: w, stream: true}
	b.WriteHeader(http.StatusOK)
	if _, err := b.Write([]byte(event)); err != nil {
		tb.Fatal(err)
	}
	return b, w
}

// endBridge ends b's stream as an upstream does: the finishing chunk, the usage chunk, [DONE].
func endBridge(tb testing.TB, b *responsesWriter) {
	for _, ev := range []string{bridgeFinishEvent, bridgeUsageEvent, "data: [DONE]\n\n"} {
		if _, err := b.Write([]byte(ev)); err != nil {
			tb.Fatal(err)
		}
	}
	if !b.ended {
		tb.Fatal("the stream did not end at [DONE]")
	}
}

// BenchmarkResponsesStreamEvent is the Responses bridge's cost per event: one chat chunk of a
// token, as the relay writes it ("data: …\n\n"), turned into its response.*.delta event. One op
// is one chunk of a stream of up to 4,096 (a longer answer's text, which the bridge keeps for the
// done events, would make each op the cost of a longer and longer stream); the stream's opening
// and end are outside the timer.
func BenchmarkResponsesStreamEvent(b *testing.B) {
	for _, c := range []struct{ name, event string }{
		{"text", bridgeTextEvent},
		{"reasoning", bridgeThinkEvent},
	} {
		b.Run(c.name, func(b *testing.B) {
			const perStream = 4096
			event := []byte(c.event)
			bw, _ := bridgeStream(b, c.event)
			b.ReportAllocs()
			b.SetBytes(int64(len(event)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i > 0 && i%perStream == 0 {
					b.StopTimer()
					endBridge(b, bw)
					bw, _ = bridgeStream(b, c.event)
					b.StartTimer()
				}
				if _, err := bw.Write(event); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			endBridge(b, bw)
		})
	}
}

// TestResponsesDeltaEventAllocs: a token's chunk through the Responses bridge allocates its text
// and the text's holder (decodeChunk's, as json.Unmarshal would), nothing more: the delta event
// is written without a streamEvent, whose pointers escaped to the heap through send's
// json.Marshal (three allocations), and the chunk's choices are read into the room of the last
// chunk's (one). Seven allocations an event before.
func TestResponsesDeltaEventAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation changes the counts")
	}
	for _, c := range []struct{ name, event string }{{"text", bridgeTextEvent}, {"reasoning", bridgeThinkEvent}} {
		t.Run(c.name, func(t *testing.T) {
			bw, _ := bridgeStream(t, c.event)
			event := []byte(c.event)
			if n := testing.AllocsPerRun(1000, func() { _, _ = bw.Write(event) }); n > 2 {
				t.Errorf("%.0f allocations an event, want 2 at most", n)
			}
		})
	}
}
