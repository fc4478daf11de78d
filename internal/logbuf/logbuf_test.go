package logbuf

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// syncBuf is a bytes.Buffer safe for the flusher and the test to share.
type syncBuf struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return s.b.Write(p)
}

func (s *syncBuf) String() (string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String(), s.writes
}

func TestBatchesAndFlushes(t *testing.T) {
	var out syncBuf
	w := New(&out, time.Hour, 64) // the ticker never fires here: only size and Close flush
	for i := 0; i < 3; i++ {
		_, _ = w.Write([]byte("line\n"))
	}
	if got, _ := out.String(); got != "" {
		t.Fatalf("written before a flush: %q", got)
	}
	_, _ = w.Write([]byte(strings.Repeat("x", 60) + "\n")) // overflows: the waiting lines go out first
	if got, n := out.String(); got != "line\nline\nline\n" || n != 1 {
		t.Fatalf("after overflow: %q in %d writes", got, n)
	}
	_, _ = w.Write([]byte(strings.Repeat("y", 100))) // larger than the buffer: written through
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, n := out.String()
	want := "line\nline\nline\n" + strings.Repeat("x", 60) + "\n" + strings.Repeat("y", 100)
	if got != want || n != 3 {
		t.Fatalf("after close: %q in %d writes", got, n)
	}
}

func TestConcurrentWritersKeepLinesWhole(t *testing.T) {
	var out syncBuf
	w := New(&out, time.Millisecond, 256)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				_, _ = w.Write([]byte("0123456789\n"))
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := out.String()
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 1600 {
		t.Fatalf("%d lines, want 1600", len(lines))
	}
	for _, l := range lines {
		if l != "0123456789" {
			t.Fatalf("a torn line: %q", l)
		}
	}
}
