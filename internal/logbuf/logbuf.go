// Package logbuf owns the gateway's log output buffer: log lines are collected in memory and
// written out in batches (every interval, when the buffer fills, and on Close) instead of one
// write(2) per request, which the bench harness showed on every request's path.
package logbuf

import (
	"io"
	"sync"
	"time"
)

// Writer buffers writes to an underlying writer. It is safe for concurrent use. A line written
// reaches the underlying writer at most one interval later, or at once when the buffer is full.
type Writer struct {
	mu   sync.Mutex
	w    io.Writer
	buf  []byte
	max  int
	err  error
	stop chan struct{}
	done chan struct{}
}

// New starts a Writer that flushes to w every interval and whenever max bytes are waiting.
// Close it to stop its flusher and write what is left.
func New(w io.Writer, interval time.Duration, max int) *Writer {
	b := &Writer{w: w, max: max, buf: make([]byte, 0, max), stop: make(chan struct{}), done: make(chan struct{})}
	go b.loop(interval)
	return b
}

func (b *Writer) loop(interval time.Duration) {
	defer close(b.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			_ = b.Flush()
		case <-b.stop:
			return
		}
	}
}

// Write buffers p; it writes through when p would overflow the buffer.
func (b *Writer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.buf)+len(p) > b.max {
		b.flushLocked()
		if len(p) > b.max {
			_, err := b.w.Write(p)
			return len(p), err
		}
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// Flush writes out what is waiting and reports the first write error seen.
func (b *Writer) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked()
	return b.err
}

func (b *Writer) flushLocked() {
	if len(b.buf) == 0 {
		return
	}
	if _, err := b.w.Write(b.buf); err != nil && b.err == nil {
		b.err = err
	}
	b.buf = b.buf[:0]
}

// Close stops the flusher and writes what is left. It is safe to call once.
func (b *Writer) Close() error {
	close(b.stop)
	<-b.done
	return b.Flush()
}
