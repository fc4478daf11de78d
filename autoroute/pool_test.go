package autoroute

import (
	"strings"
	"testing"
)

// TestLongTextNotPooled: release gave back scratch.text alone when a long text had grown it,
// though the words, tokens, hits and negation cues of that text grow with it: after one request of
// 10 MiB of "not hacking exploit" (max_body_bytes), its scratch kept about 150 MB in the pool
// until the next two collections. Every buffer past what a long chat needs is dropped.
func TestLongTextNotPooled(t *testing.T) {
	c := newDefault(t)
	text := strings.Repeat("not hacking exploit ", 1<<16)
	s := c.run(text, text)
	c.release(s)
	kept := cap(s.text) + cap(s.words) + 16*cap(s.refs) + 8*cap(s.toks) + 20*cap(s.hits) + 16*cap(s.negs)
	if kept > 1<<20 {
		t.Errorf("a scratch goes back to the pool holding %d bytes (words %d, refs %d, toks %d, hits %d, negs %d)",
			kept, cap(s.words), cap(s.refs), cap(s.toks), cap(s.hits), cap(s.negs))
	}
	// What it keeps still serves: the next call on the same scratch classifies as a fresh one.
	s2 := c.run("", "How do I exploit CVE-2021-3156 on my server?")
	if r, _ := c.routeOf(s2); r != "saif" {
		t.Errorf("after a long text: %s", r)
	}
}
