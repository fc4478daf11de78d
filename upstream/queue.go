package upstream

import (
	"errors"
	"io"
)

// queue is the shared half of a stream that translates another protocol's events (Ollama's
// NDJSON lines, SAIF's events) into OpenAI chunks: one upstream event may yield no chunk or
// several, so chunks wait here in order, and the error that ended the stream comes after them.
type queue struct {
	pending [][]byte // pending[head:] wait; empty (and head 0) once all are handed out
	head    int
	err     error
	// room is pending's first array: an event's chunks (its delta, the finishing chunk, the
	// usage chunk, what a splitter held) fit, and a stream appends to it without allocating.
	room [4][]byte
}

// eventSource is the protocol half: it reads and translates one upstream event.
type eventSource interface {
	// read consumes one upstream event, queueing its chunks; a non-nil result ends the stream
	// after the queue.
	read() error
	// buffered reports whether a complete upstream event is already in memory.
	buffered() bool
	// held is a chunk with the bytes a think-tags splitter still holds, for a stream that
	// ends without the finishing chunk that carries them; nil when it holds none, or when no
	// chunk was made yet (the error alone lets the chain move on).
	held() []byte
}

func (q *queue) next(src eventSource) ([]byte, error) {
	for {
		if len(q.pending) > 0 {
			ev := q.pending[q.head]
			q.pending[q.head] = nil
			if q.head++; q.head == len(q.pending) {
				// All handed out: the next event's chunks go at the array's start again, where
				// reslicing past each one left none of its room and every append allocated.
				q.pending, q.head = q.pending[:0], 0
			}
			return ev, nil
		}
		if q.err != nil {
			return nil, q.err
		}
		q.read(src)
	}
}

// read translates one upstream event; at the stream's end, what a splitter held goes first
// (TestReviewTranslatedThinkHeldBytesBeforeError).
func (q *queue) read(src eventSource) {
	if q.pending == nil {
		q.pending = q.room[:0]
	}
	if q.err = src.read(); q.err != nil {
		if c := src.held(); c != nil {
			q.pending = append(q.pending, c)
		}
	}
}

// ready reports whether next will return without waiting on the upstream. An upstream event
// may translate into no chunk at all, so the events already buffered are translated here until
// one yields a chunk or none is left.
func (q *queue) ready(src eventSource) bool {
	for len(q.pending) == 0 && q.err == nil {
		if !src.buffered() {
			return false
		}
		q.read(src)
	}
	return true
}

// close ends the stream and releases body: drained for reuse after a clean end, closed
// otherwise. It is safe to call more than once.
func (q *queue) close(body io.ReadCloser) error {
	q.pending, q.head = nil, 0
	clean := errors.Is(q.err, io.EOF)
	if q.err == nil || clean {
		q.err = errStreamClosed
	}
	if clean {
		return closeDrained(body)
	}
	return body.Close()
}

var (
	_ eventSource = (*ollamaStream)(nil)
	_ eventSource = (*saifStream)(nil)
)
