//go:build unix

package lifecycle

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestStaleStateTempRemoved: a crash between writing the state file's temporary copy and renaming
// it leaves the copy beside the file, torn or whole. Start removes such copies, of this state file
// only, and loads the file as it is: the order it holds is pre-warmed, and a missing file with
// only a leftover copy is an empty order, not an error (this test failed first: the copies stayed
// behind for ever, one more for each crash).
func TestStaleStateTempRemoved(t *testing.T) {
	for _, tc := range []struct {
		name    string
		saved   []string // nil: no state file, only the leftovers
		running []string
	}{
		{"beside the file", []string{"b", "a"}, []string{"b"}},
		{"without the file", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			state := filepath.Join(dir, "lru.json")
			if tc.saved != nil {
				if err := writeState(state, tc.saved); err != nil {
					t.Fatal(err)
				}
			}
			// The copies writeState makes, as a crash leaves them: torn, empty, and whole.
			var stale []string
			for _, body := range []string{`{"version":1,"rec`, ``, `{"version":1,"recent":["a"]}`} {
				f, err := os.CreateTemp(dir, stateTempPattern(state))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.WriteString(body); err != nil {
					t.Fatal(err)
				}
				_ = f.Close()
				stale = append(stale, f.Name())
			}
			// Files that are not this state file's copies stay.
			kept := []string{filepath.Join(dir, ".other.json.tmp1"), filepath.Join(dir, "lru.json.bak"),
				filepath.Join(dir, ".lru.json")}
			for _, k := range kept {
				if err := os.WriteFile(k, []byte("x"), 0o600); err != nil {
					t.Fatal(err)
				}
			}

			h := newHarness(t, []Spec{inGroup("g", fake("a")), inGroup("g", fake("b"))},
				[]GroupSpec{{Name: "g", Slots: 1}}, Options{StateFile: state})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := h.m.Start(ctx); err != nil {
				t.Fatalf("Start: %v", err)
			}
			defer func() { _ = h.m.Close(ctx) }()
			for _, s := range stale {
				if _, err := os.Stat(s); !os.IsNotExist(err) {
					t.Errorf("stale copy %s still there (%v)", filepath.Base(s), err)
				}
			}
			for _, k := range kept {
				if _, err := os.Stat(k); err != nil {
					t.Errorf("%s, not a copy of the state file, was removed: %v", filepath.Base(k), err)
				}
			}
			if tc.running != nil {
				eventually(t, "the saved order to be pre-warmed", func() bool {
					return slices.Equal(tc.running, h.running())
				})
			} else if got := h.running(); len(got) != 0 {
				t.Errorf("pre-warmed %v from a leftover copy", got)
			}
			if got, err := readState(state); err != nil || !cmp.Equal(tc.saved, got) {
				t.Errorf("state file after Start: %v, %v; want %v", got, err, tc.saved)
			}
		})
	}
}
