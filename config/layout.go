package config

import (
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// layout records where every key of a TOML document is defined. BurntSushi/toml keeps key
// positions private, yet every config error must name its line, so this re-reads the source.
// It runs only on text the TOML parser has accepted; on anything else it must merely not panic
// or loop, since its answers then never matter.
type layout struct {
	newlines []int          // byte offsets of '\n', for offset → line
	at       map[string]int // path (see pathKey) → offset of its first definition
	keys     []keyDef       // key definitions and table headers, in document order
}

// keyDef is one definition of a key or table, by its full path.
type keyDef struct {
	path []string
	off  int
}

// elem is the path component for element i of an array or array of tables. The NUL byte keeps it
// apart from any key a reasonable config can spell.
func elem(i int) string { return "\x00" + strconv.Itoa(i) }

func isElem(part string) bool { return strings.HasPrefix(part, "\x00") }

// pathKey is the map key for a path; array element components make it exact ("keys", elem(1)).
func pathKey(path []string) string { return strings.Join(path, "\x1f") }

// plain is a path as toml.MetaData.Undecoded reports it: without array indexes.
func plain(path []string) toml.Key {
	var k toml.Key
	for _, p := range path {
		if !isElem(p) {
			k = append(k, p)
		}
	}
	return k
}

// display spells a path for messages: keys[1].sha256, targets."qwen2.5".url.
func display(path []string) string {
	var b strings.Builder
	for _, p := range path {
		if isElem(p) {
			b.WriteString("[" + p[1:] + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(toml.Key{p}.String())
	}
	return b.String()
}

// line is the line of path's definition; when path itself was never written (a missing key), the
// line of the nearest enclosing table that was; 0 when none was.
func (l *layout) line(path ...string) int {
	for n := len(path); n > 0; n-- {
		if off, ok := l.at[pathKey(path[:n])]; ok {
			return l.lineAt(off)
		}
	}
	return 0
}

func (l *layout) lineAt(off int) int {
	n, _ := slices.BinarySearch(l.newlines, off)
	return n + 1
}

// scanLayout reads src. Offsets rather than line counts are recorded so that multi-line strings
// and arrays need no bookkeeping.
func scanLayout(src []byte) *layout {
	l := &layout{at: map[string]int{}}
	for i, c := range src {
		if c == '\n' {
			l.newlines = append(l.newlines, i)
		}
	}
	s := &scanner{src: src, l: l, tables: map[string]int{}}
	s.document()
	return l
}

type scanner struct {
	src    []byte
	i      int
	l      *layout
	tables map[string]int // path of an array of tables → elements seen so far
}

func (s *scanner) eof() bool { return s.i >= len(s.src) }

func (s *scanner) peek(n int) byte {
	if s.i+n < len(s.src) {
		return s.src[s.i+n]
	}
	return 0
}

// define records a key or table definition; prefixes written only implicitly (the "targets" of
// [targets.saif]) get the same offset unless they were defined earlier.
func (s *scanner) define(path []string, off int) {
	s.l.keys = append(s.l.keys, keyDef{path: slices.Clone(path), off: off})
	s.mark(path, off)
}

func (s *scanner) mark(path []string, off int) {
	for n := len(path); n > 0; n-- {
		k := pathKey(path[:n])
		if _, ok := s.l.at[k]; ok {
			return
		}
		s.l.at[k] = off
	}
}

func (s *scanner) document() {
	var table []string
	for {
		s.skipBlank(true)
		if s.eof() {
			return
		}
		start := s.i
		if s.src[s.i] == '[' {
			table = s.header()
			s.define(table, start)
		} else {
			s.keyValue(table)
		}
		if s.i == start {
			s.i++ // not TOML; only guarantee progress
		}
	}
}

// header reads [a.b] or [[a.b]] and returns the exact path of the table it opens: every
// array-of-tables prefix resolves to its latest element, as TOML says.
func (s *scanner) header() []string {
	array := s.peek(1) == '['
	s.i++
	if array {
		s.i++
	}
	parts := s.keyPath()
	s.skipBlank(false)
	for !s.eof() && s.src[s.i] == ']' {
		s.i++
	}
	var path []string
	for j, p := range parts {
		path = append(path, p)
		if j == len(parts)-1 && array {
			n := s.tables[pathKey(path)]
			s.tables[pathKey(path)] = n + 1
			path = append(path, elem(n))
		} else if n, ok := s.tables[pathKey(path)]; ok {
			path = append(path, elem(n-1))
		}
	}
	return path
}

func (s *scanner) keyValue(table []string) {
	start := s.i
	parts := s.keyPath()
	if len(parts) == 0 {
		return
	}
	path := append(slices.Clone(table), parts...)
	s.define(path, start)
	s.skipBlank(false)
	if !s.eof() && s.src[s.i] == '=' {
		s.i++
	}
	s.value(path)
}

// keyPath reads a dotted key of bare and quoted parts.
func (s *scanner) keyPath() []string {
	var parts []string
	for {
		s.skipBlank(false)
		if s.eof() {
			return parts
		}
		switch c := s.src[s.i]; {
		case c == '"' || c == '\'':
			parts = append(parts, s.str())
		case isBare(c):
			j := s.i
			for !s.eof() && isBare(s.src[s.i]) {
				s.i++
			}
			parts = append(parts, string(s.src[j:s.i]))
		default:
			return parts
		}
		s.skipBlank(false)
		if s.eof() || s.src[s.i] != '.' {
			return parts
		}
		s.i++
	}
}

func isBare(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// value skips one value, recording the keys of inline tables and the place of array elements.
func (s *scanner) value(path []string) {
	s.skipBlank(false)
	if s.eof() {
		return
	}
	switch s.src[s.i] {
	case '"', '\'':
		s.str()
	case '[':
		s.array(path)
	case '{':
		s.inlineTable(path)
	default:
		start := s.i
		for !s.eof() && !strings.ContainsRune(",]}#\r\n", rune(s.src[s.i])) {
			s.i++
		}
		if s.i == start {
			s.i++
		}
	}
}

func (s *scanner) array(path []string) {
	s.i++
	for n := 0; ; {
		s.skipBlank(true)
		if s.eof() {
			return
		}
		switch s.src[s.i] {
		case ']':
			s.i++
			return
		case ',':
			s.i++
		default:
			el := append(slices.Clone(path), elem(n))
			s.mark(el, s.i)
			s.value(el)
			n++
		}
	}
}

func (s *scanner) inlineTable(path []string) {
	s.i++
	for {
		s.skipBlank(true)
		if s.eof() {
			return
		}
		switch s.src[s.i] {
		case '}':
			s.i++
			return
		case ',':
			s.i++
		default:
			start := s.i
			s.keyValue(path)
			if s.i == start {
				s.i++
			}
		}
	}
}

// str reads a basic, literal or multi-line string and returns its content; escapes are decoded
// only as far as key names need (a key with an exotic escape merely loses its line).
func (s *scanner) str() string {
	q := s.src[s.i]
	multi := s.peek(1) == q && s.peek(2) == q
	if multi {
		s.i += 3
	} else {
		s.i++
	}
	var b strings.Builder
	for !s.eof() {
		c := s.src[s.i]
		switch {
		case c == '\\' && q == '"':
			b.WriteByte(s.peek(1))
			s.i += 2
			continue
		case c == q && !multi:
			s.i++
			return b.String()
		case c == q && s.peek(1) == q && s.peek(2) == q:
			// A closing run may be up to five quotes long: the first ones belong to the content.
			n := 0
			for !s.eof() && s.src[s.i] == q && n < 5 {
				s.i++
				n++
			}
			return b.String()
		case c == '\n' && !multi:
			return b.String()
		}
		b.WriteByte(c)
		s.i++
	}
	return b.String()
}

// skipBlank skips spaces and comments, and newlines too when newlines is set.
func (s *scanner) skipBlank(newlines bool) {
	for !s.eof() {
		switch s.src[s.i] {
		case ' ', '\t', '\r':
			s.i++
		case '\n':
			if !newlines {
				return
			}
			s.i++
		case '#':
			for !s.eof() && s.src[s.i] != '\n' {
				s.i++
			}
		default:
			return
		}
	}
}
