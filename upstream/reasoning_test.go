package upstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/core"
)

type thinkResult struct{ Content, Reasoning string }

// feed runs pieces through one splitter.
func feed(pieces ...string) thinkResult {
	var s thinkSplitter
	var r thinkResult
	for _, p := range pieces {
		c, rs := s.split(p)
		r.Content += c
		r.Reasoning += rs
	}
	c, rs := s.flush()
	r.Content += c
	r.Reasoning += rs
	return r
}

var thinkCases = []struct {
	name, in string
	want     thinkResult
}{
	{"block then answer", "<think>plan the reply</think>\n\nParis.", thinkResult{"Paris.", "plan the reply"}},
	{"no block", "Paris is the capital.", thinkResult{"Paris is the capital.", ""}},
	{"leading whitespace before the block", " \n<think>a</think>b", thinkResult{"b", "a"}},
	{"leading whitespace kept without a block", "\n\nHello", thinkResult{"\n\nHello", ""}},
	{"unterminated block is all reasoning", "<think>still thinking", thinkResult{"", "still thinking"}},
	{"a lone tag prefix is content", "<thi", thinkResult{"<thi", ""}},
	{"a tag later on is content", "Wrap it in <think> tags.", thinkResult{"Wrap it in <think> tags.", ""}},
	{"a second block stays in the answer", "<think>a</think>b<think>c</think>", thinkResult{"b<think>c</think>", "a"}},
	{"empty block", "<think></think>", thinkResult{"", ""}},
	{"near-miss closing tags stay reasoning", "<think>a</thinking>b<</think>c", thinkResult{"c", "a</thinking>b<"}},
	{"only whitespace after the block", "<think>x</think>  \n", thinkResult{"", "x"}},
	{"arabic", "<think>أفكر في السؤال</think>\nالجواب: نعم", thinkResult{"الجواب: نعم", "أفكر في السؤال"}},
	{"double angle is no tag", "<<think>x</think>", thinkResult{"<<think>x</think>", ""}},
	{"reasoning with newlines", "<think>\nstep 1\nstep 2\n</think>\n\nDone", thinkResult{"Done", "step 1\nstep 2"}},
	{"whitespace inside the tags is dropped", "<think>  a b \t</think>c", thinkResult{"c", "a b"}},
	{"unterminated keeps its trailing whitespace", "<think>a \n", thinkResult{"", "a \n"}},
	{"whitespace before a near-miss tag stays", "<think>a \n</th>b", thinkResult{"", "a \n</th>b"}},
}

func TestThinkSplitterEveryBytePosition(t *testing.T) {
	for _, tt := range thinkCases {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, feed(tt.in)); diff != "" {
				t.Fatalf("whole (-want +got):\n%s", diff)
			}
			for i := 0; i <= len(tt.in); i++ {
				if diff := cmp.Diff(tt.want, feed(tt.in[:i], tt.in[i:])); diff != "" {
					t.Fatalf("split at %d (-want +got):\n%s", i, diff)
				}
				for j := i; j <= len(tt.in); j++ {
					if got := feed(tt.in[:i], tt.in[i:j], tt.in[j:]); got != tt.want {
						t.Fatalf("split at %d and %d: got %+v, want %+v", i, j, got, tt.want)
					}
				}
			}
			// One byte at a time is the worst case for held tags.
			pieces := make([]string, len(tt.in))
			for i := 0; i < len(tt.in); i++ {
				pieces[i] = tt.in[i : i+1]
			}
			if diff := cmp.Diff(tt.want, feed(pieces...)); diff != "" {
				t.Fatalf("byte by byte (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSplitThinkBody(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"moves the block",
			`{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"<think>hmm</think>\n\n42"},"finish_reason":"stop"}]}`,
			`{"choices":[{"finish_reason":"stop","index":0,"message":{"content":"42","reasoning_content":"hmm","role":"assistant"}}],"id":"x"}`},
		{"an escaped tag is a tag",
			`{"choices":[{"message":{"content":"\u003cthink\u003ea\u003c/think\u003eb"}}]}`,
			`{"choices":[{"message":{"content":"b","reasoning_content":"a"}}]}`},
		{"untouched without a tag, byte for byte",
			`{"id":"x",  "choices":[{"message":{"content":"42"}}]}`,
			`{"id":"x",  "choices":[{"message":{"content":"42"}}]}`},
		{"a tag that opens nothing leaves the body alone",
			`{"choices":[{"message":{"content":"say <think>"}}]}`,
			`{"choices":[{"message":{"content":"say <think>"}}]}`},
		{"null content (tool calls) is left alone",
			`{"choices":[{"message":{"content":null,"tool_calls":[{"id":"<think>"}]}}]}`,
			`{"choices":[{"message":{"content":null,"tool_calls":[{"id":"<think>"}]}}]}`},
		{"not JSON passes", `<think>oops`, `<think>oops`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, string(splitThinkBody([]byte(tt.in), core.ReasoningThinkTags))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// listStream replays payloads.
type listStream struct{ evs []string }

func (l *listStream) Next() ([]byte, error) {
	if len(l.evs) == 0 {
		return nil, io.EOF
	}
	ev := l.evs[0]
	l.evs = l.evs[1:]
	return []byte(ev), nil
}
func (l *listStream) Close() error { return nil }

func TestThinkStreamEveryBytePosition(t *testing.T) {
	const content = "<think>Compare both.</think>\n\nThe first."
	chunk := func(s string) string {
		b, _ := json.Marshal(s)
		return `{"choices":[{"index":0,"delta":{"content":` + string(b) + `},"finish_reason":null}]}`
	}
	const finish = `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	for i := 0; i <= len(content); i++ {
		ts := newThinkStream(&listStream{evs: []string{chunk(content[:i]), chunk(content[i:]), finish}}, core.ReasoningThinkTags)
		var got thinkResult
		events := 0
		for {
			ev, err := ts.Next()
			if err != nil {
				break
			}
			events++
			if strings.Contains(string(ev), `"delta":{},"finish_reason":null`) {
				t.Fatalf("split %d: an emptied chunk was sent: %s", i, ev)
			}
			var c struct {
				Choices []struct {
					Delta struct {
						Content   string `json:"content"`
						Reasoning string `json:"reasoning_content"`
					} `json:"delta"`
				} `json:"choices"`
			}
			if err := json.Unmarshal(ev, &c); err != nil {
				t.Fatalf("split %d: event not JSON: %s", i, ev)
			}
			got.Content += c.Choices[0].Delta.Content
			got.Reasoning += c.Choices[0].Delta.Reasoning
		}
		// Three events, less the pieces that held only a tag or the whitespace around one.
		want := thinkResult{"The first.", "Compare both."}
		if got != want || events < 2 || events > 3 {
			t.Fatalf("split at %d: got %+v in %d events, want %+v in 2 or 3", i, got, events, want)
		}
	}
}

// A stream that ends without a finishing chunk, at its end or before its usage chunk, still gets
// the bytes its splitter held (a tail that might have begun a tag), in a chunk of their own
// with the stream's envelope, and the usage chunk after it.
func TestThinkStreamHeldBytesWithoutFinish(t *testing.T) {
	chunk := func(s string) string {
		b, _ := json.Marshal(s)
		return `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"r1","choices":[{"index":0,"delta":{"content":` +
			string(b) + `},"finish_reason":null}]}`
	}
	const usage = `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"r1","choices":[],"usage":{"total_tokens":9}}`
	for _, tt := range []struct {
		name string
		evs  []string
		want thinkResult
		last string // the last event's choices, or usage
	}{
		{"ends inside the think block", []string{chunk("<think>still thinking </th")}, thinkResult{"", "still thinking </th"}, "choices"},
		{"a whole answer that might have begun a tag", []string{chunk("<thi")}, thinkResult{"<thi", ""}, "choices"},
		{"usage after the held bytes", []string{chunk("<think>w </thi"), usage}, thinkResult{"", "w </thi"}, "usage"},
		{"nothing held: no extra chunk", []string{chunk("<think>w</think>done"), usage}, thinkResult{"done", "w"}, "usage"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := newThinkStream(&listStream{evs: tt.evs}, core.ReasoningThinkTags)
			var got thinkResult
			var last []byte
			for {
				ev, err := ts.Next()
				if err != nil {
					if !errors.Is(err, io.EOF) {
						t.Fatal(err)
					}
					break
				}
				last = ev
				var c struct {
					ID      string `json:"id"`
					Choices []struct {
						Delta struct {
							Content   string `json:"content"`
							Reasoning string `json:"reasoning_content"`
						} `json:"delta"`
					} `json:"choices"`
				}
				if err := json.Unmarshal(ev, &c); err != nil || c.ID != "c1" {
					t.Fatalf("event %s: %v, want JSON with the stream's id", ev, err)
				}
				for _, ch := range c.Choices {
					got.Content += ch.Delta.Content
					got.Reasoning += ch.Delta.Reasoning
				}
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if isUsage := strings.Contains(string(last), `"usage"`); isUsage != (tt.last == "usage") {
				t.Errorf("last event %s, want the %s", last, tt.last)
			}
			if _, err := ts.Next(); !errors.Is(err, io.EOF) {
				t.Errorf("after the end: %v, want io.EOF again", err)
			}
		})
	}
}

func TestThinkStreamLeavesOtherChunksAlone(t *testing.T) {
	in := []string{
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}`,
		`{"choices":[],"usage":{"prompt_tokens":1}}`,
		`not json`,
		`{"choices":[{"index":0,"delta":{"content":"plain"},"finish_reason":null}]}`,
	}
	ts := newThinkStream(&listStream{evs: append([]string(nil), in...)}, core.ReasoningThinkTags)
	var got []string
	for {
		ev, err := ts.Next()
		if err != nil {
			break
		}
		got = append(got, string(ev))
	}
	if diff := cmp.Diff(in, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// thinkSpec is the split as CONFIG.md states it, written plainly over the whole content: a block
// opens the content after leading whitespace, or there is none and the content is untouched;
// whitespace just inside the tags and just after </think> is dropped; a block that never closes
// is all reasoning (its trailing whitespace kept, as no tag came to drop it before).
func thinkSpec(in string) thinkResult {
	const ws = " \t\r\n"
	rest, ok := strings.CutPrefix(strings.TrimLeft(in, ws), openThink)
	if !ok {
		return thinkResult{Content: in}
	}
	rest = strings.TrimLeft(rest, ws)
	reasoning, answer, closed := strings.Cut(rest, closeThink)
	if !closed {
		return thinkResult{Reasoning: rest}
	}
	return thinkResult{strings.TrimLeft(answer, ws), strings.TrimRight(reasoning, ws)}
}

// FuzzThinkSplit checks the splitter against thinkSpec, the whole content at once and cut into
// pieces anywhere (up to three cuts, bytes of a tag or of a UTF-8 sequence apart included): where
// the boundaries fall never changes the content and reasoning deltas joined. It used to compare
// one cut with the whole feed only, which a splitter wrong in the same way both times passed.
func FuzzThinkSplit(f *testing.F) {
	for _, tt := range thinkCases {
		f.Add(tt.in, uint8(len(tt.in)/2), uint8(len(tt.in)/3), uint8(1))
	}
	f.Fuzz(func(t *testing.T, in string, a, b, c uint8) {
		want := thinkSpec(in)
		if got := feed(in); got != want {
			t.Fatalf("%q whole: %+v, want %+v", in, got, want)
		}
		cuts := []int{int(a) % (len(in) + 1), int(b) % (len(in) + 1), int(c) % (len(in) + 1)}
		slices.Sort(cuts)
		pieces := []string{in[:cuts[0]], in[cuts[0]:cuts[1]], in[cuts[1]:cuts[2]], in[cuts[2]:]}
		if got := feed(pieces...); got != want {
			t.Fatalf("%q in %q: %+v, want %+v", in, pieces, got, want)
		}
		bytewise := make([]string, len(in))
		for i := 0; i < len(in); i++ {
			bytewise[i] = in[i : i+1]
		}
		if got := feed(bytewise...); got != want {
			t.Fatalf("%q byte by byte: %+v, want %+v", in, got, want)
		}
	})
}

// A chunk whose delta the think-tags rewrite leaves empty is not sent: it was only a piece of a
// tag, or of the whitespace dropped around one, and an empty delta:{} tells a client nothing. A
// chunk that carries anything else (a role, a finish_reason, usage, logprobs, a member of the
// upstream's own) still goes, and so does an empty chunk the rewrite did not make. The stream is
// read through the SSE parser, with the tags split across events.
func TestThinkStreamDropsEmptiedChunks(t *testing.T) {
	const head = `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"r1",`
	chunk := func(content string, extra ...string) string {
		b, _ := json.Marshal(content)
		c := `{"index":0,"delta":{"content":` + string(b) + `},"finish_reason":null`
		for _, e := range extra {
			c += "," + e
		}
		return head + `"choices":[` + c + `}]}`
	}
	in := []string{
		head + `"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		chunk("<thi"),
		chunk("nk>\n"),
		chunk("Compare"),
		chunk(" both. \n</th"),
		chunk("ink>", `"logprobs":{"content":[]}`),
		chunk("\n\n"),
		chunk("The first."),
		head + `"choices":[{"index":0,"delta":{},"finish_reason":null}]}`,
		chunk("", `"logprobs":null`, `"stop_reason":null`),
		head + `"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}`,
		head + `"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":9,"total_tokens":12}}`,
	}
	var sse strings.Builder
	for _, ev := range in {
		sse.WriteString("data: " + ev + "\n\n")
	}
	sse.WriteString("data: [DONE]\n\n")
	got, end := drain(newThinkStream(newOpenAIStream("r1", io.NopCloser(strings.NewReader(sse.String())), nil), core.ReasoningThinkTags))
	const rhead = `{"choices":[{"delta":`
	const rtail = `,"created":1,"id":"c1","model":"r1","object":"chat.completion.chunk"}`
	want := []string{
		in[0], // its "" content is not a tag's: left as it came
		rhead + `{"reasoning_content":"Compare"},"finish_reason":null,"index":0}]` + rtail,
		rhead + `{"reasoning_content":" both."},"finish_reason":null,"index":0}]` + rtail,
		rhead + `{},"finish_reason":null,"index":0,"logprobs":{"content":[]}}]` + rtail,
		chunk("The first."),
		in[8],
		in[9],
		in[10],
		in[11],
	}
	if diff := cmp.Diff(want, got); diff != "" || end != "EOF" {
		t.Errorf("events (-want +got):\n%s\nend %s", diff, end)
	}
}

// partlyBuffered replays payloads, of which the first buffered are in memory: Next of any other
// is the upstream's next event, which a relay told Buffered must not wait for.
type partlyBuffered struct {
	listStream
	buffered int
	waited   bool
}

func (p *partlyBuffered) Next() ([]byte, error) {
	if p.buffered == 0 {
		p.waited = true
	} else {
		p.buffered--
	}
	return p.listStream.Next()
}

func (p *partlyBuffered) Buffered() bool { return p.buffered > 0 }

// Buffered is true only when Next will not wait: a buffered chunk the rewrite empties (whitespace
// held before a tag that may close) does not count, since Next skips it and waits for the next.
func TestThinkStreamBufferedSkipsEmptiedChunks(t *testing.T) {
	chunk := func(s string) string {
		return fmt.Sprintf(`{"id":"c","choices":[{"index":0,"delta":{"content":%q},"finish_reason":null}]}`, s)
	}
	for _, tc := range []struct {
		name     string
		buffered []string
		want     bool
	}{
		{"emptied only", []string{chunk(" "), chunk("</th")}, false},
		{"emptied then kept", []string{chunk(" "), chunk("b")}, true},
		{"kept", []string{chunk("b")}, true},
		{"none", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &partlyBuffered{listStream: listStream{evs: append(append([]string{chunk("<think>a")}, tc.buffered...),
				chunk("ink>x"))}, buffered: 1 + len(tc.buffered)}
			s := newThinkStream(in, core.ReasoningThinkTags)
			if ev, err := s.Next(); err != nil || !strings.Contains(string(ev), `"reasoning_content":"a"`) {
				t.Fatalf("first: %s, %v", ev, err)
			}
			if got := s.Buffered(); got != tc.want || in.waited {
				t.Fatalf("Buffered() = %v (waited on the upstream: %v), want %v", got, in.waited, tc.want)
			}
			if tc.want {
				if _, err := s.Next(); err != nil || in.waited {
					t.Errorf("Next after Buffered: %v, waited %v", err, in.waited)
				}
			}
		})
	}
}

// KoboldCpp's "finish_reason": "null" on a chunk before the last is no finish (SaysFinish), for
// the splitter as for the relay: taken for one, it flushed the "<thi" it held for a tag as
// answer text, and the think block that tag opened went to the client as content.
func TestThinkStreamNullStringIsNoFinish(t *testing.T) {
	chunk := func(s, finish string) string {
		b, _ := json.Marshal(s)
		return `{"choices":[{"index":0,"delta":{"content":` + string(b) + `},"finish_reason":` + finish + `}]}`
	}
	ts := newThinkStream(&listStream{evs: []string{chunk("<thi", `"null"`), chunk("nk>why</think>Yes.", `"null"`),
		chunk("", `"stop"`)}}, core.ReasoningThinkTags)
	var got thinkResult
	for {
		ev, err := ts.Next()
		if err != nil {
			break
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					Reasoning string `json:"reasoning_content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(ev, &c); err != nil || len(c.Choices) != 1 {
			t.Fatalf("event %s: %v", ev, err)
		}
		got.Content += c.Choices[0].Delta.Content
		got.Reasoning += c.Choices[0].Delta.Reasoning
	}
	if want := (thinkResult{"Yes.", "why"}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
