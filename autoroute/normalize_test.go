package autoroute

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"ascii lower-case", "Buffer OVERFLOW in CVE-2021-44228", "buffer overflow in cve 2021 44228"},
		{"punctuation splits words", "strcpy(buf, argv[1]);", "strcpy buf argv 1"},
		{"underscore splits identifiers", "get_user_password", "get user password"},
		{"apostrophe inside a word stays", "I'm not asking, don't", "i'm not asking don't"},
		{"typographic apostrophe", "don’t", "don't"},
		{"trailing apostrophe dropped", "hackers' tools", "hackers tools"},
		{"diacritics stripped", "ثَغْرَةٌ", "ثغره"},
		{"tatweel stripped", "اختـــراق", "اختراق"},
		{"alef forms folded", "أإآٱ", "اااا"},
		{"hamza carriers folded", "سؤال مسائل", "سوال مسايل"},
		{"ta marbuta and alef maqsura", "ثغرة على", "ثغره علي"},
		{"persian, kurdish and urdu heh", "ثغرۀ ثغرە ثغرہ ھاكر", "ثغره ثغره ثغره هاكر"},
		{"urdu heh with hamza, composed or not", "ثغرۂ ثغرۂ", "ثغره ثغره"},
		{"persian yeh and keheh", "فی الشبکۀ یمکن", "في الشبكه يمكن"},
		{"tatweel, shadda and harakat together", "يَسْتَغِلّـــون", "يستغلون"},
		{"arabic-indic digits", "٢٠٢٤ ۳", "2024 3"},
		{"arabic punctuation splits", "ثغرة،اختراق؟", "ثغره اختراق"},
		{"mixed scripts", "ممكن تشرح how XSS works؟", "ممكن تشرح how xss works"},
		{"other letters lower-cased", "Ünïcode ÉTÉ", "ünïcode été"},
		{"empty", "", ""},
		{"only symbols", "!!! ??? ...", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Normalize(tt.in)); diff != "" {
				t.Errorf("Normalize(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestStemsMeet(t *testing.T) {
	// Each pair must reduce to the same stem; that is what lets a term match its inflections.
	same := []struct{ a, b string }{
		{"vulnerability", "vulnerabilities"},
		{"virus", "viruses"},
		{"patch", "patches"},
		{"exploit", "exploits"},
		{"movie", "movies"},
		{"policy", "policies"},
		{"attacker", "attacker's"},
		{"ثغرة", "الثغرات"},
		{"ثغرة", "ثغرات"},
		{"برمجيات خبيثة", "البرمجيات الخبيثة"},
		{"منطقي", "المنطقية"},
		{"الهندسة العكسية", "هندسة عكسية"},
		{"فيروس", "الفيروسات"},
	}
	for _, tt := range same {
		t.Run(tt.a+"="+tt.b, func(t *testing.T) {
			if diff := cmp.Diff(stems(tt.a), stems(tt.b)); diff != "" {
				t.Errorf("stems differ (-%s +%s):\n%s", tt.a, tt.b, diff)
			}
		})
	}
	differ := []struct{ a, b string }{
		{"patch", "dispatch"},
		{"class", "clas"},
		{"key", "ki"},
		{"برهن", "رهن"},
	}
	for _, tt := range differ {
		t.Run(tt.a+"!="+tt.b, func(t *testing.T) {
			if cmp.Equal(stems(tt.a), stems(tt.b)) {
				t.Errorf("%q and %q share the stem %q", tt.a, tt.b, stems(tt.a))
			}
		})
	}
}

func stems(s string) []string {
	var c wordCollector
	collect(s, &c)
	return c.words
}

func TestDetectLanguage(t *testing.T) {
	tests := []struct {
		in   string
		want Language
	}{
		{"How do I patch the kernel?", English},
		{"", English},
		{"12345 !!!", English},
		{"ما هي نقاط الضعف في تطبيقات الويب؟", Arabic},
		{"كيف أحمي موقعي من هجمات حقن SQL؟", Arabic},             // an acronym is a name, not English
		{"اشرح ثغرة Log4Shell وكيف يمكن استغلالها", Arabic},      // so is a word with digits
		{"أثبت أن 2 أس n أكبر من n", Arabic},                     // and a one-letter variable
		{"ممكن تشرح لي how does a buffer overflow work?", Mixed}, // code-switching
		{"أبغى أكتب email رسمي لمديري", Mixed},                   // one real English word is enough
		{"What does \"إن شاء الله\" mean?", Mixed},
		{"What is the best antivirus للأندرويد؟", Mixed},
		{"the quick brown fox jumps over the lazy dog again and again and again and again and again and again and again فقط", English},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := DetectLanguage(tt.in); got != tt.want {
				t.Errorf("DetectLanguage(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestLanguageString(t *testing.T) {
	for _, l := range []Language{English, Arabic, Mixed} {
		got, ok := ParseLanguage(l.String())
		if !ok || got != l {
			t.Errorf("ParseLanguage(%q) = %v, %v", l.String(), got, ok)
		}
	}
	if _, ok := ParseLanguage("french"); ok {
		t.Error("ParseLanguage(french) succeeded")
	}
}

func TestByteClass(t *testing.T) {
	want := func(c byte) int {
		switch {
		case c >= 0x80:
			return clsHigh
		case c >= 'a' && c <= 'z':
			return clsLower
		case c >= 'A' && c <= 'Z':
			return clsUpper
		case c >= '0' && c <= '9':
			return clsDigit
		case c == '\'':
			return clsApos
		case c == '.' || c == ',' || c == ';' || c == ':' || c == '!' || c == '?' || c == '\n':
			return clsClause
		}
		return clsSep
	}
	if len(byteClass) != 256 {
		t.Fatalf("byteClass has %d entries", len(byteClass))
	}
	for c := 0; c < 256; c++ {
		if got := int(byteClass[c]); got != want(byte(c)) {
			t.Errorf("byteClass[%#x] = %d, want %d", c, got, want(byte(c)))
		}
	}
}

// TestPlainArabic4 holds the four-letter test to plainArabic: every byte pair in every position,
// the other three letters plain, so that the count is where the pair is when the pair fails.
func TestPlainArabic4(t *testing.T) {
	for pos := 0; pos < 4; pos++ {
		t.Run(string(rune('0'+pos)), func(t *testing.T) {
			for b0 := 0; b0 < 256; b0++ {
				for b1 := 0; b1 < 256; b1++ {
					var x uint64
					for k := 0; k < 4; k++ {
						p0, p1 := uint64(0xD9), uint64(0x8A) // ي
						if k == pos {
							p0, p1 = uint64(b0), uint64(b1)
						}
						x |= (p0 | p1<<8) << (16 * k)
					}
					want := 4
					if !plainArabic(byte(b0), byte(b1)) {
						want = pos
					}
					if got := plainArabic4(x); got != want {
						t.Fatalf("pair %02X %02X: got %d, want %d", b0, b1, got, want)
					}
				}
			}
		})
	}
}

// TestInvisibleAndConfusable: characters that a reader does not see, or sees as Latin letters,
// once split a word or made it another, so that "exp\u200bloit" (a zero-width space), "ex­ploit"
// (a soft hyphen), "еxploit" (a Cyrillic е), "ｅｘｐｌｏｉｔ" and "𝐞𝐱𝐩𝐥𝐨𝐢𝐭" stayed off the security
// route. Russian and Greek words keep their letters.
func TestInvisibleAndConfusable(t *testing.T) {
	norm := []struct{ name, in, want string }{
		{"zero-width space", "exp\u200bloit", "exploit"},
		{"zero-width joiners in arabic", "ثغ\u200dر\u200cة", "ثغره"},
		{"soft hyphen", "ex\u00adploit", "exploit"},
		{"direction marks", "\u200fثغرة\u200e \u202bxss\u202c", "ثغره xss"},
		{"arabic letter mark", "ثغ\u061cرة", "ثغره"},
		{"byte order mark and word joiner", "\ufeffhack\u2060ing", "hacking"},
		{"cyrillic lookalikes in a latin word", "\u0435xpl\u043e\u0456t", "exploit"},
		{"a word of lookalikes with one latin letter", "\u0440\u043el\u0430", "pola"},
		{"greek lookalikes", "\u03a7SS", "xss"},
		{"russian stays russian", "сервер взломан", "сервер взломан"},
		{"greek stays greek", "ιός", "ιός"},
		{"fullwidth", "ＸＳＳ ｅｘｐｌｏｉｔ ２０２４", "xss exploit 2024"},
		{"mathematical bold and monospace", "𝐞𝐱𝐩𝐥𝐨𝐢𝐭 𝚡𝚜𝚜 𝟒𝟎𝟒", "exploit xss 404"},
		{"fullwidth punctuation splits", "ｘｓｓ！ｓｑｌ", "xss sql"},
	}
	for _, tt := range norm {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Normalize(tt.in)); diff != "" {
				t.Errorf("Normalize(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
	runCases(t, newDefault(t), []classifyCase{
		{name: "zero-width space inside exploit", user: "how do I exp\u200bloit this buffer over\u200bflow", route: RouteSAIF},
		{name: "soft hyphen inside exploit", user: "how do I ex\u00adploit this", route: RouteSAIF},
		{name: "cyrillic e in exploit", user: "how do I \u0435xploit this", route: RouteSAIF},
		{name: "fullwidth exploit", user: "how do I ｅｘｐｌｏｉｔ this", route: RouteSAIF},
		{name: "mathematical bold exploit", user: "how do I 𝐞𝐱𝐩𝐥𝐨𝐢𝐭 this", route: RouteSAIF},
		{name: "zero-width non-joiner in thaghra", user: "كيف أستغل ثغ\u200cرة في الخادم", route: RouteSAIF},
		{name: "russian text stays general", user: "Напиши стихотворение о море", route: RouteAverroesQ},
	})
}

// TestArabicIndicDigitsAreDigits: a digit written as an Arabic-Indic (٤) or Persian (۴) one, as
// Arabic phone keyboards type them, made "Log٤Shell" an English word where "Log4Shell" is a name
// that counts for neither language, so that an Arabic question became mixed and went past an
// intent for Arabic prompts (CONFIG.md's way to get the paper's behaviour back).
func TestArabicIndicDigitsAreDigits(t *testing.T) {
	paper := Rules{Intents: []IntentRule{
		{Name: "arabic", Route: "averroes-q", Languages: []string{"arabic"}, Any: true},
		{Name: "security", Route: "saif"},
		{Name: "reasoning", Route: "deepseek-r1"},
	}}
	c, err := New(paper)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{"اشرح ثغرة Log4Shell وكيف يمكن استغلالها", "اشرح ثغرة Log٤Shell وكيف يمكن استغلالها",
		"اشرح ثغرة Log۴Shell وكيف يمكن استغلالها", "ما الفرق بين sha٢٥٦ و md٥"} {
		if got := DetectLanguage(in); got != Arabic {
			t.Errorf("DetectLanguage(%q) = %v, want arabic", in, got)
		}
		if d := c.Classify("", in, ""); d.Route != "averroes-q" || d.Intent != "arabic" {
			t.Errorf("paper's rules: %q went to %s/%s, want averroes-q/arabic (%s)", in, d.Route, d.Intent, d.Reason)
		}
	}
}

// TestArabicPresentationForms: Arabic copied out of a PDF often comes in presentation forms
// (U+FB50–U+FBFF, U+FE70–U+FEFC: each letter drawn initial, medial, final or isolated), which
// scan read as letters of no known script, so that an Arabic security question was "english"
// and matched no term. They read as the letters they are drawn as, lam-alef as two.
func TestArabicPresentationForms(t *testing.T) {
	c := newDefault(t)
	for _, tc := range []struct{ forms, plain string }{
		{"ﻣﺎ ﻫﻲ ﻧﻘﺎﻁ ﺍﻟﻀﻌﻒ ﻓﻲ ﺗﻄﺒﻴﻘﺎﺕ ﺍﻟﻮﻳﺐ؟", "ما هي نقاط الضعف في تطبيقات الويب؟"},
		{"ﻛﻴﻒ ﺃﺣﻤﻲ ﺍﻟﺨﺎﺩﻡ ﻣﻦ ﺍﻻﺧﺘﺮﺍﻕ", "كيف أحمي الخادم من الاختراق"},
		{"ﺛﻐﺮﺓ ﻓﻲ ﺍﻟﻨﻈﺎﻡ", "ثغرة في النظام"},
		{"ﺛﹷﻐﺮﺓ ﻓﻲ ﺍﻟﻨﻈﺎﻡ", "ثغرة في النظام"}, // a medial fatha form inside the word
		{"ﮔﺰﺍﺭﺵ ﯾﮏ ﺑﺪﺍﻓﺰﺍﺭ", "گزارش یک بدافزار"},
	} {
		if got, want := Normalize(tc.forms), Normalize(tc.plain); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", tc.forms, got, want)
		}
		if got := DetectLanguage(tc.forms); got != Arabic {
			t.Errorf("DetectLanguage(%q) = %v, want arabic", tc.forms, got)
		}
		got, want := c.Classify("", tc.forms, ""), c.Classify("", tc.plain, "")
		if got.Route != want.Route || got.Intent != want.Intent {
			t.Errorf("%q went to %s/%s, its plain letters to %s/%s", tc.forms, got.Route, got.Intent, want.Route, want.Intent)
		}
	}
	for _, tb := range []struct {
		table      string
		first, end rune
	}{{formsA, formsAFirst, 0xFC00}, {formsB, formsBFirst, 0xFF00}} {
		if len(tb.table) != 2*int(tb.end-tb.first) {
			t.Fatalf("the table from U+%04X has %d bytes, want two for each code point to U+%04X", tb.first, len(tb.table), tb.end)
		}
		for i := 0; i < len(tb.table); i += 2 {
			e := tb.table[i : i+2]
			if r, n := utf8.DecodeRuneInString(e); e != "--" && e != ".." && e != "LA" && (n != 2 || r < 0x0621 || r > 0x06D3) {
				t.Errorf("U+%04X: entry %q", tb.first+rune(i/2), e)
			}
		}
	}
	if got := Normalize("\ufeffﻻ"); got != "لا" {
		t.Errorf("a byte order mark and lam-alef: %q", got)
	}
}

// TestAllLookalikeWords: a word drawn wholly in Cyrillic or Greek letters that look like Latin
// ones ("ХЅЅ", "ЕХРӀОІТ") kept its letters, since it might be Russian, so that a security term
// written that way stayed off the security route while the same term with one Latin letter in it
// reached it. Such a word now reads as the Latin word it shows and counts for neither language;
// a word with any other Cyrillic or Greek letter (Russian, Greek) keeps its letters. Russian words
// made only of lookalikes ("рос", "ехе") read as Latin words too, and the last part holds
// that no default term can be spelt so except a few that are no Russian word.
func TestAllLookalikeWords(t *testing.T) {
	norm := []struct{ name, in, want string }{
		{"cyrillic capitals", "ЕХРӀОІТ", "exploit"},
		{"macedonian dze", "ХЅЅ хѕѕ", "xss xss"},
		{"greek capitals", "ΧΕΝ", "xen"},
		{"with a digit", "с2", "c2"},
		{"one latin letter, as before", "\u0440\u0430ssword", "password"},
		{"russian words of lookalikes", "рос ехе сом", "poc exe сом"},
		{"russian stays russian", "сервер взломан", "сервер взломан"},
		{"a lookalike run then a russian letter", "сорок", "сорок"},
		{"a russian letter then lookalikes", "пароль", "пароль"},
		{"greek stays greek", "ιός και", "ιός kai"},
		{"a stress mark ends the word, as before", "ро\u0301с", "ро c"},
	}
	for _, tt := range norm {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Normalize(tt.in)); diff != "" {
				t.Errorf("Normalize(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
	for _, tt := range []struct {
		in   string
		want Language
	}{
		{"ЕХРӀОІТ", English},
		{"كيف أحمي الموقع من ХЅЅ", Arabic},
		{"كيف أحمي الموقع من XSS", Arabic},
	} {
		if got := DetectLanguage(tt.in); got != tt.want {
			t.Errorf("DetectLanguage(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
	runCases(t, newDefault(t), []classifyCase{
		{name: "exploit in cyrillic capitals", user: "how do I use this ЕХРӀОІТ", route: RouteSAIF},
		{name: "xss in lookalikes", user: "what is ХЅЅ and how do I stop it", route: RouteSAIF},
		{name: "arabic question, xss in lookalikes", user: "كيف أحمي الموقع من ХЅЅ", route: RouteSAIF},
		{name: "russian of lookalike words stays general", user: "Рос сом в реке, а ехе и сор на берегу", route: RouteAverroesQ},
		{name: "russian capitals stay general", user: "АРТ ТОР СОК ХОР", route: RouteAverroesQ},
	})

	// The single-word default terms a word of Russian's own lookalike letters can spell: lower
	// case а е о р с у х, and in capitals also В К М Н Т. None of these is a Russian word; a term
	// added that one is ("cop", "coc") must be weighed against Russian text before it joins.
	const russianLower, russianCaps = "aeopcyx", "aeopcyxbkmht"
	allowed := map[string]bool{"c2": true, "xxe": true, "attack": true, "hack": true, "patch": true,
		"memcpy": true, "emotet": true, "math": true}
	spelt := func(w, letters string) bool {
		for _, c := range w {
			if !strings.ContainsRune(letters, c) && (c < '0' || c > '9') {
				return false
			}
		}
		return strings.Trim(w, "0123456789") != ""
	}
	for _, raw := range append(securityTerms(), reasoningTerms()...) {
		term, _, err := parseTerm(raw)
		if err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(term, " -") || len(term) < 2 {
			continue
		}
		if (spelt(term, russianLower) || spelt(term, russianCaps)) && !allowed[term] {
			t.Errorf("term %q can be spelt in Russian lookalike letters: is it a Russian word?", term)
		}
	}
}

// TestPersianLayoutTypesArabicTerms: Arabic typed on a Persian (or Urdu, Kurdish) keyboard layout,
// as many Arabic writers' Windows machines have it, has ی for ي، ک for ك and ۀ، ہ، ھ، ە for ه or
// ة: it matches the same terms and goes where the Arabic letters go. Language is the script, not
// the language: Persian and Urdu prompts count as arabic, since ی and ک are typed by Arabic writers
// too and Iraqi and Gulf Arabic write چ، گ، پ, so no letter tells the languages apart.
func TestPersianLayoutTypesArabicTerms(t *testing.T) {
	c := newDefault(t)
	for _, tc := range []struct{ persian, arabic string }{
		{"هل یمکن اختراق الشبکۀ اللاسلکیة؟", "هل يمكن اختراق الشبكة اللاسلكية؟"},
		{"کیف أحمی موقعی من ثغرات حقن SQL", "كيف أحمي موقعي من ثغرات حقن SQL"},
		{"ھل ھذا الکود آمن من الھجمات الالکترونیہ", "هل هذا الكود آمن من الهجمات الالكترونية"},
		{"حل المعادلة خطوە بخطوە: س + ۳ = ۷", "حل المعادلة خطوة بخطوة: س + ٣ = ٧"},
		{"اکتب لی قصیدۀ عن البحر", "اكتب لي قصيدة عن البحر"},
	} {
		got, want := c.Classify("", tc.persian, ""), c.Classify("", tc.arabic, "")
		if got.Route != want.Route || got.Intent != want.Intent || got.Language != want.Language {
			t.Errorf("%q went to %s/%s (%v), its Arabic letters to %s/%s (%v)", tc.persian,
				got.Route, got.Intent, got.Language, want.Route, want.Intent, want.Language)
		}
	}
	for _, s := range []string{"چگونه می توانم از حملات فیشینگ جلوگیری کنم؟", "ہیکر نے میرا اکاؤنٹ ہیک کر لیا"} {
		if got := DetectLanguage(s); got != Arabic {
			t.Errorf("DetectLanguage(%q) = %v, want arabic (the script)", s, got)
		}
	}
}

// TestArabicGluedToEnglish: Arabic writers glue the article, and the prepositions and
// conjunctions fused with it, to an English word ("الـXSS", "والـphishing", "للـexploit"); with
// the tatweel dropped it was one word, "الxss", that matched no term, so that these questions
// stayed general while "ال XSS" with a space went to saif. The Arabic article or clitic is now
// dropped there, and any other Arabic part is a word of its own.
func TestArabicGluedToEnglish(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"الـXSS", "xss"},
		{"الXSS", "xss"},
		{"والـphishing وبالـmalware للـexploit", "phishing malware exploit"},
		{"ثغرةSQL", "ثغره sql"},
		{"SQLحقن", "sqlحقن"}, // English before Arabic is left as it was: rare, mostly identifiers
		{"الكود", "الكود"},
	} {
		if got := Normalize(tt.in); got != tt.want {
			t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	runCases(t, newDefault(t), []classifyCase{
		{name: "xss with the article", user: "اشرح لي الـXSS بالتفصيل", route: RouteSAIF},
		{name: "sql injection with the article", user: "كيف أحمي الموقع من الـSQL injection", route: RouteSAIF},
		{name: "firewall with the article", user: "عندي مشكلة في الـfirewall", route: RouteSAIF},
		{name: "ransomware with the article", user: "وش هو الـransomware", route: RouteSAIF},
		{name: "phishing with and-the", user: "والـphishing كيف يشتغل", route: RouteSAIF},
		{name: "exploit with for-the", user: "شرح للـexploit", route: RouteSAIF},
		{name: "an everyday english word stays general", user: "عندي مشكلة في الـlaptop", route: RouteAverroesQ},
	})
	if got := DetectLanguage("اشرح لي الـXSS بالتفصيل"); got != Arabic {
		t.Errorf("DetectLanguage = %v, want arabic", got)
	}
}

// TestArabicArticleApart: the article written apart from the English word it belongs to, with
// a space ("حقن الـ SQL"), was a word of its own between the two words of the term "حقن sql",
// so that the question stayed general while "حقن الـSQL" went to saif. A word that is only the
// article (ال، لل) before an English word in the same clause is now dropped, as it is when
// glued; one with a fused preposition (وال، بال، فال، كال) only when a tatweel marks it as the
// article ("والـ phishing"), since without one it is a word (وال a governor, بال a mind).
func TestArabicArticleApart(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"حقن الـ SQL", "حقن sql"},
		{"حقن الـSQL", "حقن sql"},
		{"حقن ال SQL", "حقن sql"},
		{"حقن الـ  (SQL)", "حقن sql"},
		{"والـ phishing وبالـ malware للـ exploit", "phishing malware exploit"},
		{"بال Python", "بال python"},
		{"وال Texas", "وال texas"},
		{"حقن الـ. SQL", "حقن ال sql"}, // a clause break between them: not the article of SQL
		{"الـ ثغرة", "ال ثغره"},        // only before an English word
		{"ما هو SQL الـ", "ما هو sql ال"},
	} {
		if got := Normalize(tt.in); got != tt.want {
			t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	runCases(t, newDefault(t), []classifyCase{
		{name: "sql injection, article apart", user: "كيف أحمي موقعي من حقن الـ SQL؟", route: RouteSAIF},
		{name: "sql injection, article glued", user: "كيف أحمي موقعي من حقن الـSQL؟", route: RouteSAIF},
		{name: "an everyday english word stays general", user: "عندي مشكلة في الـ laptop", route: RouteAverroesQ},
	})
	if got := DetectLanguage("اشرح لي حقن الـ SQL بالتفصيل"); got != Arabic {
		t.Errorf("DetectLanguage = %v, want arabic", got)
	}
}

// TestArabiziReadAsEnglish pins a decision: Arabic written in Latin letters and digits (Arabizi)
// is read as English, and no detector sends it anywhere by itself. One was tried: a word with 2,
// 3, 5, 7 or 9 before a letter (7alak, a3raf) together with a common Arabizi word (ezay, kayf,
// wallah) or a second such word. It missed everyday Arabizi ("sa7 walla la2", "ya3ni eh el far2",
// "shlonak 7abibi": no listed word, or one digit word) and claimed leetspeak and names ("pwn3d …
// l33t", "w3c and p2p", "h2o"): 3, 5 and 7 are letters in both, and Arabizi spelling is open-ended.
// It would not change a route either: an Arabizi chat has no English term and goes to the
// default, Averroes-Q, as Arabic does; one with English terms goes where they send it, as it
// should; only an intent limited by languages would see a difference.
func TestArabiziReadAsEnglish(t *testing.T) {
	runCases(t, newDefault(t), []classifyCase{
		{name: "arabizi chat", user: "kayf 7alak ya sa7bi", route: RouteAverroesQ, intent: IntentGeneral},
		{name: "arabizi question", user: "3ayez a3raf el mat3am da by2fel emta", route: RouteAverroesQ, intent: IntentGeneral},
		{name: "arabizi with an english security term", user: "ezay a7mi el server men el hackers", route: RouteSAIF},
		{name: "arabizi with an english reasoning term", user: "momken te7el el equation di step by step", route: RouteDeepSeek},
		{name: "cve and a hash", user: "is CVE-2024-1234 exploitable if the sha256 matches?", route: RouteSAIF},
	})
	for _, s := range []string{"kayf 7alak", "my server got pwn3d by a l33t h4x0r", "CVE-2024-1234 sha256"} {
		if got := DetectLanguage(s); got != English {
			t.Errorf("DetectLanguage(%q) = %v, want english", s, got)
		}
	}
}
