package autoroute

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/core"
)

// runState is what a run leaves in its scratch for score and the decision, copied.
type runState struct {
	Toks          []tok
	Hits          []hit
	Negs          []negSpan
	Points        []int32
	Clause        int32
	Arabic, Latin int
}

func stateOf(s *scratch) runState {
	return runState{Toks: append([]tok{}, s.toks...), Hits: append([]hit{}, s.hits...), Negs: append([]negSpan{}, s.negs...),
		Points: append([]int32{}, s.points...), Clause: s.clause, Arabic: s.arabic, Latin: s.latin}
}

// runs classifies system and user as RouteMessagesFor does in part, and as explain does (keeping
// nothing), and reports both states and whether the system prompt was found kept.
func runs(c *Classifier, part uint64, system, user string) (kept, read runState, found bool) {
	_, e := c.systems.lookup(part, system)
	s := c.pool.Get().(*scratch)
	c.runIn(s, system, user, part, true)
	kept = stateOf(s)
	c.release(s)
	s = c.run(system, user)
	read = stateOf(s)
	c.release(s)
	return kept, read, e != nil
}

var stateCmp = cmp.AllowUnexported(tok{}, hit{}, negSpan{})

// TestSystemsSameDecisions: a system prompt read once and kept (systems) leaves the classifier
// in the state reading it again would, token for token, hit for hit and cue for cue, with the
// same points, clauses and script counts, on the first call, the second (which keeps it) and
// the third (which uses it): over every golden text joined into long system prompts, with user
// turns of terms, cues and pairs before them, and with none.
func TestSystemsSameDecisions(t *testing.T) {
	c := newDefault(t)
	ins := goldenInputs(t)
	used := 0
	for i := 0; i < len(ins); i += 3 {
		var b strings.Builder
		for k := i; b.Len() < minSystemBytes+64*(i%5); k++ {
			b.WriteString(ins[k%len(ins)].user)
			b.WriteString([]string{"\n", " ", ". ", "، "}[k%4])
		}
		system := b.String()
		call := 0
		for _, user := range []string{ins[(i+7)%len(ins)].user, ""} {
			for range 3 {
				kept, read, found := runs(c, uint64(i%2), system, user)
				if diff := cmp.Diff(read, kept, stateCmp); diff != "" {
					t.Fatalf("%s as a system prompt (%d bytes), call %d, user of %d bytes: (-read +kept)\n%s", ins[i].name, len(system), call, len(user), diff)
				}
				// Kept by the second call, found from the third on, the other user turn's too;
				// the longest never.
				if found != (call >= 2 && len(system) <= maxSystemBytes) {
					t.Fatalf("%s as a system prompt (%d bytes), call %d: found %v", ins[i].name, len(system), call, found)
				}
				if found {
					used++
				}
				call++
			}
		}
	}
	if used == 0 {
		t.Fatal("no system prompt was used from the cache")
	}
}

// TestSystemsKeepPerPartition: a system prompt kept for one partition (an API key) is not found
// for another, and a prompt is kept on its set's second miss for it, not its first.
func TestSystemsKeepPerPartition(t *testing.T) {
	c := newDefault(t)
	system := strings.Repeat("You are a careful reviewer of our web application's code. ", 8)
	msgs := []core.Message{{Role: "system", Content: []byte(`"` + system + `"`)}, {Role: "user", Content: []byte(`"hi"`)}}
	c.RouteMessagesFor(1, msgs, "")
	if _, e := c.systems.lookup(1, system); e != nil {
		t.Fatal("kept on its first miss")
	}
	c.RouteMessagesFor(1, msgs, "")
	if _, e := c.systems.lookup(1, system); e == nil {
		t.Fatal("not kept on its second miss")
	}
	if _, e := c.systems.lookup(2, system); e != nil {
		t.Fatal("partition 1's prompt found for partition 2")
	}
	c.RouteMessagesFor(2, msgs, "")
	if _, e := c.systems.lookup(2, system); e != nil {
		t.Fatal("partition 2 kept partition 1's prompt on its own first miss")
	}
	// Too short or too long: never kept.
	for _, text := range []string{system[:minSystemBytes-1], strings.Repeat("a ", maxSystemBytes/2+1)} {
		m := []core.Message{{Role: "system", Content: []byte(`"` + text + `"`)}, {Role: "user", Content: []byte(`"hi"`)}}
		for range 3 {
			c.RouteMessagesFor(1, m, "")
		}
		if _, e := c.systems.lookup(1, text); e != nil {
			t.Fatalf("a system prompt of %d bytes was kept", len(text))
		}
	}
}

// TestSystemsAllocations: a system prompt used from the cache costs no allocation, and neither
// does one written afresh for every request (its slot's first miss keeps nothing).
func TestSystemsAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items on purpose")
	}
	c := newDefault(t)
	chat := func(system string) []core.Message {
		return []core.Message{{Role: "system", Content: []byte(`"` + system + `"`)}, {Role: "user", Content: []byte(`"is this code vulnerable to sql injection?"`)}}
	}
	same := chat(strings.Repeat("You are a careful reviewer of our web application's code. ", 8))
	for range 3 {
		c.RouteMessagesFor(0, same, "")
	}
	if n := testing.AllocsPerRun(20, func() { c.RouteMessagesFor(0, same, "") }); n != 0 {
		t.Errorf("a kept system prompt: %.0f allocations a call, want none", n)
	}
	var fresh [][]core.Message
	for i := range 21 {
		fresh = append(fresh, chat(fmt.Sprintf("Today is day %d. %s", i, strings.Repeat("Answer briefly and kindly. ", 12))))
	}
	i := 0
	if n := testing.AllocsPerRun(20, func() { c.RouteMessagesFor(0, fresh[i], ""); i++ }); n != 0 {
		t.Errorf("a new system prompt each call: %.0f allocations a call, want none", n)
	}
}

// FuzzSystemsKept holds the kept system prompt to reading it, as TestSystemsSameDecisions does,
// for any pair of texts (the system prompt repeated to the length that is kept).
func FuzzSystemsKept(f *testing.F) {
	f.Add("You are a security assistant; do not explain exploits.", "not asking about hacking, is my wifi safe?")
	f.Add("أنت مساعد أمني. لا تشرح الاستغلال", "هل هذا الكود مصاب ببرمجية خبيثة؟")
	f.Add("\xff\xfe ЕХРӀОІТ الـXSS", "")
	c, err := New(Rules{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, system, user string) {
		if system == "" {
			return
		}
		for len(system) < minSystemBytes {
			system += "\n" + system
		}
		if len(system) > maxSystemBytes {
			return
		}
		for call := range 3 {
			kept, read, found := runs(c, 7, system, user)
			if diff := cmp.Diff(read, kept, stateCmp); diff != "" {
				t.Fatalf("call %d: (-read +kept)\n%s", call, diff)
			}
			if call == 2 && !found {
				t.Fatal("not kept after two calls")
			}
		}
	})
}

// TestSystemsKeepTwoInASet: two system prompts that share a set and take turns, as two
// applications' requests do, are both kept, on each one's second miss; a third that shares it
// takes the older one's place.
func TestSystemsKeepTwoInASet(t *testing.T) {
	c := newDefault(t)
	base := strings.Repeat("You are the assistant of our team's application; answer briefly. ", 5)
	var same []string
	_, first := c.systems.key(0, base+"0")
	for i := 0; len(same) < 3; i++ {
		text := base + fmt.Sprint(i)
		if _, set := c.systems.key(0, text); set == first {
			same = append(same, text)
		}
	}
	chat := func(system string) []core.Message {
		return []core.Message{{Role: "system", Content: []byte(`"` + system + `"`)}, {Role: "user", Content: []byte(`"hi"`)}}
	}
	kept := func() (k [3]bool) {
		for i, text := range same {
			k[i] = c.KeepsSystem(0, text)
		}
		return k
	}
	a, b, third := same[0], same[1], same[2]
	for i, step := range []struct {
		system string
		want   [3]bool
	}{
		{a, [3]bool{}}, {b, [3]bool{}}, // each one's first miss: remembered
		{a, [3]bool{true, false, false}}, {b, [3]bool{true, true, false}}, // the second: kept, both
		{a, [3]bool{true, true, false}}, {third, [3]bool{true, true, false}},
		{third, [3]bool{false, true, true}}, // in place of the older, a
	} {
		c.RouteMessagesFor(0, chat(step.system), "")
		if got := kept(); got != step.want {
			t.Fatalf("after request %d: kept %v, want %v", i, got, step.want)
		}
	}
}
