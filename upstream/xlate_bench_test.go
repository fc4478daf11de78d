package upstream

import (
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/hayula/gateway/core"
)

// The translated streams' cost per event, as BenchmarkStreamRelay is the openai relay's: one op
// is one upstream event of a long stream (a token of content), read and turned into the chunk
// the client gets; the stream's end (the finishing chunk and the usage chunk) comes once, after
// b.N events, so that allocs/op is what each event costs once the stream runs.

// xlateBody is n copies of event, then end: a long stream's body, made as it is read.
type xlateBody struct {
	event, end []byte
	n          int
	off        int
}

func (x *xlateBody) Read(p []byte) (int, error) {
	total := 0
	for len(p) > 0 {
		src := x.event
		if x.n == 0 {
			src = x.end
		}
		if x.off == len(src) {
			if x.n == 0 {
				if total == 0 {
					return 0, io.EOF
				}
				return total, nil
			}
			x.n--
			x.off = 0
			continue
		}
		c := copy(p, src[x.off:])
		x.off += c
		p = p[c:]
		total += c
	}
	return total, nil
}

// drainCount reads s to its end, failing on anything but io.EOF, and returns how many chunks it gave.
func drainCount(b *testing.B, s Stream) int {
	n, err := eachChunk(s, nil)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// eachChunk reads s to its end, handing each chunk to use (nil: none) until use returns false,
// and returns how many chunks it read and the error that ended the stream, nil for io.EOF (and
// when use stopped it). A chunk is valid until the next is read.
func eachChunk(s Stream, use func([]byte) bool) (int, error) {
	for n := 0; ; n++ {
		c, err := s.Next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if use != nil && !use(c) {
			return n + 1, nil
		}
	}
}

const (
	ollamaTokenLine = `{"model":"averroes-q","created_at":"2026-01-02T15:04:05.123456789Z","message":{"role":"assistant","content":" token"},"done":false}` + "\n"
	ollamaDoneLine  = `{"model":"averroes-q","created_at":"2026-01-02T15:04:06.123456789Z","message":{"role":"assistant","content":""},"done":true,` +
		`"done_reason":"stop","total_duration":5191566416,"load_duration":2154458,"prompt_eval_count":26,"prompt_eval_duration":383809000,` +
		`"eval_count":298,"eval_duration":4799921000}` + "\n"
)

// BenchmarkOllamaStream is Averroes-Q's stream through /api/chat: one NDJSON line of a token
// read and written as a chat.completion.chunk.
func BenchmarkOllamaStream(b *testing.B) {
	a := &openaiOllama{t: &core.Target{Name: "averroes-q", Model: "averroes-q"}, now: fixedNow, newID: func() string { return "x" }}
	b.ReportAllocs()
	b.SetBytes(int64(len(ollamaTokenLine)))
	body := &xlateBody{event: []byte(ollamaTokenLine), end: []byte(ollamaDoneLine), n: b.N}
	s := a.newStream(io.NopCloser(body), true, core.ReasoningPassthrough)
	b.ResetTimer()
	if n := drainCount(b, s); n != b.N+2 {
		b.Fatalf("%d chunks for %d lines and the end, want %d", n, b.N, b.N+2)
	}
}

const (
	saifTokenEvent = "data: {\"text\":\" token\",\"specialist\":\"webapp\"}\n\n"
	saifDoneEvent  = "data: {\"done\":true,\"finish_reason\":\"stop\",\"usage\":{\"prompt_tokens\":26,\"completion_tokens\":298}}\n\n"
)

// BenchmarkSAIFStream is SAIF's stream: one SSE event of a token read and written as a
// chat.completion.chunk.
func BenchmarkSAIFStream(b *testing.B) {
	a := &openaiSAIF{t: &core.Target{Name: "saif", Model: "saif"}, now: fixedNow, newID: func() string { return "x" }}
	b.ReportAllocs()
	b.SetBytes(int64(len(saifTokenEvent)))
	body := &xlateBody{event: []byte(saifTokenEvent), end: []byte(saifDoneEvent), n: b.N}
	resp := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(body)}
	r, err := a.stream(resp, &core.Request{Op: core.OpChat, Stream: true, IncludeUsage: true})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	if n := drainCount(b, r.Stream); n != b.N+2 {
		b.Fatalf("%d chunks for %d events and the end, want %d", n, b.N, b.N+2)
	}
}

// loopStream gives event n times, then each of end, then io.EOF: an upstream's chunks, already
// parsed off the wire (BenchmarkStreamRelay measures that part).
type loopStream struct {
	event []byte
	n     int
	end   [][]byte
}

func (l *loopStream) Next() ([]byte, error) {
	if l.n > 0 {
		l.n--
		return l.event, nil
	}
	if len(l.end) > 0 {
		ev := l.end[0]
		l.end = l.end[1:]
		return ev, nil
	}
	return nil, io.EOF
}

func (l *loopStream) Close() error { return nil }

const (
	r1Chunk  = `{"id":"chatcmpl-8f2a","object":"chat.completion.chunk","created":1767366245,"model":"deepseek-r1","system_fingerprint":"fp_r1","choices":[{"index":0,"delta":{"content":%q},"logprobs":null,"finish_reason":null}]}`
	r1Finish = `{"id":"chatcmpl-8f2a","object":"chat.completion.chunk","created":1767366245,"model":"deepseek-r1","system_fingerprint":"fp_r1","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`
	r1Usage  = `{"id":"chatcmpl-8f2a","object":"chat.completion.chunk","created":1767366245,"model":"deepseek-r1","system_fingerprint":"fp_r1","choices":[],"usage":{"prompt_tokens":26,"completion_tokens":298,"total_tokens":324}}`
)

// BenchmarkThinkStream is DeepSeek R1's stream through think-tags: one chunk of a token,
// inside the think block (its content moved into reasoning_content: the chunk rewritten) and
// after it (the chunk unchanged).
func BenchmarkThinkStream(b *testing.B) {
	for _, c := range []struct{ name, open string }{
		{"reasoning", "<think>a"},
		{"answer", "<think>a</think>"},
	} {
		b.Run(c.name, func(b *testing.B) {
			chunk := func(s string) []byte { return []byte(fmt.Sprintf(r1Chunk, s)) }
			ts := newThinkStream(&loopStream{event: chunk(c.open), n: 1}, core.ReasoningThinkTags)
			if _, err := ts.Next(); err != nil {
				b.Fatal(err)
			}
			ts.Stream = &loopStream{event: chunk(" token"), n: b.N, end: [][]byte{[]byte(r1Finish), []byte(r1Usage)}}
			b.ReportAllocs()
			b.ResetTimer()
			if n := drainCount(b, ts); n != b.N+2 {
				b.Fatalf("%d chunks for %d events and the end, want %d", n, b.N, b.N+2)
			}
		})
	}
}
