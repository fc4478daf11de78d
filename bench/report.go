//go:build linux

package main

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// report gathers everything the run measured, and renders it as Markdown.
type report struct {
	opts      options
	machine   machine
	nofile    uint64
	memory    memoryResult
	results   []*result
	skipped   []string
	autoNote  string
	nginxNote string
	profiles  []string
	elapsed   time.Duration
	// upstreamConns is how many connections carried chat requests to the fast upstream over the run.
	upstreamConns int64
}

func (r *report) markdown() string {
	var b strings.Builder
	o := r.opts
	m := r.machine
	fmt.Fprintf(&b, "## Benchmark: `go run ./bench %s`\n\n", strings.Join(os.Args[1:], " "))
	fmt.Fprintf(&b, "Machine: %d CPUs (%s), %s, %s. Gateway log level %s. %d interleaved rounds of %s per column "+
		"after %s of warm-up; request body %d bytes; a stream is %d content events; run took %s.\n\n",
		m.CPUs, m.CPUModel, m.OS, m.GoVersion, o.LogLevel, o.Rounds, o.RoundTime, o.Warmup, o.PromptBytes, o.Chunks,
		r.elapsed.Round(time.Second))
	if r.nginxNote != "" {
		fmt.Fprintf(&b, "nginx: %s.\n\n", r.nginxNote)
	}
	r.latencyTable(&b)
	r.throughputTable(&b)
	r.cpuTable(&b)
	r.peersTable(&b)
	r.autoTable(&b)
	r.memoryTable(&b)
	r.targets(&b)
	r.notes(&b)
	return b.String()
}

// cell renders a column's value against direct: "+52 µs (1.73×)".
func added(v, direct time.Duration) string {
	if v == 0 || direct == 0 {
		return "—"
	}
	return fmt.Sprintf("%s (%.2f×)", signed(v-direct), float64(v)/float64(direct))
}

func signed(d time.Duration) string {
	if d < 0 {
		return "−" + us(-d)
	}
	return "+" + us(d)
}

// us renders a duration in microseconds, or milliseconds from 10 ms.
func us(d time.Duration) string {
	if d >= 10*time.Millisecond {
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}

// burstCPU is the median over bursts of the proxy's CPU a stream, to the last stream's first
// event and over the whole burst; "—" for a column without a proxy.
func burstCPU(rs []streamsResult) string {
	var open, whole []time.Duration
	for _, r := range rs {
		if r.CPU > 0 {
			open, whole = append(open, r.OpenCPU), append(whole, r.CPU)
		}
	}
	if len(whole) == 0 {
		return "—"
	}
	return us(median(open)) + ", " + us(median(whole))
}

// spread is the range of a − b over the rounds, each of a's measures (f) paired with b's of the
// same round; a round that either column has no measure of is left out.
func spread(a, b *column, f func(*column) []time.Duration) string {
	if a == nil || b == nil {
		return "—"
	}
	av, bv := f(a), f(b)
	var lo, hi time.Duration
	n := 0
	for i, j := 0, 0; i < len(av) && i < len(a.rounds) && j < len(bv) && j < len(b.rounds); {
		switch ra, rb := a.rounds[i], b.rounds[j]; {
		case ra < rb:
			i++
		case rb < ra:
			j++
		default:
			d := av[i] - bv[j]
			if n == 0 {
				lo, hi = d, d
			}
			lo, hi = min(lo, d), max(hi, d)
			n++
			i++
			j++
		}
	}
	if n == 0 {
		return "—"
	}
	return signed(lo) + " … " + signed(hi)
}

type metric struct {
	label    string
	p50, p99 func(c *column) []time.Duration
}

var (
	whole = metric{"", func(c *column) []time.Duration { return c.p50 }, func(c *column) []time.Duration { return c.p99 }}
	first = metric{" first byte", func(c *column) []time.Duration { return c.ttfb50 },
		func(c *column) []time.Duration { return c.ttfb99 }}
	last = metric{" last byte", func(c *column) []time.Duration { return c.p50 }, func(c *column) []time.Duration { return c.p99 }}
)

// proxies are the columns compared with direct, in the order the tables show them.
var proxies = []string{"gateway", "goproxy", "goblind", "nginx"}

func (r *report) latencyTable(b *strings.Builder) {
	b.WriteString("### Added latency (median of round medians; added = column − direct)\n\n")
	b.WriteString("| row | direct p50 |")
	for _, p := range proxies {
		fmt.Fprintf(b, " %s p50 |", p)
	}
	b.WriteString(" direct p99 |")
	for _, p := range proxies {
		fmt.Fprintf(b, " %s p99 |", p)
	}
	b.WriteString(" gateway − direct p50, by round |\n|---|---|" + strings.Repeat("---|", 2*len(proxies)+2) + "\n")
	for _, res := range r.results {
		if res.sc.auto {
			continue
		}
		metrics := []metric{whole}
		if res.sc.stream {
			metrics = []metric{first, last}
		}
		d := res.col("direct")
		for _, mt := range metrics {
			dp50, dp99 := median(mt.p50(d)), median(mt.p99(d))
			fmt.Fprintf(b, "| %s%s | %s |", res.sc.name, mt.label, us(dp50))
			for _, p := range proxies {
				fmt.Fprintf(b, " %s |", addedCell(res.col(p), mt.p50, dp50))
			}
			fmt.Fprintf(b, " %s |", us(dp99))
			for _, p := range proxies {
				fmt.Fprintf(b, " %s |", addedCell(res.col(p), mt.p99, dp99))
			}
			fmt.Fprintf(b, " %s |\n", spread(res.col("gateway"), d, mt.p50))
		}
	}
	b.WriteString("\n")
}

func addedCell(c *column, f func(*column) []time.Duration, direct time.Duration) string {
	if c == nil {
		return "—"
	}
	return added(median(f(c)), direct)
}

func (r *report) throughputTable(b *strings.Builder) {
	var res *result
	for _, x := range r.results {
		if !x.sc.auto && !x.sc.stream {
			res = x // the last chat row has the highest concurrency
		}
	}
	if res == nil {
		return
	}
	fmt.Fprintf(b, "### Throughput at concurrency %d (median of rounds)\n\n", res.sc.conc)
	b.WriteString("| | direct |")
	for _, p := range proxies {
		fmt.Fprintf(b, " %s |", p)
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(proxies)) + "\n")
	d := medianFloat(res.col("direct").thr)
	fmt.Fprintf(b, "| requests per second | %.0f req/s |", d)
	for _, p := range proxies {
		c := res.col(p)
		if c == nil || d == 0 {
			b.WriteString(" — |")
			continue
		}
		v := medianFloat(c.thr)
		fmt.Fprintf(b, " %.0f req/s (%.2f× direct) |", v, v/d)
	}
	b.WriteString("\n\n")
}

// cpuTable is each proxy's CPU time per request answered: less sensitive to what else the
// machine runs than latency is, and what throughput on a shared machine comes down to.
func (r *report) cpuTable(b *strings.Builder) {
	b.WriteString("### Proxy CPU per request (median of rounds; the process's CPU time over a round ÷ answers; " +
		"in parentheses, the share of it spent in the kernel over the row's rounds, from /proc/PID/stat)\n\n")
	b.WriteString("| row |")
	for _, p := range proxies {
		if p == "nginx" {
			p += " (workers)"
		}
		fmt.Fprintf(b, " %s |", p)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(proxies)) + "\n")
	for _, res := range r.results {
		if res.sc.auto {
			continue
		}
		fmt.Fprintf(b, "| %s |", res.sc.name)
		for _, p := range proxies {
			c := res.col(p)
			if c == nil || len(c.cpu) == 0 {
				b.WriteString(" — |")
				continue
			}
			if all := c.user + c.sys; all > 0 {
				fmt.Fprintf(b, " %.0f µs (%.0f%% kernel) |", medianFloat(c.cpu), 100*float64(c.sys)/float64(all))
				continue
			}
			fmt.Fprintf(b, " %.0f µs |", medianFloat(c.cpu))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// peersTable is where the machine's CPU went in each column: the load generator's, the fake
// upstream's and the proxy's time per answer. The three share the machine, so a column's
// throughput is bounded by their sum, and a proxy can cost more than its own CPU: what it makes
// its peers spend beside what they spend for a direct answer.
func (r *report) peersTable(b *strings.Builder) {
	var rows strings.Builder
	for _, res := range r.results {
		if res.sc.auto {
			continue
		}
		for _, c := range res.cols {
			if len(c.client) == 0 {
				continue
			}
			client, upstream := medianFloat(c.client), medianFloat(c.upstream)
			proxy, sum := " — |", client+upstream
			if len(c.cpu) > 0 {
				proxy = fmt.Sprintf(" %.0f µs |", medianFloat(c.cpu))
				sum += medianFloat(c.cpu)
			}
			fmt.Fprintf(&rows, "| %s | %s | %.0f µs | %.0f µs |%s %.0f µs |\n", res.sc.name, c.name, client, upstream, proxy, sum)
		}
	}
	if rows.Len() == 0 {
		return
	}
	b.WriteString("### The machine's CPU per answer, by process (median of rounds; each process's CPU time over a round ÷ answers; " +
		"the load generator is the bench's own process; the three: the sum of the three medians)\n\n")
	b.WriteString("| row | column | load generator | fake upstream | proxy | the three |\n|---|---|---|---|---|---|\n")
	b.WriteString(rows.String())
	b.WriteString("\n")
}

func (r *report) autoTable(b *strings.Builder) {
	var res *result
	for _, x := range r.results {
		if x.sc.auto {
			res = x
		}
	}
	if res == nil {
		return
	}
	b.WriteString("### model \"auto\" against explicit routing (concurrency 1)\n\n")
	b.WriteString("| | direct | explicit | auto | auto − explicit, by round |\n|---|---|---|---|---|\n")
	d, e, a := res.col("direct"), res.col("explicit"), res.col("auto")
	for _, q := range []struct {
		name string
		f    func(*column) []time.Duration
	}{{"p50", func(c *column) []time.Duration { return c.p50 }}, {"p99", func(c *column) []time.Duration { return c.p99 }}} {
		dv, ev, av := median(q.f(d)), median(q.f(e)), median(q.f(a))
		fmt.Fprintf(b, "| %s | %s | %s | %s (auto − explicit %s) | %s |\n", q.name, us(dv), added(ev, dv), added(av, dv),
			signed(av-ev), spread(a, e, q.f))
	}
	b.WriteString("\n")
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/(1<<20)) }

func (r *report) memoryTable(b *strings.Builder) {
	m := r.memory
	b.WriteString("### Gateway memory (/proc/PID/status)\n\n")
	peaks := make([]string, len(m.PeakRSS))
	for i, p := range m.PeakRSS {
		peaks[i] = mb(p)
	}
	if len(peaks) == 0 {
		peaks = []string{"—"}
	}
	fmt.Fprintf(b, "| idle VmRSS | VmRSS under %d slow streams (largest sample), by burst | VmHWM after them |\n|---|---|---|\n", m.Streams)
	fmt.Fprintf(b, "| %s | %s | %s |\n\n", mb(m.Idle.RSS), strings.Join(peaks, ", "), mb(m.HWM))
	if len(m.PeakRSS) > 1 {
		b.WriteString("Each burst's client closes its connections after it. A later burst's peak may still hold what the " +
			"collector had not yet freed of the burst before (it runs again when the heap reaches twice what its last " +
			"collection kept): the first is a single burst's.\n\n")
	}
	if m.Streams == 0 {
		return
	}
	fmt.Fprintf(b, "%d streams of %d events %s apart (the finishing event and [DONE] come with the last), all opened at "+
		"once (file-descriptor limit %d):\n\n",
		m.Streams, r.opts.SlowChunks, r.opts.SlowInterval, r.nofile)
	fmt.Fprintf(b, "Each column ran %d such bursts in turn (direct, gateway%s%s, direct …); a row is its median burst, "+
		"the one with the median held-back count, and the last column lists every burst's count in the order they ran "+
		"(the gateway's first burst is its first thousand connections: its heap and stacks grow then).\n\n",
		len(m.Gateway), map[bool]string{true: ", goblind"}[len(m.GoBlind) > 0], map[bool]string{true: ", nginx"}[len(m.Nginx) > 0])
	b.WriteString("| | open at once | events | held back ≥ ½ interval (of them, first events) | largest delay behind schedule | first event (median) | proxy CPU a stream (median of bursts): to the last first event, whole burst | failed | took | held back, by burst |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	type burstRow struct {
		name string
		res  []streamsResult
	}
	var rows []burstRow
	for _, r := range []burstRow{{"direct", m.Direct}, {"gateway", m.Gateway}, {"goblind", m.GoBlind}, {"nginx", m.Nginx}} {
		if len(r.res) > 0 {
			rows = append(rows, r)
		}
	}
	for _, s := range rows {
		med := medianBurst(s.res)
		fmt.Fprintf(b, "| %s | %d | %d | %d (%d) | %s | %s | %s | %d | %s | %s |\n", s.name, med.MaxOpen, med.Events, med.HeldBack, med.HeldFirst,
			us(med.MaxLag), us(med.FirstEvent), burstCPU(s.res), med.Errors, med.Took.Round(10*time.Millisecond), heldByBurst(s.res))
	}
	b.WriteString("\n")
	for _, s := range rows {
		for i, r := range s.res {
			if r.FirstErr != "" {
				fmt.Fprintf(b, "First %s stream failure (burst %d): `%s`\n\n", s.name, i+1, oneLine(r.FirstErr))
				break
			}
		}
	}
}

// exact renders a compared value to a tenth of a microsecond: the targets line must not print
// "+20 µs — not met" for a +20.4 µs that the ≤ 20 µs rule fails.
func exact(d time.Duration) string {
	s := fmt.Sprintf("%.1f µs", float64(d.Abs())/float64(time.Microsecond))
	if d < 0 {
		return "−" + s
	}
	return "+" + s
}

// targets compares the run with the targets, printing each compared value as precisely
// as the comparison uses it.
func (r *report) targets(b *strings.Builder) {
	b.WriteString("### Against the targets\n\n")
	mark := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**not met**"
	}
	for _, res := range r.results {
		d, g, n := res.col("direct"), res.col("gateway"), res.col("nginx")
		switch {
		case res.sc.auto:
			e, a := res.col("explicit"), res.col("auto")
			diff := median(a.p50) - median(e.p50)
			fmt.Fprintf(b, "- auto − explicit at p50 ≤ 20 µs: %s — %s\n", exact(diff), mark(diff <= 20*time.Microsecond))
		case res.sc.stream:
			add := median(g.ttfb50) - median(d.ttfb50)
			fmt.Fprintf(b, "- stream added time to first byte at c=%d ≤ 150 µs: %s — %s\n", res.sc.conc, exact(add),
				mark(add <= 150*time.Microsecond))
		case res.sc.conc == 1:
			add := median(g.p50) - median(d.p50)
			if gp := res.col("goproxy"); gp != nil {
				diff := median(g.p50) - median(gp.p50)
				than := "sooner"
				if diff > 0 {
					than = "later"
				}
				fmt.Fprintf(b, "- (for reading, no target) p50 at c=1, gateway − a plain httputil.ReverseProxy: %s (the gateway answers %s)\n",
					signed(diff), than)
			}
			if gb := res.col("goblind"); gb != nil && len(gb.p50) > 0 && len(g.p50) > 0 {
				fmt.Fprintf(b, "- (for reading, no target) p50 at c=1, gateway − goblind (a Go relay that only frames and copies): "+
					"%s, the gateway's own work and the head parsing, pooling and timeouts goblind skips; goblind − nginx: %s\n",
					signed(median(g.p50)-median(gb.p50)), nginxDiff(gb, n))
			}
			if n != nil {
				nadd := median(n.p50) - median(d.p50)
				fmt.Fprintf(b, "- added p50 at c=1 no more than nginx's: gateway %s, nginx %s — %s\n", exact(add),
					exact(nadd), mark(add <= nadd))
			} else {
				fmt.Fprintf(b, "- added p50 at c=1 no more than nginx's (about 85 µs here): gateway %s — %s (no nginx column)\n",
					exact(add), mark(add <= 85*time.Microsecond))
			}
		}
	}
	var last *result
	for _, x := range r.results {
		if !x.sc.auto && !x.sc.stream {
			last = x
		}
	}
	if last != nil {
		if d := medianFloat(last.col("direct").thr); d > 0 {
			ratio := medianFloat(last.col("gateway").thr) / d
			fmt.Fprintf(b, "- throughput at c=%d ≥ 0.60× direct: %.3f× — %s\n", last.sc.conc, ratio, mark(ratio >= 0.60))
		}
	}
	if r.memory.Streams > 0 {
		g, d := medianBurst(r.memory.Gateway), medianBurst(r.memory.Direct)
		through := ""
		if len(r.memory.GoBlind) > 0 {
			through = fmt.Sprintf(", %d through goblind", medianBurst(r.memory.GoBlind).HeldBack)
		}
		if len(r.memory.Nginx) > 0 {
			through += fmt.Sprintf(", %d through nginx", medianBurst(r.memory.Nginx).HeldBack)
		}
		failed := 0
		for _, x := range r.memory.Gateway {
			failed += x.Errors
		}
		fmt.Fprintf(b, "- no event held back under %d streams (median of %d bursts): %d held back through the gateway, %d straight to the "+
			"upstream%s — %s\n", r.memory.Streams, len(r.memory.Gateway), g.HeldBack, d.HeldBack, through,
			mark(g.HeldBack <= d.HeldBack && failed == 0))
	}
	fmt.Fprintf(b, "- idle RSS under 30 MB: %s — %s\n\n", mb(r.memory.Idle.RSS), mark(r.memory.Idle.RSS < 30<<20))
}

func (r *report) notes(b *strings.Builder) {
	b.WriteString("### Notes\n\n")
	for _, s := range r.skipped {
		fmt.Fprintf(b, "- %s\n", s)
	}
	for _, res := range r.results {
		for _, c := range res.cols {
			if c.fewest > 0 && c.fewest < 100 {
				fmt.Fprintf(b, "- %s, %s: p99 of a round of fewer than 100 answers is its slowest answer; the fewest a round had: %d "+
					"(a longer --round-time gives more)\n", res.sc.name, c.name, c.fewest)
			}
			if c.errors > 0 {
				fmt.Fprintf(b, "- %s, %s: %d of %d requests failed; first: `%s`\n", res.sc.name, c.name, c.errors,
					c.errors+c.requests, oneLine(fmt.Sprint(c.firstErr)))
			}
		}
		if res.newConns > 0 {
			fmt.Fprintf(b, "- %s: %d new connections carried chat requests to the upstream during the measured rounds (pools were warm: some proxy "+
				"closed and reopened connections, as one whose idle pool is smaller than its concurrency does)\n", res.sc.name, res.newConns)
		}
	}
	for _, p := range r.profiles {
		fmt.Fprintf(b, "- profile: %s\n", p)
	}
	fmt.Fprintf(b, "- every answer's body was checked, byte for byte, against what the fake upstream sends; %d connections "+
		"carried chat requests to the fast upstream over the run\n", r.upstreamConns)
}

// nginxDiff is goblind's p50 − nginx's, or "—" without an nginx column.
func nginxDiff(gb, n *column) string {
	if n == nil || len(n.p50) == 0 {
		return "—"
	}
	return signed(median(gb.p50) - median(n.p50))
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
