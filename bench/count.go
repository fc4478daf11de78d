//go:build linux

package main

// count.go is `go run ./bench --count`: what one request costs each proxy in instructions and in
// instruction-cache misses, counted by valgrind's cachegrind rather than timed. A timed run on a
// shared two-core machine moves by tens of microseconds between runs (PERFORMANCE.md); a count
// of the same binary on the same requests moves by well under 1%, so a change to the request's
// path can be judged by its count the moment it is made. What a count cannot say is how many
// nanoseconds it is worth: cachegrind runs the proxy alone on a simulated cache that no other
// process evicts, so its misses are a floor, and on the real machine every one of them can cost
// tens of cycles more while the client and the upstream run on the same cores. With
// --count-conc the requests are counted among others in flight, as under load, and --count-ll
// sizes the last-level cache cachegrind simulates, so that its misses say what of the data a
// request touches the others had pushed out of a cache that size.

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
)

// counts is cachegrind's events for one function, or summed.
type counts struct {
	Ir   float64 // instructions
	I1mr float64 // first-level instruction-cache misses
	D1mr float64 // first-level data-cache read misses
	D1mw float64 // and write misses
	DLm  float64 // last-level data-cache misses, read and write (see --count-ll)
}

func (c *counts) add(o counts, sign float64) {
	c.Ir += sign * o.Ir
	c.I1mr += sign * o.I1mr
	c.D1mr += sign * o.D1mr
	c.D1mw += sign * o.D1mw
	c.DLm += sign * o.DLm
}

// cgProfile is a cachegrind output file: every function's counts (by file and name, since two
// files can hold functions of one name).
type cgProfile map[string]counts

// parseCachegrind reads cachegrind's output format ("events:" names the columns, "fl=" and "fn="
// open a file and a function, each other line is a source line and its counts, trailing zeros
// left out).
func parseCachegrind(r io.Reader) (cgProfile, error) {
	p := cgProfile{}
	var col []int // for each event of the file, its counts field, or −1
	fl, fn := "", ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "events:"):
			col = col[:0]
			for _, e := range strings.Fields(strings.TrimPrefix(line, "events:")) {
				col = append(col, slices.Index([]string{"Ir", "I1mr", "D1mr", "D1mw", "DLmr", "DLmw"}, e))
			}
		case strings.HasPrefix(line, "fl="):
			fl = line[3:]
		case strings.HasPrefix(line, "fn="):
			fn = line[3:]
		case line != "" && line[0] >= '0' && line[0] <= '9':
			if col == nil || fn == "" {
				return nil, fmt.Errorf("cachegrind: counts before events: and fn=: %q", line)
			}
			f := strings.Fields(line)
			key := fn + "\t" + fl
			c := p[key]
			for i, v := range f[1:] {
				if i >= len(col) {
					return nil, fmt.Errorf("cachegrind: more counts than events: %q", line)
				}
				n, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return nil, fmt.Errorf("cachegrind: %q: %w", line, err)
				}
				switch col[i] {
				case 0:
					c.Ir += n
				case 1:
					c.I1mr += n
				case 2:
					c.D1mr += n
				case 3:
					c.D1mw += n
				case 4, 5:
					c.DLm += n
				}
			}
			p[key] = c
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if col == nil {
		return nil, errors.New("cachegrind: no events: line")
	}
	return p, nil
}

// fnCount is one function's counts per request.
type fnCount struct {
	Name string
	counts
}

// perRequest is (long − short) ÷ n, by function: the two runs differ only by n requests, so
// start-up, warm-up and shutdown cancel. The result is sorted by instruction-cache misses.
func perRequest(short, long cgProfile, n int) (total counts, fns []fnCount) {
	by := map[string]*counts{}
	for _, side := range []struct {
		p    cgProfile
		sign float64
	}{{long, 1}, {short, -1}} {
		for key, c := range side.p {
			name, _, _ := strings.Cut(key, "\t")
			if by[name] == nil {
				by[name] = &counts{}
			}
			by[name].add(c, side.sign/float64(n))
		}
	}
	for name, c := range by {
		total.add(*c, 1)
		fns = append(fns, fnCount{name, *c})
	}
	return total, mostFirst(fns, func(f fnCount) float64 { return f.I1mr })
}

// mostFirst is fns sorted by key, the largest first, ties by name (fns itself, reordered).
func mostFirst(fns []fnCount, key func(fnCount) float64) []fnCount {
	slices.SortFunc(fns, func(a, b fnCount) int {
		if ka, kb := key(a), key(b); ka != kb {
			if ka > kb {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return fns
}

// area names the part of the gateway a function belongs to, for the grouped table.
func area(fn string) string {
	const mod = "github.com/hayula/gateway/"
	if rest, ok := strings.CutPrefix(fn, mod); ok {
		pkg, _, _ := strings.Cut(rest, ".")
		if i := strings.LastIndex(pkg, "/"); i >= 0 && !strings.HasPrefix(pkg, "internal/") {
			pkg = pkg[:i]
		}
		return pkg
	}
	pkg := fn
	if i := strings.Index(fn, "("); i > 0 {
		pkg = fn[:i]
	}
	if i := strings.LastIndex(pkg, "/"); i >= 0 {
		if j := strings.Index(pkg[i:], "."); j > 0 {
			pkg = pkg[:i+j]
		}
	} else if j := strings.Index(pkg, "."); j > 0 {
		pkg = pkg[:j]
	} else if !strings.HasPrefix(fn, "???") {
		return "Go runtime" // the runtime's assembly: gogo, memeqbody, indexbytebody …
	}
	switch {
	case strings.HasPrefix(pkg, "runtime") || strings.HasPrefix(pkg, "internal/runtime") ||
		strings.HasPrefix(pkg, "internal/bytealg"):
		return "Go runtime"
	case strings.HasPrefix(pkg, "internal/poll") || pkg == "syscall" || pkg == "net" || strings.HasPrefix(pkg, "internal/syscall"):
		return "net, poll, syscall"
	case strings.HasPrefix(fn, "???"):
		return pkg
	}
	if first, _, _ := strings.Cut(pkg, "/"); strings.Contains(first, ".") {
		return pkg // a module's package
	}
	return "std: " + pkg
}

// patchCputicks makes runtime.cputicks of the Go binary at path read the clock with the fenced
// RDTSC that valgrind knows, instead of RDTSCP, which valgrind 3.19 stops the program on (a
// SIGILL the first time a contended lock or the collector reads the clock). The runtime
// chooses between the two with one compare and branch on the CPU's RDTSCP flag; the branch is
// made unconditional. Nothing else in the program changes.
func patchCputicks(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	syms, err := f.Symbols()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("%s has no symbol table (%w): build it with go build, not go run or go test, which leave it out", path, err)
	}
	var addr uint64
	for _, s := range syms {
		if s.Name == "runtime.cputicks.abi0" || s.Name == "runtime.cputicks" && addr == 0 {
			addr = s.Value
		}
	}
	var off int64 = -1
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && addr >= p.Vaddr && addr < p.Vaddr+p.Filesz {
			off = int64(addr - p.Vaddr + p.Off)
		}
	}
	_ = f.Close()
	if addr == 0 || off < 0 {
		return fmt.Errorf("%s: runtime.cputicks not found", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	// CMPB $1, internal/cpu.X86.HasRDTSCP(SB) (80 3D rel32 01), then JNE rel8 (75 xx).
	code := b[off:]
	if len(code) < 9 || code[0] != 0x80 || code[1] != 0x3d || code[6] != 0x01 || code[7] != 0x75 {
		return fmt.Errorf("%s: runtime.cputicks does not start as expected (% x)", path, code[:min(len(code), 9)])
	}
	code[7] = 0xeb // JMP rel8
	return os.WriteFile(path, b, 0o755)
}

// countSpec is one proxy to count.
type countSpec struct {
	name  string
	start func(ctx context.Context, dir string, vg []string) (p *proc, url string, err error)
}

// withI1 is spec with cachegrind simulating a first-level instruction cache of size bytes,
// 8-way with 64-byte lines (--count-i1), instead of the one this CPU has. The misses a request
// at a size large enough to hold the code it runs are none: the size where they end says how
// much code that is, which the misses at the CPU's own size do not.
func withI1(spec countSpec, size int) countSpec {
	return withValgrindArg(spec, fmt.Sprintf("--I1=%d,8,64", size))
}

// withLL is spec with cachegrind simulating a last-level cache of size bytes, 8-way with 64-byte
// lines (--count-ll), instead of this CPU's (cachegrind takes its L3). Sized as this CPU's
// second level, its data misses are the lines a request touches that the requests between its
// last use and this one pushed out: with many requests in flight (--count-conc), what each
// holds and touches adds up.
func withLL(spec countSpec, size int) countSpec {
	return withValgrindArg(spec, fmt.Sprintf("--LL=%d,8,64", size))
}

// withValgrindArg is spec with arg given to valgrind before the tool's own arguments.
func withValgrindArg(spec countSpec, arg string) countSpec {
	start := spec.start
	spec.start = func(ctx context.Context, dir string, vg []string) (*proc, string, error) {
		return start(ctx, dir, append([]string{arg}, vg...))
	}
	return spec
}

// countRun starts the proxy under cachegrind, sends warm and then n requests, row.conc at a
// time (one at a time when it is 0 or 1), each of the row.conc senders over its own kept-alive
// connection, stops the proxy and reads what cachegrind wrote. With dest, it runs the proxy
// under callgrind instead, writes its profile to dest and returns none (see callgrindDump).
func countRun(ctx context.Context, spec countSpec, dir string, warm, n int, row countRow, dest string) (cgProfile, error) {
	tool, sim := "cachegrind", "--cache-sim=yes"
	if dest != "" {
		tool, sim = "callgrind", "--cache-sim=no"
	}
	out, err := os.CreateTemp(dir, tool+"."+spec.name+".")
	if err != nil {
		return nil, err
	}
	_ = out.Close()
	vg := []string{"--tool=" + tool, sim, "--fair-sched=yes", "--" + tool + "-out-file=" + out.Name()}
	p, url, err := spec.start(ctx, dir, vg)
	if err != nil {
		return nil, err
	}
	p.grace = time.Minute
	stopped := false
	defer func() {
		if !stopped {
			p.stop()
		}
	}()
	senders := max(row.conc, 1)
	c := newClient(senders)
	defer c.CloseIdleConnections()
	// Sender k sends requests from+k, from+k+senders, from+k+2·senders … before to: every run's
	// requests are the same.
	send := func(from, to int) error {
		g, gctx := errgroup.WithContext(ctx)
		for k := range senders {
			g.Go(func() error {
				for i := from + k; i < to; i += senders {
					if err := countOne(gctx, c, url, row, i); err != nil {
						return fmt.Errorf("%s, %w\n%s", spec.name, err, p.logTail())
					}
				}
				return nil
			})
		}
		return g.Wait()
	}
	if dest == "" {
		if err := send(0, warm+n); err != nil {
			return nil, err
		}
	} else {
		// Under callgrind, the counts start over after the warm requests (callgrind_control
		// -z), so that the profile holds the n requests and not the start-up: code the start-up
		// ran in loops (the config's parse, the classifier's patterns) is not taken for code
		// every request runs.
		if err := send(0, warm); err != nil {
			return nil, err
		}
		if b, err := exec.CommandContext(ctx, "callgrind_control", "-z", strconv.Itoa(p.pid())).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("callgrind_control -z %d: %w: %s", p.pid(), err, bytes.TrimSpace(b))
		}
		if err := send(warm, warm+n); err != nil {
			return nil, err
		}
	}
	c.CloseIdleConnections()
	if dest != "" {
		return nil, callgrindDump(ctx, p.pid(), out.Name(), dest)
	}
	p.stop()
	stopped = true
	f, err := os.Open(out.Name())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || st.Size() == 0 {
		return nil, fmt.Errorf("%s: cachegrind wrote no output:\n%s", spec.name, p.logTail())
	}
	return parseCachegrind(f)
}

// countOne sends request i of a count's run and checks its answer.
func countOne(ctx context.Context, c *http.Client, url string, row countRow, i int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(row.body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Close = row.fresh
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("request %d: %w", i, err)
	}
	got, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err == nil && resp.StatusCode == http.StatusOK && row.check != nil {
		if err := row.check(got); err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
		return nil
	}
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(got, row.want) {
		return fmt.Errorf("request %d: status %d, %d bytes of %d, byte %d on not the upstream's (%v)", i,
			resp.StatusCode, len(got), len(row.want), mismatch(got, row.want, 0), err)
	}
	return nil
}

// countResult is one proxy's counts per request of one row.
type countResult struct {
	name   string
	row    string
	total  counts
	fns    []fnCount
	failed string // why this column could not be counted on this row
}

// countRow is a kind of request counted: its body and the answer's body, byte for byte.
type countRow struct {
	name string
	body []byte
	want []byte
	// check, when set, judges an answer in place of want: a translated answer has an id and a
	// time of its own.
	check   func(got []byte) error
	gateway bool // for the gateway only (a blind proxy does nothing different for it)
	// fresh sends each request on a connection of its own ("Connection: close"): a row's
	// difference from its kept-alive twin is what a client's connection costs, opened, served
	// and closed, the bulk of a burst of new streams.
	fresh bool
	// conc is how many of the row's requests are in flight at once, each sender over its own
	// connection (--count-conc; 0 or 1: one at a time). The proxy, under valgrind far slower than
	// the senders, then has all of them to serve at every turn, as a proxy under load does.
	conc int
}

// runCount is --count: each proxy twice under cachegrind (n and 2n requests after the same
// warm-up), the difference divided by n.
func runCount(ctx context.Context, e *environment, n int) ([]countResult, error) {
	if _, err := exec.LookPath("valgrind"); err != nil {
		return nil, errors.New("--count needs valgrind on PATH (apt-get install valgrind)")
	}
	const warm = 200
	fu := newFakeUpstream(e.opts.Chunks, 0)
	rows := []countRow{
		{name: "chat", body: chatBody("bench", false, e.opts.PromptBytes), want: fu.chat},
		{name: fmt.Sprintf("stream (%d events)", e.opts.Chunks), body: chatBody("bench", true, e.opts.PromptBytes), want: fu.streamBody()},
		{name: fmt.Sprintf("stream (%d events), a new connection each", e.opts.Chunks), body: chatBody("bench", true, e.opts.PromptBytes),
			want: fu.streamBody(), fresh: true},
		{name: fmt.Sprintf("stream (%d events), new connections each, to the proxy and from it", e.opts.Chunks),
			body: closingBody(chatBody("bench", true, e.opts.PromptBytes)), want: fu.streamBody(), fresh: true},
		{name: `chat, model "auto"`, body: chatBody("auto", false, e.opts.PromptBytes), want: fu.chat, gateway: true},
		{name: "chat, an ollama target", body: chatBody("bench-ollama", false, e.opts.PromptBytes), gateway: true,
			check: translatedChat(chatContent)},
		{name: fmt.Sprintf("stream (%d events), an ollama target", e.opts.Chunks), body: chatBody("bench-ollama", true, e.opts.PromptBytes),
			gateway: true, check: translatedStream(ollamaStreamContent(e.opts.Chunks))},
		{name: "chat, a saif target", body: chatBody("bench-saif", false, e.opts.PromptBytes), gateway: true,
			check: translatedChat(chatContent)},
		{name: fmt.Sprintf("stream (%d events), a saif target", e.opts.Chunks), body: chatBody("bench-saif", true, e.opts.PromptBytes),
			gateway: true, check: translatedStream(ollamaStreamContent(e.opts.Chunks))},
	}
	for i := range rows {
		rows[i].conc = e.opts.CountConc
	}
	// Copies of both Go programs, patched for valgrind; this binary is built again for goblind
	// because `go run` leaves out the symbols that name its functions. --callgrind profiles the
	// gateway alone, and needs no goblind.
	bins := filepath.Join(e.dir, "count")
	if err := os.Mkdir(bins, 0o755); err != nil {
		return nil, err
	}
	gw := filepath.Join(bins, "gateway")
	if err := copyFile(e.gwBin, gw); err != nil {
		return nil, err
	}
	patched := []string{gw}
	var self string
	if e.opts.Callgrind == "" {
		e.logf("count: building ./bench for goblind")
		var err error
		if self, err = build(ctx, e.root, "./bench", bins); err != nil {
			return nil, err
		}
		patched = append(patched, self)
	}
	for _, bin := range patched {
		if err := patchCputicks(bin); err != nil {
			return nil, err
		}
	}
	// Asynchronous preemption signals are off under valgrind, whose signal handling they upset.
	specs := []countSpec{{"gateway", func(ctx context.Context, dir string, vg []string) (*proc, string, error) {
		p, addr, err := onFreeAddr(func(addr string) (*proc, error) {
			path := filepath.Join(dir, "gateway-count.toml")
			if err := os.WriteFile(path, []byte(gatewayConfig(addr, e.fast, e.slow, true)), 0o644); err != nil {
				return nil, err
			}
			// The gateway's own re-execution with its sysmon setting (cmd/gateway/sysmon.go)
			// would leave valgrind behind: the setting is given here, and the marker that says
			// it is already in place.
			p, err := startProc("gateway-count", "valgrind",
				append(vg, gw, "serve", "--config", path, "--log-level", e.opts.LogLevel),
				[]string{"GODEBUG=schedtrace=2147483647,asyncpreemptoff=1", "HAYULA_GODEBUG_BEFORE="}, dir)
			return startedReady(ctx, p, err, "http://"+addr+"/healthz")
		})
		if err != nil {
			return nil, "", err
		}
		return p, "http://" + addr + "/v1/chat/completions", nil
	}}}
	if dest := e.opts.Callgrind; dest != "" {
		return nil, callgrindRows(ctx, e, specs[0], rows, warm, n, dest)
	}
	if e.opts.VsGoBlind {
		specs = append(specs, goblindCountSpec(self, e.fast))
	}
	if bin, ok := findNginx(); ok && e.opts.VsNginx {
		specs = append(specs, countSpec{"nginx", func(ctx context.Context, dir string, vg []string) (*proc, string, error) {
			addr, err := freeAddr()
			if err != nil {
				return nil, "", err
			}
			slowAddr, err := freeAddr()
			if err != nil {
				return nil, "", err
			}
			// One process, the worker's loop run by the master itself: valgrind follows one.
			conf := strings.Replace(nginxConfig(dir, addr, e.fast, slowAddr, e.slow, 16, 16),
				"master_process on;", "master_process off;", 1)
			path := filepath.Join(dir, "nginx-count.conf")
			if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
				return nil, "", err
			}
			if err := os.Chmod(dir, 0o755); err != nil {
				return nil, "", err
			}
			p, err := startProc("nginx-count", "valgrind",
				append(vg, bin, "-p", dir, "-c", path, "-e", filepath.Join(dir, "nginx-count-error.log")), nil, dir)
			if p, err = startedReady(ctx, p, err, "http://"+addr+"/v1/models"); err != nil {
				return nil, "", err
			}
			return p, "http://" + addr + "/v1/chat/completions", nil
		}})
	}
	if size := e.opts.CountI1; size > 0 {
		for i := range specs {
			specs[i] = withI1(specs[i], size)
		}
	}
	if size := e.opts.CountLL; size > 0 {
		for i := range specs {
			specs[i] = withLL(specs[i], size)
		}
	}
	var res []countResult
	for _, row := range rows {
		for _, spec := range specs {
			if row.gateway && spec.name != "gateway" {
				continue
			}
			e.logf("count: %s, %s under cachegrind, %d and %d requests after %d", row.name, spec.name, n, 2*n, warm)
			began := time.Now()
			short, err := countRun(ctx, spec, e.dir, warm, n, row, "")
			if err == nil {
				var long cgProfile
				if long, err = countRun(ctx, spec, e.dir, warm, 2*n, row, ""); err == nil {
					total, fns := perRequest(short, long, n)
					res = append(res, countResult{name: spec.name, row: row.name, total: total, fns: fns})
					e.logf("count: %s took %s", spec.name, time.Since(began).Round(time.Second))
					continue
				}
			}
			// A column to compare against that fails one row is reported as failed there; the
			// gateway's own failure ends the count.
			if spec.name == "gateway" || ctx.Err() != nil {
				return nil, err
			}
			e.logf("count: %s failed after %s: %v", spec.name, time.Since(began).Round(time.Second), err)
			res = append(res, countResult{name: spec.name, row: row.name, failed: firstLine(err.Error())})
		}
	}
	return res, nil
}

// translatedChat checks a chat.completion the gateway made from another protocol's answer: its
// one choice says content and stops.
func translatedChat(content string) func([]byte) error {
	return func(got []byte) error {
		var c struct {
			Object  string
			Choices []struct {
				Message      struct{ Content string }
				FinishReason string `json:"finish_reason"`
			}
		}
		if err := json.Unmarshal(got, &c); err != nil {
			return fmt.Errorf("not a chat.completion: %w", err)
		}
		if c.Object != "chat.completion" || len(c.Choices) != 1 || c.Choices[0].Message.Content != content ||
			c.Choices[0].FinishReason != "stop" {
			return fmt.Errorf("not the upstream's answer: %.200q", got)
		}
		return nil
	}
}

// translatedStream checks a chat stream the gateway made from another protocol's: its chunks'
// content adds up to content, one says stop, and [DONE] ends it.
func translatedStream(content string) func([]byte) error {
	return func(got []byte) error {
		var text strings.Builder
		stops, done := 0, false
		for ev := range bytes.SplitSeq(got, []byte("\n\n")) {
			data, ok := bytes.CutPrefix(ev, []byte("data: "))
			switch {
			case len(ev) == 0:
				continue
			case !ok || done:
				return fmt.Errorf("not an event, or after [DONE]: %.200q", ev)
			case string(data) == "[DONE]":
				done = true
				continue
			}
			var c struct {
				Choices []struct {
					Delta        struct{ Content string }
					FinishReason *string `json:"finish_reason"`
				}
			}
			if err := json.Unmarshal(data, &c); err != nil {
				return fmt.Errorf("not a chunk: %w: %.200q", err, data)
			}
			for _, ch := range c.Choices {
				text.WriteString(ch.Delta.Content)
				if ch.FinishReason != nil && *ch.FinishReason == "stop" {
					stops++
				}
			}
		}
		if !done || stops != 1 || text.String() != content {
			return fmt.Errorf("not the upstream's stream ([DONE] %v, %d stops, content %.80q)", done, stops, text.String())
		}
		return nil
	}
}

// firstLine is s up to its first line end.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// goblindCountSpec is goblind (bin, a patched copy of this binary) under cachegrind, in front
// of the upstream at fast.
func goblindCountSpec(bin, fast string) countSpec {
	return countSpec{"goblind", func(ctx context.Context, dir string, vg []string) (*proc, string, error) {
		p, err := startProc("goblind-count", "valgrind", append(vg, bin, "-target", fast),
			[]string{roleEnv + "=" + roleGoBlind, "GODEBUG=asyncpreemptoff=1"}, dir)
		if err != nil {
			return nil, "", err
		}
		line, err := bufio.NewReader(p.stdout).ReadString('\n')
		addr, ok := strings.CutPrefix(strings.TrimSpace(line), "addr=")
		if err != nil || !ok {
			p.stop()
			return nil, "", fmt.Errorf("goblind under valgrind did not start (%v):\n%s", err, p.logTail())
		}
		return p, "http://" + addr + "/v1/chat/completions", nil
	}}
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}

// countMarkdown is --count's report: each proxy's totals, the gateway's counts by area, and its
// functions with the most instruction-cache misses.
func countMarkdown(res []countResult, n, conc, top int, ll bool) string {
	var b strings.Builder
	at := "one request at a time"
	if conc > 1 {
		at = fmt.Sprintf("%d requests in flight at once, over %d connections", conc, conc)
	}
	fmt.Fprintf(&b, "### Per request, counted (valgrind cachegrind; %s; the difference of runs of %d and %d requests, ÷ %d)\n\n", at, n, 2*n, n)
	b.WriteString("| row | proxy | instructions | L1i misses | L1d misses (read + write) |")
	if ll {
		b.WriteString(" LL data misses (read + write) |\n|---|---|---|---|---|---|\n")
	} else {
		b.WriteString("\n|---|---|---|---|---|\n")
	}
	for _, r := range res {
		if r.failed != "" {
			fmt.Fprintf(&b, "| %s | %s | failed: %s | | |", r.row, r.name, strings.ReplaceAll(r.failed, "|", "/"))
			if ll {
				b.WriteString(" |")
			}
			b.WriteString("\n")
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f | %.0f | %.0f |", r.row, r.name, r.total.Ir, r.total.I1mr, max(0, r.total.D1mr+r.total.D1mw))
		if ll {
			fmt.Fprintf(&b, " %.0f |", max(0, r.total.DLm))
		}
		b.WriteString("\n")
	}
	for _, r := range res {
		// The chat's breakdown, and the pooled stream's beside it: what a stream's events add
		// to a request is the difference.
		// So are an ollama or a saif target's: what translating costs beside relaying.
		translated := strings.HasSuffix(r.row, "an ollama target") || strings.HasSuffix(r.row, "a saif target")
		if r.name != "gateway" || r.row != "chat" && !strings.HasPrefix(r.row, "stream (") && !translated ||
			strings.Contains(r.row, "new connection") {
			continue
		}
		what := r.row
		if strings.HasPrefix(r.row, "stream (") && !translated {
			what = "stream"
		}
		by := map[string]*counts{}
		for _, f := range r.fns {
			a := area(f.Name)
			if by[a] == nil {
				by[a] = &counts{}
			}
			by[a].add(f.counts, 1)
		}
		areas := make([]string, 0, len(by))
		for a := range by {
			areas = append(areas, a)
		}
		slices.SortFunc(areas, func(x, y string) int {
			if by[x].I1mr != by[y].I1mr {
				if by[x].I1mr > by[y].I1mr {
					return -1
				}
				return 1
			}
			return strings.Compare(x, y)
		})
		b.WriteString("\n#### The gateway's " + what + ", by package (L1i misses, instructions)\n\n| package | L1i misses | instructions |\n|---|---|---|\n")
		for _, a := range areas {
			if by[a].I1mr < 1 && by[a].Ir < 100 {
				continue
			}
			fmt.Fprintf(&b, "| %s | %.0f | %.0f |\n", a, by[a].I1mr, by[a].Ir)
		}
		fmt.Fprintf(&b, "\n#### The gateway's %s: the %d functions with the most L1i misses\n\n| function | L1i misses | instructions |\n|---|---|---|\n", what, top)
		for _, f := range r.fns[:min(top, len(r.fns))] {
			fmt.Fprintf(&b, "| `%s` | %.1f | %.0f |\n", strings.TrimPrefix(f.Name, "github.com/hayula/gateway/"), f.I1mr, f.Ir)
		}
		// Under load the caches stay warmer than at c=1, and instructions count for more: the
		// same functions by what they run.
		byIr := mostFirst(slices.Clone(r.fns), func(f fnCount) float64 { return f.Ir })
		fmt.Fprintf(&b, "\n#### The gateway's %s: the %d functions with the most instructions\n\n| function | instructions | L1i misses |\n|---|---|---|\n", what, top)
		for _, f := range byIr[:min(top, len(byIr))] {
			fmt.Fprintf(&b, "| `%s` | %.0f | %.1f |\n", strings.TrimPrefix(f.Name, "github.com/hayula/gateway/"), f.Ir, f.I1mr)
		}
		if !ll {
			continue
		}
		// A function's data misses are the lines it touched that had left the cache: the
		// memory a request holds, its stack's frames included, as the others pushed it out.
		byLL := mostFirst(slices.Clone(r.fns), func(f fnCount) float64 { return f.DLm })
		fmt.Fprintf(&b, "\n#### The gateway's %s: the %d functions with the most LL data misses\n\n| function | LL data misses | instructions |\n|---|---|---|\n", what, top)
		for _, f := range byLL[:min(top, len(byLL))] {
			fmt.Fprintf(&b, "| `%s` | %.1f | %.0f |\n", strings.TrimPrefix(f.Name, "github.com/hayula/gateway/"), f.DLm, f.Ir)
		}
	}
	return b.String()
}

// callgrindRows is --count with --callgrind: the gateway (spec) under callgrind, once a row, warm
// and then n requests, each row's profile written into dir as callgrind.<row>.out. A profile
// holds what cachegrind's flat counts do not, each function's cost by caller and inclusive of
// its callees (callgrind_annotate --inclusive=yes --tree=caller), over the n requests alone (the
// counts are zeroed after the warm ones). Inclusive costs that cross a
// goroutine switch (gopark) carry the other goroutines' work.
func callgrindRows(ctx context.Context, e *environment, spec countSpec, rows []countRow, warm, n int, dir string) error {
	if _, err := exec.LookPath("callgrind_control"); err != nil {
		return errors.New("--callgrind needs callgrind_control on PATH (it comes with valgrind)")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, row := range rows {
		dest := filepath.Join(dir, "callgrind."+rowSlug(row.name)+".out")
		e.logf("count: %s, %s under callgrind, %d requests after %d", row.name, spec.name, n, warm)
		if _, err := countRun(ctx, spec, e.dir, warm, n, row, dest); err != nil {
			return fmt.Errorf("%s: %w", row.name, err)
		}
		e.logf("count: wrote %s (callgrind_annotate --inclusive=yes %s)", dest, dest)
	}
	return nil
}

// rowSlug is a row's name as a file name's part: its letters and digits, the rest one dash.
func rowSlug(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
	}
	return b.String()
}

// callgrindDump asks the callgrind running as pid for its profile so far (callgrind_control
// -d, which writes out.1 beside the file it was given), waits for it, and copies it to dest.
// The profile is taken before the proxy stops: valgrind 3.19's callgrind can fail in a Go
// program's exit before it writes the profile it keeps until then. The caller stops the proxy.
func callgrindDump(ctx context.Context, pid int, out, dest string) error {
	if b, err := exec.CommandContext(ctx, "callgrind_control", "-d", strconv.Itoa(pid)).CombinedOutput(); err != nil {
		return fmt.Errorf("callgrind_control -d %d: %w: %s", pid, err, bytes.TrimSpace(b))
	}
	dump := out + ".1"
	var last int64 = -1
	for range 600 { // up to a minute: a dump is written once, and done when its size stays put
		if st, err := os.Stat(dump); err == nil && st.Size() > 0 {
			if st.Size() == last {
				return copyFile(dump, dest)
			}
			last = st.Size()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("callgrind wrote no profile to %s within a minute", dump)
}
