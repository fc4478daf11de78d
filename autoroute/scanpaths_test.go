package autoroute

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/internal/utf8x"
)

// scanRef is scan without its fast paths: one character at a time, each through the rule scan's
// slow path gives it (ASCII letters through addASCII, Arabic letters through addArabic), with no
// run copied eight bytes at a time and no word begun after a space without the switch.
func scanRef(s string, out *scratch) {
	out.words = make([]byte, 1024)
	w, st := out.words[:0], uint8(0)
	out.noLatin = 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r < utf8.RuneSelf {
			c := byte(r)
			switch byteClass[c] {
			case clsSep:
				w, st = out.end(w, st)
			case clsLower, clsUpper:
				if st&(scriptArabic|scriptLatin) == scriptArabic {
					w, st = out.latinAfterArabic(w, st)
				} else if len(w) == 0 && len(out.refs) > 0 && out.refs[len(out.refs)-1].script == scriptArabic {
					out.articleApart(s, i-1)
				}
				w, st = addASCII(w, st, c)
			case clsDigit:
				w, st = addByte(w, st, c)
				st |= stDigit
			case clsApos:
				if len(w) > 0 && i < len(s) && isASCIILetter(s[i]) {
					w, st = addByte(w, st, c)
				} else {
					w, st = out.end(w, st)
				}
			case clsClause:
				w, st = out.end(w, st)
				out.clauseBreak()
			}
			continue
		}
		switch {
		case r >= 0x0600 && r <= 0x06FF:
			switch {
			case r >= 0x064B && r <= 0x065F, r == 0x0670, r >= 0x06D6 && r <= 0x06ED, r == 0x0640, r == 0x061C:
			case r >= 0x0660 && r <= 0x0669:
				w, st = addASCII(w, st, byte('0'+r-0x0660))
			case r >= 0x06F0 && r <= 0x06F9:
				w, st = addASCII(w, st, byte('0'+r-0x06F0))
			case r == 0x060C || r == 0x061B || r == 0x061F || r == 0x06D4:
				w, st = out.end(w, st)
				out.clauseBreak()
			case r >= 0x0621 && r <= 0x064A || r >= 0x0671 && r <= 0x06D3 || r == 0x06D5:
				w, st = addArabic(w, st, r)
			default:
				w, st = out.end(w, st)
			}
		case r == 0x2019 || r == 0x2018:
			if len(w) > 0 && i < len(s) && isASCIILetter(s[i]) {
				w, st = addByte(w, st, '\'')
			} else {
				w, st = out.end(w, st)
			}
		case r == 0x2026 || r == 0x3002:
			w, st = out.end(w, st)
			out.clauseBreak()
		case invisible(r):
		case r >= formsAFirst && r < formsAEnd || r >= formsBFirst && r < formsBEnd:
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
			if b := styledASCII(r); b != 0 {
				w, st = addASCII(w, st, b)
			} else {
				w, st = out.end(w, st)
			}
		case lookalike(r) != 0 && st&scriptLatin != 0:
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

type scannedWord struct {
	Word           string
	Script         uint8
	Clause, Breaks int32
}

func scanned(s string, f func(string, *scratch)) []scannedWord {
	out := &scratch{}
	f(s, out)
	var got []scannedWord
	for _, r := range out.refs {
		got = append(got, scannedWord{string(out.words[r.off : r.off+r.n]), r.script, r.clause, out.clause})
	}
	return got
}

// FuzzScanFastPaths holds scan's fast paths (ASCII and plain Arabic runs read eight bytes at a
// time, a word begun straight after a single space) to the character-at-a-time rules of its slow
// path (scanRef): the same words, scripts and clauses for any input, folded letters such as the
// heh forms (87cb143) between plain ones included.
func FuzzScanFastPaths(f *testing.F) {
	for _, s := range []string{
		"", "how does a buffer overflow work? don't 'quote' hackers' x",
		"ثغرة في الخادم، هل يمكن استغلالها؟ ثغرۀ ثغرە ثغرہ ھاكر ثغرۃ",
		"ممكن تشرح how XSS works؟ Log٤Shell ۴۴",
		"ﺛﻐﺮﺓ ｅｘｐｌｏｉｔ 𝐞𝐱𝐩𝐥𝐨𝐢𝐭 \u0435xploit exp\u200bloit ثغ\u200cرة",
		strings.Repeat("abcdefgh", 10) + " " + strings.Repeat("ثغرة", 20) + " ab",
		"ەەە ەا اە ا ە aە \xd8 \xff ك ک",
		"ХЅЅ с2 рос НАСК's ЕХРӀОІТ ро\u0301с сорок ΧΕΝ ثХ",
		"الـXSS والـphishing للـexploit ثغرةSQL ال'x وبال٢x ﺍﻟxss الsql",
		"我正在为我的团队准备一个简短的演讲，介绍我们如何发布网络应用程序。首先我想比较两种记录日志的方法",
		"漏洞exploit漏洞 ひらがなカタカナ한국어 㐀䶿一鿿가힣ぁゖァヺ ゙゚・ー〆 \xe4\xb8 \xe4\xb8\x80\x80 \xed\xa0\x80",
		"漏7\x83\xbb00000000 漏a\x83\xbb 漏\xe3\x81",
		"短句。SQL注入攻击，XSS！ 中ХSS 中\u200b文 中\u0301文 Ⱥ中",
	} {
		f.Add(s)
	}
	// BenchmarkRoute64KB's texts, past the length from which scan sizes its records at once.
	for _, p := range longProse {
		f.Add(longText(p.unit, 2*longTextBytes+1))
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, want := scanned(s, scan), scanned(s, scanRef)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("scan(%q) differs from its slow path (-slow +scan):\n%s", s, diff)
		}
	})
}

// TestPlainWide holds scan's run of utf8x.WideLetter letters to its general path (scanRef) on every
// code point utf8x.WideLetter takes, alone, in a run, after a Latin letter and in an overlong run: each
// is a letter without case that the general path adds as it stands.
func TestPlainWide(t *testing.T) {
	n := 0
	for r := rune(0x800); r <= 0xFFFF; r++ {
		if !utf8x.WideLetter(r) {
			continue
		}
		n++
		if !unicode.IsLetter(r) || unicode.ToLower(r) != r || lookalike(r) != 0 || invisible(r) {
			t.Fatalf("U+%04X: letter %v, lower U+%04X, lookalike %q, invisible %v", r, unicode.IsLetter(r),
				unicode.ToLower(r), lookalike(r), invisible(r))
		}
		x := string(r)
		for _, s := range []string{x, x + x + " " + x, "a" + x + "b", strings.Repeat(x, 30) + "." + x} {
			got, want := scanned(s, scan), scanned(s, scanRef)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("scan(%q) differs from its slow path (-slow +scan):\n%s", s, diff)
			}
		}
	}
	if n == 0 {
		t.Fatal("utf8x.WideLetter takes no code point")
	}
}
