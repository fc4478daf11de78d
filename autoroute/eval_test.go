package autoroute

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func evalFile(t *testing.T, path string) *EvalReport {
	t.Helper()
	c, err := New(Rules{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := Eval(c, f)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestLabelledAccuracy holds the default rules to at least 90% on the labelled set.
func TestLabelledAccuracy(t *testing.T) {
	rep := evalFile(t, "testdata/labelled.jsonl")
	if rep.Route.Total < 300 {
		t.Fatalf("labelled set has %d examples, want at least 300", rep.Route.Total)
	}
	if rep.Accuracy() < 0.90 {
		t.Fatalf("accuracy %.3f < 0.90\n%s", rep.Accuracy(), rep)
	}
	if os.Getenv("AUTOROUTE_REPORT") != "" {
		t.Logf("\n%s", rep)
	}
}

// TestHeldOutAccuracy guards the held-out file, written after the classifier was finished and never
// used to tune it: it measures how the rules generalise, so its bar is lower.
func TestHeldOutAccuracy(t *testing.T) {
	rep := evalFile(t, "testdata/heldout.jsonl")
	if rep.Route.Total < 60 {
		t.Fatalf("held-out set has %d examples, want at least 60", rep.Route.Total)
	}
	if rep.Accuracy() < 0.80 {
		t.Fatalf("held-out accuracy %.3f < 0.80\n%s", rep.Accuracy(), rep)
	}
	if os.Getenv("AUTOROUTE_REPORT") != "" {
		t.Logf("\n%s", rep)
	}
}

func TestEvalReport(t *testing.T) {
	c := newDefault(t)
	in := `# comment line

{"prompt": "What is CVE-2021-44228?", "route": "saif", "lang": "english", "tags": ["short"]}
{"prompt": "Prove that 2 is prime", "route": "deepseek-r1", "lang": "english"}
{"prompt": "hello", "route": "saif", "lang": "arabic", "tags": ["short"]}
{"prompt": "hi", "route": "other-route"}
`
	rep, err := Eval(c, strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Route != (Count{Correct: 2, Total: 4}) || rep.Lang != (Count{Correct: 2, Total: 3}) {
		t.Errorf("counts: route %v lang %v", rep.Route, rep.Lang)
	}
	wantRoutes := []string{"saif", "deepseek-r1", "averroes-q", "other-route"}
	wantMatrix := [][]int{{1, 0, 1, 0}, {0, 1, 0, 0}, {0, 0, 0, 0}, {0, 0, 1, 0}}
	if diff := cmp.Diff(wantRoutes, rep.Routes); diff != "" {
		t.Errorf("Routes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantMatrix, rep.Confusion); diff != "" {
		t.Errorf("Confusion (-want +got):\n%s", diff)
	}
	if got := rep.ByTag["short"]; got != (Count{Correct: 1, Total: 2}) {
		t.Errorf("tag short: %v", got)
	}
	if len(rep.Misses) != 2 || rep.Misses[0].Line != 5 || rep.Misses[1].Line != 6 {
		t.Errorf("misses %+v", rep.Misses)
	}
	s := rep.String()
	for _, want := range []string{"route accuracy: 50.0% (2/4)", "language accuracy: 66.7% (2/3)",
		"expected", "recall", "line 5: want saif, got averroes-q", "other-route"} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
}

func TestEvalErrors(t *testing.T) {
	c := newDefault(t)
	tests := []struct {
		name, in string
		line     int
	}{
		{"bad json", "{\"prompt\": \"a\", \"route\": \"saif\"}\n{oops", 2},
		{"no route", `{"prompt": "a"}`, 1},
		{"bad lang", `{"prompt": "a", "route": "saif", "lang": "latin"}`, 1},
		{"unknown field", `{"prompt": "a", "route": "saif", "label": "x"}`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Eval(c, strings.NewReader(tt.in))
			var ee *EvalError
			if !errors.As(err, &ee) || ee.Line != tt.line {
				t.Errorf("Eval = %v, want an *EvalError at line %d", err, tt.line)
			}
		})
	}
}
