package autoroute

import (
	"os"
	"testing"
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
