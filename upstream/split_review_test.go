package upstream

// The split review: every adapter's stream reads the same events whatever the reads the
// upstream's bytes arrive in (a byte at a time, or cut in two anywhere: inside a UTF-8
// character, inside "data:", between a CR and its LF, inside a <think> tag), with LF, CRLF or
// CR-only line endings; and it yields each event as soon as its bytes are in, never waiting
// for the upstream's next ones.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/core"
)

// gateReader serves b, n bytes a read (0: all that fits), then fails every read with errGate:
// the upstream has sent no more yet. A stream that reads past b waits for bytes that are not
// needed for what it yields.
type gateReader struct {
	b     []byte
	n     int
	gated bool // a read found nothing more
}

var errGate = errors.New("gate: the upstream has sent nothing more")

func (g *gateReader) Read(p []byte) (int, error) {
	if len(g.b) == 0 {
		g.gated = true
		return 0, errGate
	}
	if g.n > 0 && len(p) > g.n {
		p = p[:g.n]
	}
	n := copy(p, g.b)
	g.b = g.b[n:]
	return n, nil
}

// twoReads serves s in two reads, cut at k.
type twoReads struct {
	parts []string
}

func (r *twoReads) Read(p []byte) (int, error) {
	for len(r.parts) > 0 && r.parts[0] == "" {
		r.parts = r.parts[1:]
	}
	if len(r.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.parts[0])
	r.parts[0] = r.parts[0][n:]
	return n, nil
}

type splitAdapter struct {
	name string
	open func(io.ReadCloser) Stream
}

func splitAdapters() []splitAdapter {
	now := func() time.Time { return time.Unix(1, 0) }
	id := func() string { return "id" }
	return []splitAdapter{
		{"openai", func(b io.ReadCloser) Stream { return newOpenAIStream("a", b, nil) }},
		{"think-tags", func(b io.ReadCloser) Stream {
			return newThinkStream(newOpenAIStream("a", b, nil), core.ReasoningThinkTags)
		}},
		{"think-open", func(b io.ReadCloser) Stream {
			return newThinkStream(newOpenAIStream("a", b, nil), core.ReasoningThinkOpen)
		}},
		{"ollama", func(b io.ReadCloser) Stream {
			a := &openaiOllama{t: &core.Target{Name: "o", Model: "m"}, now: now, newID: id}
			return a.newStream(b, true, a.t.Reasoning)
		}},
		{"saif", func(b io.ReadCloser) Stream {
			return &saifStream{target: "s", body: b, sse: newSSEReader(b), out: newChunker("id", 1, "m", 0),
				header: http.Header{}, includeUsage: true}
		}},
	}
}

// splitCase is a stream as an upstream writes it, in pieces that each end where something is
// complete (an event, a line, a comment), and what a client must get of it.
type splitCase struct {
	adapter string
	name    string
	pieces  []string
	want    []string // the events, in order
	end     string   // describeEnd of the end
}

func sseChunk(delta string, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`
}

func splitCases() []splitCase {
	arabic, emoji := "مرحبا بالعالم", "👋🏽 café"
	role := sseChunk(`{"role":"assistant","content":""}`, "")
	ar := sseChunk(`{"content":"`+arabic+`"}`, "")
	em := sseChunk(`{"content":"`+emoji+`"}`, "")
	fin := sseChunk(`{}`, "stop")
	finContent := sseChunk(`{"content":"!"}`, "stop")
	usage := `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`
	second := `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":1,"delta":{"content":"` + arabic + `"},"finish_reason":null}]}`
	secondFin := `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":1,"delta":{},"finish_reason":"length"}]}`
	call0 := sseChunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}`, "")
	callArg := func(a string) string {
		return sseChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"`+a+`"}}]}`, "")
	}
	callFin := sseChunk(`{}`, "tool_calls")
	ev := func(data string) string { return "data: " + data + "\n\n" }

	var cases []splitCase
	openai := []splitCase{
		{name: "plain", pieces: []string{ev(role), ev(ar), ev(em), ev(finContent), ev(usage), ev("[DONE]")},
			want: []string{role, ar, em, finContent, usage}, end: "EOF"},
		{name: "fields", pieces: []string{": ping\n\n", "event: message\nid: 1\nretry: 3000\ndata:" + ar + "\n\n",
			"data:\n\n", ": OPENROUTER PROCESSING\n\n", "id: 2\ndata: " + em + "\n\n", ev(fin), "data:[DONE]\n\n"},
			want: []string{ar, em, fin}, end: "EOF"},
		{name: "multi-line data", pieces: []string{"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\ndata: \"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + arabic + "\"},\ndata: \"finish_reason\":\"stop\"}]}\n\n", ev("[DONE]")},
			want: []string{`{"id":"c1","object":"chat.completion.chunk", "choices":[{"index":0,"delta":{"content":"` + arabic + `"}, "finish_reason":"stop"}]}`}, end: "EOF"},
		{name: "n=2", pieces: []string{ev(ar), ev(second), ev(fin), ev(secondFin), ev("[DONE]")},
			want: []string{ar, second, fin, secondFin}, end: "EOF"},
		{name: "tool call fragments", pieces: []string{ev(call0), ev(callArg(`{\"ci`)), ev(callArg(`ty\":\"الق`)), ev(callArg(`اهرة\"}`)), ev(callFin), ev("[DONE]")},
			want: []string{call0, callArg(`{\"ci`), callArg(`ty\":\"الق`), callArg(`اهرة\"}`), callFin}, end: "EOF"},
		{name: "no [DONE]", pieces: []string{ev(ar), ev(fin)}, want: []string{ar, fin}, end: "EOF"},
		{name: "[DONE] then more", pieces: []string{ev(ar), ev(fin), ev("[DONE]"), ev(em)}, want: []string{ar, fin}, end: "EOF"},
		{name: "error mid-stream", pieces: []string{ev(ar), ev(`{"error":{"message":"CUDA out of memory","type":"server_error","code":500}}`), ev(em)},
			want: []string{ar}, end: "StreamError: CUDA out of memory"},
		{name: "closed early", pieces: []string{ev(ar), ev(em)}, want: []string{ar, em}, end: "StreamError: upstream closed the stream early"},
		{name: "cut inside an event", pieces: []string{ev(ar), "data: " + em[:20]}, want: []string{ar},
			end: "StreamError: upstream closed the stream inside an event"},
	}
	for _, c := range openai {
		c.adapter = "openai"
		cases = append(cases, c)
	}

	// think-tags: the tags split across events; the client gets the reasoning and the answer.
	think := func(s string) string { return ev(sseChunk(`{"content":"`+s+`"}`, "")) }
	cases = append(cases, splitCase{adapter: "think-tags", name: "tags across events",
		pieces: []string{think("<thi"), think("nk>\\n"), think("مر"), think("حبا </"), think("think"), think(">\\n\\n👋"), think("🏽"), ev(fin), ev("[DONE]")},
		want: []string{
			sseChunk(`{"reasoning_content":"مر"}`, ""),
			sseChunk(`{"reasoning_content":"حبا"}`, ""),
			sseChunk(`{"content":"👋"}`, ""),
			sseChunk(`{"content":"🏽"}`, ""),
			fin,
		}, end: "EOF"})
	// A chunk without choices before the end (Azure's prompt_filter_results) is not the usage
	// chunk: a tag in the making is not flushed for it.
	filter := `{"id":"","object":"","created":0,"model":"","choices":[],"prompt_filter_results":[{"prompt_index":0,"content_filter_results":{}}]}`
	cases = append(cases, splitCase{adapter: "think-tags", name: "choiceless chunk inside a tag",
		pieces: []string{think("<think>a"), think("</thi"), ev(filter), think("nk>answer"), ev(fin), ev("[DONE]")},
		want:   []string{sseChunk(`{"reasoning_content":"a"}`, ""), filter, sseChunk(`{"content":"answer"}`, ""), fin}, end: "EOF"})
	cases = append(cases, splitCase{adapter: "think-tags", name: "finish with content",
		pieces: []string{think("<think>a"), ev(sseChunk(`{"content":"b</think>c"}`, "stop")), ev("[DONE]")},
		want:   []string{sseChunk(`{"reasoning_content":"a"}`, ""), sseChunk(`{"content":"c","reasoning_content":"b"}`, "stop")}, end: "EOF"})

	// think-open: the output starts inside the block, </think> split across events.
	cases = append(cases, splitCase{adapter: "think-open", name: "closing tag across events",
		pieces: []string{ev(role), think("مر"), think("حبا </"), think("think"), think(">\\n\\n👋"), think("🏽"), ev(fin), ev("[DONE]")},
		want: []string{
			role,
			sseChunk(`{"reasoning_content":"مر"}`, ""),
			sseChunk(`{"reasoning_content":"حبا"}`, ""),
			sseChunk(`{"content":"👋"}`, ""),
			sseChunk(`{"content":"🏽"}`, ""),
			fin,
		}, end: "EOF"})

	ol := func(content string, done bool) string {
		d := "false"
		if done {
			d = `true,"done_reason":"stop","prompt_eval_count":3,"eval_count":2`
		}
		return `{"model":"m","created_at":"2026-11-30T12:00:00Z","message":{"role":"assistant","content":"` + content + `"},"done":` + d + "}\n"
	}
	olChunk := func(delta, finish string) string {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return `{"id":"chatcmpl-id","object":"chat.completion.chunk","created":1796040000,"model":"m","choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + f + `}]}`
	}
	olUsage := `{"id":"chatcmpl-id","object":"chat.completion.chunk","created":1796040000,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`
	cases = append(cases,
		splitCase{adapter: "ollama", name: "lines", pieces: []string{ol(arabic, false), "\n", ol(emoji, false), ol("", true)},
			want: []string{olChunk(`{"role":"assistant","content":"`+arabic+`"}`, ""), olChunk(`{"content":"`+emoji+`"}`, ""),
				olChunk(`{}`, "stop"), olUsage}, end: "EOF"},
		splitCase{adapter: "ollama", name: "error line", pieces: []string{ol(arabic, false), `{"error":"model runner crashed"}` + "\n"},
			want: []string{olChunk(`{"role":"assistant","content":"`+arabic+`"}`, "")}, end: "StreamError: model runner crashed"},
		splitCase{adapter: "ollama", name: "closed early", pieces: []string{ol(arabic, false)},
			want: []string{olChunk(`{"role":"assistant","content":"`+arabic+`"}`, "")}, end: "StreamError: upstream closed the stream before it was done"},
	)

	sf := func(data string) string { return "data: " + data + "\n\n" }
	sfChunk := func(delta, finish string) string {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return `{"id":"id","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + f + `}]}`
	}
	cases = append(cases,
		splitCase{adapter: "saif", name: "events", pieces: []string{": ping\n\n", sf(`{"text":"` + arabic + `"}`), sf(`{"text":"` + emoji + `"}`),
			sf(`{"done":true,"finish_reason":"stop","usage":{"prompt_tokens":3,"completion_tokens":2}}`)},
			want: []string{sfChunk(`{"role":"assistant","content":"`+arabic+`"}`, ""), sfChunk(`{"content":"`+emoji+`"}`, ""),
				sfChunk(`{}`, "stop"), `{"id":"id","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`},
			end: "EOF"},
		splitCase{adapter: "saif", name: "error", pieces: []string{sf(`{"text":"` + arabic + `"}`), sf(`{"error":"specialist crashed"}`)},
			want: []string{sfChunk(`{"role":"assistant","content":"`+arabic+`"}`, "")}, end: "StreamError: specialist crashed"},
	)
	return cases
}

// withEndings rewrites a piece's LF line endings as CRLF or CR.
func withEndings(s, nl string) string { return strings.ReplaceAll(s, "\n", nl) }

func openFor(t *testing.T, adapter string) func(io.ReadCloser) Stream {
	for _, a := range splitAdapters() {
		if a.name == adapter {
			return a.open
		}
	}
	t.Fatalf("no adapter %q", adapter)
	return nil
}

// drainCanon drains s; a rewritten event (think-tags) is compared in a canonical form, its
// members sorted: the rewrite re-encodes it. Relayed events are compared byte for byte.
func drainCanon(t *testing.T, s Stream) ([]string, string) {
	t.Helper()
	defer s.Close()
	evs, end := drain(s)
	if _, ok := s.(*thinkStream); ok {
		for i := range evs {
			evs[i] = canonJSON(t, evs[i])
		}
	}
	return evs, end
}

func canonJSON(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, s)
	}
	return string(mustJSON(v))
}

func TestSplitEveryReadBoundary(t *testing.T) {
	for _, tc := range splitCases() {
		endings := []string{"\n", "\r\n", "\r"}
		if tc.adapter == "ollama" {
			endings = []string{"\n", "\r\n"} // NDJSON lines end in LF
		}
		for _, nl := range endings {
			t.Run(fmt.Sprintf("%s/%s/%q", tc.adapter, tc.name, nl), func(t *testing.T) {
				open := openFor(t, tc.adapter)
				var pieces []string
				for _, p := range tc.pieces {
					pieces = append(pieces, withEndings(p, nl))
				}
				wire := strings.Join(pieces, "")
				check := func(how string, r io.Reader) {
					t.Helper()
					got, end := drainCanon(t, open(io.NopCloser(r)))
					want := tc.want
					if tc.adapter == "think-tags" || tc.adapter == "think-open" {
						want = nil
						for _, w := range tc.want {
							want = append(want, canonJSON(t, w))
						}
					}
					if diff := cmp.Diff(want, got); diff != "" || end != tc.end {
						t.Errorf("%s: end %q (want %q), events (-want +got):\n%s", how, end, tc.end, diff)
					}
				}
				check("whole", strings.NewReader(wire))
				check("a byte a read", iotest.OneByteReader(strings.NewReader(wire)))
				for k := 1; k < len(wire) && !t.Failed(); k++ {
					check(fmt.Sprintf("cut at %d (%q|%q)", k, wire[max(0, k-8):k], wire[k:min(len(wire), k+8)]),
						&twoReads{parts: []string{wire[:k], wire[k:]}})
				}
			})
		}
	}
}

// Each event is yielded once the bytes that complete it are in: with the upstream's bytes so
// far ending where a piece ends, the stream yields the events of those pieces and only then
// reads again. And Buffered never says an event is in memory when Next would have to read.
func TestSplitNoEventHeldBack(t *testing.T) {
	for _, tc := range splitCases() {
		endings := []string{"\n", "\r\n", "\r"}
		if tc.adapter == "ollama" {
			endings = []string{"\n", "\r\n"}
		}
		for _, nl := range endings {
			for _, n := range []int{0, 1} {
				t.Run(fmt.Sprintf("%s/%s/%q/n=%d", tc.adapter, tc.name, nl, n), func(t *testing.T) {
					open := openFor(t, tc.adapter)
					var prefixes []string
					prefix := ""
					for _, p := range tc.pieces {
						prefix += withEndings(p, nl)
						if nl == "\r\n" && tc.adapter != "ollama" {
							// An SSE event framed with CRLF is complete at its blank line's CR.
							prefixes = append(prefixes, strings.TrimSuffix(prefix, "\n"))
						}
						prefixes = append(prefixes, prefix)
					}
					for i, prefix := range prefixes {
						// What the stream yields when the upstream ends here: every complete
						// event, and for think-tags the bytes held for a tag that never came,
						// which a gate does not release (the stream is not over).
						want, _ := drainCanon(t, open(io.NopCloser(strings.NewReader(prefix))))
						gate := &gateReader{b: []byte(prefix), n: n}
						s := open(io.NopCloser(gate))
						var got []string
						var err error
						for {
							// Neither Buffered nor the Next it answered true for may read the
							// gate. A gate that Next read before is the stream's end, which
							// Next answers without reading, after the think-tags closing
							// chunk it may queue for the held bytes.
							before := gate.gated
							buffered := s.(BufferedStream).Buffered()
							if gate.gated && !before {
								t.Errorf("prefix %d: Buffered read past the upstream's bytes", i)
							}
							gated := gate.gated
							var ev []byte
							ev, err = s.Next()
							if buffered && !gated && gate.gated {
								t.Errorf("prefix %d: Buffered said true, then Next read past the upstream's bytes", i)
							}
							if err != nil {
								break
							}
							if _, ok := s.(*thinkStream); ok {
								ev = []byte(canonJSON(t, string(ev)))
							}
							got = append(got, string(ev))
						}
						s.Close()
						if (tc.adapter == "think-tags" || tc.adapter == "think-open") && len(want) == len(got)+1 {
							want = want[:len(got)] // the closing chunk for held bytes
						}
						if !errors.Is(err, errGate) {
							// The stream ended on its own within the prefix: it yields the same.
							continue
						}
						if diff := cmp.Diff(want, got); diff != "" {
							t.Errorf("after %q the stream waited for more; events (-want +got):\n%s", prefix[max(0, len(prefix)-40):], diff)
						}
					}
				})
			}
		}
	}
}
