package conformance

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Format names a report layout.
type Format string

const (
	// FormatTable is for a terminal: one line per check, then the evidence
	// of every FAIL and WARN.
	FormatTable Format = "table"
	// FormatJSON is machine-readable: run metadata and one object per check.
	FormatJSON Format = "json"
	// FormatJUnit is JUnit XML for CI systems; WARN passes with a note.
	FormatJUnit Format = "junit"
	// FormatMarkdown is one compatibility-matrix row (with its header),
	// followed by the failures and warnings.
	FormatMarkdown Format = "markdown"
)

// ParseFormat accepts table, json, junit or markdown.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case FormatTable, FormatJSON, FormatJUnit, FormatMarkdown:
		return f, nil
	}
	return "", &UsageError{Msg: fmt.Sprintf("--format %q: want table, json, junit or markdown", s)}
}

// Write renders the report.
func (r *Report) Write(w io.Writer, f Format) error {
	switch f {
	case FormatTable:
		return r.writeTable(w)
	case FormatJSON:
		return r.writeJSON(w)
	case FormatJUnit:
		return r.writeJUnit(w)
	case FormatMarkdown:
		return r.writeMarkdown(w)
	}
	return &UsageError{Msg: fmt.Sprintf("unknown format %q", f)}
}

func (r *Report) verdictLine() string {
	s := r.Summary()
	line := fmt.Sprintf("%d checks: %d pass, %d fail, %d warn, %d skip", s.Total, s.Pass, s.Fail, s.Warn, s.Skip)
	if r.ExitCode() != 0 {
		return line + " (a required check failed)"
	}
	return line + " (every required check passed or was skipped)"
}

func (r *Report) writeTable(w io.Writer) error {
	var buf bytes.Buffer
	r.renderTable(&buf)
	// tabwriter pads the last column too; trailing blanks only make diffs noisy.
	lines := strings.Split(buf.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	_, err := io.WriteString(w, printable(strings.Join(lines, "\n")))
	return err
}

// printable makes text that quotes the server under test safe for a
// terminal: invalid UTF-8 becomes U+FFFD and control characters other than
// newline and tab are shown escaped, so an answer holding ESC cannot drive
// the reader's terminal (colours, cursor moves, a rewritten verdict line).
// JUnit needs it too: encoding/xml writes CDATA verbatim, and a control
// character there makes the whole report a document no CI can parse.
func printable(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexFunc(s, isControl) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isControl(r) {
			fmt.Fprintf(&b, "\\u%04x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isControl(r rune) bool {
	return r != '\n' && r != '\t' && (r < 0x20 || (r >= 0x7f && r < 0xa0) || r == 0xfffe || r == 0xffff)
}

func (r *Report) renderTable(ew io.Writer) {
	fmt.Fprintf(ew, "Conformance of %s (model %s)\n", r.BaseURL, r.Model)
	if r.ModelChoice != "" {
		fmt.Fprintf(ew, "Model: %s\n", r.ModelChoice)
	}
	if r.EmbeddingChoice != "" {
		fmt.Fprintf(ew, "Embedding model %s: %s\n", r.EmbeddingModel, r.EmbeddingChoice)
	}
	fmt.Fprintln(ew)
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RESULT\tGRADE\tCHECK\tDETAIL")
	for _, c := range r.Checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Result, c.Grade, c.ID, oneLine(c.Reason, 90))
	}
	tw.Flush()
	first := true
	for _, c := range r.Checks {
		if c.Evidence == nil {
			continue
		}
		if first {
			fmt.Fprint(ew, "\nEvidence\n")
			first = false
		}
		fmt.Fprintf(ew, "\n%s %s %s: %s\n", c.Result, c.Grade, c.ID, c.Title)
		fmt.Fprintf(ew, "  expected: %s\n  seen:     %s\n", c.Evidence.Expected, c.Evidence.Seen)
		if c.Evidence.Excerpt != "" {
			fmt.Fprintln(ew, "  exchange:")
			for _, l := range strings.Split(c.Evidence.Excerpt, "\n") {
				fmt.Fprintf(ew, "    %s\n", l)
			}
		}
	}
	fmt.Fprintf(ew, "\n%s\n", r.verdictLine())
}

func oneLine(s string, n int) string {
	return clip(strings.Join(strings.Fields(s), " "), n)
}

type jsonReport struct {
	BaseURL         string        `json:"base_url"`
	Model           string        `json:"model"`
	ModelChoice     string        `json:"model_choice,omitempty"`
	EmbeddingModel  string        `json:"embedding_model"`
	EmbeddingChoice string        `json:"embedding_model_choice,omitempty"`
	Strict          bool          `json:"strict"`
	Started         string        `json:"started"`
	DurationMS      int64         `json:"duration_ms"`
	ExitCode        int           `json:"exit_code"`
	Summary         Summary       `json:"summary"`
	Checks          []CheckResult `json:"checks"`
}

func (r *Report) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	// Excerpts quote "<" and ">" constantly; \u003c would make them unreadable.
	enc.SetEscapeHTML(false)
	return enc.Encode(jsonReport{
		BaseURL: r.BaseURL, Model: r.Model, ModelChoice: r.ModelChoice, EmbeddingModel: r.EmbeddingModel,
		EmbeddingChoice: r.EmbeddingChoice, Strict: r.Strict,
		Started: r.Started.UTC().Format("2006-01-02T15:04:05Z07:00"), DurationMS: r.Duration.Milliseconds(),
		ExitCode: r.ExitCode(), Summary: r.Summary(), Checks: r.Checks,
	})
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Timestamp  string          `xml:"timestamp,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut *junitText    `xml:"system-out,omitempty"`
}

// Bodies are CDATA so multi-line evidence stays readable in CI viewers.
type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",cdata"`
}

type junitText struct {
	Body string `xml:",cdata"`
}

func (r *Report) writeJUnit(w io.Writer) error {
	s := r.Summary()
	suite := junitSuite{
		Name: "conformance", Tests: s.Total, Failures: s.Fail, Skipped: s.Skip,
		Timestamp: r.Started.UTC().Format("2006-01-02T15:04:05"),
		Properties: []junitProperty{
			{Name: "base_url", Value: r.BaseURL}, {Name: "model", Value: printable(r.Model)},
			{Name: "embedding_model", Value: r.EmbeddingModel}, {Name: "strict", Value: fmt.Sprint(r.Strict)},
		},
	}
	if r.ModelChoice != "" {
		suite.Properties = append(suite.Properties, junitProperty{Name: "model_choice", Value: printable(r.ModelChoice)})
	}
	if r.EmbeddingChoice != "" {
		suite.Properties = append(suite.Properties, junitProperty{Name: "embedding_model_choice", Value: printable(r.EmbeddingChoice)})
	}
	for _, c := range r.Checks {
		tc := junitCase{Name: c.ID, Classname: "conformance." + group(c.ID)}
		switch c.Result {
		case Fail:
			tc.Failure = &junitMessage{Message: printable(c.Reason), Type: string(c.Grade), Body: printable(evidenceText(c))}
		case Skip:
			tc.Skipped = &junitMessage{Message: printable(c.Reason)}
		case Warn:
			tc.SystemOut = &junitText{Body: "WARN (" + string(c.Grade) + "): " + printable(evidenceText(c))}
		}
		suite.Cases = append(suite.Cases, tc)
	}
	doc := junitSuites{Name: "conformance", Tests: s.Total, Failures: s.Fail, Skipped: s.Skip,
		Time: fmt.Sprintf("%.3f", r.Duration.Seconds()), Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func evidenceText(c CheckResult) string {
	if c.Evidence == nil {
		return c.Title
	}
	s := fmt.Sprintf("%s\nexpected: %s\nseen: %s", c.Title, c.Evidence.Expected, c.Evidence.Seen)
	if c.Evidence.Excerpt != "" {
		s += "\n" + c.Evidence.Excerpt
	}
	return s
}

// group is the report section of a check id: its first segment, with the
// streaming chat checks split out because they are a family of their own.
func group(id string) string {
	if strings.HasPrefix(id, "chat.stream.") {
		return "chat.stream"
	}
	g, _, _ := strings.Cut(id, ".")
	return g
}

func groups() []string {
	return []string{"models", "chat", "chat.stream", "tools", "format", "logprobs", "completions", "embeddings", "errors", "sdk"}
}

func (r *Report) writeMarkdown(w io.Writer) error {
	var buf bytes.Buffer
	r.renderMarkdown(&buf)
	_, err := io.WriteString(w, printable(buf.String()))
	return err
}

func (r *Report) renderMarkdown(ew io.Writer) {
	head := []string{"Server", "Model", "MUST", "SHOULD"}
	head = append(head, groups()...)
	row := []string{mdEscape(r.BaseURL), mdEscape(r.Model), r.gradeCell(Must), r.gradeCell(Should)}
	for _, g := range groups() {
		row = append(row, r.groupCell(g))
	}
	fmt.Fprintf(ew, "| %s |\n", strings.Join(head, " | "))
	fmt.Fprintf(ew, "|%s\n", strings.Repeat(" --- |", len(head)))
	fmt.Fprintf(ew, "| %s |\n", strings.Join(row, " | "))
	var notes []string
	for _, c := range r.Checks {
		if c.Result == Fail || c.Result == Warn {
			notes = append(notes, fmt.Sprintf("- %s `%s` (%s): %s", c.Result, c.ID, c.Grade, mdEscape(oneLine(c.Reason, 160))))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintf(ew, "\n%s\n", strings.Join(notes, "\n"))
	}
	if r.ModelChoice != "" {
		fmt.Fprintf(ew, "\nModel %s: %s\n", mdEscape(r.Model), mdEscape(r.ModelChoice))
	}
	if r.EmbeddingChoice != "" {
		// A paragraph of its own: one line after Model's would run into it.
		fmt.Fprintf(ew, "\nEmbedding model %s: %s\n", mdEscape(r.EmbeddingModel), mdEscape(r.EmbeddingChoice))
	}
}

type tally struct{ pass, fail, warn, skip int }

func (t *tally) add(res Result) {
	switch res {
	case Pass:
		t.pass++
	case Fail:
		t.fail++
	case Warn:
		t.warn++
	case Skip:
		t.skip++
	}
}

func (t tally) cell() string {
	judged := t.pass + t.fail + t.warn
	switch {
	case judged == 0 && t.skip == 0:
		return "–"
	case judged == 0:
		return "skipped"
	}
	mark := "✅"
	if t.fail > 0 {
		mark = "❌"
	} else if t.warn > 0 {
		mark = "⚠️"
	}
	s := fmt.Sprintf("%s %d/%d", mark, t.pass, judged)
	if t.skip > 0 {
		s += fmt.Sprintf(" (%d skipped)", t.skip)
	}
	return s
}

func (r *Report) gradeCell(g Grade) string {
	var t tally
	for _, c := range r.Checks {
		if c.Grade == g {
			t.add(c.Result)
		}
	}
	return t.cell()
}

func (r *Report) groupCell(g string) string {
	var t tally
	for _, c := range r.Checks {
		if group(c.ID) == g {
			t.add(c.Result)
		}
	}
	return t.cell()
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
