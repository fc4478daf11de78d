package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/hayula/gateway/core"
)

// This file keeps the think-tags stream as it was before its chunks were walked with
// internal/jsonx and appended (thinkchunk.go): json.Unmarshal into maps, re-encoded in key order.
// It is the oracle FuzzThinkStreamMatchesOracle holds the stream to, byte for byte.

// newOracleSplitter is a splitter for r, think-tags or think-open.
func newOracleSplitter(r core.Reasoning) oracleSplitter {
	if r == core.ReasoningThinkOpen {
		return oracleSplitter{state: thinkLead}
	}
	return oracleSplitter{}
}

// upstreamReasoned is besideUpstreamReasoning for a splitter under way: before anything but
// whitespace or a piece of <think> has come, think-open's start becomes think-tags'. The held
// bytes mean the same in both (whitespace, then a prefix of <think>).
func (s *oracleSplitter) upstreamReasoned() {
	if s.state == thinkLead {
		s.state = thinkStart
	}
}

// oracleSplitter separates a leading <think> block from content that arrives in pieces, split
// anywhere, tags included. The zero value is ready for think-tags; newOracleSplitter makes one for
// either.
type oracleSplitter struct {
	state thinkState
	// The undecided tail is ws, a run of whitespace, then tag, a proper prefix of the tag that
	// may come (empty, or starting with '<'). The run grows in place: joining each piece to the
	// whole tail (held + piece) made a model that streams whitespace a token at a time cost
	// time and bytes quadratic in its length (TestThinkSplitterLinear).
	ws  []byte
	tag string
}

// holding reports whether the splitter holds undecided bytes.
func (s *oracleSplitter) holding() bool { return len(s.ws) > 0 || s.tag != "" }

// takeHeld returns the undecided tail and forgets it.
func (s *oracleSplitter) takeHeld() string {
	held := string(s.ws) + s.tag
	s.ws, s.tag = s.ws[:0], ""
	return held
}

// hold keeps buf's trailing whitespace (ws) and tag prefix (tag, after it) undecided and returns
// the rest, which is decided: the run already held is part of it when the rest is not empty.
func (s *oracleSplitter) hold(buf string, tag string) (decided string) {
	k := oracleTagPrefixSuffix(buf, tag)
	body := strings.TrimRight(buf[:len(buf)-k], " \t\r\n")
	if body != "" {
		decided = string(s.ws) + body
		s.ws = s.ws[:0]
	}
	s.ws = append(s.ws, buf[len(body):len(buf)-k]...)
	s.tag = buf[len(buf)-k:]
	return decided
}

// split takes the next piece of content and returns what is now known to be answer and what
// reasoning. Bytes that may still be part of a tag are held until the next piece or flush.
func (s *oracleSplitter) split(piece string) (content, reasoning string) {
	// buf is what is left to decide after the held run: the held tag prefix, whose bytes are
	// not whitespace, joined to the piece (at most a tag's length more than the piece).
	buf := piece
	if s.tag != "" {
		buf = s.tag + piece
		s.tag = ""
	}
	var c, r strings.Builder
	for buf != "" {
		switch s.state {
		case thinkStart, thinkLead:
			rest := strings.TrimLeft(buf, " \t\r\n")
			switch {
			case strings.HasPrefix(rest, openThink):
				s.state = thinkOpen
				s.ws = s.ws[:0]
				buf = rest[len(openThink):]
			case strings.HasPrefix(openThink, rest): // whitespace alone, or a tag in the making
				s.ws = append(s.ws, buf[:len(buf)-len(rest)]...)
				s.tag, buf = rest, ""
			case s.state == thinkLead:
				// No <think>: the reasoning begins here, the whitespace before it dropped as
				// whitespace just inside the block is. A '<' held for <think> may begin </think>.
				s.state = thinkIn
				s.ws = s.ws[:0]
				buf = rest
			default:
				s.state = thinkOut
				c.Write(s.ws)
				s.ws = s.ws[:0]
			}
		case thinkOpen:
			buf = strings.TrimLeft(buf, " \t\r\n")
			if buf != "" {
				s.state = thinkIn
			}
		case thinkIn:
			if i := strings.Index(buf, closeThink); i >= 0 {
				// The held run is whitespace before the tag (no '<' in it, so the tag is in
				// buf), dropped with the block's trailing whitespace unless text comes between.
				if body := strings.TrimRight(buf[:i], " \t\r\n"); body != "" {
					r.Write(s.ws)
					r.WriteString(body)
				}
				s.ws = s.ws[:0]
				buf = buf[i+len(closeThink):]
				s.state = thinkAfter
				continue
			}
			// Held: a closing tag in the making, and the whitespace before it, which is dropped
			// if the tag does close.
			r.WriteString(s.hold(buf, closeThink))
			buf = ""
		case thinkAfter:
			buf = strings.TrimLeft(buf, " \t\r\n")
			if buf != "" {
				s.state = thinkOut
			}
		case thinkOut:
			c.WriteString(buf)
			buf = ""
		}
	}
	return c.String(), r.String()
}

// flush ends the content: what was held goes where it belongs.
func (s *oracleSplitter) flush() (content, reasoning string) {
	held := s.takeHeld()
	switch s.state {
	case thinkStart:
		return held, ""
	case thinkLead:
		// Never closed: all reasoning, less the whitespace that opened it.
		return "", strings.TrimLeft(held, " \t\r\n")
	case thinkIn:
		return "", held
	}
	return "", ""
}

// oracleLogprobs keeps, of an answer's logprob entries, those of its content: OpenAI's
// logprobs.content covers the content's tokens, and the block's tags and reasoning are no longer
// content. Each entry's token goes through a splitter of its own, since Ollama also sends the
// entries of a block it has moved into message.thinking itself. An entry still undecided
// (leading whitespace, or what may be an opening tag) is held until the split decides, as its
// text is. A token that closes the block and opens the answer is kept: it is the answer's too.
type oracleLogprobs struct {
	sp   oracleSplitter
	held []logprobJSON
}

// newOracleLogprobs keeps the content's entries for r, think-tags or think-open.
func newOracleLogprobs(r core.Reasoning) *oracleLogprobs {
	return &oracleLogprobs{sp: newOracleSplitter(r)}
}

// take returns the entries of the content among the next ones, in order.
func (t *oracleLogprobs) take(entries []logprobJSON) []logprobJSON {
	var out []logprobJSON
	for _, e := range entries {
		content, _ := t.sp.split(e.Token)
		switch {
		case content != "" || t.sp.state == thinkOut:
			out = append(append(out, t.held...), e)
			t.held = nil
		case t.sp.state == thinkStart:
			t.held = append(t.held, e)
		default:
			t.held = nil
		}
	}
	return out
}

// flush ends the answer: the held entries are the content's when their text turns out to be.
func (t *oracleLogprobs) flush() []logprobJSON {
	content, _ := t.sp.flush()
	held := t.held
	t.held = nil
	if content == "" {
		return nil
	}
	return held
}

// oracleTagPrefixSuffix is the length of the longest proper prefix of tag that ends s.
func oracleTagPrefixSuffix(s, tag string) int {
	for k := min(len(s), len(tag)-1); k > 0; k-- {
		if s[len(s)-k:] == tag[:k] {
			return k
		}
	}
	return 0
}

// oracleThinkStream rewrites an OpenAI chunk stream, one splitter per choice index. The finishing
// chunk of a choice carries whatever its splitter still held. A stream that ends (or reaches its
// usage chunk) with bytes still held, because the upstream sent no finishing chunk, gets a chunk
// of its own for them first: they are the answer's last bytes (or whitespace, or the start of a
// tag that never came), not to be lost.
type oracleThinkStream struct {
	Stream
	reasoning core.Reasoning // think-tags or think-open
	split     map[int]*oracleSplitter
	probs     map[int]*oracleLogprobs // the same, for each choice's logprobs.content entries
	// held are the choice indices whose splitters may hold bytes: those a chunk's split left
	// holding since the last closing chunk. closing looks at these alone, not at every index the
	// stream has named, which cost each usage chunk a sorted walk over them all
	// (TestThinkStreamUsageChunksLinear). Made on first use.
	held map[int]struct{}
	last map[string]json.RawMessage // the latest chunk's members, the envelope of a closing chunk
	// pending holds the chunks ready to go, in order (a closing chunk, then the chunk it
	// precedes); the wrapped stream is read only when it is empty, so that a chunk in it that is
	// the wrapped stream's own slice stays valid.
	pending [][]byte
	end     error // the stream's end, after pending
	sent    bool  // Next has returned a chunk: the client's stream has begun
}

func newOracleThinkStream(s Stream, r core.Reasoning) *oracleThinkStream {
	return &oracleThinkStream{Stream: s, reasoning: r, split: map[int]*oracleSplitter{}, probs: map[int]*oracleLogprobs{}}
}

// Next skips the chunks the rewrite emptied (see rewrite).
func (s *oracleThinkStream) Next() ([]byte, error) {
	for len(s.pending) == 0 && s.end == nil {
		s.pull()
	}
	if len(s.pending) > 0 {
		ev := s.pending[0]
		s.pending = s.pending[1:]
		s.sent = true
		return ev, nil
	}
	return nil, s.end
}

// pull reads one event of the wrapped stream and queues what it becomes: nothing (a chunk the
// rewrite emptied), the rewritten chunk (after a closing chunk when it is the usage chunk), or
// the end, after a closing chunk when it is a clean one or a failure once the client's stream
// has begun: the held bytes were read from the upstream, and passthrough would have relayed
// them before the error (TestReviewThinkStreamHeldBytesBeforeError). A failure before anything
// went stays alone, so that the chain may still move on.
func (s *oracleThinkStream) pull() {
	ev, err := s.Stream.Next()
	if err != nil {
		if errors.Is(err, io.EOF) || s.sent || len(s.pending) > 0 {
			if c := s.closing(); c != nil {
				s.pending = append(s.pending, c)
			}
		}
		s.end = err
		return
	}
	out, keep, choiceless := s.rewrite(ev)
	if choiceless {
		if c := s.closing(); c != nil {
			s.pending = append(s.pending, c)
		}
	}
	if keep {
		s.pending = append(s.pending, out)
	}
}

// closing is a chunk with what the splitters still hold, in the latest chunk's envelope; nil
// when they hold nothing.
func (s *oracleThinkStream) closing() []byte {
	if len(s.held) == 0 {
		return nil
	}
	held := slices.Sorted(maps.Keys(s.held))
	clear(s.held) // each is flushed below, or holds nothing
	var choices []map[string]json.RawMessage
	for _, idx := range held {
		sp := s.split[idx]
		if !sp.holding() {
			continue
		}
		answer, reasoning := sp.flush()
		delta := map[string]json.RawMessage{}
		if answer != "" {
			delta["content"] = mustJSON(answer)
		}
		if reasoning != "" {
			delta["reasoning_content"] = mustJSON(reasoning)
		}
		if len(delta) == 0 {
			continue
		}
		choices = append(choices, map[string]json.RawMessage{"index": mustJSON(idx), "delta": mustJSON(delta),
			"finish_reason": json.RawMessage("null")})
	}
	if len(choices) == 0 {
		return nil
	}
	top := map[string]json.RawMessage{"object": json.RawMessage(`"chat.completion.chunk"`)}
	for k, v := range s.last {
		if k != "choices" && k != "usage" {
			top[k] = v
		}
	}
	top["choices"] = mustJSON(choices)
	return mustJSON(top)
}

// Buffered reports whether Next will return without waiting on the upstream. A chunk the
// rewrite empties is skipped by Next, which would then wait for the upstream's next event: so,
// as queue.ready does, the events already buffered are rewritten here until one yields a chunk
// or none is left, and a relay that was told true never holds its last chunk unflushed while
// Next waits (TestReviewThinkTagsEventNotHeldBehindEmptiedChunk).
func (s *oracleThinkStream) Buffered() bool {
	b, ok := s.Stream.(BufferedStream)
	for len(s.pending) == 0 && s.end == nil {
		if !ok || !b.Buffered() {
			return false
		}
		s.pull()
	}
	return true
}

// rewrite is ev with its think blocks moved out of the content; keep is false for a chunk the
// rewrite left with nothing to say: every delta empty, and nothing else but the chunk's ids and
// null members. Such a chunk held only a piece of a tag, or whitespace dropped around one; sent,
// it is an empty delta:{} that tells a client nothing. A chunk that came in empty is the
// upstream's and goes as it came.
//
// choiceless reports the usage chunk (no choices, a usage), before which a closing chunk goes.
func (s *oracleThinkStream) rewrite(ev []byte) (out []byte, keep, choiceless bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(ev, &top) != nil {
		return ev, true, false
	}
	var choices []map[string]json.RawMessage
	if json.Unmarshal(top["choices"], &choices) != nil || len(choices) == 0 {
		// Only the usage chunk, the stream's last, ends the content. A chunk without choices
		// before it (Azure's prompt_filter_results) must not flush a tag in the making: the
		// rest of the tag would then be read as text (TestSplitEveryReadBoundary).
		u := bytes.TrimSpace(top["usage"])
		return ev, true, len(choices) == 0 && len(u) > 0 && !isNull(u)
	}
	s.last = top
	changed := false
	for _, ch := range choices {
		idx := choiceIndex(ch["index"])
		sp, tp := s.split[idx], s.probs[idx]
		if sp == nil {
			v := newOracleSplitter(s.reasoning)
			sp, tp = &v, newOracleLogprobs(s.reasoning)
			s.split[idx], s.probs[idx] = sp, tp
		}
		delta := map[string]json.RawMessage{}
		_ = json.Unmarshal(ch["delta"], &delta)
		if delta == nil {
			// delta null: json.Unmarshal leaves a nil map, which the held bytes of a finishing
			// chunk are written into (TestThinkStreamNullDeltaFinish).
			delta = map[string]json.RawMessage{}
		}
		if hasReasoning(delta) {
			sp.upstreamReasoned()
			tp.sp.upstreamReasoned()
		}
		content, hasContent := rawString(delta["content"])
		finished := SaysFinish(text(ch["finish_reason"]))
		// The entries go through a splitter of their own, as the content does: logprobs.content
		// covers the answer's tokens, not the block's (TestThinkTagsLogprobs). A chunk's entries
		// go through it with or without content beside them, and the entries held for bytes
		// that may open a tag go with the finishing chunk, as those bytes do, though it came
		// with logprobs null.
		if entries, ok := rawLogprobs(ch["logprobs"]); ok || finished {
			kept := tp.take(entries)
			if finished {
				kept = append(kept, tp.flush()...)
			}
			if len(kept) != len(entries) {
				lp := ch["logprobs"]
				if len(lp) == 0 || isNull(lp) {
					lp = json.RawMessage(`{}`)
				}
				ch["logprobs"] = withLogprobs(lp, kept, false)
				changed = true
			}
		}
		if !hasContent && !finished {
			continue
		}
		answer, reasoning := sp.split(content)
		if finished {
			a, r := sp.flush()
			answer, reasoning = answer+a, reasoning+r
		}
		if sp.holding() {
			if s.held == nil {
				s.held = map[int]struct{}{}
			}
			s.held[idx] = struct{}{}
		}
		if answer == content && reasoning == "" {
			continue
		}
		// A chunk that now holds no answer drops its content rather than carrying "", as
		// DeepSeek's own stream does while it reasons.
		if answer != "" {
			delta["content"] = jsonString(answer)
		} else {
			delete(delta, "content")
		}
		if reasoning != "" {
			if prev, ok := rawString(delta["reasoning_content"]); ok {
				reasoning = prev + reasoning
			}
			delta["reasoning_content"] = jsonString(reasoning)
		}
		ch["delta"] = jsonRawMap(delta)
		changed = true
	}
	if !changed {
		return ev, true, false
	}
	if emptied(top, choices) {
		return nil, false, false
	}
	top["choices"] = jsonRawMaps(choices)
	return jsonRawMap(top), true, false
}

// jsonString is mustJSON(s), written without an encoder.
func jsonString(s string) json.RawMessage {
	return appendJSONString(make([]byte, 0, len(s)+2), s)
}

// jsonRawMap is mustJSON(m), written without an encoder: the members in key order, each value
// compacted as encoding/json writes a json.RawMessage (a nil one as null). The values are
// well-formed JSON (json.Unmarshal's, or this file's).
func jsonRawMap(m map[string]json.RawMessage) json.RawMessage {
	n := 2
	for k, v := range m {
		n += len(k) + len(v) + 4
	}
	return appendRawMap(make([]byte, 0, n), m)
}

func appendRawMap(dst []byte, m map[string]json.RawMessage) []byte {
	var small [16]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, k)
		dst = append(dst, ':')
		dst = appendCompactJSON(dst, m[k])
	}
	return append(dst, '}')
}

// jsonRawMaps is mustJSON(ms) for a non-nil ms, as jsonRawMap writes each.
func jsonRawMaps(ms []map[string]json.RawMessage) json.RawMessage {
	dst := []byte{'['}
	for i, m := range ms {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendRawMap(dst, m)
	}
	return append(dst, ']')
}

// FuzzThinkStreamMatchesOracle holds the think stream to the oracle above: for any events (the
// fuzz input cut at each \x1e), think-tags or think-open, ending cleanly or with a failure, the
// same chunks, byte for byte, and the same end. The oracle holds any run of whitespace; the
// stream lets go of one past maxHeldSpace (TestThinkStreamWhitespaceBounded), which no fuzz
// input here reaches.
func FuzzThinkStreamMatchesOracle(f *testing.F) {
	chunk := func(s string) string { return fmt.Sprintf(r1Chunk, s) }
	seq := func(evs ...string) []byte { return []byte(strings.Join(evs, "\x1e")) }
	f.Add(seq(chunk("<think>"), chunk("a"), chunk(" token"), chunk("</think>"), chunk("\n\nHi"), r1Finish, r1Usage), uint8(0))
	f.Add(seq(chunk(" <th"), chunk("ink> a \n"), chunk(" </thi"), chunk("nk>"), chunk("b"), r1Usage), uint8(1))
	f.Add(seq(chunk("a\u2028<&>"), chunk("</think>x"), r1Finish), uint8(3))
	f.Add(seq(`{"id":"c","choices":[{"index":1,"delta":{"content":"<think>x","reasoning_content":"r"},"logprobs":{"content":[{"token":"<think>","logprob":0},{"token":"x","logprob":0}]}},null]}`,
		`{"id":"c","choices":[{"index":1,"delta":null,"finish_reason":"stop","logprobs":null}],"usage":null}`), uint8(0))
	f.Add(seq(`{"b" : [ 1 ], "a":1, "choices":[{"index":0,"delta":{"content":" ","role":"assistant"}}], "a":2, "\u0063hoices":[{"index":2e0, "delta":{"content":"<", "k\u00e9":true}}]}`,
		`{"choices":[],"usage":{"total_tokens":1}}`, `{"choices":[{"delta":{"content":"\ud800 x"}}], "choices\xff":1}`, `[1]`, `null`, `{"choices":[1]}`), uint8(2))
	f.Add(seq(`{"choices":[{"delta":{"content":"<think>a</think>b","reasoning":"vllm"},"stop_reason":null}],"prompt_filter_results":[]}`,
		`{"choices":[{"delta":{"content":"  "},"finish_reason":"null"}]}`, `{"object":"x","choices":[{"index":-1,"delta":{"content":"<think"}}]}`), uint8(1))
	// A chunk the rewrite changes beside a choice it does not, whose members came out of their
	// names' order and one of them twice: written, it is as the map held it.
	f.Add(seq(`{"model":"m","choices":[{"index":0,"delta":{"content":"<think>a"}},{"logprobs":null,"index":1,"delta":{"content":"x"},"index":1}],"id":"c","id":"d"}`,
		`{"choices":[{"index":0,"delta":{"content":"b"}},{"z":null,"index":1,"delta":{},"a":null,"z":null}],"usage":null}`), uint8(0))
	// After the block, chunks the stream passes unread (one choice, every "index" 0) and ones a
	// byte away, which it must read: a second choice, by name or by an escaped name, opening a
	// block of its own; an index spelled otherwise; a tool call's index; a usage chunk; no JSON.
	f.Add(seq(chunk("<think>a</think>"), chunk(" b"), `{"choices":[{"index" : 0,"delta":{"content":"c"}}]}`,
		`{"choices":[{"index":1,"delta":{"content":"<think>x"}}]}`, chunk("d"), r1Usage), uint8(0))
	f.Add(seq(chunk("<think>a</think>"), chunk(" b"), `{"choices":[{"ind\u0065x":1,"delta":{"content":"<think>x"}}]}`, chunk("</think>e"), r1Finish), uint8(0))
	f.Add(seq(chunk("<think>a</think>"), chunk(" b"), `{"choices":[{"index":0.0,"delta":{"content":"<think>x"}},{"index":-0,"delta":{"content":"y"}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"name":"index"}}]}}]}`, `{"choices":[{"index":0,"delta":{"content":"z"}}]`,
		`{"choices":[],"usage":{"total_tokens":1}}`), uint8(2))
	// After the block, the first logprobs the stream sees (their own splitter's first tokens,
	// which may open a block), and a finishing chunk, which ends that splitter, before them.
	lp := `{"choices":[{"index":0,"delta":{"content":"x"},"logprobs":{"content":[{"token":"<th","logprob":0}]}}]}`
	f.Add(seq(chunk("<think>a</think>"), chunk(" b"), lp, chunk("c"), r1Finish), uint8(0))
	f.Add(seq(chunk("<think>a</think>"), `{"choices":[{"index":0,"delta":{"content":"<think>"},"finish_reason":"stop"}]}`, lp, r1Usage), uint8(0))
	// A chunk of more members than sortMembers sorts by insertion, out of order, one twice.
	var many strings.Builder
	for i := 24; i >= 0; i-- {
		fmt.Fprintf(&many, `"k%02d":%d,`, i, i)
	}
	f.Add(seq(`{`+many.String()+`"k07":"again","choices":[{"index":0,"delta":{"content":"<think>x"}}]}`, chunk("y</think>z")), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		var evs [][]byte
		for ev := range bytes.SplitSeq(data, []byte{0x1e}) {
			evs = append(evs, ev)
		}
		r := core.ReasoningThinkTags
		if mode&1 != 0 {
			r = core.ReasoningThinkOpen
		}
		var end error
		if mode&2 != 0 {
			end = errors.New("upstream broke off")
		}
		got := newThinkStream(&eventsStream{events: evs, end: end}, r)
		want := newOracleThinkStream(&eventsStream{events: slices.Clone(evs), end: end}, r)
		for i := 0; ; i++ {
			g, gerr := got.Next()
			w, werr := want.Next()
			if !bytes.Equal(g, w) || (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
				t.Fatalf("chunk %d of %q (mode %d):\n got %q, %v\nwant %q, %v", i, data, mode, g, gerr, w, werr)
			}
			if gerr != nil {
				return
			}
		}
	})
}

// eventsStream gives its events, then end (io.EOF when nil).
type eventsStream struct {
	events [][]byte
	end    error
}

func (e *eventsStream) Next() ([]byte, error) {
	if len(e.events) > 0 {
		ev := e.events[0]
		e.events = e.events[1:]
		return ev, nil
	}
	if e.end != nil {
		return nil, e.end
	}
	return nil, io.EOF
}

func (e *eventsStream) Close() error { return nil }

// FuzzThinkSplitterMatchesOracle holds the splitter, whose pieces are now bytes appended to the
// caller's buffers, to the oracle's, which built strings: the same answer and reasoning for each
// piece (the fuzz input cut at each \x1e) and at the end, for think-tags and think-open, with
// the upstream's own reasoning arriving before the piece numbered reasoned (runs of whitespace
// within maxHeldSpace, as FuzzThinkStreamMatchesOracle's).
func FuzzThinkSplitterMatchesOracle(f *testing.F) {
	f.Add([]byte(" \n<th\x1eink>\x1e a \n\x1e </thi\x1enk>\x1e\n\nHi<think>"), uint8(0), uint8(9))
	f.Add([]byte("\t<\x1ethink\x1e>\x1e</think\x1e</think>x"), uint8(1), uint8(2))
	f.Add([]byte("  \x1e<think>a</think>b"), uint8(1), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, mode, reasoned uint8) {
		r := core.ReasoningThinkTags
		if mode&1 != 0 {
			r = core.ReasoningThinkOpen
		}
		got, want := newThinkSplitter(r), newOracleSplitter(r)
		i := 0
		for piece := range strings.SplitSeq(string(data), "\x1e") {
			if i == int(reasoned) {
				got.upstreamReasoned()
				want.upstreamReasoned()
			}
			i++
			gc, gr := got.split(piece)
			wc, wr := want.split(piece)
			if gc != wc || gr != wr || got.holding() != want.holding() {
				t.Fatalf("piece %d %q of %q: got %q, %q (holding %v), want %q, %q (holding %v)",
					i-1, piece, data, gc, gr, got.holding(), wc, wr, want.holding())
			}
		}
		gc, gr := got.flush()
		wc, wr := want.flush()
		if gc != wc || gr != wr {
			t.Fatalf("flush of %q: got %q, %q, want %q, %q", data, gc, gr, wc, wr)
		}
	})
}
