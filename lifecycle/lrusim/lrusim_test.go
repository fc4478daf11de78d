package lrusim

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the committed trace and golden output")

// The committed trace's parameters: 8 specialists, Zipf s = 1, one request in two a follow-up.
const (
	traceSeed        = 1
	traceRequests    = 1000
	traceSpecialists = 8
	traceZipfS       = 1.0
	traceLocality    = 0.5
	tracePath        = "testdata/trace-1000.txt"
)

func split(s string) []string { return strings.Fields(s) }

func TestSimulateHandComputed(t *testing.T) {
	type counts struct{ Hits, Misses int }
	tests := []struct {
		name  string
		trace string
		cfg   Config
		want  map[Policy]counts
	}{
		{
			// A cycle one longer than the slots defeats LRU and LFU completely; Belady keeps the
			// member needed soonest.
			name: "cycle", trace: "a b c a b c", cfg: Config{Slots: 2},
			want: map[Policy]counts{LRU: {0, 6}, LFU: {0, 6}, Belady: {2, 4}},
		},
		{
			// LFU holds on to a (3 requests) while b and c alternate through the other slot.
			name: "LFU clings to the old favourite", trace: "a a a b c b c b c a", cfg: Config{Slots: 2},
			want: map[Policy]counts{LRU: {6, 4}, LFU: {2, 8}, Belady: {6, 4}},
		},
		{
			name: "LFU keeps the frequent one", trace: "a a b c a d a", cfg: Config{Slots: 2},
			want: map[Policy]counts{LRU: {2, 5}, LFU: {3, 4}, Belady: {3, 4}},
		},
		{
			// The pinned router takes a slot and its requests hit; a and b share the one left.
			name: "pinned", trace: "r a r b r a", cfg: Config{Slots: 2, Pinned: []string{"r"}},
			want: map[Policy]counts{LRU: {3, 3}, LFU: {3, 3}, Belady: {3, 3}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[Policy]counts{}
			for _, p := range Policies {
				r, err := Simulate(p, split(tt.trace), tt.cfg)
				if err != nil {
					t.Fatal(err)
				}
				got[p] = counts{r.Hits, r.Misses}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestSwapTime(t *testing.T) {
	r, err := Simulate(LRU, split("r a r b r a"), Config{Slots: 2, Pinned: []string{"r"}, Swap: DefaultSwap})
	if err != nil {
		t.Fatal(err)
	}
	if want := 7410 * time.Millisecond; r.SwapTime != want || r.HitRate() != 0.5 {
		t.Errorf("swap %s, hit rate %v; want %s, 0.5", r.SwapTime, r.HitRate(), want)
	}
}

// TestBeladyBounds checks on many generated traces that no policy beats the offline optimum.
func TestBeladyBounds(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		trace := Generate(seed, 500, 8, 1.0, 0.3)
		for slots := 2; slots <= 6; slots++ {
			rs, err := SimulateAll(trace, Config{Slots: slots, Pinned: []string{"router"}})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				if r.Hits+r.Misses != r.Requests {
					t.Fatalf("seed %d slots %d %s: %d hits + %d misses != %d", seed, slots, r.Policy, r.Hits, r.Misses, r.Requests)
				}
				if r.Hits > rs[2].Hits {
					t.Errorf("seed %d slots %d: %s %d hits > Belady %d", seed, slots, r.Policy, r.Hits, rs[2].Hits)
				}
			}
		}
	}
}

func TestSimulateRejects(t *testing.T) {
	tests := []Config{
		{Slots: 0},
		{Slots: 1, Pinned: []string{"router"}},
		{Slots: 2, Pinned: []string{""}},
	}
	for _, c := range tests {
		t.Run(fmt.Sprint(c), func(t *testing.T) {
			if _, err := Simulate(LRU, split("a b"), c); err == nil {
				t.Error("no error")
			}
		})
	}
}

func TestGenerate(t *testing.T) {
	a := Generate(7, 2000, 8, 1.0, 0.5)
	if diff := cmp.Diff(a, Generate(7, 2000, 8, 1.0, 0.5)); diff != "" {
		t.Fatalf("same seed, different traces:\n%s", diff)
	}
	if cmp.Equal(a, Generate(8, 2000, 8, 1.0, 0.5)) {
		t.Error("different seeds gave the same trace")
	}
	count := map[string]int{}
	repeats := 0
	for i, name := range a {
		count[name]++
		if i > 0 && a[i-1] == name {
			repeats++
		}
	}
	if len(a) != 2000 || len(count) != 8 {
		t.Fatalf("%d requests over %d names, want 2000 over 8", len(a), len(count))
	}
	for k := range 8 {
		if count[SpecialistName(k)] == 0 {
			t.Errorf("%s never requested", SpecialistName(k))
		}
	}
	if count["spec-1"] <= 2*count["spec-8"] {
		t.Errorf("Zipf: spec-1 %d requests, spec-8 %d; want the first far more popular", count["spec-1"], count["spec-8"])
	}
	// Half repeat by locality, and some Zipf draws repeat by chance.
	if repeats < 1000 || repeats > 1400 {
		t.Errorf("%d immediate repeats of 2000, want about 1000 plus chance", repeats)
	}
	same := Generate(1, 50, 8, 1.0, 1)
	for _, name := range same {
		if name != same[0] {
			t.Fatalf("locality 1 changed name: %v", same)
		}
	}
	if Generate(1, 0, 8, 1, 0) != nil || Generate(1, 10, 0, 1, 0) != nil {
		t.Error("degenerate sizes gave a trace")
	}
}

// TestGenerateCommand: the committed trace is exactly what `gateway lru-sim generate` prints
// with its default flags.
func TestGenerateCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"generate"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want, err := os.ReadFile(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("generate printed something other than %s:\n%.300s", tracePath, out.String())
	}
	if code := Main([]string{"generate", "--locality", "2"}, &out, &errb); code != 2 {
		t.Errorf("bad locality: exit %d", code)
	}
}

// TestCommittedTrace keeps testdata/trace-1000.txt equal to what Generate produces, so the file
// the docs quote cannot drift from the generator.
func TestCommittedTrace(t *testing.T) {
	var want bytes.Buffer
	header := GenerateHeader(traceSeed, traceRequests, traceSpecialists, traceZipfS, traceLocality)
	trace := Generate(traceSeed, traceRequests, traceSpecialists, traceZipfS, traceLocality)
	if err := WriteTrace(&want, header, trace); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(tracePath, want.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.String(), string(got)); diff != "" {
		t.Fatalf("%s differs from the generator (-generated +file):\n%s", tracePath, diff)
	}
	parsed, err := ParseTrace(bytes.NewReader(got))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(trace, parsed); diff != "" {
		t.Errorf("parsed trace (-want +got):\n%s", diff)
	}
}

// TestMainPaperShape runs the paper's setting on the committed trace: the router pinned and three
// slots for the specialists.
func TestMainPaperShape(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := Main([]string{"--trace", tracePath, "--slots", "4", "--pinned", "router"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	golden := filepath.Join("testdata", "paper-shape.golden")
	if *update {
		if err := os.WriteFile(golden, stdout.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), stdout.String()); diff != "" {
		t.Errorf("output (-golden +got):\n%s", diff)
	}
	t.Logf("\n%s", stdout.String())
}

func TestMainErrors(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"no trace", []string{"--slots", "3"}, 2, "--trace is required"},
		{"no slots", []string{"--trace", tracePath}, 2, "--slots must be at least 1"},
		{"pinned fill the slots", []string{"--trace", tracePath, "--slots", "2", "--pinned", "a,b"}, 2, "no slot beside 2 pinned"},
		{"stray argument", []string{"--trace", tracePath, "--slots", "2", "extra"}, 2, "unexpected arguments: extra"},
		{"bad flag", []string{"--slotz", "2"}, 2, "flag provided but not defined"},
		{"missing file", []string{"--trace", "testdata/nope.txt", "--slots", "2"}, 1, "no such file"},
		// generate's stray word was answered with its flags' ranges, which the defaults all meet.
		{"generate: stray argument", []string{"generate", "500"}, 2, "unexpected arguments: 500"},
		{"generate: stray argument after its flags", []string{"generate", "--requests", "5", "extra"}, 2, "unexpected arguments: extra"},
		{"generate: out of range", []string{"generate", "--locality", "2"}, 2, "--locality from 0 to 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := Main(tt.args, &stdout, &stderr); code != tt.wantCode {
				t.Errorf("exit %d, want %d", code, tt.wantCode)
			}
			if !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tt.wantErr)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout not empty: %q", stdout.String())
			}
		})
	}
}

func TestParseTrace(t *testing.T) {
	got, err := ParseTrace(strings.NewReader("# header\n\n  spec-1 \nspec-2\r\n#x\nspec-1"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"spec-1", "spec-2", "spec-1"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func FuzzTraceRoundTrip(f *testing.F) {
	f.Add("a\nb\na", "header")
	f.Add("spec-1", "two\nlines")
	f.Fuzz(func(t *testing.T, names, header string) {
		var trace []string
		for _, n := range strings.Split(names, "\n") {
			if n = strings.TrimSpace(n); n != "" && !strings.HasPrefix(n, "#") {
				trace = append(trace, n)
			}
		}
		var buf bytes.Buffer
		if err := WriteTrace(&buf, header, trace); err != nil {
			t.Fatal(err)
		}
		got, err := ParseTrace(&buf)
		if err != nil {
			t.Skip("line longer than the scanner's buffer")
		}
		if strings.Join(trace, "\n") != strings.Join(got, "\n") {
			t.Errorf("round trip: wrote %q, read %q", trace, got)
		}
	})
}
