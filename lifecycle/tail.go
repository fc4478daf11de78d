package lifecycle

import "sync"

const (
	tailLines   = 20
	tailLineMax = 512
)

// tail keeps the last lines a child wrote to stderr, so that a crash can be logged with the reason
// the process gave, without holding an unbounded log in memory.
type tail struct {
	mu      sync.Mutex
	lines   []string // ring of at most tailLines
	next    int      // where the next full line goes once the ring is full
	partial []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range p {
		if c == '\n' {
			t.push(string(t.partial))
			t.partial = t.partial[:0]
			continue
		}
		if len(t.partial) < tailLineMax {
			t.partial = append(t.partial, c)
		}
	}
	return len(p), nil
}

func (t *tail) push(line string) {
	if len(t.lines) < tailLines {
		t.lines = append(t.lines, line)
		return
	}
	t.lines[t.next] = line
	t.next = (t.next + 1) % tailLines
}

// Lines returns the kept lines, oldest first, with an unfinished last line included.
func (t *tail) Lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.lines)+1)
	out = append(out, t.lines[t.next:]...)
	out = append(out, t.lines[:t.next]...)
	if len(t.partial) > 0 {
		out = append(out, string(t.partial))
	}
	return out
}
