package httpwire

import (
	"math/rand/v2"
	"net/textproto"
	"strings"
	"testing"
)

func TestIsToken(t *testing.T) {
	for s, want := range map[string]bool{
		"GET": true, "X-Api-Key": true, "a!#$%&'*+-.^_`|~9": true,
		"": false, "a b": false, "a:b": false, "a\x00": false, "é": false, "a\"b": false, "(x)": false,
	} {
		if got := IsToken(s); got != want {
			t.Errorf("IsToken(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestValidValue(t *testing.T) {
	for s, want := range map[string]bool{
		"": true, "a b\tc": true, "é→": true, "a\r\nb": false, "a\rb": false, "a\x00": false, "a\x7f": false,
	} {
		if got := ValidValue(s); got != want {
			t.Errorf("ValidValue(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestValidValueByWord holds ValidValue, eight bytes a step, to its byte loop: every byte at
// every place of values of 1 to 19 bytes, and random values of bytes that are and are not
// allowed, tabs among them.
func TestValidValueByWord(t *testing.T) {
	for n := 1; n <= 19; n++ {
		for pos := range n {
			for c := range 256 {
				b := []byte(strings.Repeat("v", n))
				b[pos] = byte(c)
				if s := string(b); ValidValue(s) != validBytes(s) {
					t.Fatalf("ValidValue(%q) = %v, byte by byte %v", s, ValidValue(s), validBytes(s))
				}
			}
		}
	}
	alphabet := []byte("a Z0/;=\t\x00\x01\x1f\x7f\x80\xff\r\n")
	rng := rand.New(rand.NewPCG(7, 8))
	for range 50000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
			if rng.IntN(3) > 0 {
				b[i] = 'x'
			}
		}
		if s := string(b); ValidValue(s) != validBytes(s) {
			t.Fatalf("ValidValue(%q) = %v, byte by byte %v", s, ValidValue(s), validBytes(s))
		}
	}
}

// CanonicalKey agrees with textproto for every name, and allocates nothing for a name that
// is canonical or listed.
func TestCanonicalKey(t *testing.T) {
	common := []string{"Content-Type", "X-Stainless-Lang"}
	for _, name := range []string{"content-type", "CONTENT-TYPE", "Content-Type", "x-stainless-lang", "x-odd-NAME",
		"a", "A-B-C", "accept"} {
		if got, want := CanonicalKey(name, common), textproto.CanonicalMIMEHeaderKey(name); got != want {
			t.Errorf("CanonicalKey(%q) = %q, want %q", name, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		_ = CanonicalKey("content-type", common)
		_ = CanonicalKey("Accept-Encoding", common)
	}); n != 0 {
		t.Errorf("%v allocations for a listed and a canonical name, want 0", n)
	}
}

func TestCutLine(t *testing.T) {
	for _, tt := range []struct{ in, line, rest string }{
		{"a\r\nb", "a", "b"}, {"a\nb\n", "a", "b\n"}, {"a", "a", ""}, {"\r\n", "", ""}, {"a\r\r\n", "a\r", ""},
	} {
		if line, rest := CutLine(tt.in); line != tt.line || rest != tt.rest {
			t.Errorf("CutLine(%q) = %q, %q; want %q, %q", tt.in, line, rest, tt.line, tt.rest)
		}
	}
}

func TestCloses(t *testing.T) {
	for _, tt := range []struct {
		conn  []string
		minor int
		want  bool
	}{
		{nil, 1, false}, {nil, 0, true}, {[]string{"keep-alive"}, 0, false}, {[]string{"Keep-Alive, Upgrade"}, 0, false},
		{[]string{"close"}, 1, true}, {[]string{"upgrade", " CLOSE "}, 1, true}, {[]string{"keep-alive", "close"}, 0, true},
		{[]string{"te,\tclose"}, 1, true}, {[]string{"closed"}, 1, false},
	} {
		if got := Closes(tt.conn, tt.minor); got != tt.want {
			t.Errorf("Closes(%q, %d) = %v, want %v", tt.conn, tt.minor, got, tt.want)
		}
	}
}

func TestParseLength(t *testing.T) {
	for _, tt := range []struct {
		in string
		n  int64
		ok bool
	}{
		{"0", 0, true}, {"12345", 12345, true}, {"999999999999999999", 999999999999999999, true},
		{"", 0, false}, {"+5", 0, false}, {"-0", 0, false}, {" 5", 0, false}, {"5 ", 0, false}, {"1,2", 0, false},
		{"0x10", 0, false}, {"1234567890123456789", 0, false},
	} {
		if n, ok := ParseLength(tt.in); n != tt.n || ok != tt.ok {
			t.Errorf("ParseLength(%q) = %d, %v; want %d, %v", tt.in, n, ok, tt.n, tt.ok)
		}
	}
}

func TestTrimOWS(t *testing.T) {
	for _, v := range []string{"", " ", "\t \t", "a", " a", "a\t", " \ta b\t ", "\r a \n", "\u00a0a\u00a0"} {
		if got, want := TrimOWS(v), strings.Trim(v, " \t"); got != want {
			t.Errorf("TrimOWS(%q) = %q, want %q", v, got, want)
		}
	}
}
