package lifecycle

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestNewRejects(t *testing.T) {
	ok := func(name, group string) Spec {
		return Spec{Name: name, Group: group, Command: []string{"llama-server"},
			URL: "http://127.0.0.1:{port}/v1", HealthURL: "http://127.0.0.1:{port}/health"}
	}
	idle := ok("p", "g")
	idle.IdleStop = time.Minute
	tests := []struct {
		name    string
		specs   []Spec
		groups  []GroupSpec
		wantErr string // "" = valid
	}{
		{"valid", []Spec{ok("a", "g"), ok("b", "g"), ok("c", "")},
			[]GroupSpec{{Name: "g", Slots: 1}}, ""},
		{"valid pinned", []Spec{ok("r", "g"), ok("a", "g")},
			[]GroupSpec{{Name: "g", Slots: 2, Pinned: []string{"r"}}}, ""},
		{"duplicate name", []Spec{ok("a", ""), ok("a", "")}, nil, "declared twice"},
		{"empty command", []Spec{{Name: "a", URL: "u", HealthURL: "h"}}, nil, "command is empty"},
		{"no health url", []Spec{{Name: "a", Command: []string{"x"}, URL: "u"}}, nil, "health url is empty"},
		{"undeclared group", []Spec{ok("a", "nope")}, nil, "group nope is not declared"},
		{"zero slots", []Spec{ok("a", "g")}, []GroupSpec{{Name: "g"}}, "slots must be at least 1"},
		{"pinned elsewhere", []Spec{ok("a", "g"), ok("b", "")},
			[]GroupSpec{{Name: "g", Slots: 2, Pinned: []string{"b"}}}, "is not a member"},
		{"pinned unknown", []Spec{ok("a", "g")},
			[]GroupSpec{{Name: "g", Slots: 2, Pinned: []string{"x"}}}, "not a managed target"},
		{"too many pinned", []Spec{ok("a", "g"), ok("b", "g")},
			[]GroupSpec{{Name: "g", Slots: 1, Pinned: []string{"a", "b"}}}, "do not fit"},
		{"all slots pinned", []Spec{ok("a", "g"), ok("b", "g")},
			[]GroupSpec{{Name: "g", Slots: 1, Pinned: []string{"a"}}}, "could never start"},
		{"pinned with idle_stop", []Spec{idle, ok("a", "g")},
			[]GroupSpec{{Name: "g", Slots: 2, Pinned: []string{"p"}}}, "has idle_stop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.specs, tt.groups, Options{})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("New: %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestTail(t *testing.T) {
	long := strings.Repeat("x", tailLineMax+50)
	tests := []struct {
		name   string
		writes []string
		want   []string
	}{
		{"split writes", []string{"one\ntw", "o\nthr"}, []string{"one", "two", "thr"}},
		{"long line capped", []string{long + "\n"}, []string{long[:tailLineMax]}},
		{"keeps the last lines", func() []string {
			var w []string
			for i := range tailLines + 5 {
				w = append(w, fmt.Sprintf("line %d\n", i))
			}
			return w
		}(), func() []string {
			var w []string
			for i := 5; i < tailLines+5; i++ {
				w = append(w, fmt.Sprintf("line %d", i))
			}
			return w
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tl tail
			for _, w := range tt.writes {
				if _, err := tl.Write([]byte(w)); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(tt.want, tl.Lines()); diff != "" {
				t.Errorf("Lines (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStateRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	if got, err := readState(path); err != nil || got != nil {
		t.Fatalf("missing file: %v, %v; want nothing", got, err)
	}
	want := []string{"c", "a", "b"}
	if err := writeState(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := readState(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*tmp*"))
	if len(matches) != 0 {
		t.Errorf("temp files left behind: %v", matches)
	}
}

func TestResolve(t *testing.T) {
	argv, url, health, _, err := resolve(Spec{Command: []string{"srv", "--port", "{port}"},
		URL: "http://127.0.0.1:{port}/v1/", HealthURL: "http://127.0.0.1:{port}/health"}, freePort)
	if err != nil {
		t.Fatal(err)
	}
	port := argv[2]
	want := []string{"srv", "--port", port, "http://127.0.0.1:" + port + "/v1", "http://127.0.0.1:" + port + "/health"}
	if diff := cmp.Diff(want, append(argv, url, health)); diff != "" || port == "{port}" || port == "" {
		t.Errorf("resolve (-want +got):\n%s", diff)
	}
}
