package autoroute

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"
)

// Example is one line of a labelled file (JSON Lines). Blank lines and lines starting with '#' are
// skipped.
type Example struct {
	// Prompt is the last user turn.
	Prompt string `json:"prompt"`
	// System is the system prompt, if any.
	System string `json:"system,omitempty"`
	// Hint is x-route-hint, if any.
	Hint string `json:"hint,omitempty"`
	// Route is the expected route. Required.
	Route string `json:"route"`
	// Lang is the expected language ("english", "arabic", "mixed"); empty means not checked.
	Lang string `json:"lang,omitempty"`
	// Tags name the hard cases an example stands for (negation, code, short…); the report gives
	// accuracy per tag.
	Tags []string `json:"tags,omitempty"`
}

// EvalError is a malformed line in a labelled file.
type EvalError struct {
	Line int
	Err  error
}

func (e *EvalError) Error() string {
	return fmt.Sprintf("autoroute: labelled file line %d: %v", e.Line, e.Err)
}
func (e *EvalError) Unwrap() error { return e.Err }

// Count is a correct/total pair.
type Count struct {
	Correct, Total int
}

func (c Count) String() string {
	if c.Total == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%% (%d/%d)", 100*float64(c.Correct)/float64(c.Total), c.Correct, c.Total)
}

// Miss is one example the classifier got wrong.
type Miss struct {
	Line      int
	Want, Got string
	Lang      Language
	Prompt    string
	Reason    string
}

// EvalReport is the result of Eval.
type EvalReport struct {
	// Route counts examples whose route was right; Lang those whose language was right (among
	// the examples that state one).
	Route, Lang Count
	// Routes orders the rows (expected) and columns (got) of Confusion.
	Routes    []string
	Confusion [][]int
	// ByLanguage is route accuracy per expected language (by detected language when none is given).
	ByLanguage map[string]Count
	// ByTag is route accuracy per tag.
	ByTag map[string]Count
	// Misses are the wrong routes, in file order.
	Misses []Miss
	// LangMisses are the lines whose language was wrong.
	LangMisses []Miss
}

// Accuracy is the share of examples routed right, from 0 to 1.
func (e *EvalReport) Accuracy() float64 {
	if e.Route.Total == 0 {
		return 0
	}
	return float64(e.Route.Correct) / float64(e.Route.Total)
}

// Eval reads a labelled file and reports accuracy and a confusion matrix.
func Eval(c *Classifier, r io.Reader) (*EvalReport, error) {
	rep := &EvalReport{Routes: c.Routes(), ByLanguage: map[string]Count{}, ByTag: map[string]Count{}}
	index := map[string]int{}
	for i, r := range rep.Routes {
		index[r] = i
	}
	idx := func(route string) int {
		i, ok := index[route]
		if !ok {
			i = len(rep.Routes)
			index[route] = i
			rep.Routes = append(rep.Routes, route)
		}
		return i
	}
	type outcome struct{ want, got int }
	var outcomes []outcome

	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		var ex Example
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ex); err != nil {
			return nil, &EvalError{line, err}
		}
		if ex.Route == "" {
			return nil, &EvalError{line, fmt.Errorf("no route")}
		}
		var wantLang Language
		if ex.Lang != "" {
			l, ok := ParseLanguage(ex.Lang)
			if !ok {
				return nil, &EvalError{line, fmt.Errorf("unknown lang %q", ex.Lang)}
			}
			wantLang = l
		}
		d := c.Classify(ex.System, ex.Prompt, ex.Hint)
		ok := d.Route == ex.Route
		outcomes = append(outcomes, outcome{idx(ex.Route), idx(d.Route)})
		rep.Route = add(rep.Route, ok)
		langKey := d.Language.String()
		if ex.Lang != "" {
			langKey = ex.Lang
			rep.Lang = add(rep.Lang, d.Language == wantLang)
			if d.Language != wantLang {
				rep.LangMisses = append(rep.LangMisses, Miss{Line: line, Want: ex.Lang, Got: d.Language.String(),
					Lang: d.Language, Prompt: oneLine(ex.Prompt, 90)})
			}
		}
		rep.ByLanguage[langKey] = add(rep.ByLanguage[langKey], ok)
		for _, t := range ex.Tags {
			rep.ByTag[t] = add(rep.ByTag[t], ok)
		}
		if !ok {
			rep.Misses = append(rep.Misses, Miss{Line: line, Want: ex.Route, Got: d.Route, Lang: d.Language,
				Prompt: oneLine(ex.Prompt, 90), Reason: d.Reason})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, &EvalError{line, err}
	}
	rep.Confusion = make([][]int, len(rep.Routes))
	for i := range rep.Confusion {
		rep.Confusion[i] = make([]int, len(rep.Routes))
	}
	for _, o := range outcomes {
		rep.Confusion[o.want][o.got]++
	}
	return rep, nil
}

func add(c Count, ok bool) Count {
	c.Total++
	if ok {
		c.Correct++
	}
	return c
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max]) + "…"
}

// String is the report `gateway route eval FILE` prints: the accuracy line, the confusion matrix
// (rows: expected route, columns: chosen route), accuracy per language and per tag, then the misses.
func (e *EvalReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "route accuracy: %s\n", e.Route)
	if e.Lang.Total > 0 {
		fmt.Fprintf(&b, "language accuracy: %s\n", e.Lang)
	}
	b.WriteString("\nconfusion (rows: expected, columns: chosen)\n")
	w := len("expected")
	for _, r := range e.Routes {
		w = max(w, len(r))
	}
	fmt.Fprintf(&b, "%-*s", w, "expected")
	for _, r := range e.Routes {
		fmt.Fprintf(&b, "  %*s", max(len(r), 5), r)
	}
	fmt.Fprintf(&b, "  %7s\n", "recall")
	for i, r := range e.Routes {
		fmt.Fprintf(&b, "%-*s", w, r)
		row := 0
		for j := range e.Routes {
			fmt.Fprintf(&b, "  %*d", max(len(e.Routes[j]), 5), e.Confusion[i][j])
			row += e.Confusion[i][j]
		}
		if row > 0 {
			fmt.Fprintf(&b, "  %6.1f%%", 100*float64(e.Confusion[i][i])/float64(row))
		}
		b.WriteByte('\n')
	}
	writeCounts(&b, "by language", e.ByLanguage)
	writeCounts(&b, "by tag", e.ByTag)
	if len(e.Misses) > 0 {
		fmt.Fprintf(&b, "\nmisses (%d)\n", len(e.Misses))
		for _, m := range e.Misses {
			fmt.Fprintf(&b, "  line %d: want %s, got %s [%s] %q\n      %s\n", m.Line, m.Want, m.Got, m.Lang, m.Prompt, m.Reason)
		}
	}
	if len(e.LangMisses) > 0 {
		fmt.Fprintf(&b, "\nlanguage misses (%d)\n", len(e.LangMisses))
		for _, m := range e.LangMisses {
			fmt.Fprintf(&b, "  line %d: want %s, got %s %q\n", m.Line, m.Want, m.Got, m.Prompt)
		}
	}
	return b.String()
}

func writeCounts(b *strings.Builder, title string, m map[string]Count) {
	if len(m) == 0 {
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(b, "\n%s\n", title)
	for _, k := range keys {
		fmt.Fprintf(b, "  %-14s %s\n", k, m[k])
	}
}
