package config

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestSummaryGolden pins the compiled form of a config that uses every key: a change in what a
// config means shows up here as a diff to review.
func TestSummaryGolden(t *testing.T) {
	const secret = "sk-or-very-secret"
	cfg, err := Load("testdata/full.toml", env("OPENROUTER_API_KEY", secret))
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.Summary()
	if strings.Contains(got, secret) || strings.Contains(got, hashTest) {
		t.Error("Summary shows a secret or a key hash")
	}
	const golden = "testdata/full.summary.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./config -run TestSummaryGolden -update)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("Summary mismatch (-%s +got):\n%s", golden, diff)
	}
}

func TestSummaryOpen(t *testing.T) {
	cfg, err := Parse([]byte(minimal), "min.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Summary(); !strings.Contains(got, "keys: none, the gateway is open") {
		t.Errorf("Summary of an open config does not say so:\n%s", got)
	}
}
