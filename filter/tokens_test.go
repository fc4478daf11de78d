package filter_test

import (
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/filter"
)

// The pre-tokenizers below model the split regexes of real tokenizers closely enough to check the
// bound: each pre-token is at least one token. Go's regexp has no look-ahead, so `\s+(?!\S)` is
// left out (it only moves one space between whitespace pre-tokens), and `\s` is spelled out as
// Unicode White_Space because Go's `\s` is ASCII only.
const ws = `\t\n\v\f\r \x{85}\p{Z}`

var (
	// cl100k_base; Llama 3 uses the same regex, Qwen 2/3 the same with single digits.
	cl100k = regexp.MustCompile(`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\pL\pN]?\pL+|\pN{1,3}| ?[^` + ws +
		`\pL\pN]+[\r\n]*|[` + ws + `]*[\r\n]+|[` + ws + `]+`)
	// o200k_base; Mistral's Tekken is the same without contractions and with single digits.
	o200k = regexp.MustCompile(`[^\r\n\pL\pN]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\pM]*[\p{Ll}\p{Lm}\p{Lo}\pM]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|[^\r\n\pL\pN]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\pM]+[\p{Ll}\p{Lm}\p{Lo}\pM]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|\pN{1,3}| ?[^` + ws + `\pL\pN]+[\r\n/]*|[` + ws + `]*[\r\n]+|[` + ws + `]+`)
	// DeepSeek V3: three isolating splits in sequence.
	deepseek = []*regexp.Regexp{
		regexp.MustCompile(`\pN{1,3}`),
		regexp.MustCompile(`[\x{4e00}-\x{9fa5}\x{3040}-\x{309f}\x{30a0}-\x{30ff}]+`),
		regexp.MustCompile("[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+" +
			`|[^\r\n\pL\pP\pS]?[\pL\pM]+| ?[\pP\pS]+[\r\n]*|[` + ws + `]*[\r\n]+|[` + ws + `]+`),
	}
)

// isolate splits s like a Hugging Face Split with behavior "Isolated": matches and the gaps
// between them are all pieces.
func isolate(re *regexp.Regexp, s string) []string {
	var out []string
	last := 0
	for _, m := range re.FindAllStringIndex(s, -1) {
		if m[0] > last {
			out = append(out, s[last:m[0]])
		}
		out = append(out, s[m[0]:m[1]])
		last = m[1]
	}
	if last < len(s) {
		out = append(out, s[last:])
	}
	return out
}

type pretokenizer struct {
	name  string
	count func(string) int
}

var pretokenizers = []pretokenizer{
	{"cl100k", func(s string) int { return len(isolate(cl100k, s)) }},
	{"o200k", func(s string) int { return len(isolate(o200k, s)) }},
	{"deepseek-v3", func(s string) int {
		pieces := []string{s}
		for _, re := range deepseek {
			var next []string
			for _, p := range pieces {
				next = append(next, isolate(re, p)...)
			}
			pieces = next
		}
		return len(pieces)
	}},
}

func jsonString(s string) json.RawMessage {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return b
}

func bound(s string) int {
	return filter.PromptTokensMin([]core.Message{{Role: "user", Content: jsonString(s)}})
}

// checkBound fails when the bound of text exceeds any model's pre-token count.
func checkBound(t *testing.T, text string) {
	t.Helper()
	got := bound(text)
	for _, p := range pretokenizers {
		if want := p.count(text); got > want {
			t.Errorf("PromptTokensMin(%+q) = %d > %d %s pre-tokens", text, got, want, p.name)
		}
	}
}

var realTexts = []string{
	"The quick brown fox jumps over the lazy dog. It wasn't the dog's fault, was it?",
	"Hello, world!\n\nThis is a multi-line\tmessage with  double  spaces and trailing spaces   \n",
	"مرحبا بالعالم. كَتَبَ الطَّالِبُ الدَّرْسَ فِي ١٢ دقيقة، والسعر ٣٤٥٫٦٧ ريال.",
	"机器学习是人工智能的一个分支。東京は日本の首都です。한국어 문장도 있습니다.",
	"नमस्ते दुनिया, यह एक परीक्षण है। สวัสดีครับ ภาษาไทย",
	"Привет, мир! Это тест — с тире и «кавычками». Ελληνικά: γειά σου κόσμε;",
	"func main() {\n\tfmt.Println(\"hi\")\n\tx := map[string]int{\"a\": 1, \"b\": 22}\n\tfor i := 0; i < 10; i++ {\n\t\tx[\"k\"+strconv.Itoa(i)] = i * 1000\n\t}\n}\n",
	"def f(x: int) -> list[int]:\n    return [i**2 for i in range(x) if i % 3 == 0]  # comment\n",
	"/* block comment */\n// line comment\n/// doc comment\n*/\n//\n/\n/x\n.\n//\n",
	"a.\n/\n/\n//\nb\r\n/c\n\n//d",
	`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0.7,"max_tokens":1024,"n":null}`,
	"key: value\nlist:\n  - one\n  - 2\n  - 3.5\nnested: {a: [1, 2], b: 'str'}\n",
	"3.14159265358979323846 1,234,567.89 -0.000001 1e-10 0xDEADBEEF 0b1010 2024-01-15T10:30:00Z +1 (555) 123-4567",
	"https://example.com/path/to/page?query=1&x=y#frag http://a.b/c /usr/local/bin:/usr/bin ./relative/path ../up C:\\Windows\\System32",
	"user@example.com @mention #hashtag $100 50% 3/4 ½ ² ³ Ⅻ ⅷ ① ⑩",
	"Emoji 😀😃 👍🏽 👨‍👩‍👧‍👦 🇺🇸🇫🇷 ❤️ ✔️ 1️⃣ #️⃣ a😀b 😀a 🙏🏻thanks",
	"| col1 | col2 |\n|------|------|\n| 1    | two  |\n\n```go\nx := 1\n```\n> quote\n* bullet\n1. item",
	"$$\\int_0^\\infty e^{-x^2}\\,dx = \\frac{\\sqrt{\\pi}}{2}$$ and \\(a^2+b^2=c^2\\)",
	"--- a/file.go\n+++ b/file.go\n@@ -1,3 +1,4 @@\n-old line\n+new line\n context",
	"SGVsbG8gV29ybGQhIFRoaXMgaXMgYmFzZTY0Lg== aGk= ZXhhbXBsZQ",
	"don't won't I'm you're we've they'll he'd DON'T O'Brien rock'n'roll 'quoted' ''double''",
	"CamelCaseIdentifier snake_case_name SCREAMING_CASE kebab-case-name mixedCASEWords iPhone eBay",
	"nbsp\u00a0here em\u2003space ideographic\u3000space nel\u0085line ls\u2028ps\u2029 zwsp\u200bzwj\u200dbom\ufeffshy\u00ad",
	"cafe\u0301 e\u0301\u0301 \u0301\u0301 x\u0301.y\u0301 .\u0301. a.\u0301.b",
	"\x00\x01\x1c\x1d\x1e\x1f\x7f control chars a\x1cb .\x1c. 1\x1f2",
	"....!!!???,,,;;; ... --- === *** ### ''' \"\"\" ``` ~~~ ^^^",
	"12345678901234567890 1 12 123 1234 12345 123456 ١٢٣٤٥ 1٢3٤5 ²³¹ 1²",
	"",
	"   ",
	"\n\n\n",
	"a",
	"/",
	"\n/",
	"'",
	"\u0301",
}

func TestPromptTokensMinIsLowerBound(t *testing.T) {
	for _, text := range realTexts {
		checkBound(t, text)
	}
}

// atoms are the pieces random texts are built from; they are chosen to meet at awkward places.
var atoms = []string{
	"a", "Z", "word", "The", "HTTP", "camelCase", "é", "ß", "ك", "كَتَبَ", "中文", "ひらがな", "カタ", "한", "नमस्ते", "Ω", "ǅ", "ʰ",
	"0", "7", "42", "123", "2024", "99999", "٣", "١٢", "²", "½", "Ⅻ", "①",
	".", ",", "!", "?", ";", ":", "-", "_", "(", ")", "[", "]", "{", "}", "\"", "`", "'", "'s", "'t", "'ll",
	"/", "//", "\\", "*", "+", "=", "<", ">", "&", "|", "@", "#", "$", "%", "^", "~", "…", "—", "«", "»", "“", "”", "’",
	" ", "  ", "\t", "\n", "\r\n", "\n\n", "\v", "\f", "\u00a0", "\u2003", "\u3000", "\u0085", "\u2028",
	"\u0301", "\u064e", "\u093e", "\ufe0f", "\u20e3", "\u200b", "\u200d", "\u00ad", "\ufeff", "\u180e", "\x1c", "\x00", "\x7f",
	"😀", "👍🏽", "👨‍👩‍👧", "🇺🇸", "❤️", "\U0001F3FB", "\U000E0001", "\uE000", "\uFFFD",
}

func randomText(r *rand.Rand) string {
	var b strings.Builder
	for range r.IntN(40) {
		b.WriteString(atoms[r.IntN(len(atoms))])
	}
	return b.String()
}

func TestPromptTokensMinIsLowerBoundRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 4000 / raceScale {
		checkBound(t, randomText(r))
		if t.Failed() {
			return
		}
	}
}

// TestPromptTokensMinParts checks the per-boundary allowance: however a server joins the text
// parts of one message, the bound holds.
func TestPromptTokensMinParts(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 1500 / raceScale {
		texts := make([]string, 1+r.IntN(4))
		parts := make([]map[string]any, len(texts))
		for i := range texts {
			texts[i] = randomText(r)
			parts[i] = map[string]any{"type": "text", "text": texts[i]}
		}
		content, err := json.Marshal(parts)
		if err != nil {
			t.Fatal(err)
		}
		got := filter.PromptTokensMin([]core.Message{{Role: "user", Content: content}})
		for _, sep := range []string{"", "\n", " ", "\n\n"} {
			joined := strings.Join(texts, sep)
			for _, p := range pretokenizers {
				if want := p.count(joined); got > want {
					t.Fatalf("parts %+q joined with %+q: PromptTokensMin = %d > %d %s pre-tokens", texts, sep, got, want, p.name)
				}
			}
		}
	}
}

func FuzzPromptTokensMin(f *testing.F) {
	for _, s := range realTexts {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// Content reaches the filter as JSON, which turns invalid UTF-8 into U+FFFD.
		s = strings.ToValidUTF8(s, "\uFFFD")
		checkBound(t, s)
	})
}

// TestPromptTokensMinValues pins the count on a few texts, so that a change that loosens the
// bound (or breaks the JSON handling) shows up; the cl100k pre-token count is noted for scale.
func TestPromptTokensMinValues(t *testing.T) {
	cases := []struct {
		name string
		msgs []core.Message
		want int
	}{
		{"no messages", nil, 0},
		{"prose", []core.Message{{Role: "user", Content: jsonString("Hello, world.")}}, 4},       // Hello , ␣world .
		{"json", []core.Message{{Role: "user", Content: jsonString(`{"key":"value"}`)}}, 5},      // {" key ":" value "}
		{"call", []core.Message{{Role: "user", Content: jsonString("foo(bar)")}}, 3},             // foo (bar )
		{"digits by three", []core.Message{{Role: "user", Content: jsonString("1234567")}}, 3},   // 123 456 7
		{"date", []core.Message{{Role: "user", Content: jsonString("2024-01-15")}}, 6},           // 202 4 - 01 - 15
		{"contraction", []core.Message{{Role: "user", Content: jsonString("don't")}}, 1},         // o200k keeps it whole
		{"marks join letters", []core.Message{{Role: "user", Content: jsonString("كَتَبَ")}}, 1}, //
		{"whitespace only", []core.Message{{Role: "user", Content: jsonString(" \n\t\u00a0 ")}}, 0},
		{"slashes after a newline", []core.Message{{Role: "user", Content: jsonString("x.\n//\ny")}}, 3},
		{"slashes after a space", []core.Message{{Role: "user", Content: jsonString("x. //")}}, 3},
		{"messages add up", []core.Message{
			{Role: "system", Content: jsonString("be brief")},
			{Role: "user", Content: jsonString("hi there")},
		}, 4},
		{"null content", []core.Message{{Role: "assistant", Content: json.RawMessage("null")}}, 0},
		{"absent content", []core.Message{{Role: "assistant"}}, 0},
		{"invalid json", []core.Message{{Role: "user", Content: json.RawMessage(`"unterminated`)}}, 0},
		{"number content", []core.Message{{Role: "user", Content: json.RawMessage(`12345`)}}, 0},
		{"escapes are decoded", []core.Message{{Role: "user", Content: json.RawMessage(`"a\nb\u0020c"`)}}, 3},
		{"parts: text counts, images do not, one off per boundary", []core.Message{{Role: "user", Content: json.RawMessage(
			`[{"type":"text","text":"one two three"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},{"type":"text","text":"four five"}]`)}}, 4},
		{"parts: other types ignored", []core.Message{{Role: "user", Content: json.RawMessage(
			`[{"type":"input_audio","text":"not counted"},{"type":"text","text":"counted"}]`)}}, 1},
		{"parts: empty", []core.Message{{Role: "user", Content: json.RawMessage(`[]`)}}, 0},
		{"assistant reasoning is dropped", []core.Message{{Role: "assistant", Content: jsonString(
			"<think>a long chain of thought here</think>\n\nThe answer")}}, 2},
		{"assistant reasoning across parts", []core.Message{{Role: "assistant", Content: json.RawMessage(
			`[{"type":"text","text":"<think>lots of words"},{"type":"text","text":"more words</think>done"},{"type":"text","text":"and more"}]`)}}, 2},
		{"user text keeps what is outside tags", []core.Message{{Role: "user", Content: jsonString("<think>x</think>")}}, 1}, // <think> x </think>: Qwen 3 has both tags as added tokens
		{"brackets with no tag shape count", []core.Message{{Role: "user", Content: jsonString(`[1,2] <a b> f(x)>0`)}}, 12},  // [ 1 , 2 ] ␣< a ␣b > ␣f (x )> 0 (cl100k: 13)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := filter.PromptTokensMin(tc.msgs); got != tc.want {
				t.Errorf("PromptTokensMin = %d, want %d", got, tc.want)
			}
		})
	}
}

func BenchmarkPromptTokensMin(b *testing.B) {
	msgs := make([]core.Message, len(realTexts))
	for i, s := range realTexts {
		msgs[i] = core.Message{Role: "user", Content: jsonString(s)}
	}
	b.ReportAllocs()
	for b.Loop() {
		filter.PromptTokensMin(msgs)
	}
}

// BenchmarkPromptTokensMinScripts is the bound of one user message of 64 KiB of prose in one
// script: a long prompt (a document pasted in, a retrieved context) counted because the route
// has a target whose window it may overflow.
func BenchmarkPromptTokensMinScripts(b *testing.B) {
	for _, c := range []struct{ name, prose string }{
		{"english", "I am preparing a short talk for my team about how we ship our web application. "},
		{"arabic", "بعد ذلك أريد أن أشرح الفرق بين الطريقتين بطريقة بسيطة للزملاء الجدد. "},
		{"chinese", "我正在为我的团队准备一个关于我们如何发布网络应用程序的简短演讲。"},
	} {
		msgs := []core.Message{{Role: "user", Content: jsonString(strings.Repeat(c.prose, 64<<10/len(c.prose)))}}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(64 << 10)
			for b.Loop() {
				filter.PromptTokensMin(msgs)
			}
		})
	}
}
