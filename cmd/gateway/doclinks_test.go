package main

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// linkedDocs are the documents whose links and cited tests TestDocLinksResolve and
// TestDocCitedTestsExist hold, relative to the module root.
var linkedDocs = []string{"README.md", "CONFIG.md", "CONFORMANCE.md", "PERFORMANCE.md"}

// proseLines returns a Markdown file's lines, each line of a fenced code block (where a "#"
// starts a comment rather than a heading and a "](" is code, not a link) left empty, so that
// line i+1 of the file is element i.
func proseLines(doc string) []string {
	var out []string
	fenced := false
	for _, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			l = ""
		}
		if fenced {
			l = ""
		}
		out = append(out, l)
	}
	return out
}

// githubAnchor is the id GitHub gives a heading: its text in lower case, with every character
// but letters, digits, spaces, hyphens and underscores dropped, and each space a hyphen.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors of a Markdown file's headings, a repeated one numbered as GitHub
// numbers it (name, name-1, name-2).
func anchors(doc string) map[string]bool {
	heading := regexp.MustCompile(`^#{1,6} +(.+?) *#* *$`)
	seen := map[string]int{}
	out := map[string]bool{}
	for _, l := range proseLines(doc) {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		a := githubAnchor(m[1])
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestDocLinksResolve holds every relative link in the docs to something that is there: a
// "](#anchor)" to a heading of the same file, a "](FILE.md#anchor)" to a heading of FILE.md, and
// a "](FILE)" to a file of the module. A heading renamed without its links fails here.
func TestDocLinksResolve(t *testing.T) {
	docs := map[string]string{}
	for _, f := range linkedDocs {
		raw, err := os.ReadFile(filepath.Join("..", "..", f))
		if err != nil {
			t.Fatal(err)
		}
		docs[f] = string(raw)
	}
	link := regexp.MustCompile(`\]\(([^)\s]*)\)`)
	checked := 0
	for _, f := range linkedDocs {
		for i, l := range proseLines(docs[f]) {
			for _, m := range link.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, anchor, hasAnchor := strings.Cut(target, "#")
				if file == "" {
					file = f
				}
				checked++
				if !hasAnchor {
					if _, err := os.Stat(filepath.Join("..", "..", filepath.FromSlash(file))); err != nil {
						t.Errorf("%s line %d: link %q: %v", f, i+1, target, err)
					}
					continue
				}
				doc, ok := docs[file]
				if !ok {
					t.Errorf("%s line %d: link %q goes into %s, which this test does not read: add it to linkedDocs", f, i+1, target, file)
					continue
				}
				if !anchors(doc)[anchor] {
					t.Errorf("%s line %d: link %q names no heading of %s", f, i+1, target, file)
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked %d links; README.md and CONFIG.md have more than 50", checked)
	}
}

// TestDocCitedTestsExist holds every test, fuzz target and benchmark the docs cite by name
// (README's invariants list names the test that holds each) to one that is defined: a test
// renamed or removed leaves an invariant no test holds, and fails here instead.
func TestDocCitedTestsExist(t *testing.T) {
	root := filepath.Join("..", "..")
	defined := map[string]bool{}
	fn := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Benchmark)[A-Za-z0-9_]*)\(`)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range fn.FindAllStringSubmatch(string(src), -1) {
			defined[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A name followed by * cites a family (`TestH1*`): some defined name must start with it.
	cited := regexp.MustCompile(`\b(?:Test|Fuzz|Benchmark)[A-Z][A-Za-z0-9_]*\*?`)
	n := 0
	for _, f := range linkedDocs {
		raw, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range cited.FindAllString(string(raw), -1) {
			n++
			if prefix, family := strings.CutSuffix(name, "*"); family {
				if !slices.ContainsFunc(slices.Collect(maps.Keys(defined)), func(d string) bool { return strings.HasPrefix(d, prefix) }) {
					t.Errorf("%s cites %s, and no _test.go file defines a test so named", f, name)
				}
				continue
			}
			if !defined[name] {
				t.Errorf("%s cites %s, which no _test.go file defines", f, name)
			}
		}
	}
	if n < 50 {
		t.Errorf("found %d cited tests; README.md and CONFIG.md cite more than 50", n)
	}
}

// TestConfigDocContentsComplete holds CONFIG.md's Contents to its headings, as its "Adding to
// this file" note asks: every "##" section has a line in Contents and every "###" one a line
// indented under its section's, in the order of the file, and Contents names nothing else.
func TestConfigDocContentsComplete(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "CONFIG.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(raw), "\nContents\n")
	if !ok {
		t.Fatal("CONFIG.md has no Contents")
	}
	entry := regexp.MustCompile(`^( *)- \[.+\]\(#([^)]+)\)$`)
	var listed []string
	for _, l := range strings.Split(strings.TrimLeft(rest, "\n"), "\n") {
		m := entry.FindStringSubmatch(l)
		if m == nil {
			break
		}
		listed = append(listed, strconv.Itoa(len(m[1])/2)+" "+m[2])
	}
	heading := regexp.MustCompile(`^(#{2,3}) +(.+?) *$`)
	var headings []string
	for _, l := range proseLines(string(raw)) {
		if m := heading.FindStringSubmatch(l); m != nil {
			headings = append(headings, strconv.Itoa(len(m[1])-2)+" "+githubAnchor(m[2]))
		}
	}
	if !slices.Equal(listed, headings) {
		t.Errorf("CONFIG.md's Contents lists (depth and anchor)\n  %s\nits headings are\n  %s",
			strings.Join(listed, "\n  "), strings.Join(headings, "\n  "))
	}
}
