//go:build unix

package lifecycle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A child gets the gateway's environment without the variables its spec withholds, and with
// what its Env adds.
func TestChildEnvironment(t *testing.T) {
	t.Setenv("HAYULA_TEST_CLOUD_KEY", "sk-cloud")
	t.Setenv("HAYULA_TEST_OWN_KEY", "sk-own")
	file := filepath.Join(t.TempDir(), "env")
	s := fake("a", "-env-file", file)
	s.Withhold = []string{"HAYULA_TEST_CLOUD_KEY"}
	s.Env = []string{"HAYULA_TEST_ADDED=1"}
	h := newHarness(t, []Spec{s}, nil, Options{})
	h.use(t, "a")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, kv := range strings.Split(string(b), "\n") {
		got[kv] = true
	}
	for kv, want := range map[string]bool{
		"HAYULA_TEST_CLOUD_KEY=sk-cloud": false,
		"HAYULA_TEST_OWN_KEY=sk-own":     true,
		"HAYULA_TEST_ADDED=1":            true,
	} {
		if got[kv] != want {
			t.Errorf("child environment has %s: %v, want %v", kv, got[kv], want)
		}
	}
	if !got["PATH="+os.Getenv("PATH")] {
		t.Error("child environment lost PATH")
	}
}
