package autoroute

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/decisions.golden from the current classifier")

const goldenPath = "testdata/decisions.golden"

// goldenInput is one classifier call of the equivalence guard.
type goldenInput struct {
	name               string
	system, user, hint string
}

// goldenRecord is one line of decisions.golden.
type goldenRecord struct {
	Name     string   `json:"name"`
	Route    string   `json:"route"`
	Intent   string   `json:"intent"`
	Language string   `json:"language"`
	Matched  []string `json:"matched,omitempty"`
	Reason   string   `json:"reason"`
}

// TestDecisionsGolden pins every decision of the default classifier over the labelled and held-out
// sets, every configured term on its own and a few hundred generated mixed texts, so that work on
// the classifier's speed cannot change what it decides. Run with -update only for an intended
// change in behaviour, and say so in the commit.
func TestDecisionsGolden(t *testing.T) {
	c := newDefault(t)
	var got []goldenRecord
	for _, in := range goldenInputs(t) {
		d := c.Classify(in.system, in.user, in.hint)
		if r, i := c.Route(in.system, in.user, in.hint); r != d.Route || i != d.Intent {
			t.Errorf("%s: Route = %s/%s, Classify = %s/%s", in.name, r, i, d.Route, d.Intent)
		}
		got = append(got, goldenRecord{Name: in.name, Route: d.Route, Intent: d.Intent,
			Language: d.Language.String(), Matched: d.Matched, Reason: d.Reason})
	}
	if *update {
		var b strings.Builder
		for _, r := range got {
			line, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(line)
			b.WriteByte('\n')
		}
		if err := os.WriteFile(goldenPath, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open(goldenPath)
	if err != nil {
		t.Fatalf("%v (run go test -run TestDecisionsGolden -update to create it)", err)
	}
	defer f.Close()
	var want []goldenRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		var r goldenRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s line %d: %v", goldenPath, len(want)+1, err)
		}
		want = append(want, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d decisions, golden has %d", len(got), len(want))
	}
	bad := 0
	for i := range got {
		if diff := cmp.Diff(want[i], got[i]); diff != "" {
			t.Errorf("%s: decision changed (-golden +got):\n%s", got[i].Name, diff)
			if bad++; bad == 10 {
				t.Fatal("too many changed decisions")
			}
		}
	}
}

func goldenInputs(t *testing.T) []goldenInput {
	t.Helper()
	var ins []goldenInput
	for _, path := range []string{"testdata/labelled.jsonl", "testdata/heldout.jsonl"} {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64*1024), 4<<20)
		for line := 1; sc.Scan(); line++ {
			b := strings.TrimSpace(sc.Text())
			if b == "" || b[0] == '#' {
				continue
			}
			var ex Example
			if err := json.Unmarshal([]byte(b), &ex); err != nil {
				t.Fatalf("%s:%d: %v", path, line, err)
			}
			name := fmt.Sprintf("%s:%d", path, line)
			ins = append(ins, goldenInput{name: name, system: ex.System, user: ex.Prompt, hint: ex.Hint},
				// The same text as a system prompt scores half and may fall short.
				goldenInput{name: name + "/as-system", system: ex.Prompt})
		}
		f.Close()
	}
	r := DefaultRules()
	var terms []string
	for _, ir := range r.Intents {
		terms = append(terms, ir.Terms...)
		terms = append(terms, ir.Against...)
	}
	nterms := len(terms)
	terms = append(terms, r.Negations...)
	for i, raw := range terms {
		text, _, err := parseTerm(raw)
		if err != nil {
			t.Fatal(err)
		}
		terms[i] = text
		ins = append(ins, goldenInput{name: fmt.Sprintf("term:%d", i), user: text})
	}
	rng := rand.New(rand.NewPCG(13, 1013))
	for i := range 400 {
		in := goldenInput{name: fmt.Sprintf("gen:%d", i), user: genText(rng, terms[:nterms], terms[nterms:], 1+rng.IntN(120))}
		if rng.IntN(4) == 0 {
			in.system = genText(rng, terms[:nterms], terms[nterms:], 1+rng.IntN(30))
		}
		if rng.IntN(10) == 0 {
			in.hint = []string{"rev_eng", "SAIF", "deepseek", "nonsense", " Webapp "}[rng.IntN(5)]
		}
		ins = append(ins, in)
	}
	// Long prompts (a pasted document, a retrieved context), which scan and the pooled scratch
	// handle with buffers sized at once (BenchmarkRoute64KB): generated texts of thousands of
	// pieces, and the benchmark's prose alone and ending in a question of each intent.
	long := rand.New(rand.NewPCG(64, 1064))
	for i := range 8 {
		in := goldenInput{name: fmt.Sprintf("long:%d", i), user: genText(long, terms[:nterms], terms[nterms:], 2000+long.IntN(6000))}
		if i%2 == 1 {
			in.system = genText(long, terms[:nterms], terms[nterms:], 1+long.IntN(300))
		}
		ins = append(ins, in)
	}
	for _, p := range longProse {
		text := longText(p.unit, 64<<10)
		ins = append(ins, goldenInput{name: "long:" + p.name, user: text},
			goldenInput{name: "long:" + p.name + "/security", user: text + " How do I exploit this SQL injection?"},
			goldenInput{name: "long:" + p.name + "/reasoning", user: text + " Prove it step by step.",
				system: text[:4<<10]})
	}
	return ins
}

// genText writes n random pieces: configured terms (bent by case, plurals, Arabic clitics,
// diacritics and tatweel), filler words of both scripts, code, digits, other scripts, overlong
// words, apostrophes and clause punctuation.
func genText(rng *rand.Rand, terms, negations []string, n int) string {
	fillEN := []string{"the", "a", "my", "is", "how", "what", "do", "I", "app", "server", "data",
		"policy", "policies", "movies", "boxes", "status", "class's", "churches", "NASA", "x",
		"Log4Shell", "don't", "hackers'", "it’s", "can't", "buses", "analysis", "cries", "key",
		"word", "virus", "kernels", "dispatch", "biology", "popcorn", "recipe"}
	fillAR := []string{"هل", "هذا", "البرنامج", "ممكن", "تساعدني", "في", "على", "من", "الى", "كتاب",
		"المدرسة", "والمعلمون", "بالسيارات", "للطلاب", "كتبها", "مكتبتهم", "فالولد", "وكتب", "إلى",
		"أسئلة", "مسؤول", "شيء", "مدرسة", "ىى", "ة"}
	other := []string{"café", "Привет", "日本語", "naïve", "ΑΒΓ", "١٢٣", "۴۵", "x86_64", "0x41414141",
		"strcpy(buf,", "argv[1]);", "{", "}", "==", "\xff", "\xd8", strings.Repeat("ab", 40),
		strings.Repeat("ب", 40), "…", "。", "e.g.", "i.e."}
	punct := []string{" ", " ", " ", " ", ", ", ". ", "? ", "! ", "; ", ": ", "\n", "، ", "؟ ", "؛ ",
		" - ", "-", "'", "’", "\t", " (", ") ", "\"", "/"}
	var b strings.Builder
	// Texts dense with terms all go to SAIF; most get few, so that scores sit near the thresholds.
	density := []int{1, 1, 2, 4, 20}[rng.IntN(5)]
	// Some texts are one script only, so that language detection sees all three answers.
	en, ar := 60, 85
	switch rng.IntN(4) {
	case 0:
		en, ar = 90, 90
	case 1:
		en, ar = density+3, 90
	}
	for range n {
		switch k := rng.IntN(100); {
		case k < density:
			b.WriteString(bend(rng, terms[rng.IntN(len(terms))]))
		case k < density+3:
			b.WriteString(negations[rng.IntN(len(negations))] + " " + bend(rng, terms[rng.IntN(len(terms))]))
		case k < en:
			b.WriteString(fillEN[rng.IntN(len(fillEN))])
		case k < ar:
			b.WriteString(bend(rng, fillAR[rng.IntN(len(fillAR))]))
		default:
			b.WriteString(other[rng.IntN(len(other))])
		}
		b.WriteString(punct[rng.IntN(len(punct))])
	}
	return b.String()
}

func bend(rng *rand.Rand, s string) string {
	arabic := strings.ContainsRune(s, 'ا') || strings.ContainsRune(s, 'ل') || strings.ContainsRune(s, 'م')
	switch rng.IntN(8) {
	case 0:
		return strings.ToUpper(s)
	case 1:
		if arabic {
			return []string{"و", "ف", "ب", "ل", "ك", "ال", "وال", "بال", "لل"}[rng.IntN(9)] + s
		}
		return s + "s"
	case 2:
		if arabic {
			return s + []string{"ات", "ها", "هم", "ين", "ون", "ي", "ه", "هما"}[rng.IntN(8)]
		}
		return s + "'s"
	case 3:
		// Diacritics and tatweel inside the word.
		rs := []rune(s)
		if len(rs) > 1 {
			at := 1 + rng.IntN(len(rs)-1)
			return string(rs[:at]) + []string{"\u064e", "\u0651", "\u0640", "\u0670"}[rng.IntN(4)] + string(rs[at:])
		}
	case 4:
		if len(s) > 0 {
			return strings.ToUpper(s[:1]) + s[1:]
		}
	}
	return s
}
