package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// commands are the gateway's commands as the docs name them, each with the arguments that ask
// it for its flags; keygen and check-config take none.
var commands = map[string][]string{
	"serve":            {"serve", "--help"},
	"demo":             {"demo", "--help"},
	"check-config":     nil,
	"keygen":           nil,
	"version":          nil,
	"route eval":       {"route", "eval", "--help"},
	"import litellm":   {"import", "litellm", "--help"},
	"lru-sim":          {"lru-sim", "--help"},
	"lru-sim generate": {"lru-sim", "generate", "--help"},
	"conformance":      {"conformance", "--help"},
}

// realFlags returns the flags each command's flag set defines, read from its --help (what the
// flag package prints: one "  -name" line per flag).
func realFlags(t *testing.T) map[string][]string {
	t.Helper()
	line := regexp.MustCompile(`(?m)^  -([a-z][a-z0-9-]*)`)
	flags := map[string][]string{}
	for name, args := range commands {
		flags[name] = []string{}
		if args == nil {
			continue
		}
		code, out, errOut := runCmd(t, args...)
		if code != 0 {
			t.Fatalf("%q: exit %d", args, code)
		}
		for _, m := range line.FindAllStringSubmatch(out+errOut, -1) {
			flags[name] = append(flags[name], m[1])
		}
		slices.Sort(flags[name])
		if len(flags[name]) == 0 {
			t.Fatalf("%q lists no flags:\n%s%s", args, out, errOut)
		}
	}
	return flags
}

var (
	// commandAt matches a gateway command line in the docs: "gateway" (or "./gateway") and the
	// command's name.
	commandAt = regexp.MustCompile(`(?:^|[\s(./])gateway (serve|demo|check-config|keygen|route eval|import litellm|lru-sim generate|lru-sim|conformance)\b`)
	flagWord  = regexp.MustCompile("(?:^|[\\s\\[|(`])--([a-z][a-z0-9-]*)")
	codeSpan  = regexp.MustCompile("`[^`]+`")
)

// docCommandLines returns the gateway command lines in text (a doc, or the usage): every code
// span and every line of a code block, each command cut where a shell comment, another command
// or a pipe begins. A code block's line that starts with spaces continues the one before it (the
// usage's wrapped lines).
func docCommandLines(text string) []string {
	var segs []string
	inBlock := false
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, "```"):
			inBlock = !inBlock
		case inBlock && strings.HasPrefix(l, " ") && len(segs) > 0:
			segs[len(segs)-1] += " " + l
		case inBlock:
			segs = append(segs, l)
		}
	}
	var outside strings.Builder
	inBlock = false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "```") {
			inBlock = !inBlock
			continue
		}
		if !inBlock {
			outside.WriteString(l + "\n")
		}
	}
	// A code span may wrap onto the next line, never past its paragraph.
	for _, para := range strings.Split(outside.String(), "\n\n") {
		for _, s := range codeSpan.FindAllString(para, -1) {
			segs = append(segs, strings.ReplaceAll(strings.Trim(s, "`"), "\n", " "))
		}
	}
	var lines []string
	for _, s := range segs {
		locs := commandAt.FindAllStringIndex(s, -1)
		for i, loc := range locs {
			end := len(s)
			if i+1 < len(locs) {
				end = locs[i+1][0]
			}
			lines = append(lines, strings.TrimSpace(cutShell(s[loc[0]:end])))
		}
	}
	return lines
}

// cutShell cuts a command line where the shell goes on to something else: a comment, a pipe, a
// redirection or another command. A "|" inside brackets is the usage's "one or the other".
func cutShell(cmd string) string {
	depth := 0
	for i := 0; i < len(cmd); i++ {
		switch c := cmd[i]; {
		case c == '[':
			depth++
		case c == ']':
			depth--
		case c == '#' || c == ';' || c == '>' || c == '&' || c == '|' && depth <= 0:
			if i == 0 || cmd[i-1] == ' ' {
				return cmd[:i]
			}
		}
	}
	return cmd
}

// TestDocFlagsExist holds every command line README.md, CONFIG.md, CONFORMANCE.md and the
// usage show to the flags the commands define: a flag the docs spell (--api-key-env) that the
// command does not take would be a new user's first "flag provided but not defined".
func TestDocFlagsExist(t *testing.T) {
	flags := realFlags(t)
	texts := map[string]string{"usage": "```\n" + usage + "```\n"}
	for _, f := range []string{"README.md", "CONFIG.md", "CONFORMANCE.md"} {
		b, err := os.ReadFile("../../" + f)
		if err != nil {
			t.Fatal(err)
		}
		texts[f] = string(b)
	}
	seen := 0
	for file, text := range texts {
		for _, line := range docCommandLines(text) {
			name := commandAt.FindStringSubmatch(line)[1]
			for _, m := range flagWord.FindAllStringSubmatch(line, -1) {
				seen++
				if !slices.Contains(flags[name], m[1]) {
					t.Errorf("%s: %q: gateway %s has no --%s (its flags: %v)", file, line, name, m[1], flags[name])
				}
			}
		}
	}
	if seen < 20 {
		t.Errorf("found %d flags in the docs' command lines; the parser has lost them", seen)
	}
}

// TestConfigDocListsEveryFlag holds CONFIG.md's table of commands and flags ("Command line and
// environment") to the flag sets: each command's row names every flag it defines, and none it
// does not.
func TestConfigDocListsEveryFlag(t *testing.T) {
	flags := realFlags(t)
	doc, err := os.ReadFile("../../CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "| Command | Flag | Default | What it does |")
	if !ok {
		t.Fatal("CONFIG.md has no table of commands and flags")
	}
	documented := map[string][]string{}
	row := regexp.MustCompile("^\\| (?:`gateway ([a-z -]+?)(?: [A-Z]+)?`)? *\\| ([^|]*)\\|")
	current := ""
	for _, l := range strings.Split(table, "\n")[2:] {
		if !strings.HasPrefix(l, "|") {
			break
		}
		m := row.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("CONFIG.md: cannot read the row %q", l)
		}
		if m[1] != "" {
			current = m[1]
			if _, ok := commands[current]; !ok {
				t.Errorf("CONFIG.md documents a command %q that the gateway does not have", current)
			}
			documented[current] = []string{}
		}
		for _, f := range flagWord.FindAllStringSubmatch(m[2], -1) {
			documented[current] = append(documented[current], f[1])
		}
	}
	for name, want := range flags {
		got, ok := documented[name]
		if !ok {
			t.Errorf("CONFIG.md's table has no row for gateway %s", name)
			continue
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("CONFIG.md's table gives gateway %s the flags %v; it takes %v", name, got, want)
		}
	}
}
