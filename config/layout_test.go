package config

import (
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"
)

// TestLayoutLines checks the line of every key in a document built to mislead a line scanner:
// brackets and "key = value" inside strings and comments, values over several lines, quoted and
// dotted keys, inline tables and arrays of tables.
func TestLayoutLines(t *testing.T) {
	const doc = `# [not.a.table] and x = 1 in a comment
top = "a # not a comment"   # 2
multi = """
[fake]
fake = 1
"""""
lit = '''
[[also.fake]]'''
arr = [
  1, # [x]
  [2, 3],
  "4]",
]
"quoted.key" = 1
dotted . part = 2
inline = { a = 1, b.c = [
  2 ], d = { e = 3 } }

[t."qwen2.5"]
url = "http://x"

[[keys]]
name = "a"
[[keys]]
name = "b"
[keys.sub]
x = 1
[[keys]]
name = "c"
list = [{ y = 1 }, { y = 2 }]
`
	want := map[string]int{
		"top":                  2,
		"multi":                3,
		"lit":                  7,
		"arr":                  9,
		"arr[0]":               10,
		"arr[1]":               11,
		"arr[1][1]":            11,
		"arr[2]":               12,
		`"quoted.key"`:         14,
		"dotted":               15,
		"dotted.part":          15,
		"inline":               16,
		"inline.a":             16,
		"inline.b":             16,
		"inline.b.c":           16,
		"inline.b.c[0]":        17,
		"inline.d.e":           17,
		`t`:                    19,
		`t."qwen2.5"`:          19,
		`t."qwen2.5".url`:      20,
		"keys":                 22,
		"keys[0]":              22,
		"keys[0].name":         23,
		"keys[1].name":         25,
		"keys[1].sub":          26,
		"keys[1].sub.x":        27,
		"keys[2]":              28,
		"keys[2].name":         29,
		"keys[2].list[1]":      30,
		"keys[2].list[1].y":    30,
		"keys[2].missing":      28, // a key never written: its table's line
		"fake":                 0,
		"also":                 0,
		"not":                  0,
		`t."qwen2.5".url.deep`: 20,
	}
	var v map[string]any
	if _, err := toml.Decode(doc, &v); err != nil {
		t.Fatalf("the document is not valid TOML, so the test proves nothing: %v", err)
	}
	l := scanLayout([]byte(doc))
	got := map[string]int{}
	for k := range want {
		got[k] = l.line(parsePath(k)...)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lines mismatch (-want +got):\n%s", diff)
	}
}

// parsePath reads the display form back, for tests: a.b[1]."c.d".
func parsePath(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		switch s[i] {
		case '.':
			i++
		case '[':
			j := i + 1
			for s[j] != ']' {
				j++
			}
			out = append(out, "\x00"+s[i+1:j])
			i = j + 1
		case '"':
			j := i + 1
			for s[j] != '"' {
				j++
			}
			out = append(out, s[i+1:j])
			i = j + 1
		default:
			j := i
			for j < len(s) && s[j] != '.' && s[j] != '[' {
				j++
			}
			out = append(out, s[i:j])
			i = j
		}
	}
	return out
}

func TestDisplayRoundTrip(t *testing.T) {
	for _, p := range [][]string{
		{"listen"},
		{"keys", elem(2), "sha256"},
		{"targets", "qwen2.5", "url"},
		{"routes", "r", "targets", elem(0)},
	} {
		t.Run(display(p), func(t *testing.T) {
			if diff := cmp.Diff(p, parsePath(display(p))); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}
