package filter

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/jsonx"
	"github.com/hayula/gateway/internal/utf8x"
)

// PromptTokensMin returns a lower bound of the prompt's tokens for the given messages: the
// Context filter removes a target only when a request certainly does not fit, so this must never
// exceed what the upstream's tokenizer counts. It counts only message text (string content and
// the "text" of parts of type "text"; images, names, tool calls and the chat template count 0),
// and of that only what every template renders (see below).
//
// # Why it is a lower bound
//
// Every tokenizer it is argued for cuts text into pre-tokens with a split regex before BPE,
// and BPE never merges across pre-tokens, so each pre-token is at least one token. The
// tokenizers are GPT cl100k and o200k, Llama 3, Qwen 2/2.5/3, DeepSeek V3/R1 and Mistral's
// Tekken. Their regexes share these properties, which the count relies on and nothing else:
//
//  1. A pre-token holds at most one run of non-whitespace characters, save that o200k and Tekken
//     let a punctuation pre-token run on over newlines into slashes (`[\r\n/]*`).
//  2. A pre-token holding a number character (\p{N}) holds only 1 to 3 of them (Qwen and Tekken:
//     1; DeepSeek isolates \p{N}{1,3} before anything else).
//  3. A pre-token holding a letter (\p{L}) holds at most one other character before its letters
//     (an optional "prefix", e.g. " word", ".com", "(x"), nothing but letters, marks (\p{M}) and
//     the ASCII apostrophe of o200k's contractions ("don't") between and after them, and no
//     number.
//
// The text is cut at ASCII whitespace, which all of them treat as whitespace, into fields, and a
// field is cut at number characters into stretches. Then each of these needs its own pre-token:
//
//   - every 3 number characters of a run, rounded up (2);
//   - every run of letters not interrupted by punctuation (3: a pre-token cannot hold letters on
//     both sides of a punctuation character);
//   - punctuation after a stretch's last letter (3: it cannot join any letter's pre-token);
//   - two or more punctuation characters before a stretch's first letter or between two letter
//     runs (3: at most one of them is the next letters' prefix);
//   - a stretch with no letters that holds punctuation, a mark or an apostrophe.
//
// "Punctuation" is any character that is none of the above, nor whitespace by anyone's
// definition: characters some tokenizer may treat as whitespace (Unicode White_Space other than
// ASCII, U+001C–U+001F, U+180E, U+200B, U+2060, U+FEFF) count as nothing and cut nothing, and so
// do marks and the apostrophe inside a stretch. Slashes that open a field after newlines only,
// or open the text, count as nothing (the exception in 1). Characters are classified with Go's
// Unicode tables.
//
// Parts of one message are counted apart and one token is taken off per boundary between them,
// because a server may join them with nothing between, which can merge at most one pre-token
// across each boundary. In assistant messages only the text after the last "</think>" counts
// (of the text parts joined with nothing between, where one may be cut across parts): the chat
// templates of reasoning models drop earlier reasoning from the history.
//
// The whitespace-field count alone (each field at least one token) is not a bound for o200k and
// Tekken, because of the slash exception: ".\n/" is one pre-token there.
//
// # Added tokens
//
// Before the split regex, Hugging Face tokenizers (vLLM, SGLang) and llama.cpp (Ollama,
// llama-server) cut the rendered prompt at the spellings of the vocabulary's added tokens, user
// text included, and each is one token: "<|im_end|>" in a user message is Qwen's token 151645,
// not the four pre-tokens its characters would be, and "<|reserved_special_token_250|>" is one
// Llama 3 token, not seven (TestPromptTokensMinAddedTokens, TestContextKeepsAddedTokenText). The
// added tokens of these tokenizers (Llama 3 "<|…|>", Qwen "<|…|>" "<think>" "</tool_call>",
// DeepSeek "<｜…｜>", Tekken "[INST]" "[/AVAILABLE_TOOLS]" "<SPECIAL_n>", o200k_harmony "<|…|>")
// open with '<' or '[', close with '>' or ']', and hold neither of those four, nor whitespace,
// nor any of `"',;(){}=`. So a span from an opener to the next closer holding none of those
// counts nothing: it is deleted, and the text around it counted as if joined. Each real added
// token lies inside a deleted span; deleting a stretch without whitespace from a text never raises
// its count, and joining two texts raises nothing by more than the one token of the added token
// that stood between them. A part that follows another is taken to begin inside an added token
// until its first whitespace or closer, and one that precedes another to end inside one from its
// last unclosed opener (the whole part, when it never closes or cuts), since parts may be joined
// with nothing between (TestPromptTokensMinPartsAddedTokens). A vocabulary with added tokens of
// another shape is outside this argument.
//
// # What the template leaves out
//
// Only text the chat template certainly renders counts. Llama 3.1's template (and Ollama's
// llama3.1 and nemotron) renders an assistant message with tool calls as the calls alone, so its
// content counts nothing; Mistral Nemo's renders the system prompt only inside the last message
// when that is the user's, so system messages count only then; Qwen 2.5's renders no role it does
// not know, so only user, assistant, tool and system messages count (not "developer" or
// "function") (TestPromptTokensMinTemplateDrops). User and tool messages are rendered by every
// template with those roles.
//
// SentencePiece vocabularies (Mistral v1–v3, Llama 2) are outside this argument: they have no
// split regex, and whether their pieces respect whitespace, digits and scripts depends on
// training options that are not visible from here.
func PromptTokensMin(msgs []core.Message) int {
	lastUser := len(msgs) > 0 && msgs[len(msgs)-1].Role == "user"
	total := 0
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case "user", "tool":
		case "assistant":
			if core.NonEmptyArray(m.ToolCalls) {
				continue
			}
		case "system":
			if !lastUser {
				continue
			}
		default:
			continue
		}
		total += messageTokensMin(m)
	}
	return total
}

// contentPart is the part of an OpenAI content part that matters here.
type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

const thinkEnd = "</think>"

func messageTokensMin(m *core.Message) int {
	c := bytes.TrimSpace(m.Content)
	if len(c) == 0 {
		return 0
	}
	assistant := m.Role == "assistant"
	switch c[0] {
	case '"':
		if n, ok := rawTextTokensMin(c, assistant); ok {
			return n
		}
		var s string
		if json.Unmarshal(c, &s) != nil {
			return 0
		}
		if assistant {
			s = afterThink(s)
		}
		return textTokensMin(s)
	case '[':
		var parts []contentPart
		if json.Unmarshal(c, &parts) != nil {
			return 0
		}
		texts := parts[:0]
		for _, p := range parts {
			if p.Type == "text" {
				texts = append(texts, p)
			}
		}
		if assistant {
			texts = afterThinkParts(texts)
		}
		if len(texts) == 0 {
			return 0
		}
		n := 1 - len(texts)
		for i, p := range texts {
			n += partTokensMin(p.Text, i > 0, i < len(texts)-1)
		}
		return max(n, 0)
	}
	return 0
}

// afterThinkParts is texts from just after the last "</think>" of their join with nothing between:
// a server may join them so, and a "</think>" cut across parts is then one, after which alone the
// template renders (TestPromptTokensMinThinkEndAcrossParts). Cut later than a "</think>" whole
// inside a part, as one joining them with a newline has, it counts less, and so bounds that too.
func afterThinkParts(texts []contentPart) []contentPart {
	if !slices.ContainsFunc(texts, func(p contentPart) bool { return strings.IndexByte(p.Text, '>') >= 0 }) {
		return texts // no "</think>" can end anywhere
	}
	var b strings.Builder
	for _, p := range texts {
		b.WriteString(p.Text)
	}
	i := strings.LastIndex(b.String(), thinkEnd)
	if i < 0 {
		return texts
	}
	end, off := i+len(thinkEnd), 0
	for j, p := range texts {
		if end <= off+len(p.Text) {
			texts = texts[j:]
			texts[0].Text = p.Text[end-off:]
			break
		}
		off += len(p.Text)
	}
	return texts
}

func afterThink(s string) string {
	if i := strings.LastIndex(s, thinkEnd); i >= 0 {
		return s[i+len(thinkEnd):]
	}
	return s
}

// class is what a character is for the bound.
type class uint8

const (
	classSpace      class = iota // ASCII whitespace but \r \n: cuts fields
	classNewline                 // \r \n: cuts fields; after only these, leading slashes may be absorbed
	classNumber                  // \p{N}
	classLetter                  // \p{L}
	classJoiner                  // marks and the ASCII apostrophe: content that cuts no letter run
	classMaybeSpace              // whitespace to some tokenizers: counts nothing, cuts nothing
	classSlash                   // punctuation, unless absorbed
	classPunct                   // everything else
)

// classTable holds the class of every rune below U+0800 (ASCII, Latin, Greek, Cyrillic, Hebrew,
// Arabic…) as a digit, so that the common scripts cost an index instead of the unicode package's
// range searches. It is a constant: TestClassTable checks every entry against classifyRune.
const classTable = "" +
	"7777777770100177777777777777555507777774777777762222222222777777" +
	"7333333333333333333333333337777773333333333333333333333333377777" +
	"7777757777777777777777777777777757777777773777777722737772372227" +
	"3333333333333333333333373333333333333333333333333333333733333333" +
	"3333333333333333333333333333333333333333333333333333333333333333" +
	"3333333333333333333333333333333333333333333333333333333333333333" +
	"3333333333333333333333333333333333333333333333333333333333333333" +
	"3333333333333333333333333333333333333333333333333333333333333333" +
	"3333333333333333333333333333333333333333333333333333333333333333" +
	"3333333333333333333333333333333333333333333333333333333333333333" +
	"3333333333333333333333333333333333333333333333333333333333333333" +
	"3377773333333333337777777777777733333777777737377777777777777777" +
	"4444444444444444444444444444444444444444444444444444444444444444" +
	"4444444444444444444444444444444444444444444444443333373377333373" +
	"7777773733373733333333333333333333733333333333333333333333333333" +
	"3333333333333333333333333333333333333333333333333333337333333333" +
	"3333333333333333333333333333333333333333333333333333333333333333" +
	"3333333333333333333333333333333333333333333333333333333333333333" +
	"3374444444333333333333333333333333333333333333333333333333333333" +
	"3333333333333333333333333333333333333333333333333333333333333333" +
	"3333333333333333333333333333333333333333333333337333333333333333" +
	"3333333333333333333333377377777733333333333333333333333333333333" +
	"3333333337777777744444444444444444444444444444444444444444444474" +
	"7447447477777777333333333333333333333333333777733337777777777777" +
	"7777777777777777444444444447777733333333333333333333333333333333" +
	"3333333333344444444444444444444422222222227777334333333333333333" +
	"3333333333333333333333333333333333333333333333333333333333333333" +
	"3333333333333333333373444444477444444334474444332222222222333773" +
	"7777777777777777343333333333333333333333333333334444444444444444" +
	"4444444444477333333333333333333333333333333333333333333333333333" +
	"3333333333333333333333333333333333333344444444444377777777777777" +
	"2222222222333333333333333333333333333333333444444444337777377477"

func classify(r rune) class {
	if uint32(r) < uint32(len(classTable)) {
		return class(classTable[r] - '0')
	}
	return classifyRune(r)
}

// classifyRune is the definition the table is checked against; classify uses it above the table.
func classifyRune(r rune) class {
	if r < 0x80 {
		switch {
		case r == ' ' || r == '\t' || r == '\v' || r == '\f':
			return classSpace
		case r == '\n' || r == '\r':
			return classNewline
		case r >= '0' && r <= '9':
			return classNumber
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
			return classLetter
		case r == '\'':
			return classJoiner
		case r == '/':
			return classSlash
		case r >= 0x1c && r <= 0x1f:
			return classMaybeSpace
		}
		return classPunct
	}
	switch {
	case unicode.IsSpace(r), r == 0x180e, r == 0x200b, r == 0x2060, r == 0xfeff:
		return classMaybeSpace
	case unicode.IsLetter(r):
		return classLetter
	case unicode.IsNumber(r):
		return classNumber
	case unicode.IsMark(r):
		return classJoiner
	}
	return classPunct
}

// counter walks one text; see PromptTokensMin for what each count stands for.
type counter struct {
	tally
	// span is where the current candidate added token began (see PromptTokensMin): spanNone, or
	// the state before it in saved. A closer restores saved, so the span counts nothing.
	span  spanKind
	saved tally
}

type spanKind uint8

const (
	spanNone   spanKind = iota
	spanOpener          // from a '<' or '['
	spanStart           // from the start of a part that follows another
)

// tally is the count and the state it depends on.
type tally struct {
	n       int
	numbers int  // length of the current run of number characters
	letters bool // the current stretch has a letter
	punct   int  // punctuation since the stretch's last letter, or since it began
	content bool // the current stretch has a non-letter character that needs a pre-token
	inSpace bool
	lfOnly  bool // the current whitespace run is only \r and \n
	absorb  bool // a slash here may belong to the previous pre-token
}

func (c *counter) endNumbers() {
	c.n += (c.numbers + 2) / 3
	c.numbers = 0
}

func (c *counter) endStretch() {
	if c.letters {
		if c.punct > 0 {
			c.n++
		}
	} else if c.content {
		c.n++
	}
	c.letters, c.punct, c.content = false, 0, false
}

func textTokensMin(s string) int {
	return partTokensMin(s, false, false)
}

// partTokensMin counts one text part. A part that follows another (afterPart) may begin inside
// an added token that the previous part began, and one that precedes another (beforePart) may
// end inside one, since a server may join parts with nothing between.
func partTokensMin(s string, afterPart, beforePart bool) int {
	// The text may follow a punctuation pre-token of the template or of a previous part.
	c := counter{tally: tally{absorb: true}}
	if afterPart {
		c.span, c.saved = spanStart, c.tally
	}
	textRunes(&c, s)
	if beforePart && c.span != spanNone {
		c.tally = c.saved // the rest may begin an added token, or be the middle of one
	}
	return c.end()
}

// inLetterRun reports whether r is a letter (of the table's scripts, or a Han, kana or Hangul
// letter: utf8x.WideLetter, which TestWideLetters checks against classifyRune) that continues the
// current letter run, where add would change nothing: most characters of prose, so the callers
// skip the call for them.
func (c *counter) inLetterRun(r rune) bool {
	return c.letters && c.punct == 0 && (uint32(r) < uint32(len(classTable)) &&
		classTable[r] == '0'+byte(classLetter) || utf8x.WideLetter(r))
}

// textRunes counts s, text with no escape, quote or control character in it (a string's text, or
// the text between a JSON literal's escapes), as add would rune by rune, and skips what cannot
// change the count: the letters that continue a letter run, eight bytes at a time where they are
// ASCII. Invalid UTF-8 is U+FFFD per byte, as encoding/json's decoding and range make it.
func textRunes[S string | []byte](c *counter, s S) {
	for j := 0; j < len(s); {
		b := s[j]
		if l := b | 0x20; l >= 'a' && l <= 'z' && c.letters && c.punct == 0 {
			if j = skipASCIILetters(s, j); j == len(s) {
				return
			}
			b = s[j]
		}
		switch {
		case b == ' ': // between nearly every two words
			c.space()
			j++
			continue
		case b|0x20 >= 'a' && b|0x20 <= 'z': // the first letter of a word
			c.letter()
			j++
			continue
		}
		r, size := rune(b), 1
		if r >= utf8.RuneSelf {
			if b >= 0xc2 && b < 0xe0 && j+1 < len(s) && s[j+1]&0xc0 == 0x80 {
				// Two bytes (Arabic, Hebrew, Cyrillic, Greek), decoded in place.
				r, size = rune(b&0x1f)<<6|rune(s[j+1]&0x3f), 2
			} else {
				r, size = utf8x.DecodeRune(s[j:])
			}
		}
		j += size
		if !c.inLetterRun(r) {
			c.add(r)
		}
	}
}

// space is add(' '), written out for the most common character of prose
// (TestTextRunesAgreesWithAdd).
func (c *counter) space() {
	c.span = spanNone
	if c.numbers > 0 {
		c.endNumbers()
	}
	c.endStretch()
	c.inSpace, c.lfOnly = true, false
}

// letter is add of an ASCII letter, written out for the first letter of every word
// (TestTextRunesAgreesWithAdd).
func (c *counter) letter() {
	c.inSpace, c.absorb = false, false
	if c.numbers > 0 {
		c.endNumbers()
	}
	if !c.letters || c.punct > 0 {
		c.n++ // a new letter run
		if c.punct >= 2 {
			c.n++
		}
	}
	c.letters, c.punct = true, 0
}

// skipASCIILetters returns the index of the first byte of s from j that is not an ASCII letter,
// or len(s). A word of eight letters is told by two additions: with every byte's 0x20 bit set
// (lower case), a byte is a letter when it is at least 'a' (adding 0x1f sets its high bit) and
// not above 'z' (adding 0x05 does not).
func skipASCIILetters[S string | []byte](s S, j int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; j+8 <= len(s); j += 8 {
		w := s[j : j+8] // one bounds check for the word's eight loads, which become one
		x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		y := x | ones*0x20
		if x&highs != 0 || (y+ones*0x1f)&^(y+ones*0x05)&highs != highs {
			break
		}
	}
	for ; j < len(s); j++ {
		if b := s[j] | 0x20; b < 'a' || b > 'z' {
			break
		}
	}
	return j
}

// rawTextTokensMin is textTokensMin of the JSON string literal q, read in place: a request's
// messages are most of its bytes, and decoding each into a Go string first cost an allocation and
// a copy per message and about a third of the count's time. It reports ok = false, leaving the
// answer to encoding/json, for anything it does not take whole: an invalid literal, a \u escape
// of a surrogate, and an assistant message with escapes (whose "</think>" may be escaped).
func rawTextTokensMin(q []byte, assistant bool) (n int, ok bool) {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return 0, false
	}
	body := q[1 : len(q)-1]
	if assistant {
		// Without escapes the bytes are the text, so "</think>" can be found in them; what is cut
		// off must still be checked, as a literal with a bare quote or a control character is
		// invalid as a whole.
		if bytes.IndexByte(body, '\\') >= 0 || bytes.IndexByte(body, '"') >= 0 || hasControl(body) {
			return 0, false
		}
		if i := bytes.LastIndex(body, []byte(thinkEnd)); i >= 0 {
			body = body[i+len(thinkEnd):]
		}
	}
	c := counter{tally: tally{absorb: true}}
	for len(body) > 0 {
		i := jsonx.TextEnd(body)
		textRunes(&c, body[:i])
		body = body[i:]
		if len(body) == 0 {
			break
		}
		if body[0] != '\\' || len(body) < 2 {
			return 0, false // a control character or a bare quote: not one valid literal
		}
		r, size := unescape(body)
		if size == 0 {
			return 0, false
		}
		c.add(r)
		body = body[size:]
	}
	return c.end(), true
}

func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// unescape decodes the escape at the start of b; size 0 when it is invalid or a surrogate.
func unescape(b []byte) (r rune, size int) {
	switch b[1] {
	case '"', '\\', '/':
		return rune(b[1]), 2
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
		if len(b) < 6 {
			return 0, 0
		}
		for _, h := range b[2:6] {
			var d byte
			switch {
			case h >= '0' && h <= '9':
				d = h - '0'
			case h >= 'a' && h <= 'f':
				d = h - 'a' + 10
			case h >= 'A' && h <= 'F':
				d = h - 'A' + 10
			default:
				return 0, 0
			}
			r = r<<4 | rune(d)
		}
		if utf16.IsSurrogate(r) {
			return 0, 0
		}
		return r, 6
	}
	return 0, 0
}

// add counts one rune, and deletes a candidate added token when its closer comes.
func (c *counter) add(r rune) {
	if r < 0x80 {
		switch r {
		case '<', '[':
			if c.span == spanNone {
				c.span, c.saved = spanOpener, c.tally
			}
		case '>', ']':
			if c.span != spanNone {
				c.tally, c.span = c.saved, spanNone
				return
			}
		case ' ', '\t', '\n', '\r', '\v', '\f', '"', ',', '{', '}', '(', ')', ';', '=':
			c.span = spanNone
		}
	}
	c.count(r)
}

// count counts one rune as text.
func (c *counter) count(r rune) {
	cl := classify(r)
	if cl == classSpace || cl == classNewline {
		c.endNumbers()
		c.endStretch()
		if !c.inSpace {
			c.inSpace, c.lfOnly = true, true
		}
		if cl == classSpace {
			c.lfOnly = false
		}
		return
	}
	if c.inSpace {
		c.inSpace, c.absorb = false, c.lfOnly
	}
	if cl == classSlash && c.absorb {
		return
	}
	c.absorb = false
	if cl == classNumber {
		c.endStretch()
		c.numbers++
		return
	}
	if c.numbers > 0 {
		c.endNumbers()
	}
	switch cl {
	case classLetter:
		if !c.letters || c.punct > 0 {
			c.n++ // a new letter run
			if c.punct >= 2 {
				c.n++
			}
		}
		c.letters, c.punct = true, 0
	case classPunct, classSlash:
		c.punct++
		c.content = true
	case classJoiner:
		c.content = true
	}
}

// end closes the text and returns its count.
func (c *counter) end() int {
	c.endNumbers()
	c.endStretch()
	return c.n
}
