package autoroute

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/hayula/gateway/internal/utf8x"
)

// Language is the script a prompt is written in.
type Language uint8

const (
	// English is any prompt without Arabic words (Latin script, code, or no words at all).
	English Language = iota
	// Arabic is a prompt without Latin words. Acronyms (SQL, PDF), words with digits (Log4Shell)
	// and single letters (x, n) are names or symbols rather than English and count for neither.
	Arabic
	// Mixed is a prompt with words of both scripts, unless one script has fewer than one word in
	// twenty (a long Arabic text with one English word stays Arabic).
	Mixed
)

func (l Language) String() string {
	switch l {
	case Arabic:
		return "arabic"
	case Mixed:
		return "mixed"
	}
	return "english"
}

// MarshalText writes the name, so that explain's JSON says "arabic" rather than 1.
func (l Language) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText reads a name written by MarshalText.
func (l *Language) UnmarshalText(b []byte) error {
	v, ok := ParseLanguage(string(b))
	if !ok {
		return fmt.Errorf("autoroute: unknown language %q", b)
	}
	*l = v
	return nil
}

// ParseLanguage turns "english", "arabic" or "mixed" into a Language.
func ParseLanguage(s string) (Language, bool) {
	switch s {
	case "english":
		return English, true
	case "arabic":
		return Arabic, true
	case "mixed":
		return Mixed, true
	}
	return 0, false
}

// detectLanguage decides from word counts. Code-switching in a chat prompt is usually a few
// English words in an Arabic sentence ("ممكن تشرح لي how does a buffer overflow work"), so any real
// English word makes a prompt mixed; only a lone word in a long text (under 5%) does not.
func detectLanguage(arabicWords, latinWords int) Language {
	switch {
	case arabicWords == 0:
		return English
	case latinWords == 0:
		return Arabic
	}
	total := arabicWords + latinWords
	if latinWords*20 < total {
		return Arabic
	}
	if arabicWords*20 < total {
		return English
	}
	return Mixed
}

// script flags of one word.
const (
	scriptArabic uint8 = 1 << iota
	scriptLatin
	scriptOther
	// scriptName marks a Latin word that is an acronym, has digits or is one letter: it is matched
	// like any word but does not count as English for language detection.
	scriptName
)

// maxWordBytes bounds one word so that a pathological input (a base64 blob) cannot grow the buffer
// without bound; such a word is never a term anyway.
const maxWordBytes = 64

// Flags of the word being built, kept with its script bits in one byte (st in scan).
const (
	stOverlong uint8 = 1 << (iota + 4) // longer than maxWordBytes: dropped
	stLower                            // has a lower-case ASCII letter
	stDigit                            // has a digit
	// stDisguise marks a word drawn wholly in Cyrillic or Greek letters that look like Latin ones
	// ("ХSS" with a Cyrillic Х is mixed; "ХЅЅ" is all lookalikes): it is read as the Latin word it
	// shows, and, like an acronym, counts for neither language.
	stDisguise
)

// The word being built is scan's own locals (w and st) rather than a struct's fields, so that the
// hot word boundaries in scan record a word in line: a call there spilled and reloaded scan's
// live registers on every word (Go has no callee-saved registers). The other boundaries go
// through end, which inlines, and flush.
//
// w is a window of scratch.words that starts where the word starts and has room for at least
// maxWordBytes+8 bytes: a word never outgrows it, so no append moves it.

// addByte appends c to the word, or marks it overlong past maxWordBytes.
func addByte(w []byte, st uint8, c byte) ([]byte, uint8) {
	if len(w) >= maxWordBytes {
		return w, st | stOverlong
	}
	return append(w, c), st
}

// end closes the word being built and returns the space for the next one. Separators often come
// in pairs (", ", ".\n"), and the second finds no word: that case is answered here, inlined,
// rather than by a call to flush.
func (s *scratch) end(w []byte, st uint8) ([]byte, uint8) {
	if len(w) > 0 || st&stOverlong != 0 {
		w = s.flush(w, st)
	}
	return w[:0], 0
}

// flush records the word w (unless it is overlong) and returns the space after it.
func (s *scratch) flush(w []byte, st uint8) []byte {
	if len(w) == 0 || st&stOverlong != 0 {
		return w
	}
	// A trailing apostrophe ("hackers'") is punctuation, not part of the word.
	for len(w) > 0 && w[len(w)-1] == '\'' {
		w = w[:len(w)-1]
	}
	if len(w) == 0 {
		return w
	}
	script := st & (scriptArabic | scriptLatin | scriptOther)
	if script&scriptLatin != 0 && (st&stLower == 0 || st&(stDigit|stDisguise) != 0 || len(w) == 1) {
		script |= scriptName
	}
	s.refs = append(s.refs, wordRef{off: int32(len(s.words) - cap(w)), n: int32(len(w)), script: script, clause: s.clause})
	w = w[len(w):]
	if cap(w) < maxWordBytes+8 {
		w = s.grow(w)
	}
	return w
}

// grow moves the words recorded so far to a buffer twice as large, for a text of many words,
// and returns the space after them.
func (s *scratch) grow(w []byte) []byte {
	used := len(s.words) - cap(w)
	b := make([]byte, 2*len(s.words))
	copy(b, s.words[:used])
	s.words = b
	return b[used:used]
}

// wordRef is one word recorded by scan: words[off:off+n] of its scratch, its script flags and
// its clause.
type wordRef struct {
	off, n, clause int32
	script         uint8
}

// Classes of a byte for scan, indexed by the byte: one load and a jump table instead of a chain
// of range tests, the longest of which (a space) was the most common.
const (
	clsSep    = iota // ends a word
	clsLower         // a-z
	clsUpper         // A-Z
	clsDigit         // 0-9
	clsApos          // '
	clsClause        // . , ; : ! ? and newline: end a word and a clause
	clsHigh          // the first byte of a multi-byte character, or a stray continuation byte
)

// byteClass is the class of each byte value; TestByteClass holds it to the definition above.
const byteClass = "" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x05\x00\x00\x00\x00\x00\x04\x00\x00\x00\x00\x05\x00\x05\x00\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x05\x05\x00\x00\x00\x05" +
	"\x00\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x00\x00\x00\x00\x00" +
	"\x00\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x00\x00\x00\x00\x00" +
	"\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06" +
	"\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06" +
	"\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06" +
	"\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06\x06"

// scan splits s into normalised words and records them in out.refs, each where it was built in
// out.words: the lookups run afterwards in a loop of their own (Classifier.resolve), so that the
// scan makes no call for a word, and spills no register around one, on its hot paths.
func scan(s string, out *scratch) {
	if len(out.words) < 4*(maxWordBytes+8) {
		// Room for an eight-byte store past the longest word kept, and for a few words.
		out.words = make([]byte, 1024)
	}
	if len(s) > longTextBytes {
		// A long text's word records in one allocation rather than a doubling per power of two,
		// of no more than the pool keeps: a longer text (or one of few words) grows them by
		// appending, as before, rather than allocating for words it may not have on every call.
		out.refs = slices.Grow(out.refs, min(len(s)/wordBytes, maxPooledWords))
	}
	w, st := out.words[:0], uint8(0)
	out.noLatin = 0
	for i := 0; i < len(s); {
		c := s[i]
		switch byteClass[c] {
		case clsSep:
			i++
			w, st = out.end(w, st)
			continue
		case clsLower, clsUpper:
			if st&(scriptArabic|scriptLatin) == scriptArabic {
				w, st = out.latinAfterArabic(w, st)
			} else if len(w) == 0 && len(out.refs) > 0 && out.refs[len(out.refs)-1].script == scriptArabic {
				out.articleApart(s, i)
			}
			// A run of ASCII letters, the bulk of English text, is found and lower-cased eight
			// bytes at a time: a byte loop paid a mispredicted exit on every word. Like add, a
			// word keeps at most maxWordBytes (the rest only marks it overlong).
			//
			// A single space followed by a letter (most word boundaries in prose) ends the word
			// and starts the next without going back through the byte-class switch, whose
			// indirect jump was mispredicted at nearly every word.
			j := i
			for {
				for {
					if j+8 > len(s) || len(w)+8 > cap(w) {
						for ; j < len(s) && isASCIILetter(s[j]); j++ {
							if s[j] >= 'a' {
								st |= stLower
							}
							w, st = addByte(w, st, s[j]|0x20)
						}
						break
					}
					x := load64(s, j)
					m := letters64(x)
					run := bits.TrailingZeros64(^m&hiBits) / 8 // letters before the first non-letter
					if run == 0 {
						break
					}
					// Bit 5 (0x20) marks a lower-case letter; shifted to bit 7 it meets m.
					if x<<2&m&(1<<(8*run)-1) != 0 {
						st |= stLower
					}
					l, keep := len(w), run
					if l+keep > maxWordBytes {
						st |= stOverlong
						keep = maxWordBytes - l
					}
					w = w[:l+8]
					binary.LittleEndian.PutUint64(w[l:], x|0x2020202020202020)
					w = w[:l+keep]
					j += run
					if run < 8 {
						break
					}
				}
				i = j
				st |= scriptLatin
				if i+1 < len(s) && s[i] == ' ' && isASCIILetter(s[i+1]) {
					i++
					// flush written out: w ends in a letter, so has no apostrophe to trim.
					if st&stOverlong == 0 {
						script := st & (scriptArabic | scriptLatin | scriptOther)
						if st&stLower == 0 || st&(stDigit|stDisguise) != 0 || len(w) == 1 {
							script |= scriptName
						}
						out.refs = append(out.refs, wordRef{off: int32(len(out.words) - cap(w)), n: int32(len(w)), script: script, clause: out.clause})
						w = w[len(w):]
						if cap(w) < maxWordBytes+8 {
							w = out.grow(w)
						}
					}
					w, st = w[:0], 0
					j = i
					continue
				}
				break
			}
			continue
		case clsDigit:
			i++
			w, st = addByte(w, st, c)
			st |= stDigit
			continue
		case clsApos:
			i++
			// Keep it only inside a word ("don't"), so that negation cues can name it.
			if len(w) > 0 && i < len(s) && isASCIILetter(s[i]) {
				w, st = addByte(w, st, c)
			} else {
				w, st = out.end(w, st)
			}
			continue
		case clsClause:
			i++
			w, st = out.end(w, st)
			out.clauseBreak()
			continue
		}
		if c >= 0xE3 && c <= 0xED {
			// A run of Chinese, Japanese or Korean letters (utf8x.WideLetter: letters without case,
			// which scan's general path would add to a word as they are) is copied as it stands,
			// three bytes a letter, without the unicode package's table searches that the
			// general path below makes for each (TestPlainWide): such text has no term, and
			// its runs, often a whole sentence without a space, are mostly dropped as overlong.
			j := i
			for j+3 <= len(s) && s[j]-0xE3 <= 0xED-0xE3 && s[j+1]&0xC0 == 0x80 && s[j+2]&0xC0 == 0x80 &&
				utf8x.WideLetter(rune(s[j]&0x0F)<<12|rune(s[j+1]&0x3F)<<6|rune(s[j+2]&0x3F)) {
				if len(w)+3 > maxWordBytes {
					st |= stOverlong
				} else {
					w = append(w, s[j], s[j+1], s[j+2])
				}
				j += 3
			}
			if j > i {
				i = j
				st |= scriptOther
				continue
			}
		}
		var r rune
		if c >= 0xC2 && c < 0xE0 && i+1 < len(s) && s[i+1]&0xC0 == 0x80 {
			// Two-byte sequences (all of Arabic) decoded inline: the hot path for Arabic text.
			r = rune(c&0x1F)<<6 | rune(s[i+1]&0x3F)
			i += 2
		} else {
			var size int
			r, size = utf8.DecodeRuneInString(s[i:])
			i += size
		}
		switch {
		case r >= 0x0600 && r <= 0x06FF:
			switch {
			case r >= 0x064B && r <= 0x065F, r == 0x0670, r >= 0x06D6 && r <= 0x06ED, r == 0x0640, r == 0x061C:
				// Diacritics, tatweel and the Arabic letter mark are dropped without ending the
				// word.
			case r >= 0x0660 && r <= 0x0669:
				// A digit, as its ASCII one is: "Log٤Shell" is a name, not an English word
				// (TestArabicIndicDigitsAreDigits).
				w, st = addASCII(w, st, byte('0'+r-0x0660))
			case r >= 0x06F0 && r <= 0x06F9:
				w, st = addASCII(w, st, byte('0'+r-0x06F0))
			case r == 0x060C || r == 0x061B || r == 0x061F || r == 0x06D4:
				w, st = out.end(w, st)
				out.clauseBreak()
			case r >= 0x0621 && r <= 0x064A || r >= 0x0671 && r <= 0x06D3 || r == 0x06D5: // ە, Kurdish's ae, is a letter
				if r >= 'ا' && r <= 'ي' && r != 'ة' && r != 'ى' && r != 0x0640 {
					// The rest of a run of letters that fold to themselves (most of Arabic
					// text) is copied in one step, two bytes a letter; like the slow path
					// below, it keeps whole letters up to maxWordBytes.
					// Four letters at a time where eight bytes can be read and stored, as for
					// ASCII above: the pair loop paid a mispredicted exit on every word and
					// a copy call for the run.
					// As for ASCII, a single space before the next plain letter goes straight on
					// to that word.
					j := i - 2
					for {
						for j+8 <= len(s) && len(w)+8 <= cap(w) {
							x := load64(s, j)
							run := 2 * plainArabic4(x)
							if run == 0 {
								break
							}
							l, keep := len(w), run
							if l+keep > maxWordBytes {
								st |= stOverlong
								keep = (maxWordBytes - l) &^ 1
							}
							w = w[:l+8]
							binary.LittleEndian.PutUint64(w[l:], x)
							w = w[:l+keep]
							j += run
							if run < 8 {
								break
							}
						}
						// The letters that fold to another (أ، ة، ى…) and the diacritics
						// and tatweel inside a word stay in the run too, as the general path
						// below takes them: with a shadda or a hamza in most words, an Arabic
						// text went back through the byte-class switch and the rune switch for
						// each, and began its run again after it.
						for j+1 < len(s) {
							b0, b1 := s[j], s[j+1]
							if !plainArabic(b0, b1) {
								r := rune(b0&0x1F)<<6 | rune(b1&0x3F)
								if b0 < 0xD8 || b0 > 0xD9 || b1&0xC0 != 0x80 || r < 0x0621 || r > 0x065F && r != 0x0670 {
									break
								}
								if r >= 0x064B || r == 0x0640 {
									// A diacritic, the superscript alef or tatweel: dropped.
									j += 2
									continue
								}
								r = foldArabic(r)
								b0, b1 = byte(0xC0|r>>6), byte(0x80|r&0x3F)
							}
							if len(w)+2 > maxWordBytes {
								st |= stOverlong
							} else {
								w = append(w, b0, b1)
							}
							j += 2
						}
						i = j
						st |= scriptArabic
						if i+2 < len(s) && s[i] == ' ' && plainArabic(s[i+1], s[i+2]) {
							i++
							// flush written out, as for ASCII above: w ends in a letter.
							if st&stOverlong == 0 {
								script := st & (scriptArabic | scriptLatin | scriptOther)
								if script&scriptLatin != 0 && (st&stLower == 0 || st&(stDigit|stDisguise) != 0 || len(w) == 1) {
									script |= scriptName
								}
								out.refs = append(out.refs, wordRef{off: int32(len(out.words) - cap(w)), n: int32(len(w)), script: script, clause: out.clause})
								w = w[len(w):]
								if cap(w) < maxWordBytes+8 {
									w = out.grow(w)
								}
							}
							w, st = w[:0], 0
							j = i
							continue
						}
						break
					}
					continue
				}
				r = foldArabic(r)
				if len(w)+2 > maxWordBytes {
					st |= stOverlong
				} else {
					w = append(w, byte(0xC0|r>>6), byte(0x80|r&0x3F))
				}
				st |= scriptArabic
			default:
				w, st = out.end(w, st)
			}
		case r == 0x2019 || r == 0x2018:
			// Typographic apostrophes, as phones type them.
			if len(w) > 0 && i < len(s) && isASCIILetter(s[i]) {
				w, st = addByte(w, st, '\'')
			} else {
				w, st = out.end(w, st)
			}
		case r == 0x2026 || r == 0x3002:
			w, st = out.end(w, st)
			out.clauseBreak()
		case invisible(r):
			// Dropped without ending the word: a zero-width space or joiner, a soft hyphen or a
			// direction mark inside "exp\u200bloit" or "ثغ\u200cرة" shows nothing to a reader
			// and split the word, so that no term matched (TestInvisibleAndConfusable).
		case r >= formsAFirst && r < formsAEnd || r >= formsBFirst && r < formsBEnd:
			// An Arabic letter in its presentation form ("ﺛﻐﺮﺓ", as PDFs give it) is that letter
			// (TestArabicPresentationForms).
			switch letter, lamAlef, keep := presentationForm(r); {
			case !keep:
				w, st = out.end(w, st)
			case lamAlef:
				w, st = addArabic(w, st, 'ل')
				w, st = addArabic(w, st, 'ا')
			case letter != 0:
				w, st = addArabic(w, st, letter)
			}
		case r >= 0xFF10 && r <= 0xFF5A || r >= 0x1D400 && r <= 0x1D7FF:
			// Fullwidth (ｅｘｐｌｏｉｔ) and mathematical (𝐞𝐱𝐩𝐥𝐨𝐢𝐭) letters and digits are Latin ones
			// in another style; anything else in these blocks ends the word.
			if b := styledASCII(r); b != 0 {
				w, st = addASCII(w, st, b)
			} else {
				w, st = out.end(w, st)
			}
		case lookalike(r) != 0 && st&scriptLatin != 0:
			// A Cyrillic or Greek letter that looks like a Latin one, in a word with Latin
			// letters ("\u0435xploit" with a Cyrillic е), is that Latin letter.
			w, st = addASCII(w, st, lookalike(r))
		case lookalike(r) != 0 && i >= out.noLatin:
			w, st = out.addLookalike(w, st, r, s, i)
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			w, st = addOther(w, st, r)
		default:
			w, st = out.end(w, st)
		}
	}
	out.end(w, st)
}

// invisible reports whether r is a format character that renders as nothing: zero-width space,
// non-joiner and joiner, soft hyphen, word joiner, direction marks and embeddings, the byte order
// mark, the Mongolian vowel separator. (The Arabic letter mark, U+061C, is dropped with the
// diacritics.)
func invisible(r rune) bool {
	switch {
	case r == 0x00AD, r == 0x180E, r == 0xFEFF, r == 0x034F:
		return true
	case r >= 0x200B && r <= 0x200F, r >= 0x202A && r <= 0x202E, r >= 0x2060 && r <= 0x2064, r >= 0x2066 && r <= 0x206F:
		return true
	}
	return false
}

// styledASCII maps a fullwidth Latin letter or digit (U+FF10–U+FF5A) or a mathematical
// alphanumeric symbol (U+1D400–U+1D7FF) to its ASCII letter or digit, or 0 (a fullwidth
// punctuation mark, a mathematical Greek letter).
func styledASCII(r rune) byte {
	switch {
	case r >= 0xFF10 && r <= 0xFF19:
		return byte('0' + r - 0xFF10)
	case r >= 0xFF21 && r <= 0xFF3A:
		return byte('A' + r - 0xFF21)
	case r >= 0xFF41 && r <= 0xFF5A:
		return byte('a' + r - 0xFF41)
	case r >= 0x1D400 && r <= 0x1D6A3:
		// Thirteen alphabets (bold, italic, script, fraktur, double-struck, sans-serif,
		// monospace, …) of A–Z then a–z each; the code points left unassigned in them (their
		// letters are in Letterlike Symbols) never occur.
		k := (r - 0x1D400) % 52
		if k < 26 {
			return byte('A' + k)
		}
		return byte('a' + k - 26)
	case r >= 0x1D7CE && r <= 0x1D7FF:
		return byte('0' + (r-0x1D7CE)%10)
	}
	return 0
}

// lookalike is the ASCII letter that the Cyrillic or Greek letter r is drawn like, or 0.
func lookalike(r rune) byte {
	switch r {
	case 'а', 'А', 'α', 'Α':
		return 'a'
	case 'В', 'Β':
		return 'B'
	case 'с', 'С', 'ϲ':
		return 'c'
	case 'ԁ':
		return 'd'
	case 'е', 'Е', 'Ε':
		return 'e'
	case 'һ', 'Н', 'Η':
		return 'h'
	case 'і', 'І', 'ι', 'Ι':
		return 'i'
	case 'ј', 'Ј':
		return 'j'
	case 'К', 'Κ', 'κ':
		return 'k'
	case 'ӏ', 'Ӏ':
		return 'l'
	case 'М', 'Μ':
		return 'M'
	case 'Ν':
		return 'N'
	case 'о', 'О', 'ο', 'Ο':
		return 'o'
	case 'р', 'Р', 'ρ', 'Ρ':
		return 'p'
	case 'ԛ':
		return 'q'
	case 'ѕ', 'Ѕ':
		return 's'
	case 'Т', 'Τ':
		return 'T'
	case 'υ':
		return 'u'
	case 'ν':
		return 'v'
	case 'ԝ':
		return 'w'
	case 'х', 'Х', 'χ', 'Χ':
		return 'x'
	case 'у', 'У', 'Υ':
		return 'y'
	case 'Ζ':
		return 'Z'
	}
	return 0
}

// addLookalike adds r, a Cyrillic or Greek letter drawn like a Latin one (s[i:] follows it), to
// a word that has no Latin letter so far. In a word with a Latin letter ahead it is that Latin
// letter. So it is in a word of nothing but such letters (and digits): "ХЅЅ", "ЕХРӀОІТ" or "с2",
// whose every letter a reader takes for Latin, is a disguise of the Latin word; it is read as
// that word and counts for neither language (stDisguise). A word with any other Cyrillic or Greek
// letter is Russian or Greek and keeps its letters: "сервер", "ιός". Russian words written wholly
// in such letters ("рос", "ехе", "сор") are read as Latin words too, but none of them is a term
// (TestAllLookalikeWords).
func (out *scratch) addLookalike(w []byte, st uint8, r rune, s string, i int) ([]byte, uint8) {
	switch latin, disguise := out.latinAhead(s, i); {
	case latin:
		return addASCII(w, st, lookalike(r))
	case disguise && st&(scriptOther|scriptArabic) == 0:
		return addASCII(w, st|stDisguise, lookalike(r))
	}
	return addOther(w, st, r)
}

// addOther adds r, a letter or digit of a script other than Latin or Arabic, lower-cased.
func addOther(w []byte, st uint8, r rune) ([]byte, uint8) {
	var tmp [utf8.UTFMax]byte
	n := utf8.EncodeRune(tmp[:], unicode.ToLower(r))
	if len(w)+n > maxWordBytes {
		st |= stOverlong
	} else {
		w = append(w, tmp[:n]...)
	}
	return w, st | scriptOther
}

// latinAhead reports whether the word that continues at s[i:] has an ASCII letter, or a styled
// one, before it ends (latin), and, when it has none, whether every letter up to its end is a
// Cyrillic or Greek lookalike (disguise). It looks at most maxWordBytes bytes ahead (a longer
// word is dropped anyway). When it finds no Latin letter, out.noLatin is set to where the look
// ended, so that the word's next lookalikes do not look again: a long run of them costs a look
// per run, not per letter.
func (out *scratch) latinAhead(s string, i int) (latin, disguise bool) {
	disguise = true
	for end := min(len(s), i+maxWordBytes); i < end; {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r < utf8.RuneSelf:
			if isASCIILetter(byte(r)) {
				return true, false
			}
			if byteClass[r] != clsDigit {
				out.noLatin = i
				return false, disguise
			}
		case styledASCII(r) >= 'A':
			return true, false
		case invisible(r):
		case unicode.IsLetter(r):
			if lookalike(r) == 0 {
				disguise = false
			}
		case unicode.IsMark(r):
			// A stress mark or diacritic ends the word in scan, and shows a real word.
			disguise = false
		default:
			out.noLatin = i
			return false, disguise
		}
	}
	out.noLatin = i
	return false, disguise
}

// latinAfterArabic is called when an ASCII letter follows Arabic letters in one word, as Arabic
// writers glue the article or a conjunction to an English word ("الـXSS", "والـphishing",
// "للـexploit": the tatweel is dropped, so the word was "الxss" and matched no term). An Arabic
// part that is only the article and its fused prepositions, or one of و ب ل ف ك, is dropped;
// any other ends as an Arabic word of its own. Either way the English word starts afresh
// (TestArabicGluedToEnglish).
func (s *scratch) latinAfterArabic(w []byte, st uint8) ([]byte, uint8) {
	if st&(scriptOther|stDigit|stOverlong) == 0 {
		switch string(w) {
		case "ال", "وال", "بال", "فال", "كال", "لل", "ولل", "وبال", "و", "ب", "ل", "ف", "ك":
			return w[:0], 0
		}
	}
	return s.end(w, st)
}

// articleApart is called when an English word starts at s[i] right after an Arabic word: it
// drops that word when it is the article written apart from the English word, as some writers
// do ("حقن الـ SQL"), so that it no longer stands between the words of a term ("حقن sql") and
// does not count for the language, as the glued article does not (latinAfterArabic). The bare
// article (ال، لل) is never a word of its own and is always dropped; with a fused preposition
// (وال، بال، فال، كال، ولل، وبال) it is a word (وال a governor, بال a mind) unless a tatweel
// ends it, "والـ phishing". Only spaces and ASCII punctuation that ends no clause may stand
// between the two (TestArabicArticleApart).
func (out *scratch) articleApart(s string, i int) {
	r := out.refs[len(out.refs)-1]
	if r.clause != out.clause || r.n > 8 {
		return
	}
	switch string(out.words[r.off : r.off+r.n]) {
	case "ال", "لل":
	case "وال", "بال", "فال", "كال", "ولل", "وبال":
		j := i
		for j > 0 && s[j-1] < utf8.RuneSelf && byteClass[s[j-1]] == clsSep {
			j--
		}
		if j < 2 || s[j-2] != 0xD9 || s[j-1] != 0x80 { // ـ, U+0640
			return
		}
	default:
		return
	}
	out.refs = out.refs[:len(out.refs)-1]
}

// addASCII adds the ASCII letter or digit b to the word as scan's ASCII paths would.
func addASCII(w []byte, st uint8, b byte) ([]byte, uint8) {
	switch {
	case b >= '0' && b <= '9':
		st |= stDigit
	case b >= 'a':
		st |= stLower | scriptLatin
	default:
		st |= scriptLatin
		b |= 0x20
	}
	return addByte(w, st, b)
}

// addArabic adds the Arabic letter r (U+0621 to U+06D3, or U+06D5) to the word as scan's slow Arabic path
// does: folded, and whole or not at all.
func addArabic(w []byte, st uint8, r rune) ([]byte, uint8) {
	r = foldArabic(r)
	if len(w)+2 > maxWordBytes {
		return w, st | stOverlong | scriptArabic
	}
	return append(w, byte(0xC0|r>>6), byte(0x80|r&0x3F)), st | scriptArabic
}

// plainArabic reports whether b0 b1 is an Arabic letter that normalisation leaves as it is: ا to ي
// except ة، ى and tatweel.
func plainArabic(b0, b1 byte) bool {
	switch b0 {
	case 0xD8:
		return b1 >= 0xA7 && b1 <= 0xBF && b1 != 0xA9
	case 0xD9:
		return b1 >= 0x81 && b1 <= 0x8A && b1 != 0x89
	}
	return false
}

const hiBits = 0x8080808080808080

// plainArabic4 counts the letters at the start of x, four two-byte characters read little-endian,
// for which plainArabic holds. Each test is done in the 16-bit lane of its character, with the
// lane's top bit as the answer: every value tested is below 0x100, so no carry leaves a lane.
//
// It is kept out of line on purpose: inlined, it made scan's loop about 4% slower on
// BenchmarkRoute1KB (measured), most likely from the registers it takes from the ASCII path.
//
//go:noinline
func plainArabic4(x uint64) int {
	const (
		lanes = 0x0001000100010001
		top   = 0x8000 * lanes
		low   = 0x00FF * lanes
	)
	lead, trail := x&low, x>>8&low
	// d8 and d9 set a lane's top bit for any reason the letter is not a plain one of ا..ؿ (D8)
	// or ف..ي (D9): v + (0x8000-a)*lanes has it set where v >= a, v + 0x7FFF*lanes where v != 0.
	// Written as two expressions (no helper closures), it takes fewer instructions.
	d8 := (lead ^ 0xD8*lanes + 0x7FFF*lanes) | ((trail + (0x8000-0xA7)*lanes) ^ top) |
		(trail + (0x8000-0xC0)*lanes) | ((trail ^ 0xA9*lanes + 0x7FFF*lanes) ^ top)
	d9 := (lead ^ 0xD9*lanes + 0x7FFF*lanes) | ((trail + (0x8000-0x81)*lanes) ^ top) |
		(trail + (0x8000-0x8B)*lanes) | ((trail ^ 0x89*lanes + 0x7FFF*lanes) ^ top)
	return bits.TrailingZeros64(d8&d9&top) / 16
}

// load64 reads s[i:i+8] little-endian; the compiler merges the byte loads into one.
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// letters64 sets the top bit of each byte of x that is an ASCII letter and clears every other bit.
func letters64(x uint64) uint64 {
	lo := (x | 0x2020202020202020) & 0x7F7F7F7F7F7F7F7F
	geA := lo + 0x1F1F1F1F1F1F1F1F // top bit set from 'a' (0x61) up
	gtZ := lo + 0x0505050505050505 // top bit set from '{' (0x7B) up
	return geA &^ gtZ &^ x & hiBits
}

func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// foldArabic maps the spelling variants that Arabic writers use interchangeably to one letter.
func foldArabic(r rune) rune {
	// Most letters (ا to و, bar ة) fold to themselves; answer those before the switch.
	if r >= 'ا' && r <= 'و' && r != 'ة' {
		return r
	}
	switch r {
	case 'أ', 'إ', 'آ', 'ٱ', 'ٲ', 'ٳ':
		return 'ا'
	case 'ؤ':
		return 'و'
	case 'ئ', 'ى', 'ی', 'ې':
		return 'ي'
	case 'ة', 'ۃ', 'ۀ', 'ە', 'ہ', 'ۂ', 'ھ':
		// ta marbuta; and heh as Persian (with its hamza of ezafe), Kurdish and Urdu (with
		// its hamza of izafat, ۂ, which ہ followed by a combining hamza reads as already)
		// keyboards write it where an Arabic word has ه or ة.
		return 'ه'
	case 'ک':
		return 'ك'
	}
	return r
}

// Arabic letters after folding are all two bytes in UTF-8, so lengths below are in bytes = 2×letters.

// stemArabic reduces an Arabic word to a light stem by reslicing only, so the caller's bytes stay
// intact for a second attempt. Article: keep at least 2 letters; suffixes: at most two, keeping at
// least 3 letters.
func stemArabic(w []byte) []byte {
	// The article and suffix lists are matched byte by byte rather than by looping over strings:
	// this runs for every Arabic word, up to three times, and the loops dominated it. Order of the
	// original lists ("وال" before "ال", "هما" before "ها", "يه" before "ه") is kept; see
	// TestDecisionsGolden. Letters: ا D8 A7, ل D9 84, و D9 88, ب D8 A8, ك D9 83, ف D9 81,
	// ه D9 87, م D9 85, ت D8 AA, ن D9 86, ي D9 8A.
	if n := len(w); n >= 8 {
		switch {
		case n >= 10 && w[2] == 0xD8 && w[3] == 0xA7 && w[4] == 0xD9 && w[5] == 0x84 &&
			(w[0] == 0xD9 && (w[1] == 0x88 || w[1] == 0x83 || w[1] == 0x81) || w[0] == 0xD8 && w[1] == 0xA8):
			// وال، كال، فال، بال
			w = w[6:]
		case w[2] == 0xD9 && w[3] == 0x84 &&
			(w[0] == 0xD9 && w[1] == 0x84 || w[0] == 0xD8 && w[1] == 0xA7):
			// لل، ال
			w = w[4:]
		}
	}
	for round := 0; round < 2; round++ {
		n := len(w)
		if n <= 6 {
			break
		}
		a, b := w[n-2], w[n-1]
		strip := 0
		switch {
		case a == 0xD8 && b == 0xA7: // ا: هما، ها
			if n >= 12 && w[n-4] == 0xD9 && w[n-3] == 0x85 && w[n-6] == 0xD9 && w[n-5] == 0x87 {
				strip = 6
			} else if n >= 10 && w[n-4] == 0xD9 && w[n-3] == 0x87 {
				strip = 4
			}
		case a == 0xD8 && b == 0xAA: // ت: ات
			if n >= 10 && w[n-4] == 0xD8 && w[n-3] == 0xA7 {
				strip = 4
			}
		case a != 0xD9:
			return w
		case b == 0x86: // ن: ون، ين، ان
			if n >= 10 && (w[n-4] == 0xD9 && (w[n-3] == 0x88 || w[n-3] == 0x8A) || w[n-4] == 0xD8 && w[n-3] == 0xA7) {
				strip = 4
			}
		case b == 0x85: // م: هم
			if n >= 10 && w[n-4] == 0xD9 && w[n-3] == 0x87 {
				strip = 4
			}
		case b == 0x87: // ه: يه، ه
			if n >= 10 && w[n-4] == 0xD9 && w[n-3] == 0x8A {
				strip = 4
			} else if n >= 8 {
				strip = 2
			}
		case b == 0x8A: // ي
			if n >= 8 {
				strip = 2
			}
		default:
			return w
		}
		if strip == 0 {
			break
		}
		w = w[:n-strip]
	}
	return w
}

// clitic reports whether w starts with a one-letter proclitic (و ف ب ل ك) that may be peeled off
// when the whole word is not a known stem.
func clitic(w []byte) bool {
	// Byte by byte rather than by decoding: و D9 88, ف D9 81, ل D9 84, ك D9 83, ب D8 A8.
	if len(w) < 8 {
		return false
	}
	switch w[0] {
	case 0xD9:
		return w[1] == 0x88 || w[1] == 0x81 || w[1] == 0x84 || w[1] == 0x83
	case 0xD8:
		return w[1] == 0xA8
	}
	return false
}

// stemEnglish folds plurals and the possessive, which is all the term lists need; verb forms
// (hack, hacking, hacked) are listed explicitly so that the stemmer cannot over-reach. A final
// consonant+y and a final -ie both become -i, so that "policy"/"policies" and "movie"/"movies" meet.
func stemEnglish(w []byte) []byte {
	// Only a word of four bytes or more ending in s, e or y has anything to fold: that answers most
	// words here, inlined, before the suffix tests.
	if n := len(w); n > 3 {
		if c := w[n-1]; c == 's' || c == 'e' || c == 'y' {
			return stemEnglishSuffix(w)
		}
	}
	return w
}

func stemEnglishSuffix(w []byte) []byte {
	n := len(w)
	if n > 3 && w[n-2] == '\'' && w[n-1] == 's' {
		w = w[:n-2]
		n -= 2
	}
	if n > 3 && w[n-1] == 's' {
		switch {
		case n > 4 && hasSuffix(w, "ies"):
			w = w[:n-2]
		case hasSuffix(w, "sses"), n > 5 && hasSuffix(w, "uses"),
			hasSuffix(w, "xes"), hasSuffix(w, "ches"), hasSuffix(w, "shes"):
			w = w[:n-2]
		case hasSuffix(w, "ss"), hasSuffix(w, "us"), hasSuffix(w, "is"):
		default:
			w = w[:n-1]
		}
		n = len(w)
	}
	if n > 3 {
		switch {
		case w[n-1] == 'e' && w[n-2] == 'i':
			w = w[:n-1]
		case w[n-1] == 'y' && !isVowel(w[n-2]):
			w[n-1] = 'i'
		}
	}
	return w
}

func isVowel(c byte) bool { return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u' }

// stem is the canonical form of one word, as stored in the vocabulary.
func stem(w []byte, script uint8) []byte {
	switch script &^ scriptName {
	case scriptArabic:
		return stemArabic(w)
	case scriptLatin:
		return stemEnglish(w)
	}
	return w
}

// hasSuffix takes the suffix as a string so that, inlined with a constant, the comparison is a
// load and a compare or two: as a []byte it was a call to runtime.memequal for each suffix tried,
// over a third of stemEnglishSuffix's cost (BenchmarkRoute64KB).
func hasSuffix(w []byte, s string) bool { return len(w) >= len(s) && string(w[len(w)-len(s):]) == s }

// collect scans s into c, for compiling terms, Normalize and tests.
func collect(s string, c *wordCollector) {
	out := &scratch{collect: c}
	scan(s, out)
	for _, r := range out.refs {
		c.word(out.words[r.off:r.off+r.n], r.script)
	}
}

// wordCollector gathers stems, for compiling terms and for tests.
type wordCollector struct {
	words   []string
	breaks  int
	arabic  int
	latin   int
	noStems bool
}

func (c *wordCollector) word(w []byte, script uint8) {
	countScript(script, &c.arabic, &c.latin)
	if !c.noStems {
		w = stem(w, script)
	}
	c.words = append(c.words, string(w))
}

// countScript counts a word for language detection. A word with Latin letters counts as Latin even
// when it also has Arabic ones (a typo such as "SQLحقن" is rare and mostly English identifiers;
// Arabic before English, "الـXSS", is split by scan: latinAfterArabic).
func countScript(script uint8, arabic, latin *int) {
	switch {
	case script&scriptLatin != 0:
		if script&scriptName == 0 {
			*latin++
		}
	case script&scriptArabic != 0:
		*arabic++
	}
}

// Normalize returns the words of s as the classifier sees them before stemming, joined by spaces.
// It exists for explain and tests; the classifier itself never builds this string.
func Normalize(s string) string {
	c := wordCollector{noStems: true}
	collect(s, &c)
	out := make([]byte, 0, len(s))
	for i, w := range c.words {
		if i > 0 {
			out = append(out, ' ')
		}
		out = append(out, w...)
	}
	return string(out)
}

// DetectLanguage reports the script of s with the rule the classifier uses.
func DetectLanguage(s string) Language {
	c := wordCollector{noStems: true}
	collect(s, &c)
	return detectLanguage(c.arabic, c.latin)
}
