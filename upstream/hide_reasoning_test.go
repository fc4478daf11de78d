package upstream

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// queuedStream is a BufferedStream of events already in memory, then the end err; buffered says
// how many of them Buffered counts as read (the rest wait on the upstream).
type queuedStream struct {
	events   [][]byte
	buffered int
	err      error
}

func (q *queuedStream) Next() ([]byte, error) {
	if len(q.events) == 0 {
		return nil, q.err
	}
	ev := q.events[0]
	q.events = q.events[1:]
	q.buffered = max(q.buffered-1, 0)
	return ev, nil
}

func (q *queuedStream) Buffered() bool { return q.buffered > 0 }
func (q *queuedStream) Close() error   { return nil }

// TestHideReasoningLeavesOtherBytes: with exclude, an answer or chunk that has no reasoning member
// is relayed as the same bytes, not decoded and written again; one that has is rewritten without
// it, its other members kept.
func TestHideReasoningLeavesOtherBytes(t *testing.T) {
	plain := []byte(`{"id":"c","choices":[{"index":0,"delta":{"content":"reasoning, not a key"},"finish_reason":null}]}`)
	if out, keep := hideReasoningIn(plain); !keep || &out[0] != &plain[0] {
		t.Errorf("a chunk without reasoning was rewritten: %s", out)
	}
	whole := []byte(`{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}]}`)
	if out := withoutReasoningBody(whole); &out[0] != &whole[0] {
		t.Errorf("an answer without reasoning was rewritten: %s", out)
	}
	mixed := []byte(`{"id":"c","choices":[{"index":0,"delta":{"content":"A","reasoning":"r"},"finish_reason":null}]}`)
	out, keep := hideReasoningIn(mixed)
	if want := `{"choices":[{"delta":{"content":"A"},"finish_reason":null,"index":0}],"id":"c"}`; !keep || string(out) != want {
		t.Errorf("got %s, want %s", out, want)
	}
	alone := []byte(`{"id":"c","choices":[{"index":0,"delta":{"reasoning_content":"r"},"logprobs":null,"finish_reason":null}]}`)
	if _, keep := hideReasoningIn(alone); keep {
		t.Error("a chunk of reasoning alone was kept as an empty one")
	}
	last := []byte(`{"id":"c","choices":[{"index":0,"delta":{"reasoning":"r"},"finish_reason":"stop"}]}`)
	if out, keep := hideReasoningIn(last); !keep || string(out) != `{"choices":[{"delta":{},"finish_reason":"stop","index":0}],"id":"c"}` {
		t.Errorf("the finishing chunk: %s %v", out, keep)
	}
}

// TestHideReasoningStreamBuffered: a reasoning-only chunk the relay would skip does not make
// Buffered say true and Next then wait on the upstream; a kept chunk, or the end, after it in
// memory does.
func TestHideReasoningStreamBuffered(t *testing.T) {
	r := []byte(`{"choices":[{"index":0,"delta":{"reasoning":"r"},"finish_reason":null}]}`)
	c := []byte(`{"choices":[{"index":0,"delta":{"content":"A"},"finish_reason":null}]}`)
	s := &hideReasoningStream{Stream: &queuedStream{events: [][]byte{r, r, c}, buffered: 2, err: io.EOF}}
	if s.Buffered() {
		t.Fatal("Buffered with only skipped chunks in memory")
	}
	if ev, err := s.Next(); err != nil || string(ev) != string(c) {
		t.Fatalf("Next = %s, %v", ev, err)
	}
	s = &hideReasoningStream{Stream: &queuedStream{events: [][]byte{r, c}, buffered: 2, err: io.EOF}}
	if !s.Buffered() {
		t.Fatal("not Buffered with a kept chunk in memory")
	}
	if ev, err := s.Next(); err != nil || string(ev) != string(c) {
		t.Fatalf("Next = %s, %v", ev, err)
	}
	if _, err := s.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("end = %v", err)
	}
}

// TestHideReasoningTakesItsLogprobs: vLLM and SGLang attach to a chunk of reasoning the logprobs
// of its tokens (logprobs.content, each entry naming its token). With exclude, a chunk whose delta
// carried reasoning alone keeps none of them: sent as an empty delta with those entries, it told
// the client the reasoning token by token. A chunk with content beside the reasoning keeps them,
// as they came: which are whose, its delta does not say.
func TestHideReasoningTakesItsLogprobs(t *testing.T) {
	lp := `{"content":[{"token":"Secret","logprob":-0.1,"bytes":[83,101,99,114,101,116],"top_logprobs":[]}]}`
	alone := []byte(`{"id":"c","choices":[{"index":0,"delta":{"reasoning":"Secret"},"logprobs":` + lp + `,"finish_reason":null}]}`)
	if out, keep := hideReasoningIn(alone); keep {
		t.Errorf("a chunk of reasoning alone was kept with its logprobs: %s", out)
	}
	last := []byte(`{"id":"c","choices":[{"index":0,"delta":{"reasoning_content":"Secret"},"logprobs":` + lp + `,"finish_reason":"length"}]}`)
	if out, keep := hideReasoningIn(last); !keep || string(out) != `{"choices":[{"delta":{},"finish_reason":"length","index":0,"logprobs":null}],"id":"c"}` {
		t.Errorf("the finishing chunk of reasoning: %s %v", out, keep)
	}
	mixed := []byte(`{"id":"c","choices":[{"index":0,"delta":{"content":"A","reasoning":"r"},"logprobs":` + lp + `,"finish_reason":null}]}`)
	if out, keep := hideReasoningIn(mixed); !keep || !bytes.Contains(out, []byte(`"logprobs":`+lp)) {
		t.Errorf("a chunk with content lost its logprobs: %s %v", out, keep)
	}
}
