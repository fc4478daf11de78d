//go:build linux

package main

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const cgSample = `desc: I1 cache:         32768 B, 64 B, 8-way associative
cmd: ./prog
events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw
fl=/src/a.go
fn=main.f
10 100 5 0 40 2 1 10 1 2
11 50
fn=main.g
3 7 1
fl=/src/b.go
fn=main.f
4 1 0 0 0 0 0 0 3
summary: 158 6 0 40 2 0 10 4 0
`

func TestParseCachegrind(t *testing.T) {
	p, err := parseCachegrind(strings.NewReader(cgSample))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]counts{
		"main.f\t/src/a.go": {Ir: 150, I1mr: 5, D1mr: 2, D1mw: 1, DLm: 3},
		"main.g\t/src/a.go": {Ir: 7, I1mr: 1},
		"main.f\t/src/b.go": {Ir: 1, D1mw: 3},
	}
	if len(p) != len(want) {
		t.Fatalf("got %d functions, want %d: %v", len(p), len(want), p)
	}
	for k, w := range want {
		if p[k] != w {
			t.Errorf("%q: got %+v, want %+v", k, p[k], w)
		}
	}
	for _, bad := range []string{"fn=x\n1 2 3\n", "events: Ir\nfn=x\n1 2 3\n", "events: Ir\nfn=x\n1 z\n", ""} {
		if _, err := parseCachegrind(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestPerRequest(t *testing.T) {
	short := cgProfile{"main.f\ta.go": {Ir: 100, I1mr: 10}, "main.f\tb.go": {Ir: 10}, "main.start\ta.go": {Ir: 500, I1mr: 50}}
	long := cgProfile{"main.f\ta.go": {Ir: 300, I1mr: 30}, "main.f\tb.go": {Ir: 30}, "main.start\ta.go": {Ir: 500, I1mr: 50},
		"main.g\ta.go": {Ir: 40, I1mr: 40}}
	total, fns := perRequest(short, long, 10)
	if total.Ir != 26 || total.I1mr != 6 {
		t.Errorf("total %+v, want Ir 26, I1mr 6", total)
	}
	if len(fns) != 3 || fns[0].Name != "main.g" || fns[0].I1mr != 4 || fns[1].Name != "main.f" || fns[1].Ir != 22 ||
		fns[2].Name != "main.start" || fns[2].Ir != 0 {
		t.Errorf("functions %+v", fns)
	}
}

func TestArea(t *testing.T) {
	for fn, want := range map[string]string{
		"github.com/hayula/gateway/internal/h1.(*conn).readRequest": "internal/h1",
		"github.com/hayula/gateway/server.fastWire":                 "server",
		"github.com/hayula/gateway/server.(*Server).run.func1":      "server",
		"runtime.findRunnable":                                      "Go runtime",
		"internal/runtime/maps.(*Map).Clear":                        "Go runtime",
		"indexbytebody":                                             "Go runtime",
		"internal/poll.(*FD).Writev":                                "net, poll, syscall",
		"bufio.(*Reader).fill":                                      "std: bufio",
		"internal/strconv.readFloat":                                "std: internal/strconv",
		"github.com/julienschmidt/httprouter.(*Router).ServeHTTP":   "github.com/julienschmidt/httprouter",
		"???": "???",
	} {
		if got := area(fn); got != want {
			t.Errorf("area(%q) = %q, want %q", fn, got, want)
		}
	}
}

// TestCount builds this package as --count does (go build keeps the symbols), patches it, and
// counts it as goblind under cachegrind.
func TestCount(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the patch is for linux/amd64 binaries, the only ones valgrind is run on here")
	}
	bin, dir := built(t, "./bench")
	t.Run("patch", func(t *testing.T) { testPatchCputicks(t, bin) })
	t.Run("goblind", func(t *testing.T) { testCountGoBlind(t, bin) })
	t.Run("callgrind", func(t *testing.T) { testCallgrindGoBlind(t, bin) })
	t.Run("i1", func(t *testing.T) { testCountI1GoBlind(t, bin) })
	// A stripped binary (go run, go test) is refused with a reason.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	stripped := filepath.Join(dir, "stripped")
	if err := copyFile(exe, stripped); err != nil {
		t.Fatal(err)
	}
	if f, err := elf.Open(stripped); err == nil {
		_, serr := f.Symbols()
		_ = f.Close()
		if serr != nil {
			if err := patchCputicks(stripped); err == nil || !strings.Contains(err.Error(), "go build") {
				t.Errorf("a stripped binary: %v", err)
			}
		}
	}
}

// patchCputicks changes one byte of a Go binary: runtime.cputicks's branch on RDTSCP.
func testPatchCputicks(t *testing.T, bin string) {
	path := filepath.Join(t.TempDir(), "prog")
	if err := copyFile(bin, path); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	if err := patchCputicks(path); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	if len(after) != len(before) {
		t.Fatalf("size %d → %d", len(before), len(after))
	}
	var at []int
	for i := range before {
		if before[i] != after[i] {
			at = append(at, i)
		}
	}
	if len(at) != 1 || before[at[0]] != 0x75 || after[at[0]] != 0xeb {
		t.Fatalf("changed bytes at %v", at)
	}
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	for _, s := range syms {
		if s.Name == "runtime.cputicks.abi0" {
			for _, p := range f.Progs {
				if p.Type == elf.PT_LOAD && s.Value >= p.Vaddr && s.Value < p.Vaddr+p.Filesz {
					if off := int(s.Value - p.Vaddr + p.Off); at[0] != off+7 {
						t.Errorf("changed byte %d, want cputicks+7 = %d", at[0], off+7)
					}
				}
			}
		}
	}
	// Patched once, it is no longer what the patch expects.
	if err := patchCputicks(path); err == nil {
		t.Error("a second patch was accepted")
	}
	if err := patchCputicks(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("a missing file was accepted")
	}
}

// patchedGoBlind is goblind (a copy of built, patched for valgrind) in front of a fake upstream,
// for a count or a profile under valgrind, and a directory for the run; the test is skipped
// when a tool it needs is not installed.
func patchedGoBlind(t *testing.T, built string, tools ...string) (countSpec, *fakeUpstream, string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skip(tool + " is not installed")
		}
	}
	f := newFakeUpstream(4, 0)
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	bin := filepath.Join(dir, "goblind")
	if err := copyFile(built, bin); err != nil {
		t.Fatal(err)
	}
	if err := patchCputicks(bin); err != nil {
		t.Fatal(err)
	}
	return goblindCountSpec(bin, strings.TrimPrefix(srv.URL, "http://")), f, dir
}

// countTwenty is spec's count per request as --count takes it, over 20 requests: runs of 20 and
// 40 after 5 of warm-up, the difference divided by 20.
func countTwenty(t *testing.T, spec countSpec, dir string, row countRow) (counts, []fnCount) {
	t.Helper()
	short, err := countRun(context.Background(), spec, dir, 5, 20, row, "")
	if err != nil {
		t.Fatal(err)
	}
	long, err := countRun(context.Background(), spec, dir, 5, 40, row, "")
	if err != nil {
		t.Fatal(err)
	}
	return perRequest(short, long, 20)
}

// A count of goblind under cachegrind, as --count does it, against the fake upstream: each run
// answers every request, and the difference per request is the relay's work.
func testCountGoBlind(t *testing.T, built string) {
	spec, f, dir := patchedGoBlind(t, built, "valgrind")
	body := chatBody("m", false, 512)
	row := countRow{name: "chat", body: body, want: f.chat}
	// Over 20 requests the runtime's own work (a collection, sysmon) can outweigh the relay's in
	// the totals, either way: the relay's function is what each request runs, exactly.
	total, fns := countTwenty(t, spec, dir, row)
	var relay float64
	for _, fn := range fns {
		if strings.HasPrefix(fn.Name, "main.relayMessage") {
			relay += fn.Ir
		}
	}
	if relay < 50 {
		t.Errorf("main.relayMessage ran %.0f instructions a request: %v", relay, fns[:min(len(fns), 10)])
	}
	md := countMarkdown([]countResult{{name: "goblind", row: "chat", total: total, fns: fns}}, 10, 1, 5, false)
	if !bytes.Contains([]byte(md), []byte("| chat | goblind |")) {
		t.Errorf("report:\n%s", md)
	}

	// A row of fresh connections accepts one a request; kept alive, none.
	accepts := func(fns []fnCount) (n float64) {
		for _, fn := range fns {
			if strings.HasPrefix(fn.Name, "internal/poll.(*FD).Accept") {
				n += fn.Ir
			}
		}
		return n
	}
	if a := accepts(fns); a > 5 {
		t.Errorf("kept alive, accepting ran %.0f instructions a request", a)
	}
	row.fresh = true
	if _, fns = countTwenty(t, spec, dir, row); accepts(fns) < 20 {
		t.Errorf("a new connection each: accepting ran %.0f instructions a request", accepts(fns))
	}
}

// TestCountMarkdownByInstructions: the gateway's chat is listed twice, by misses and by
// instructions, each table in its own order.
func TestCountMarkdownByInstructions(t *testing.T) {
	fns := []fnCount{
		{"github.com/hayula/gateway/server.run", counts{Ir: 100, I1mr: 40}},
		{"github.com/hayula/gateway/internal/jsonx.scanString", counts{Ir: 9000, I1mr: 15}},
		{"runtime.memmove", counts{Ir: 1200, I1mr: 19}},
	}
	md := countMarkdown([]countResult{{name: "gateway", row: "chat", total: counts{Ir: 10300, I1mr: 74}, fns: fns}, {name: "nginx", row: "chat", failed: "nginx: cachegrind wrote no output"}}, 10, 1, 2, false)
	if !strings.Contains(md, "| chat | nginx | failed: nginx: cachegrind wrote no output | | |") {
		t.Errorf("a column that failed is not reported as failed:\n%s", md)
	}
	_, byIr, ok := strings.Cut(md, "the 2 functions with the most instructions")
	if !ok {
		t.Fatalf("no table by instructions:\n%s", md)
	}
	want := "| `internal/jsonx.scanString` | 9000 | 15.0 |\n| `runtime.memmove` | 1200 | 19.0 |\n"
	if !strings.Contains(byIr, want) || strings.Contains(byIr, "server.run") {
		t.Errorf("table by instructions:\n%s\nwant the two largest first:\n%s", byIr, want)
	}
	if byMiss, _, _ := strings.Cut(md, "most instructions"); !strings.Contains(byMiss, "| `server.run` | 40.0 | 100 |\n| `internal/jsonx.scanString` | 15.0 | 9000 |") {
		t.Errorf("table by misses changed:\n%s", byMiss)
	}
}

// TestCountRunComparesAnswers: --count's runs hold every answer to the fake upstream's bytes,
// not only to its length: counted, an answer of other bytes (an error, another path through the
// proxy) would be what the count measured.
func TestCountRunComparesAnswers(t *testing.T) {
	f := newFakeUpstream(2, 0)
	for _, tc := range []struct {
		name   string
		answer []byte
		ok     bool
	}{{"as sent", f.chat, true}, {"a byte changed", bytes.Replace(f.chat, []byte("fixed answer"), []byte("fixed ANSWER"), 1), false}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				_, _ = w.Write(tc.answer)
			}))
			defer srv.Close()
			spec := standIn(srv.URL)
			row := countRow{name: "chat", body: chatBody("m", false, 512), want: f.chat}
			_, err := countRun(context.Background(), spec, t.TempDir(), 1, 2, row, "")
			if tc.ok && err != nil || !tc.ok && err == nil {
				t.Errorf("got %v, want an error: %v", err, !tc.ok)
			}
		})
	}
}

// A profile of goblind under callgrind, as --count with --callgrind takes it: dumped before the
// stop, copied where asked, and holding the relay's function with its callers' calls.
func testCallgrindGoBlind(t *testing.T, built string) {
	spec, f, dir := patchedGoBlind(t, built, "valgrind", "callgrind_control")
	row := countRow{name: "chat", body: chatBody("m", false, 512), want: f.chat}
	dest := filepath.Join(dir, "out", "callgrind.chat.out")
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := countRun(context.Background(), spec, dir, 5, 20, row, dest); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(dest)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"creator: callgrind", "events: Ir", "main.relayMessage", "calls="} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("the profile (%d bytes) lacks %q", len(b), want)
		}
	}
	// The counts start after the warm requests: the start-up's functions are not in the profile,
	// and relayMessage, twice a request (its request, its answer), has no more calls than the
	// 20 counted requests make (and the one waiting for the next request that began before the
	// dump): 50 and more with the 5 warm ones. Only a bound: callgrind counts a call in a
	// goroutine that moved to another thread as it can, and a profile of the same run once
	// counted none (the instructions are exact, the call counts heuristic).
	if bytes.Contains(b, []byte("runtime.schedinit")) {
		t.Error("the profile has the start-up's runtime.schedinit: its counts did not start over after the warm requests")
	}
	if got, most := callsTo(string(b), "main.relayMessage"), 2*20+1; got > most {
		t.Errorf("the profile has %d calls of main.relayMessage, want at most %d (two for each of the 20 requests, none of the 5 warm ones)", got, most)
	}
}

// callsTo is how many calls of fn a callgrind profile counts, from its calls= lines, whose
// callee (cfn=) may be named by a number the profile gave it at its first mention.
func callsTo(profile, fn string) int {
	names := map[string]string{}
	calls, callee := 0, ""
	for _, line := range strings.Split(profile, "\n") {
		switch {
		case strings.HasPrefix(line, "cfn=") || strings.HasPrefix(line, "fn="):
			_, name, _ := strings.Cut(line, "=")
			if id, rest, ok := strings.Cut(name, " "); ok && strings.HasPrefix(id, "(") {
				names[id] = rest
				name = rest
			} else if n, ok := names[name]; ok {
				name = n
			}
			if strings.HasPrefix(line, "cfn=") {
				callee = name
			}
		case strings.HasPrefix(line, "calls=") && callee == fn:
			f := strings.Fields(strings.TrimPrefix(line, "calls="))
			if len(f) > 0 {
				n, _ := strconv.Atoi(f[0])
				calls += n
			}
		}
	}
	return calls
}

func TestRowSlug(t *testing.T) {
	for name, want := range map[string]string{
		"chat":               "chat",
		`chat, model "auto"`: "chat-model-auto",
		"stream (32 events), a new connection each": "stream-32-events-a-new-connection-each",
		"chat, an ollama target":                    "chat-an-ollama-target",
	} {
		if got := rowSlug(name); got != want {
			t.Errorf("rowSlug(%q) = %q, want %q", name, got, want)
		}
	}
}

// --callgrind names what --count runs under another tool: alone it is refused.
func TestCallgrindNeedsCount(t *testing.T) {
	if _, err := parseOptions([]string{"--callgrind", t.TempDir()}, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "--callgrind needs --count") {
		t.Errorf("--callgrind alone: %v", err)
	}
	o, err := parseOptions([]string{"--count", "10", "--callgrind", "profiles"}, io.Discard)
	if err != nil || o.Callgrind != "profiles" || o.Count != 10 {
		t.Errorf("--count 10 --callgrind profiles: %+v, %v", o, err)
	}
}

// --count-i1 sizes the instruction cache cachegrind simulates; only with --count, without
// --callgrind, and only sizes cachegrind takes (a power of two of 4 KB or more).
func TestCountI1Options(t *testing.T) {
	o, err := parseOptions([]string{"--count", "10", "--count-i1", "262144"}, io.Discard)
	if err != nil || o.CountI1 != 262144 {
		t.Errorf("--count 10 --count-i1 262144: %+v, %v", o, err)
	}
	for _, args := range [][]string{
		{"--count-i1", "262144"},
		{"--count", "10", "--callgrind", "p", "--count-i1", "262144"},
		{"--count", "10", "--count-i1", "100000"},
		{"--count", "10", "--count-i1", "2048"},
		{"--count", "10", "--count-i1", "134217728"},
		{"--count", "10", "--count-i1", "-4096"},
	} {
		if _, err := parseOptions(args, io.Discard); err == nil || !strings.Contains(err.Error(), "--count-i1") {
			t.Errorf("%q: %v, want an error about --count-i1", args, err)
		}
	}
}

// standIn stands for a proxy under cachegrind that serves at url: a process that waits to be
// stopped, and the output file cachegrind would have written.
func standIn(url string) countSpec {
	return countSpec{"stand-in", func(ctx context.Context, dir string, vg []string) (*proc, string, error) {
		for _, a := range vg {
			if path, ok := strings.CutPrefix(a, "--cachegrind-out-file="); ok {
				if err := os.WriteFile(path, []byte(cgSample), 0o644); err != nil {
					return nil, "", err
				}
			}
		}
		p, err := startProc("stand-in", "sleep", []string{"60"}, nil, dir)
		return p, url, err
	}}
}

// --count-conc and --count-ll, like --count-i1, only with --count (--count-ll without
// --callgrind) and only in their ranges; --count-conc is 1 unless given.
func TestCountConcAndLLOptions(t *testing.T) {
	o, err := parseOptions([]string{"--count", "10"}, io.Discard)
	if err != nil || o.CountConc != 1 || o.CountLL != 0 {
		t.Errorf("--count 10: %+v, %v", o, err)
	}
	o, err = parseOptions([]string{"--count", "10", "--count-conc", "64", "--count-ll", "524288"}, io.Discard)
	if err != nil || o.CountConc != 64 || o.CountLL != 524288 {
		t.Errorf("--count 10 --count-conc 64 --count-ll 524288: %+v, %v", o, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--count-conc", "64"}, "--count-conc"},
		{[]string{"--count", "10", "--count-conc", "0"}, "--count-conc"},
		{[]string{"--count", "10", "--count-conc", "257"}, "--count-conc"},
		{[]string{"--count-ll", "524288"}, "--count-ll"},
		{[]string{"--count", "10", "--callgrind", "p", "--count-ll", "524288"}, "--count-ll"},
		{[]string{"--count", "10", "--count-ll", "32768"}, "--count-ll"},
		{[]string{"--count", "10", "--count-ll", "500000"}, "--count-ll"},
	} {
		if _, err := parseOptions(tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error about %s", tc.args, err, tc.want)
		}
	}
}

// A row's conc is how many of its requests are in flight at once: four senders, whose first
// requests the stand-in upstream holds until all four have come (a run that sent them one at a
// time would never get there), and every request of the run sent once.
func TestCountRunKeepsConcInFlight(t *testing.T) {
	f := newFakeUpstream(1, 0)
	const conc = 4
	var (
		mu      sync.Mutex
		arrived int
		all     = make(chan struct{})
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		arrived++
		if arrived == conc {
			close(all)
		}
		first := arrived <= conc
		mu.Unlock()
		if first {
			select {
			case <-all:
			case <-r.Context().Done():
				return
			}
		}
		_, _ = w.Write(f.chat)
	}))
	defer srv.Close()
	spec := standIn(srv.URL)
	row := countRow{name: "chat", body: chatBody("m", false, 512), want: f.chat, conc: conc}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := countRun(ctx, spec, t.TempDir(), 3, 10, row, "")
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("after a minute %d requests had come, never %d at once", arrived, conc)
	}
	mu.Lock()
	defer mu.Unlock()
	if arrived != 13 {
		t.Errorf("%d requests came, want the 3 warm and 10 counted", arrived)
	}
}

// With --count-conc and --count-ll the report says so, gives each row's last-level data misses
// and the gateway's functions by them, most first.
func TestCountMarkdownLL(t *testing.T) {
	fns := []fnCount{{"main.few", counts{Ir: 500, DLm: 2}}, {"main.many", counts{Ir: 100, DLm: 30}}}
	md := countMarkdown([]countResult{{name: "gateway", row: "chat", total: counts{Ir: 600, I1mr: 9, DLm: 32}, fns: fns}}, 10, 64, 2, true)
	for _, want := range []string{
		"64 requests in flight at once, over 64 connections",
		"| LL data misses (read + write) |\n|---|---|---|---|---|---|\n| chat | gateway | 600 | 9 | 0 | 32 |",
		"the 2 functions with the most LL data misses\n\n| function | LL data misses | instructions |\n|---|---|---|\n| `main.many` | 30.0 | 100 |\n| `main.few` | 2.0 | 500 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	if md := countMarkdown([]countResult{{name: "gateway", row: "chat", total: counts{Ir: 600}, fns: fns}}, 10, 1, 2, false); strings.Contains(md, "LL data") ||
		!strings.Contains(md, "one request at a time") {
		t.Errorf("without --count-ll and --count-conc:\n%s", md)
	}
}

// --count-ll reaches cachegrind as its last-level cache's geometry, before the tool's own
// arguments, as --count-i1's does.
func TestWithLL(t *testing.T) {
	var got []string
	spec := withLL(countSpec{"stand-in", func(ctx context.Context, dir string, vg []string) (*proc, string, error) {
		got = vg
		return nil, "", errors.New("not started")
	}}, 524288)
	_, _, _ = spec.start(context.Background(), "", []string{"--tool=cachegrind"})
	if want := []string{"--LL=524288,8,64", "--tool=cachegrind"}; !slices.Equal(got, want) {
		t.Errorf("valgrind's arguments %q, want %q", got, want)
	}
}

// --count-i1 reaches cachegrind: goblind's relay, whose code a 4 KB instruction cache cannot
// hold, misses in it on every request, and in a 1 MB one next to never.
func testCountI1GoBlind(t *testing.T, built string) {
	spec, f, dir := patchedGoBlind(t, built, "valgrind")
	row := countRow{name: "chat", body: chatBody("m", false, 512), want: f.chat}
	misses := map[int]float64{}
	for _, size := range []int{4 << 10, 1 << 20} {
		total, _ := countTwenty(t, withI1(spec, size), dir, row)
		misses[size] = total.I1mr
	}
	if small, large := misses[4<<10], misses[1<<20]; small < 50 || large > small/10 {
		t.Errorf("L1i misses a request: %.0f with a 4 KB cache, %.0f with 1 MB; want many, then next to none", small, large)
	}
}

// built is pkg of this module built as the bench builds it (go build, which keeps the symbols),
// in a directory of the test's own, which it returns too.
func built(t *testing.T, pkg string) (bin, dir string) {
	t.Helper()
	dir = t.TempDir()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin, err = build(context.Background(), root, pkg, dir)
	if err != nil {
		t.Fatal(err)
	}
	return bin, dir
}
