package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"slices"
	"strconv"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/jsonx"
)

// R1-style models (DeepSeek R1 and its distills, QwQ) write their chain of thought inline as
// <think>…</think> before the answer. With reasoning = "think-tags" the gateway moves that block
// into reasoning_content, DeepSeek's own field, so that clients show the answer alone.
//
// Only a block that opens the content is taken (leading whitespace allowed): an answer that
// merely talks about the tag later on, or quotes it in code, is left alone. Whitespace just
// inside the tags and just after </think> is dropped, as DeepSeek's API does. A block that never closes is all
// reasoning.
//
// With reasoning = "think-open", for a template that puts <think> into the prompt (R1's distills
// under vLLM or SGLang without --reasoning-parser, llama-server with --reasoning-format none), the
// output starts inside the block: everything up to the first </think> is reasoning, as vLLM's
// deepseek_r1 parser reads it, and an output that never writes </think> is all reasoning. A
// <think> at the very start (leading whitespace allowed) is dropped, for the templates that leave
// it to the model. The whitespace rules are think-tags'. Content beside reasoning the upstream split out itself (a server's own
// parser, Ollama's thinking) is the answer: think-open then reads it as think-tags does
// (besideUpstreamReasoning), or a server run with its parser would have its answer taken for
// reasoning.

const (
	openThink  = "<think>"
	closeThink = "</think>"
)

// maxHeldSpace bounds the run of whitespace a splitter holds undecided. Past it the run goes
// where the end of the content would send it (release). 64 KiB is some thousands of times the
// whitespace R1 writes around its tags ("\n\n"), so that no answer a model means is read
// otherwise, and small beside what a stream costs anyway: a model that loops on "\n" (small
// models do) holds no more than that a choice, where it held everything it wrote.
const maxHeldSpace = 64 << 10

type thinkState uint8

const (
	thinkStart thinkState = iota // nothing but whitespace yet: a <think> may still open
	thinkOpen                    // just after <think>: whitespace is dropped
	thinkIn                      // inside the block
	thinkAfter                   // just after </think>: whitespace is dropped
	thinkOut                     // the answer
	// thinkLead is think-open's start: nothing but whitespace yet, and already inside the
	// block; a <think> may still come, and is dropped.
	thinkLead
)

// newThinkSplitter is a splitter for r, think-tags or think-open.
func newThinkSplitter(r core.Reasoning) thinkSplitter {
	if r == core.ReasoningThinkOpen {
		return thinkSplitter{state: thinkLead}
	}
	return thinkSplitter{}
}

// besideUpstreamReasoning is the rule for content that came beside reasoning the upstream split
// out itself (reasoning_content or reasoning from a server's own parser, Ollama's thinking): the
// block is already out, so think-open reads the content as think-tags does, an answer unless a
// block opens it (TestThinkOpenBesideUpstreamReasoning).
func besideUpstreamReasoning(r core.Reasoning, upstream bool) core.Reasoning {
	if upstream && r == core.ReasoningThinkOpen {
		return core.ReasoningThinkTags
	}
	return r
}

// hasReasoning reports a message or delta that carries reasoning of the upstream's own: a
// non-empty reasoning_content, or reasoning as vLLM's newer server names it.
func hasReasoning(m map[string]json.RawMessage) bool {
	rc, _ := rawString(m["reasoning_content"])
	r, _ := rawString(m["reasoning"])
	return rc != "" || r != ""
}

// upstreamReasoned is besideUpstreamReasoning for a splitter under way: before anything but
// whitespace or a piece of <think> has come, think-open's start becomes think-tags'. The held
// bytes mean the same in both (whitespace, then a prefix of <think>).
func (s *thinkSplitter) upstreamReasoned() {
	if s.state == thinkLead {
		s.state = thinkStart
	}
}

// thinkSplitter separates a leading <think> block from content that arrives in pieces, split
// anywhere, tags included. The zero value is ready for think-tags; newThinkSplitter makes one for
// either.
type thinkSplitter struct {
	state thinkState
	// The undecided tail is ws, a run of whitespace, then tag, a proper prefix of the tag that
	// may come (empty, or starting with '<'; always a slice of openThink or closeThink, never of
	// a piece). The run grows in place: joining each piece to the whole tail (held + piece) made
	// a model that streams whitespace a token at a time cost time and bytes quadratic in its
	// length (TestThinkSplitterLinear). It grows to maxHeldSpace at most (release).
	ws  []byte
	tag string
	// join is the held tag joined to the next piece, reused.
	join []byte
}

// holding reports whether the splitter holds undecided bytes.
func (s *thinkSplitter) holding() bool { return len(s.ws) > 0 || s.tag != "" }

// hold keeps buf's trailing whitespace (ws) and tag prefix (tag, after it) undecided and appends
// the rest, which is decided, to r: the run already held is part of it when the rest is not
// empty.
func (s *thinkSplitter) hold(r, buf []byte, tag string) []byte {
	k := tagPrefixSuffix(buf, tag)
	body := trimRightSpace(buf[:len(buf)-k])
	if len(body) > 0 {
		r = append(append(r, s.ws...), body...)
		s.ws = s.ws[:0]
	}
	s.ws = append(s.ws, buf[len(body):len(buf)-k]...)
	s.tag = tag[:k]
	if len(s.ws) > maxHeldSpace {
		_, r = s.release(nil, r)
	}
	return r
}

// release lets go of a run of whitespace held past maxHeldSpace, where the end of the content
// would send it, the state left as it is (TestThinkStreamWhitespaceBounded). At think-tags' start
// that is the answer: a model whose output opens with a block (R1 without <think> in its template)
// writes <think> first, and 64 KiB of whitespace with no tag yet is the answer's, while a
// <think> after it still opens the block. At think-open's start it is nowhere: there the output
// begins just after the template's <think>, and whitespace just inside the block is dropped
// whatever follows it. Inside the block it is the reasoning, as it is unless </think> follows
// it at once. A tag prefix held after the run stays held.
func (s *thinkSplitter) release(c, r []byte) ([]byte, []byte) {
	switch s.state {
	case thinkStart:
		c = append(c, s.ws...)
	case thinkIn:
		r = append(r, s.ws...)
	}
	s.ws = s.ws[:0]
	return c, r
}

// split takes the next piece of content and returns what is now known to be answer and what
// reasoning. Bytes that may still be part of a tag are held until the next piece or flush.
func (s *thinkSplitter) split(piece string) (content, reasoning string) {
	c, r := s.appendSplit(nil, nil, []byte(piece))
	return string(c), string(r)
}

// appendSplit is split appending to c and r, for a stream that reuses its buffers. piece is
// only read, and none of it is kept.
func (s *thinkSplitter) appendSplit(c, r, piece []byte) ([]byte, []byte) {
	// buf is what is left to decide after the held run: the held tag prefix, whose bytes are
	// not whitespace, joined to the piece (at most a tag's length more than the piece).
	buf := piece
	if s.tag != "" {
		s.join = append(append(s.join[:0], s.tag...), piece...)
		buf, s.tag = s.join, ""
	}
	for len(buf) > 0 {
		switch s.state {
		case thinkStart, thinkLead:
			rest := trimLeftSpace(buf)
			switch {
			case hasPrefix(rest, openThink):
				s.state = thinkOpen
				s.ws = s.ws[:0]
				buf = rest[len(openThink):]
			case prefixOf(rest, openThink): // whitespace alone, or a tag in the making
				s.ws = append(s.ws, buf[:len(buf)-len(rest)]...)
				s.tag, buf = openThink[:len(rest)], nil
				if len(s.ws) > maxHeldSpace {
					c, r = s.release(c, r)
				}
			case s.state == thinkLead:
				// No <think>: the reasoning begins here, the whitespace before it dropped as
				// whitespace just inside the block is. A '<' held for <think> may begin </think>.
				s.state = thinkIn
				s.ws = s.ws[:0]
				buf = rest
			default:
				s.state = thinkOut
				c = append(c, s.ws...)
				s.ws = s.ws[:0]
			}
		case thinkOpen:
			buf = trimLeftSpace(buf)
			if len(buf) > 0 {
				s.state = thinkIn
			}
		case thinkIn:
			if i := bytes.Index(buf, []byte(closeThink)); i >= 0 {
				// The held run is whitespace before the tag (no '<' in it, so the tag is in
				// buf), dropped with the block's trailing whitespace unless text comes between.
				if body := trimRightSpace(buf[:i]); len(body) > 0 {
					r = append(append(r, s.ws...), body...)
				}
				s.ws = s.ws[:0]
				buf = buf[i+len(closeThink):]
				s.state = thinkAfter
				continue
			}
			// Held: a closing tag in the making, and the whitespace before it, which is dropped
			// if the tag does close.
			r = s.hold(r, buf, closeThink)
			buf = nil
		case thinkAfter:
			buf = trimLeftSpace(buf)
			if len(buf) > 0 {
				s.state = thinkOut
			}
		case thinkOut:
			c = append(c, buf...)
			buf = nil
		}
	}
	return c, r
}

// flush ends the content: what was held goes where it belongs.
func (s *thinkSplitter) flush() (content, reasoning string) {
	c, r := s.appendFlush(nil, nil)
	return string(c), string(r)
}

// appendFlush is flush appending to c and r.
func (s *thinkSplitter) appendFlush(c, r []byte) ([]byte, []byte) {
	switch s.state {
	case thinkStart:
		c = append(append(c, s.ws...), s.tag...)
	case thinkLead:
		// Never closed: all reasoning, less the whitespace that opened it (the tag, if any,
		// begins with '<').
		r = append(r, s.tag...)
	case thinkIn:
		r = append(append(r, s.ws...), s.tag...)
	}
	s.ws, s.tag = s.ws[:0], ""
	return c, r
}

// hasPrefix reports whether b begins with prefix.
func hasPrefix(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && string(b[:len(prefix)]) == prefix
}

// prefixOf reports whether b is a prefix of tag (the empty b is).
func prefixOf(b []byte, tag string) bool { return len(b) <= len(tag) && string(b) == tag[:len(b)] }

// trimLeftSpace is b without its leading JSON whitespace (space, tab, CR, LF).
func trimLeftSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	return b
}

// trimRightSpace is b without its trailing JSON whitespace.
func trimRightSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// thinkLogprobs keeps, of an answer's logprob entries, those of its content: OpenAI's
// logprobs.content covers the content's tokens, and the block's tags and reasoning are no longer
// content. Each entry's token goes through a splitter of its own, since Ollama also sends the
// entries of a block it has moved into message.thinking itself. An entry still undecided
// (leading whitespace, or what may be an opening tag) is held until the split decides, as its
// text is. A token that closes the block and opens the answer is kept: it is the answer's too.
type thinkLogprobs struct {
	sp   thinkSplitter
	held []logprobJSON
}

// newThinkLogprobs keeps the content's entries for r, think-tags or think-open.
func newThinkLogprobs(r core.Reasoning) *thinkLogprobs {
	return &thinkLogprobs{sp: newThinkSplitter(r)}
}

// take returns the entries of the content among the next ones, in order.
func (t *thinkLogprobs) take(entries []logprobJSON) []logprobJSON {
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
func (t *thinkLogprobs) flush() []logprobJSON {
	content, _ := t.sp.flush()
	held := t.held
	t.held = nil
	if content == "" {
		return nil
	}
	return held
}

// contentLogprobs is take and flush over a whole answer's entries, for r.
func contentLogprobs(entries []logprobJSON, r core.Reasoning) []logprobJSON {
	t := newThinkLogprobs(r)
	return append(t.take(entries), t.flush()...)
}

// tagPrefixSuffix is the length of the longest proper prefix of tag that ends s.
func tagPrefixSuffix(s []byte, tag string) int {
	for k := min(len(s), len(tag)-1); k > 0; k-- {
		if string(s[len(s)-k:]) == tag[:k] {
			return k
		}
	}
	return 0
}

// splitThink splits a whole content, as mode says.
func splitThink(content string, mode core.Reasoning) (answer, reasoning string) {
	s := newThinkSplitter(mode)
	a, r := s.split(content)
	a2, r2 := s.flush()
	return a + a2, r + r2
}

// An OpenAI-compatible upstream's answer is relayed byte for byte; with think-tags or think-open
// on it must be rewritten, so these decode and re-encode it (members come out in sorted order).

// splitThinkBody rewrites a chat.completion, moving each choice's think block out of
// message.content, as r says. A body it cannot read is returned as it is.
func splitThinkBody(body []byte, r core.Reasoning) []byte {
	// "think", not "<think>": Go-written servers escape < as \u003c. With think-open, content
	// without a tag is reasoning still.
	if r == core.ReasoningThinkTags && !bytes.Contains(body, []byte("think")) {
		return body
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return body
	}
	var choices []map[string]json.RawMessage
	if json.Unmarshal(top["choices"], &choices) != nil {
		return body
	}
	changed := false
	for _, ch := range choices {
		var msg map[string]json.RawMessage
		if json.Unmarshal(ch["message"], &msg) != nil {
			continue
		}
		content, ok := rawString(msg["content"])
		if !ok {
			continue
		}
		prev, _ := rawString(msg["reasoning_content"])
		mode := besideUpstreamReasoning(r, hasReasoning(msg))
		answer, reasoning := splitThink(content, mode)
		if reasoning == "" && answer == content {
			continue
		}
		msg["content"] = mustJSON(answer)
		// An empty block (or think-open's whitespace alone before a tool call) adds no
		// reasoning_content "", as a stream adds no empty reasoning delta and the translating
		// adapters' answers carry none (TestSplitThinkBodyNoEmptyReasoning).
		if reasoning != "" {
			msg["reasoning_content"] = mustJSON(prev + reasoning)
		}
		ch["message"] = mustJSON(msg)
		if entries, ok := rawLogprobs(ch["logprobs"]); ok {
			ch["logprobs"] = withLogprobs(ch["logprobs"], contentLogprobs(entries, mode), true)
		}
		changed = true
	}
	if !changed {
		return body
	}
	top["choices"] = mustJSON(choices)
	return mustJSON(top)
}

// thinkStream rewrites an OpenAI chunk stream, one splitter per choice index. The finishing
// chunk of a choice carries whatever its splitter still held. A stream that ends (or reaches its
// usage chunk) with bytes still held, because the upstream sent no finishing chunk, gets a chunk
// of its own for them first: they are the answer's last bytes (or whitespace, or the start of a
// tag that never came), not to be lost.
//
// A chunk it changes comes out as json.Unmarshal into maps and mustJSON wrote it before, byte for
// byte (members in key order, values compacted), but written from a walk of the chunk into a
// buffer the stream reuses (thinkchunk.go; FuzzThinkStreamMatchesOracle): a token's chunk cost
// 68 allocations so, and a chunk after the block, passed as it came, 60.
type thinkStream struct {
	Stream
	reasoning core.Reasoning // think-tags or think-open
	split     map[int]*thinkSplitter
	probs     map[int]*thinkLogprobs // the same, for each choice's logprobs.content entries
	// held are the choice indices whose splitters may hold bytes: those a chunk's split left
	// holding since the last closing chunk. closing looks at these alone, not at every index the
	// stream has named, which cost each usage chunk a sorted walk over them all
	// (TestThinkStreamUsageChunksLinear). Made on first use.
	held map[int]struct{}
	// last is a copy of the latest chunk with choices, the envelope of a closing chunk.
	last []byte
	// pending holds the chunks ready to go, in order (a closing chunk, then the chunk it
	// precedes); the wrapped stream is read only when it is empty, so that a chunk in it that is
	// the wrapped stream's own slice stays valid.
	pending [][]byte
	next    int      // the index in pending of the chunk Next returns next
	end     error    // the stream's end, after pending
	sent    bool     // Next has returned a chunk: the client's stream has begun
	out     chunkBuf // the chunks written here; reset when Next has handed out all of them
	w       chunkScratch
}

func newThinkStream(s Stream, r core.Reasoning) *thinkStream {
	return &thinkStream{Stream: s, reasoning: r, split: map[int]*thinkSplitter{}, probs: map[int]*thinkLogprobs{}}
}

// Next skips the chunks the rewrite emptied (see rewrite).
func (s *thinkStream) Next() ([]byte, error) {
	if s.next == len(s.pending) {
		// All handed out: the chunk returned last is no longer read, and pending starts over
		// (taking chunks off its front would leave an append nothing to reuse).
		s.out.reset()
		s.pending, s.next = s.pending[:0], 0
	}
	for s.queued() == 0 && s.end == nil {
		s.pull()
	}
	if s.queued() > 0 {
		ev := s.pending[s.next]
		s.pending[s.next] = nil
		s.next++
		s.sent = true
		return ev, nil
	}
	return nil, s.end
}

// queued is the number of chunks in pending that Next has not yet returned.
func (s *thinkStream) queued() int { return len(s.pending) - s.next }

// pull reads one event of the wrapped stream and queues what it becomes: nothing (a chunk the
// rewrite emptied), the rewritten chunk (after a closing chunk when it is the usage chunk), or
// the end, after a closing chunk when it is a clean one or a failure once the client's stream
// has begun: the held bytes were read from the upstream, and passthrough would have relayed
// them before the error (TestReviewThinkStreamHeldBytesBeforeError). A failure before anything
// went stays alone, so that the chain may still move on.
func (s *thinkStream) pull() {
	ev, err := s.Stream.Next()
	if err != nil {
		if errors.Is(err, io.EOF) || s.sent || s.queued() > 0 {
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
func (s *thinkStream) closing() []byte {
	if len(s.held) == 0 {
		return nil
	}
	held := slices.Sorted(maps.Keys(s.held))
	clear(s.held) // each is flushed below, or holds nothing
	w := &s.w
	w.reset()
	choices := append(w.vals, '[')
	n := 0
	for _, idx := range held {
		sp := s.split[idx]
		if !sp.holding() {
			continue
		}
		w.answer, w.reasoning = sp.appendFlush(w.answer[:0], w.reasoning[:0])
		if len(w.answer) == 0 && len(w.reasoning) == 0 {
			continue
		}
		if n > 0 {
			choices = append(choices, ',')
		}
		n++
		choices = append(choices, `{"delta":{`...)
		if len(w.answer) > 0 {
			choices = append(choices, `"content":`...)
			choices = appendJSONString(choices, view(w.answer))
		}
		if len(w.reasoning) > 0 {
			if len(w.answer) > 0 {
				choices = append(choices, ',')
			}
			choices = append(choices, `"reasoning_content":`...)
			choices = appendJSONString(choices, view(w.reasoning))
		}
		choices = append(choices, `},"finish_reason":null,"index":`...)
		choices = strconv.AppendInt(choices, int64(idx), 10)
		choices = append(choices, '}')
	}
	if n == 0 {
		return nil
	}
	choices = append(choices, ']')
	w.vals = choices
	top := w.readMembers(s.last)
	if _, ok := member(top, "object"); !ok {
		top = w.written(top, "object", []byte(`"chat.completion.chunk"`))
	}
	top = w.written(w.set(top, "usage", nil), "choices", choices)
	start := len(s.out.buf)
	s.out.buf = appendMembers(s.out.buf, top)
	return s.out.add(start)
}

// Buffered reports whether Next will return without waiting on the upstream. A chunk the
// rewrite empties is skipped by Next, which would then wait for the upstream's next event: so,
// as queue.ready does, the events already buffered are rewritten here until one yields a chunk
// or none is left, and a relay that was told true never holds its last chunk unflushed while
// Next waits (TestReviewThinkTagsEventNotHeldBehindEmptiedChunk).
func (s *thinkStream) Buffered() bool {
	b, ok := s.Stream.(BufferedStream)
	for s.queued() == 0 && s.end == nil {
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
//
// The chunk is read as json.Unmarshal would read it into a map[string]json.RawMessage, and its
// choices into []map[string]json.RawMessage (chunkScratch), and a changed one written as mustJSON
// wrote those maps: members in key order, values compacted.
func (s *thinkStream) rewrite(ev []byte) (out []byte, keep, choiceless bool) {
	if s.answering(ev) {
		return ev, true, false
	}
	w := &s.w
	w.reset()
	top, ok := w.readTop(ev)
	if !ok {
		return ev, true, false
	}
	choicesRaw, _ := member(top, "choices")
	chs, ok := w.readChoices(choicesRaw)
	if !ok || len(chs) == 0 {
		// Only the usage chunk, the stream's last, ends the content. A chunk without choices
		// before it (Azure's prompt_filter_results) must not flush a tag in the making: the
		// rest of the tag would then be read as text (TestSplitEveryReadBoundary).
		u, _ := member(top, "usage")
		return ev, true, len(chs) == 0 && len(u) > 0 && !isNull(u)
	}
	s.last = append(s.last[:0], ev...)
	changed := false
	for i := range chs {
		if s.rewriteChoice(&chs[i]) {
			changed = true
		}
	}
	if !changed {
		return ev, true, false
	}
	// Written, each object is as the map held it: in the order of its names, one a name.
	top = w.sorted(top)
	for i := range chs {
		chs[i].members = w.sorted(chs[i].members)
	}
	if emptiedChunk(top, chs) {
		return nil, false, false
	}
	start := len(w.vals)
	w.vals = append(w.vals, '[')
	for i, ch := range chs {
		if i > 0 {
			w.vals = append(w.vals, ',')
		}
		w.vals = appendMembers(w.vals, ch.members)
	}
	w.vals = append(w.vals, ']')
	top = w.written(top, "choices", w.vals[start:])
	start = len(s.out.buf)
	s.out.buf = appendMembers(s.out.buf, top)
	return s.out.add(start), true, false
}

// answering reports a chunk the rewrite would pass as it came, known without reading it: the
// stream has had one choice, index 0, whose think block is over and whose splitter holds
// nothing, and ev's raw bytes say that every "index" in it is 0 (no other choice comes in it),
// every "logprobs" null and every "finish_reason" null (so that neither the choice's entries
// nor its end are read: the finishing chunk is read). Such a chunk, every token of the answer
// after R1's reasoning, is not read: reading it for what it could not change cost about 11,000
// instructions a chunk. Nothing is held, so no closing chunk needs it for an envelope (s.last),
// and a usage chunk closes nothing.
func (s *thinkStream) answering(ev []byte) bool {
	if len(s.split) != 1 || len(s.held) != 0 {
		return false
	}
	if sp := s.split[0]; sp == nil || sp.state != thinkOut || sp.holding() {
		return false
	}
	return everyMemberIs(ev, `"index"`, "0") && everyMemberIs(ev, `"logprobs"`, "null") &&
		everyMemberIs(ev, `"finish_reason"`, "null") && !escapesLetter(ev)
}

// everyMemberIs reports that every member named key (quoted) in the JSON text ev has the value
// lit, as ev's raw bytes say: a raw quoted name is a key or a string's whole text (a quote inside
// a string is escaped), and a string is followed by no colon, which says false, as does any
// other spelling of the value (-0, 0.0). A key spelled with escapes is escapesLetter's.
func everyMemberIs(ev []byte, key, lit string) bool {
	ws := func(b []byte, j int) int {
		for j < len(b) && (b[j] == ' ' || b[j] == '\t' || b[j] == '\n' || b[j] == '\r') {
			j++
		}
		return j
	}
	for b := ev; ; {
		i := bytes.Index(b, []byte(key))
		if i < 0 {
			return true
		}
		b = b[i+len(key):]
		j := ws(b, 0)
		if j == len(b) || b[j] != ':' {
			return false
		}
		if j = ws(b, j+1); !bytes.HasPrefix(b[j:], []byte(lit)) {
			return false
		}
		if j += len(lit); j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && ws(b, j) == j {
			return false
		}
	}
}

// escapesLetter reports an escape of an ASCII letter (\u0041 to \u007a, and the rest of
// \u004x to \u007x) anywhere in ev: a key could spell a name so.
func escapesLetter(ev []byte) bool {
	for b := ev; ; {
		i := bytes.Index(b, []byte(`\u00`))
		if i < 0 {
			return false
		}
		if i+4 < len(b) && '4' <= b[i+4] && b[i+4] <= '7' {
			return true
		}
		b = b[i+4:]
	}
}

// rewriteChoice moves the think block out of one choice's delta (and its entries out of its
// logprobs), and reports whether it changed the choice.
func (s *thinkStream) rewriteChoice(ch *thinkChoice) (changed bool) {
	w := &s.w
	idxRaw, _ := member(ch.members, "index")
	idx := choiceIndex(idxRaw)
	sp, tp := s.split[idx], s.probs[idx]
	if sp == nil {
		v := newThinkSplitter(s.reasoning)
		sp, tp = &v, newThinkLogprobs(s.reasoning)
		s.split[idx], s.probs[idx] = sp, tp
	}
	// An absent delta, or one of another kind than an object (null, a string), reads as an
	// empty one, as json.Unmarshal left the map it was given (TestThinkStreamNullDeltaFinish).
	var delta []rawMember
	if d, _ := member(ch.members, "delta"); len(d) > 0 && d[0] == '{' {
		delta = w.readMembers(d)
	}
	rc, _ := member(delta, "reasoning_content")
	if r, _ := member(delta, "reasoning"); nonEmptyString(rc) || nonEmptyString(r) {
		sp.upstreamReasoned()
		tp.sp.upstreamReasoned()
	}
	contentRaw, _ := member(delta, "content")
	hasContent := len(contentRaw) > 0 && contentRaw[0] == '"'
	finishRaw, _ := member(ch.members, "finish_reason")
	finished := SaysFinish(text(finishRaw))
	// The entries go through a splitter of their own, as the content does: logprobs.content
	// covers the answer's tokens, not the block's (TestThinkTagsLogprobs). A chunk's entries
	// go through it with or without content beside them, and the entries held for bytes
	// that may open a tag go with the finishing chunk, as those bytes do, though it came
	// with logprobs null.
	lp, _ := member(ch.members, "logprobs")
	if entries, ok := rawLogprobs(lp); ok || finished {
		kept := tp.take(entries)
		if finished {
			kept = append(kept, tp.flush()...)
		}
		if len(kept) != len(entries) {
			if len(lp) == 0 || isNull(lp) {
				lp = json.RawMessage(`{}`)
			}
			ch.members = w.set(ch.members, "logprobs", withLogprobs(lp, kept, false))
			changed = true
		}
	}
	// After the block the content is the answer as it came, whatever the chunk says (a
	// splitter there holds nothing and flushes nothing): it is not decoded.
	if !hasContent && !finished || sp.state == thinkOut {
		return changed
	}
	content, ok := jsonx.AppendUnquote(w.text[:0], contentRaw)
	if !ok {
		content = content[:0]
	}
	w.text = content
	// The reasoning is the upstream's own reasoning_content, when it is a string, followed by
	// the block's.
	prev := w.reasoning[:0]
	if len(rc) > 0 && rc[0] == '"' {
		prev, _ = jsonx.AppendUnquote(prev, rc)
	}
	answer, reasoning := sp.appendSplit(w.answer[:0], prev, content)
	if finished {
		answer, reasoning = sp.appendFlush(answer, reasoning)
	}
	w.answer, w.reasoning = answer, reasoning
	if sp.holding() {
		if s.held == nil {
			s.held = map[int]struct{}{}
		}
		s.held[idx] = struct{}{}
	}
	if bytes.Equal(answer, content) && len(reasoning) == len(prev) {
		return changed
	}
	// A chunk that now holds no answer drops its content rather than carrying "", as
	// DeepSeek's own stream does while it reasons.
	if len(answer) > 0 {
		start := len(w.vals)
		w.vals = appendJSONString(w.vals, view(answer))
		delta = w.written(delta, "content", w.vals[start:])
	} else {
		delta = w.set(delta, "content", nil)
	}
	if len(reasoning) > len(prev) {
		start := len(w.vals)
		w.vals = appendJSONString(w.vals, view(reasoning))
		delta = w.written(delta, "reasoning_content", w.vals[start:])
	}
	start := len(w.vals)
	w.vals = appendMembers(w.vals, delta)
	ch.members = w.written(ch.members, "delta", w.vals[start:])
	return true
}

// emptied reports a chunk with nothing left to say: each choice an index, an empty delta and null
// members (finish_reason, logprobs, vLLM's stop_reason), the chunk itself its ids and null
// members (usage) beside the choices.
func emptied(top map[string]json.RawMessage, choices []map[string]json.RawMessage) bool {
	for k, v := range top {
		switch k {
		case "choices", "id", "object", "created", "model", "system_fingerprint", "service_tier":
		default:
			if !isNull(v) {
				return false
			}
		}
	}
	for _, ch := range choices {
		for k, v := range ch {
			switch k {
			case "index":
			case "delta":
				if t := bytes.TrimSpace(v); !bytes.Equal(t, []byte("{}")) && !isNull(t) {
					return false
				}
			default:
				if !isNull(v) {
					return false
				}
			}
		}
	}
	return true
}

// emptiedChunk is emptied for a chunk as rewrite reads it.
func emptiedChunk(top []rawMember, choices []thinkChoice) bool {
	for _, m := range top {
		switch m.name {
		case "choices", "id", "object", "created", "model", "system_fingerprint", "service_tier":
		default:
			if !isNull(m.value) {
				return false
			}
		}
	}
	for _, ch := range choices {
		for _, m := range ch.members {
			switch m.name {
			case "index":
			case "delta":
				if t := bytes.TrimSpace(m.value); !bytes.Equal(t, []byte("{}")) && !isNull(t) {
					return false
				}
			default:
				if !isNull(m.value) {
					return false
				}
			}
		}
	}
	return true
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

// rawLogprobs reads a choice's logprobs.content entries as the upstream sent them; ok is false
// when there are none to read.
func rawLogprobs(lp json.RawMessage) (entries []logprobJSON, ok bool) {
	if len(lp) == 0 || isNull(lp) {
		return nil, false // before v, which json.Unmarshal moves to the heap: most chunks have none
	}
	var v struct {
		Content []json.RawMessage `json:"content"`
	}
	if json.Unmarshal(lp, &v) != nil || v.Content == nil {
		return nil, false
	}
	entries = make([]logprobJSON, len(v.Content))
	for i, raw := range v.Content {
		var e struct {
			Token string `json:"token"`
		}
		_ = json.Unmarshal(raw, &e)
		entries[i] = logprobJSON{Token: e.Token, raw: raw}
	}
	return entries, true
}

// withLogprobs is lp with its content replaced by entries' raw forms, its other members kept
// (refusal). A chunk left with nothing in it has null, as OpenAI's chunks without tokens have;
// a whole answer (whole) keeps an empty content: the client asked, and the answer's content had
// no tokens (a reasoning model whose max_tokens all went to its reasoning).
func withLogprobs(lp json.RawMessage, entries []logprobJSON, whole bool) json.RawMessage {
	var v map[string]json.RawMessage
	if json.Unmarshal(lp, &v) != nil {
		return lp
	}
	content := make([]json.RawMessage, len(entries))
	for i, e := range entries {
		content[i] = e.raw
	}
	v["content"] = mustJSON(content)
	if len(entries) == 0 && !whole {
		others := false
		for k, m := range v {
			if k != "content" && !isNull(m) {
				others = true
			}
		}
		if !others {
			return json.RawMessage("null")
		}
	}
	return mustJSON(v)
}

// choiceIndex is a choice's index as json.Unmarshal reads it into an int, 0 where it fails; a
// whole number is read without it.
func choiceIndex(raw json.RawMessage) int {
	if n, err := strconv.Atoi(string(raw)); err == nil {
		return n
	}
	var idx int
	_ = json.Unmarshal(raw, &idx)
	return idx
}

// rawString decodes a JSON string; ok is false for null, absence, or any other kind.
func rawString(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	if s, ok := jsonx.Unquote(raw); ok {
		return s, true // as json.Unmarshal reads it (jsonx's TestUnquoteMatchesEncodingJSON)
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// mustJSON marshals values that cannot fail (strings, maps of raw JSON, the adapters' own
// structs). HTML characters stay as they are: ChatML's <|im_start|> and a model's <think> are
// common here, and \u003c would only make the wire harder to read.
func mustJSON(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("upstream: marshal: " + err.Error())
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
