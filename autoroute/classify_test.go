package autoroute

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"
)

func newDefault(t testing.TB) *Classifier {
	t.Helper()
	c, err := New(Rules{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type classifyCase struct {
	name               string
	system, user, hint string
	route, intent      string
}

func runCases(t *testing.T, c *Classifier, tests []classifyCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := c.Classify(tt.system, tt.user, tt.hint)
			if d.Route != tt.route || (tt.intent != "" && d.Intent != tt.intent) {
				t.Errorf("Classify(%q) = %s/%s, want %s/%s\nreason: %s", tt.user, d.Route, d.Intent,
					tt.route, tt.intent, d.Reason)
			}
		})
	}
}

func TestWordBoundaries(t *testing.T) {
	runCases(t, newDefault(t), []classifyCase{
		{name: "dispatch is not patch", user: "How do I dispatch a security event in Redux?", route: RouteAverroesQ},
		{name: "patch plus kernel is security", user: "How do I patch the Linux kernel on my server?", route: RouteSAIF},
		// Decision: "kernel" alone is only a hint (weight 1) and "popcorn" is an against-term, so the
		// grain never reaches SAIF, while "kernel exploit" does through "exploit".
		{name: "popcorn kernel", user: "Why do some popcorn kernels not pop?", route: RouteAverroesQ},
		{name: "kernel alone", user: "What is a kernel?", route: RouteAverroesQ},
		{name: "kernel exploit", user: "Explain this Linux kernel exploit", route: RouteSAIF},
		{name: "exploitation phrase needs both words", user: "buffer management and overflow of rivers", route: RouteAverroesQ},
		{name: "hyphen joins a phrase", user: "what is a buffer-overflow", route: RouteSAIF},
		{name: "substring of cve", user: "Tell me about the cvent conference app", route: RouteAverroesQ},
		{name: "arabic clitic", user: "هل هذا البرنامج مصاب بالفيروسات؟", route: RouteSAIF},
		{name: "arabic prefix not peeled from a term", user: "ما هو الرهن العقاري؟", route: RouteAverroesQ},
		{name: "diacritics do not hide a term", user: "ما هي الثَّغَرَات في هذا النظام؟", route: RouteSAIF},
	})
}

func TestHardCases(t *testing.T) {
	runCases(t, newDefault(t), []classifyCase{
		{name: "negated hacking", user: "I'm not asking about hacking, just how to rename my wifi", route: RouteAverroesQ, intent: IntentGeneral},
		{name: "negation ends at the clause", user: "Not asking about passwords. How do I remove malware?", route: RouteSAIF},
		{name: "unsure is not a negation", user: "I'm not sure if this is malware", route: RouteSAIF},
		{name: "virus in biology", user: "What is the history of the word virus in biology?", route: RouteAverroesQ},
		{name: "computer virus wins over biology", user: "How is a computer virus different from a biological virus?", route: RouteSAIF},
		{name: "code with strcpy", user: "char b[8];\nstrcpy(b, argv[1]);\nIs this vulnerable?", route: RouteSAIF},
		{name: "code without a question", user: "void f(char *s) { char b[8]; strcpy(b, s); }\nWhat does this do?", route: RouteAverroesQ},
		{name: "paper example", user: "ما هي نقاط الضعف في تطبيقات الويب؟", route: RouteSAIF},
		{name: "arabic negation", user: "لا أسأل عن الاختراق، فقط كيف أغير اسم الشبكة؟", route: RouteAverroesQ},
		{name: "negated step by step", user: "No need to go step by step, what is 2+2?", route: RouteAverroesQ},
		// A bare "not" negates only the term right after it: one word is weaker evidence than
		// "not asking about", and reaching further would negate "not sure if this is malware".
		{name: "bare not", user: "not step by step, just tell me", route: RouteAverroesQ, intent: IntentGeneral},
		{name: "bare not reaches one word", user: "Do not skip anything: prove step by step that 2+2=4", route: RouteDeepSeek},
		{name: "bare not after the term", user: "Why does this exploit not work?", route: RouteSAIF},
		{name: "empty", user: "", route: RouteAverroesQ, intent: IntentGeneral},
	})
}

func TestPrecedence(t *testing.T) {
	both := "Explain step by step how this buffer overflow exploit works"
	runCases(t, newDefault(t), []classifyCase{
		{name: "security before reasoning", user: both, route: RouteSAIF, intent: IntentSecurity},
		{name: "reasoning alone", user: "Explain step by step how to prove the theorem", route: RouteDeepSeek, intent: IntentReasoning},
	})
	d := DefaultRules()
	d.Intents[0], d.Intents[1] = d.Intents[1], d.Intents[0]
	c, err := New(d)
	if err != nil {
		t.Fatal(err)
	}
	runCases(t, c, []classifyCase{
		{name: "order is the precedence", user: both, route: RouteDeepSeek, intent: IntentReasoning},
	})
}

func TestSystemPromptCountsHalf(t *testing.T) {
	runCases(t, newDefault(t), []classifyCase{
		{name: "one term in system is not enough", system: "Never help with malware.", user: "Write a haiku about spring", route: RouteAverroesQ},
		{name: "two strong terms in system are", system: "You are a malware analyst doing reverse engineering.", user: "Look at this sample", route: RouteSAIF},
		{name: "phrases do not span the two texts", system: "buffer", user: "overflow of the river", route: RouteAverroesQ},
	})
}

func TestHint(t *testing.T) {
	c := newDefault(t)
	runCases(t, c, []classifyCase{
		{name: "specialist implies saif", user: "Summarise this text for me", hint: "rev_eng", route: RouteSAIF, intent: IntentHint},
		{name: "case and spaces ignored", user: "hello", hint: "  WebApp ", route: RouteSAIF, intent: IntentHint},
		{name: "hint beats reasoning", user: "Prove that 2+2=4 step by step", hint: "crypto", route: RouteSAIF, intent: IntentHint},
		{name: "route name as hint", user: "CVE-2021-44228?", hint: "deepseek-r1", route: RouteDeepSeek, intent: IntentHint},
		{name: "unknown hint ignored", user: "CVE-2021-44228?", hint: "fast", route: RouteSAIF, intent: IntentSecurity},
	})
	d := c.Classify("", "hi", "malware")
	if diff := cmp.Diff([]string{"malware"}, d.Matched); diff != "" {
		t.Errorf("Matched (-want +got):\n%s", diff)
	}
}

func TestDecisionFields(t *testing.T) {
	c := newDefault(t)
	got := c.Classify("", "Is CVE-2021-44228 exploitable on my kernel?", "")
	want := Decision{
		Route: RouteSAIF, Intent: IntentSecurity, Language: English,
		Matched: []string{"cve", "exploitable", "kernel^1"},
	}
	want.Matched[2] = "kernel"
	if diff := cmp.Diff(want, got, cmpIgnoreReason); diff != "" {
		t.Errorf("Decision (-want +got):\n%s", diff)
	}
	if !strings.Contains(got.Reason, "security 5≥2") || !strings.Contains(got.Reason, "cve") {
		t.Errorf("Reason %q lacks the score or terms", got.Reason)
	}
	g := c.Classify("", "What is a kernel in popcorn?", "")
	if g.Intent != IntentGeneral || !strings.Contains(g.Reason, "-popcorn") || !strings.Contains(g.Reason, "→ general") {
		t.Errorf("general decision %+v does not explain itself", g)
	}
}

var cmpIgnoreReason = cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "Reason" }, cmp.Ignore())

func TestExplain(t *testing.T) {
	c := newDefault(t)
	e := c.Explain("", "I'm not asking about hacking: prove step by step that the sum of the angles is 180, not the biology kind", "")
	if e.Route != RouteDeepSeek {
		t.Fatalf("route %s, want %s (%s)", e.Route, RouteDeepSeek, e.Reason)
	}
	want := []IntentScore{
		{Intent: IntentSecurity, Route: RouteSAIF, Score: -2, Min: 2, Against: []string{"biology"}, Negated: []string{"hacking"}},
		{Intent: IntentReasoning, Route: RouteDeepSeek, Score: 4, Min: 2, Terms: []string{"prove", "step by step"}},
	}
	if diff := cmp.Diff(want, e.Scores); diff != "" {
		t.Errorf("Scores (-want +got):\n%s", diff)
	}
}

func TestRoutes(t *testing.T) {
	if diff := cmp.Diff([]string{RouteSAIF, RouteDeepSeek, RouteAverroesQ}, newDefault(t).Routes()); diff != "" {
		t.Errorf("default Routes (-want +got):\n%s", diff)
	}
	c, err := New(Rules{Default: "general-pool", SpecialistRoute: "saif-direct",
		Intents: []IntentRule{{Name: "math", Route: "r1", Terms: []string{"integral"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"r1", "general-pool", "saif-direct"}, c.Routes()); diff != "" {
		t.Errorf("custom Routes (-want +got):\n%s", diff)
	}
}

// TestIntents: every intent Route can name is listed, the configured ones in precedence order,
// then general and hint; the server builds the X-Hayula-Intent values from them once.
func TestIntents(t *testing.T) {
	if diff := cmp.Diff([]string{IntentSecurity, IntentReasoning, IntentGeneral, IntentHint}, newDefault(t).Intents()); diff != "" {
		t.Errorf("default Intents (-want +got):\n%s", diff)
	}
	c, err := New(Rules{Default: "general-pool", SpecialistRoute: "saif-direct",
		Intents: []IntentRule{{Name: "math", Route: "r1", Terms: []string{"integral"}}, {Name: "law", Route: "r1", Terms: []string{"statute"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"math", "law", IntentGeneral, IntentHint}, c.Intents()); diff != "" {
		t.Errorf("custom Intents (-want +got):\n%s", diff)
	}
	for _, text := range []string{"solve this integral", "read the statute", "hello there"} {
		if _, intent := c.Route("", text, ""); !slices.Contains(c.Intents(), intent) {
			t.Errorf("Route(%q) named intent %q, which Intents does not list", text, intent)
		}
	}
	if _, intent := c.Route("", "x", "saif-direct"); intent != IntentHint || !slices.Contains(c.Intents(), intent) {
		t.Errorf("a hinted Route named intent %q; want %q, listed", intent, IntentHint)
	}
}

// TestMoveOrder: the routes a request moves to are the intents' in precedence order, then the
// default, each once; the specialist route only as one of them.
func TestMoveOrder(t *testing.T) {
	if diff := cmp.Diff([]string{RouteSAIF, RouteDeepSeek, RouteAverroesQ}, newDefault(t).MoveOrder()); diff != "" {
		t.Errorf("default MoveOrder (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		rules Rules
		want  []string
	}{
		{Rules{Default: "general-pool", SpecialistRoute: "saif-direct",
			Intents: []IntentRule{{Name: "math", Route: "r1", Terms: []string{"integral"}}}}, []string{"r1", "general-pool"}},
		{Rules{Default: "general", SpecialistRoute: "sec", Intents: []IntentRule{
			{Name: "b", Route: "sec", Terms: []string{"x"}}, {Name: "a", Route: "r1", Terms: []string{"y"}},
			{Name: "c", Route: "sec", Terms: []string{"z"}}}}, []string{"sec", "r1", "general"}},
		{Rules{Default: "r1", Intents: []IntentRule{{Name: "a", Route: "r1", Terms: []string{"y"}}}}, []string{"r1"}},
	} {
		c, err := New(tc.rules)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, c.MoveOrder()); diff != "" {
			t.Errorf("MoveOrder (-want +got):\n%s", diff)
		}
	}
}

const customTOML = `
[auto]
default = "general"
specialist_route = "saif-specialists"
specialists = ["pwn"]
negations = ["-"]

# The paper's original rule: Arabic goes to Averroes-Q whatever it asks.
[[auto.intents]]
name = "arabic"
route = "averroes-q"
languages = ["arabic"]
any = true

[[auto.intents]]
name = "security"
route = "saif"
add_terms = ["blue screen of death"]

[[auto.intents]]
name = "cooking"
route = "chef"
terms = ["recipe", "bake^1", "oven^1"]
against = ["-"]
min_score = 2
`

func TestCustomTOML(t *testing.T) {
	var cfg struct {
		Auto Rules `toml:"auto"`
	}
	md, err := toml.Decode(customTOML, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	if u := md.Undecoded(); len(u) > 0 {
		t.Fatalf("undecoded keys %v", u)
	}
	c, err := New(cfg.Auto)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"averroes-q", "saif", "chef", "general", "saif-specialists"}, c.Routes()); diff != "" {
		t.Errorf("Routes (-want +got):\n%s", diff)
	}
	runCases(t, c, []classifyCase{
		{name: "paper rule: arabic security goes to averroes", user: "ما هي نقاط الضعف في تطبيقات الويب؟", route: "averroes-q", intent: "arabic"},
		{name: "english security still saif", user: "What is a buffer overflow?", route: "saif", intent: "security"},
		{name: "added term", user: "I got a blue screen of death after an update", route: "saif"},
		{name: "new intent", user: "A recipe for bread please", route: "chef", intent: "cooking"},
		{name: "weights add up", user: "Can I bake it in a gas oven?", route: "chef"},
		{name: "one weak term is not enough", user: "Is my oven clean?", route: "general", intent: IntentGeneral},
		{name: "reasoning intent gone", user: "Prove step by step that 1+1=2", route: "general"},
		{name: "negations switched off", user: "not asking about malware", route: "saif"},
		{name: "custom specialist", user: "hi", hint: "pwn", route: "saif-specialists", intent: IntentHint},
		{name: "default specialists replaced", user: "hi", hint: "rev_eng", route: "general"},
	})
}

func TestNewValidates(t *testing.T) {
	ok := IntentRule{Name: "x", Route: "r", Terms: []string{"word"}}
	tests := []struct {
		name  string
		rules Rules
		field string
	}{
		{"empty name", Rules{Intents: []IntentRule{{Route: "r", Terms: []string{"a"}}}}, "intents[0].name"},
		{"reserved name", Rules{Intents: []IntentRule{{Name: "general", Route: "r", Terms: []string{"a"}}}}, "intents[0].name"},
		{"duplicate intent", Rules{Intents: []IntentRule{ok, ok}}, "intents[1].name"},
		{"empty route", Rules{Intents: []IntentRule{{Name: "x", Terms: []string{"a"}}}}, "intents[0].route"},
		{"empty terms", Rules{Intents: []IntentRule{{Name: "x", Route: "r"}}}, "intents[0].terms"},
		{"term without words", Rules{Intents: []IntentRule{{Name: "x", Route: "r", Terms: []string{"a", "?!"}}}}, "intents[0].terms[1]"},
		{"bad weight", Rules{Intents: []IntentRule{{Name: "x", Route: "r", Terms: []string{"a^0"}}}}, "intents[0].terms[0]"},
		{"bare weight", Rules{Intents: []IntentRule{{Name: "x", Route: "r", Terms: []string{"^3"}}}}, "intents[0].terms[0]"},
		{"bad language", Rules{Intents: []IntentRule{{Name: "x", Route: "r", Terms: []string{"a"}, Languages: []string{"french"}}}}, "intents[0].languages[0]"},
		{"negative min score", Rules{Intents: []IntentRule{{Name: "x", Route: "r", Terms: []string{"a"}, MinScore: -1}}}, "intents[0].min_score"},
		// Doubled into an int32, 2^30 wrapped to the most negative score: the intent fired always.
		{"min score past MaxMinScore", Rules{Intents: []IntentRule{{Name: "x", Route: "r", Terms: []string{"a"}, MinScore: 1 << 30}}}, "intents[0].min_score"},
		{"empty specialist", Rules{Specialists: []string{"a", " "}}, "specialists[1]"},
		{"bad negation", Rules{Negations: []string{"..."}}, "negations[0]"},
		{"bad added term", Rules{Intents: []IntentRule{{Name: "security", Route: "saif", AddTerms: []string{"ok", "x^x"}}}}, "intents[0].add_terms[1]"},
		{"bad against", Rules{Intents: []IntentRule{{Name: "x", Route: "r", Terms: []string{"a"}, Against: []string{""}}}}, "intents[0].against[0]"},
		// A weight of two digits or a fraction was read as words of the term ("a", "10").
		{"weight ^10", Rules{Intents: []IntentRule{{Name: "x", Route: "r", Terms: []string{"a", "b^10"}}}}, "intents[0].terms[1]"},
		{"weight ^0.5", Rules{Intents: []IntentRule{{Name: "x", Route: "r", Terms: []string{"b ^0.5"}}}}, "intents[0].terms[0]"},
		{"pair of one side", Rules{Intents: []IntentRule{{Name: "x", Route: "r", Pairs: []string{"a & b", "a|b"}}}}, "intents[0].pairs[1]"},
		{"pair of three sides", Rules{Intents: []IntentRule{{Name: "x", Route: "r", Pairs: []string{"a & b & c"}}}}, "intents[0].pairs[0]"},
		{"pair with an empty word", Rules{Intents: []IntentRule{{Name: "x", Route: "r", Pairs: []string{"a|| & b"}}}}, "intents[0].pairs[0]"},
		{"pair with a bad weight", Rules{Intents: []IntentRule{{Name: "x", Route: "r", Pairs: []string{"a & b^0"}}}}, "intents[0].pairs[0]"},
	}
	// Every problem is in the error, not only the first.
	_, err := New(Rules{Specialists: []string{""}, Intents: []IntentRule{
		{Name: "x", Route: "", Terms: []string{"a^0", "b"}},
		{Name: "x", Route: "r", Terms: []string{"c"}, Languages: []string{"french"}}}})
	var fields []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ce *ConfigError
		if errors.As(e, &ce) {
			fields = append(fields, ce.Field)
		}
	}
	if want := []string{"specialists[0]", "intents[0].route", "intents[0].terms[0]", "intents[1].name",
		"intents[1].languages[0]"}; !slices.Equal(fields, want) {
		t.Errorf("fields %q, want %q", fields, want)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.rules)
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("New = %v, want a *ConfigError", err)
			}
			if ce.Field != tt.field {
				t.Errorf("field %q, want %q (%v)", ce.Field, tt.field, err)
			}
		})
	}
	if _, err := New(Rules{Intents: []IntentRule{ok, {Name: "y", Route: "r2", Any: true}}}); err != nil {
		t.Errorf("valid rules rejected: %v", err)
	}
}

func TestDefaultRulesRoundTrip(t *testing.T) {
	// DefaultRules spelled out must behave exactly like the zero value.
	a, b := newDefault(t), func() *Classifier {
		c, err := New(DefaultRules())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}()
	for _, p := range []string{"CVE-2021-44228", "prove it step by step", "hello", "ثغرة", "not asking about hacking"} {
		if x, y := a.Classify("", p, ""), b.Classify("", p, ""); !cmp.Equal(x, y) {
			t.Errorf("%q: zero rules %+v, DefaultRules %+v", p, x, y)
		}
	}
}

func TestConcurrentClassify(t *testing.T) {
	c := newDefault(t)
	prompts := []string{"CVE-2021-44228 exploit", "prove step by step", "hello there", "ثغرة أمنية في الويب"}
	want := make([]Decision, len(prompts))
	for i, p := range prompts {
		want[i] = c.Classify("", p, "")
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				k := (i + g) % len(prompts)
				if got := c.Classify("", prompts[k], ""); !cmp.Equal(want[k], got) {
					t.Errorf("concurrent %q: %+v, want %+v", prompts[k], got, want[k])
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestClassifyAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items on purpose")
	}
	c := newDefault(t)
	p := benchPrompt()
	c.Classify("", p, "") // warm the pool
	// The Decision's Matched slice and Reason string are the only allocations.
	if n := testing.AllocsPerRun(50, func() { c.Classify("", p, "") }); n > 3 {
		t.Errorf("Classify allocates %.0f times per call, want at most 3", n)
	}
}

func TestExplainJSON(t *testing.T) {
	e := newDefault(t).Explain("", "ما هي نقاط الضعف في تطبيقات الويب؟", "")
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Route    string   `json:"route"`
		Intent   string   `json:"intent"`
		Language Language `json:"language"`
		Matched  []string `json:"matched"`
		Scores   []IntentScore
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Route != RouteSAIF || back.Intent != IntentSecurity || back.Language != Arabic ||
		!strings.Contains(string(b), `"language":"arabic"`) || len(back.Scores) != 2 {
		t.Errorf("explain JSON %s", b)
	}
	if diff := cmp.Diff([]string{"نقاط الضعف"}, back.Matched); diff != "" {
		t.Errorf("matched (-want +got):\n%s", diff)
	}
}

// TestVocabTableFind holds the table to the map it was built from, for stems passed with no spare
// capacity (the byte-at-a-time head) and with garbage past their end (the masked eight-byte load).
func TestVocabTableFind(t *testing.T) {
	c, err := New(Rules{})
	if err != nil {
		t.Fatal(err)
	}
	for w, id := range c.vocab {
		tight := []byte(w)[:len(w):len(w)]
		padded := append([]byte(w), "zzzzzzzzzzzzzzzz"...)[:len(w)]
		if got := c.find(tight); got != id {
			t.Errorf("find(%q) tight = %d, want %d", w, got, id)
		}
		if got := c.find(padded); got != id {
			t.Errorf("find(%q) padded = %d, want %d", w, got, id)
		}
		want, ok := c.vocab[w+"q"]
		if !ok {
			want = -1
		}
		if got := c.find(append(padded, 'q')); got != want {
			t.Errorf("find(%q) = %d, a stem not in the vocabulary", w+"q", got)
		}
	}
}

// TestArabicAsItsEnglishCounterpart: everyday Arabic phrasings whose English counterparts reach
// an intent stayed general, for want of a term: the verb "got hacked" as Arabic writers form it
// from هكر (اتهكر، انهكر، تهكر) where "hacked" is a term; the singular of a broken plural
// (برنامج الفدية, ransomware; برنامج التجسس, spyware), which the light stemmer cannot reach from
// برامج; and "in how many ways" (بكم طريقة، كم عدد الطرق) where "how many ways" is a term.
func TestArabicAsItsEnglishCounterpart(t *testing.T) {
	runCases(t, newDefault(t), []classifyCase{
		{name: "got hacked, english", user: "my email got hacked, what do I do", route: RouteSAIF},
		{name: "got hacked, gulf", user: "الايميل حقي انهكر وش اسوي", route: RouteSAIF},
		{name: "got hacked, egyptian", user: "اتهكر حسابي على انستقرام", route: RouteSAIF},
		{name: "got hacked, feminine", user: "الصفحة اتهكرت امبارح", route: RouteSAIF},
		{name: "got hacked, levantine", user: "حسابي تهكر شو لازم اعمل", route: RouteSAIF},
		{name: "ransomware, english", user: "explain how ransomware works", route: RouteSAIF},
		{name: "ransomware, singular", user: "اشرح لي كيف يعمل برنامج الفدية", route: RouteSAIF},
		{name: "spyware, singular", user: "كيف اعرف ان جوالي فيه برنامج تجسس", route: RouteSAIF},
		{name: "how many ways, english", user: "how many ways can 5 books be arranged on a shelf?", route: RouteDeepSeek},
		{name: "how many ways", user: "كم عدد الطرق لترتيب ٥ كتب على رف؟", route: RouteDeepSeek},
		{name: "in how many ways", user: "بكم طريقة يمكن ترتيب حروف كلمة سلام؟", route: RouteDeepSeek},
		{name: "how many students stays general", user: "كم عدد الطلاب في الصف؟", route: RouteAverroesQ},
		{name: "a tv programme stays general", user: "ما هو أفضل برنامج تلفزيوني هذا الأسبوع؟", route: RouteAverroesQ},
		{name: "a password alone stays general", user: "كيف اسوي باسورد قوي", route: RouteAverroesQ},
	})
}

// TestPersianSecurityTerms: Persian's own security words (فیشینگ phishing, بدافزار malware,
// باج‌افزار ransomware, هک hack, تست نفوذ penetration test) share no stem with the Arabic terms,
// so Persian security questions matched nothing and went to the default. They are listed now,
// spelt as Persian writers spell them, with the zero-width non-joiner of باج‌افزار, the same
// word written apart (باج افزار) or run together (باجافزار). نفوذ alone is only a hint (it is
// also "influence", in Arabic and Persian alike), as "attack" is in English. A Persian prompt
// that is not security goes where an Arabic one does, to the default: its script is Arabic, and
// no letter tells the two languages apart (TestPersianLayoutTypesArabicTerms).
func TestPersianSecurityTerms(t *testing.T) {
	runCases(t, newDefault(t), []classifyCase{
		{name: "phishing", user: "چگونه می توانم از حملات فیشینگ جلوگیری کنم؟", route: RouteSAIF},
		{name: "malware", user: "کامپیوترم بدافزار گرفته، چطور پاکش کنم؟", route: RouteSAIF},
		{name: "malware, plural", user: "انواع بدافزارها را توضیح بده", route: RouteSAIF},
		{name: "ransomware with zwnj", user: "باج\u200cافزار چطور فایل\u200cها را رمزگذاری می\u200cکند؟", route: RouteSAIF},
		{name: "ransomware apart", user: "باج افزار چیست", route: RouteSAIF},
		{name: "ransomware run together", user: "باجافزار چیست", route: RouteSAIF},
		{name: "spyware", user: "از کجا بفهمم گوشیم جاسوس\u200cافزار دارد؟", route: RouteSAIF},
		{name: "got hacked", user: "اکانت اینستاگرامم هک شده، چکار کنم؟", route: RouteSAIF},
		{name: "penetration test", user: "برای تست نفوذ وب\u200cسایت از کجا شروع کنم؟", route: RouteSAIF},
		{name: "vulnerability", user: "این کد چه آسیب\u200cپذیری دارد؟", route: RouteSAIF},
		{name: "vulnerability apart", user: "آسیب پذیری های رایج وب کدامند؟", route: RouteSAIF},
		{name: "cybersecurity", user: "برای شروع یادگیری امنیت سایبری چه بخوانم؟", route: RouteSAIF},
		{name: "political influence stays general", user: "نفوذ سیاسی ایران در منطقه را توضیح بده", route: RouteAverroesQ, intent: IntentGeneral},
		{name: "arabic influence stays general", user: "ما مدى نفوذ الشركات الكبرى في الاقتصاد؟", route: RouteAverroesQ, intent: IntentGeneral},
		{name: "harm is not vulnerability", user: "آسیب های سیگار برای ریه چیست؟", route: RouteAverroesQ, intent: IntentGeneral},
		{name: "corona virus stays general", user: "ویروس کرونا چگونه منتقل می شود؟", route: RouteAverroesQ, intent: IntentGeneral},
		{name: "computer virus", user: "ویروس کامپیوتری چگونه پخش می شود؟", route: RouteSAIF},
		{name: "a persian poem goes to the default", user: "یک شعر درباره بهار بنویس", route: RouteAverroesQ, intent: IntentGeneral},
		{name: "a persian chat goes to the default", user: "سلام، امروز حالت چطوره؟", route: RouteAverroesQ, intent: IntentGeneral},
	})
}

// TestSafetyQuestionAboutASecurityObject: "is it safe" weighs 1 (a hint), and so do the
// everyday words that name what a security question is asked about, or they weigh nothing; any
// two weight-1 terms add up, so that "wifi" could not be given a weight of its own without
// "send me the wifi password" going to saif. A pair of the security intent says it instead: a
// safety word (safe, secure, legit, scam…) and a security object (wifi, link, url, attachment,
// qr code…) in one clause add 2, and neither counts alone, nor two objects together.
func TestSafetyQuestionAboutASecurityObject(t *testing.T) {
	runCases(t, newDefault(t), []classifyCase{
		{name: "public wifi", user: "is public wifi safe?", route: RouteSAIF, intent: IntentSecurity},
		{name: "link to click", user: "is this link safe to click", route: RouteSAIF, intent: IntentSecurity},
		{name: "safe to use public wifi", user: "Is it safe to use public Wi-Fi for online banking?", route: RouteSAIF},
		{name: "legit url", user: "is this url legit? https://paypa1-login.example", route: RouteSAIF},
		{name: "qr code", user: "Is it safe to scan a QR code on a parking meter?", route: RouteSAIF},
		{name: "scam link", user: "is this link about my held parcel a scam?", route: RouteSAIF},
		{name: "usb stick", user: "is it safe to plug in a USB stick I found in the car park?", route: RouteSAIF},
		{name: "hotel wifi secure", user: "how secure is hotel wifi", route: RouteSAIF},
		{name: "arabic link", user: "هل هذا الرابط آمن؟", route: RouteSAIF},
		{name: "arabic wifi", user: "هل الواي فاي العام آمن؟", route: RouteSAIF},

		{name: "raw eggs", user: "is it safe to eat raw eggs", route: RouteAverroesQ, intent: IntentGeneral},
		{name: "safe drive", user: "Is it safe to drive in snow without chains?", route: RouteAverroesQ, intent: IntentGeneral},
		{name: "safe neighbourhood", user: "Is this neighbourhood safe to walk at night?", route: RouteAverroesQ, intent: IntentGeneral},
		{name: "wifi alone", user: "how do I connect my printer to the wifi", route: RouteAverroesQ, intent: IntentGeneral},
		{name: "two objects, no question", user: "send me the link to the wifi setup page", route: RouteAverroesQ, intent: IntentGeneral},
		{name: "link in another clause", user: "This recipe is safe for kids. Can you give me a link to it?", route: RouteAverroesQ, intent: IntentGeneral},
		{name: "negated", user: "not asking whether the wifi is safe, just how to rename it", route: RouteAverroesQ, intent: IntentGeneral},
		{name: "arabic safe road", user: "هل الطريق آمن في الليل؟", route: RouteAverroesQ, intent: IntentGeneral},
	})
}

// TestPairs: a pair (IntentRule.Pairs) counts its weight once when a word of each side is in one
// clause, in either order, and nothing otherwise; a side matched only in the system prompt counts
// half; a negated side does not count; ["-"] switches the built-in pairs off.
func TestPairs(t *testing.T) {
	c, err := New(Rules{Intents: []IntentRule{{Name: "x", Route: "rx", Pairs: []string{"safe|secure & wifi|qr code^3"}, MinScore: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	runCases(t, c, []classifyCase{
		{name: "left then right", user: "is it safe on wifi", route: "rx"},
		{name: "right then left", user: "is the qr code secure", route: "rx"},
		{name: "left alone", user: "safe and secure", route: RouteAverroesQ},
		{name: "right alone", user: "wifi and a qr code", route: RouteAverroesQ},
		{name: "other clauses", user: "it is safe. the wifi is slow", route: RouteAverroesQ},
		{name: "negated", user: "not safe, wifi", route: RouteAverroesQ},
		{name: "system prompt counts half", system: "is wifi safe", user: "hello", route: RouteAverroesQ},
	})
	e := c.Explain("", "is the wifi safe", "")
	if diff := cmp.Diff([]string{"wifi", "safe"}, e.Scores[0].Terms); diff != "" || e.Scores[0].Score != 3 {
		t.Errorf("Explain score %v terms (-want +got):\n%s", e.Scores[0].Score, diff)
	}
	if e := c.Explain("", "safe wifi, safe wifi", ""); e.Scores[0].Score != 3 {
		t.Errorf("a pair found twice scores %v, want 3 (once)", e.Scores[0].Score)
	}
	off, err := New(Rules{Intents: []IntentRule{{Name: IntentSecurity, Route: RouteSAIF, Pairs: []string{"-"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if d := off.Classify("", "is public wifi safe?", ""); d.Route != RouteAverroesQ {
		t.Errorf("with pairs = [\"-\"]: %s (%s)", d.Route, d.Reason)
	}
}
