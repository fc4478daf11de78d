package demo_test

import (
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
)

// readmeCurl is one curl command of README.md's "Try the demo" and the output the README shows
// for it: the X-Hayula-* headers, and excerpts of the body in the order they come.
type readmeCurl struct {
	line     string            // the command as the README gives it, continuation lines joined
	method   string            // POST when it sends a body
	url      string            // as written, on 127.0.0.1:8000
	header   map[string]string // request headers
	body     string            // -d's body
	grep     string            // the pattern of a "| grep -E" after it
	want     map[string]string // response headers shown
	excerpts []string          // body excerpts shown, "…" where the README leaves something out
}

// readmeCurls reads the curl commands of README.md's "Try the demo", each with the "# " lines
// that follow it (until a blank line): "# X-Hayula-Name: value" is a header it shows, another
// line an excerpt of the body, and a line that starts "#  " continues the excerpt before it.
func readmeCurls(t *testing.T) []readmeCurl {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Try the demo\n")
	if !ok {
		t.Fatal(`README.md has no "## Try the demo"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	headerLine := regexp.MustCompile(`^# (X-Hayula-[A-Za-z-]+): (.*)$`)
	var curls []readmeCurl
	var cur *readmeCurl
	inBlock, cont := false, ""
	for _, l := range strings.Split(section, "\n") {
		if strings.HasPrefix(l, "```") {
			inBlock, cur = !inBlock && l == "```sh", nil
			continue
		}
		if !inBlock {
			continue
		}
		switch {
		case cont != "" || strings.HasPrefix(l, "curl "):
			cont += strings.TrimSuffix(l, "\\") + " "
			if !strings.HasSuffix(l, "\\") {
				curls = append(curls, parseCurl(t, strings.TrimSpace(cont)))
				cur, cont = &curls[len(curls)-1], ""
			}
		case cur == nil:
		case l == "":
			cur = nil
		case headerLine.MatchString(l):
			m := headerLine.FindStringSubmatch(l)
			cur.want[m[1]] = m[2]
		case strings.HasPrefix(l, "#  ") && len(cur.excerpts) > 0:
			cur.excerpts[len(cur.excerpts)-1] += strings.TrimLeft(l[1:], " ")
		case strings.HasPrefix(l, "# "):
			cur.excerpts = append(cur.excerpts, l[2:])
		default:
			cur = nil
		}
	}
	return curls
}

// parseCurl reads the curl command line the README gives: -s, -i and -N change nothing here;
// -H and -d take a quoted argument; a "| grep -E 'pattern'" filters the output's lines.
func parseCurl(t *testing.T, line string) readmeCurl {
	t.Helper()
	c := readmeCurl{line: line, method: "GET", header: map[string]string{}, want: map[string]string{}}
	cmd, grep, piped := strings.Cut(line, " | ")
	if piped {
		words := shellWords(t, grep)
		if len(words) != 3 || words[0] != "grep" || words[1] != "-E" {
			t.Fatalf("README: %q: cannot read the grep", line)
		}
		c.grep = words[2]
	}
	words := shellWords(t, cmd)
	for i := 1; i < len(words); i++ {
		switch w := words[i]; {
		case w == "-H" && i+1 < len(words):
			i++
			k, v, _ := strings.Cut(words[i], ":")
			c.header[k] = strings.TrimSpace(v)
		case w == "-d" && i+1 < len(words):
			i++
			c.body, c.method = words[i], "POST"
		case w == "-s" || w == "-si" || w == "-sN" || w == "-i" || w == "-N":
		case strings.HasPrefix(w, "http://127.0.0.1:8000/"):
			c.url = w
		default:
			t.Fatalf("README: %q: cannot read %q", line, w)
		}
	}
	if c.url == "" {
		t.Fatalf("README: %q: no URL on 127.0.0.1:8000", line)
	}
	return c
}

// shellWords splits a command line into words as the shell does for what the README writes:
// spaces between words, single-quoted strings taken as they are.
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	for _, r := range s {
		switch {
		case quoted && r == '\'':
			quoted = false
		case quoted:
			w.WriteRune(r)
		case r == '\'':
			quoted, inWord = true, true
		case r == ' ':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("README: unterminated quote in %q", s)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// matchExcerpts reports the first excerpt not found in lines: each in its own line, after the
// one the excerpt before it matched. An excerpt without "…" is the whole line; with "…", its
// pieces come in that line in order; "…" alone passes over any lines.
func matchExcerpts(lines, excerpts []string) (string, bool) {
	at := 0
	for _, ex := range excerpts {
		if ex == "…" {
			continue
		}
		found := false
		for ; at < len(lines) && !found; at++ {
			found = matchLine(lines[at], ex)
		}
		if !found {
			return ex, false
		}
	}
	return "", true
}

func matchLine(line, ex string) bool {
	if !strings.Contains(ex, "…") {
		return line == ex
	}
	for _, piece := range strings.Split(ex, "…") {
		i := strings.Index(line, piece)
		if i < 0 {
			return false
		}
		line = line[i+len(piece):]
	}
	return true
}

// TestREADMETranscript runs README.md's "Try the demo" against a freshly started demo, each
// curl in the README's order, and holds the README to what the demo answers: every status is
// 200, every X-Hayula-* header shown has the value shown, and every body excerpt (the JSON, the
// stream's events, the metrics lines) is there, in order.
func TestREADMETranscript(t *testing.T) {
	curls := readmeCurls(t)
	if len(curls) < 9 {
		t.Fatalf("found %d curl commands in README.md's Try the demo; it has at least 9", len(curls))
	}
	base := startDemoURL(t)
	checked := 0
	for _, c := range curls {
		req, err := http.NewRequest(c.method, base+strings.TrimPrefix(c.url, "http://127.0.0.1:8000"), strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		if c.body != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded") // curl -d's
		}
		for k, v := range c.header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Errorf("README: %s\nstatus %d: %s", c.line, resp.StatusCode, body)
			continue
		}
		for k, v := range c.want {
			checked++
			if got := resp.Header.Get(k); got != v {
				t.Errorf("README: %s\nshows %s: %s; the demo answers %q", c.line, k, v, got)
			}
		}
		lines := strings.Split(strings.ReplaceAll(string(body), "\r\n", "\n"), "\n")
		if c.grep != "" {
			re := regexp.MustCompile(c.grep)
			var kept []string
			for _, l := range lines {
				if re.MatchString(l) {
					kept = append(kept, l)
				}
			}
			lines = kept
		}
		checked += len(c.excerpts)
		if ex, ok := matchExcerpts(lines, c.excerpts); !ok {
			t.Errorf("README: %s\nshows %s\nwhich the demo's answer does not hold (in that order):\n%s", c.line, ex, strings.Join(lines, "\n"))
		}
	}
	if checked < 25 {
		t.Errorf("checked %d headers and excerpts of README.md's transcript; the parser has lost them", checked)
	}
}
