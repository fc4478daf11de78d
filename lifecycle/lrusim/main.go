package lrusim

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// DefaultSwap is the paper's measured time per specialist swap.
const DefaultSwap = 2470 * time.Millisecond

// Main is `gateway lru-sim --trace FILE --slots N [--pinned NAME…] [--swap 2.47s]`, or
// `gateway lru-sim generate [flags]` to write a trace. It returns the exit code: 0 on success, 1
// when the trace cannot be read, 2 on a usage error.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "generate" {
		return generateMain(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("lru-sim", flag.ContinueOnError)
	tracePath := fs.String("trace", "", "request trace: one target name a line; blank and # lines skipped")
	slots := fs.Int("slots", 0, "how many members may run at once, pinned ones included")
	var pinned []string
	fs.Func("pinned", "a member that is always resident and takes a slot (repeat the flag, or separate with commas)",
		func(v string) error {
			for name := range strings.SplitSeq(v, ",") {
				if name = strings.TrimSpace(name); name != "" {
					pinned = append(pinned, name)
				}
			}
			return nil
		})
	swap := fs.Duration("swap", DefaultSwap, "modeled time of one swap (one miss)")
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintln(w, "usage: gateway lru-sim --trace FILE --slots N [--pinned NAME…] [--swap 2.47s]")
		fmt.Fprintln(w, "       gateway lru-sim generate [--seed 1] [--requests 1000] [--specialists 8] [--zipf 1.0] [--locality 0.5]")
		fmt.Fprintln(w, "Replays a trace under LRU, LFU and Belady's optimal and prints hits, misses and swap time.")
		fs.PrintDefaults()
	}
	if code, ok := parse(fs, args, stdout, stderr); !ok {
		return code
	}
	usage := func(msg string) int {
		fmt.Fprintln(stderr, "lru-sim:", msg)
		fs.Usage()
		return 2
	}
	switch {
	case fs.NArg() > 0:
		return usage("unexpected arguments: " + strings.Join(fs.Args(), " "))
	case *tracePath == "":
		return usage("--trace is required")
	case *slots < 1:
		return usage("--slots must be at least 1")
	case *slots <= len(pinned):
		return usage(fmt.Sprintf("--slots %d leaves no slot beside %d pinned", *slots, len(pinned)))
	case *swap < 0:
		return usage("--swap must not be negative")
	}

	f, err := os.Open(*tracePath)
	if err != nil {
		fmt.Fprintln(stderr, "lru-sim:", err)
		return 1
	}
	trace, err := ParseTrace(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(stderr, "lru-sim: %s: %v\n", *tracePath, err)
		return 1
	}
	results, err := SimulateAll(trace, Config{Slots: *slots, Pinned: pinned, Swap: *swap})
	if err != nil {
		fmt.Fprintln(stderr, "lru-sim:", err)
		return 2
	}
	report(stdout, *tracePath, trace, *slots, pinned, *swap, results)
	return 0
}

func report(w io.Writer, path string, trace []string, slots int, pinned []string, swap time.Duration, results []Result) {
	distinct := map[string]bool{}
	for _, name := range trace {
		distinct[name] = true
	}
	fmt.Fprintf(w, "trace %s: %d requests, %d names\n", path, len(trace), len(distinct))
	if len(pinned) > 0 {
		fmt.Fprintf(w, "slots %d: pinned %s, %d for the rest; swap %s\n\n",
			slots, strings.Join(pinned, ", "), slots-len(pinned), swap)
	} else {
		fmt.Fprintf(w, "slots %d; swap %s\n\n", slots, swap)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\thits\tmisses\thit rate\tswap time\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f%%\t%s\t\n", r.Policy, r.Hits, r.Misses, 100*r.HitRate(),
			r.SwapTime.Round(10*time.Millisecond))
	}
	tw.Flush()
	fmt.Fprintln(w, "\nBelady's optimal knows the future: no online policy beats it.")
}

// parse parses args with fs, whose output it sets to stderr for what follows. Help asked for
// (--help, -h) goes to stdout and ends the command with 0; a mistake's message and the usage go to
// stderr and end it with 2. ok is false when the command ends there.
func parse(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	var said bytes.Buffer
	fs.SetOutput(&said)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		_, _ = stdout.Write(said.Bytes())
		return 0, false
	case err != nil:
		_, _ = stderr.Write(said.Bytes())
		return 2, false
	}
	return 0, true
}

// generateMain is `gateway lru-sim generate`: a representative trace (Zipf popularity with
// temporal locality) on stdout, with a header that says how to make it again.
func generateMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lru-sim generate", flag.ContinueOnError)
	seed := fs.Int64("seed", 1, "random seed; the same flags give the same trace everywhere")
	n := fs.Int("requests", 1000, "number of requests")
	specialists := fs.Int("specialists", 8, "number of distinct names")
	zipfS := fs.Float64("zipf", 1.0, "Zipf exponent of popularity (0 = uniform)")
	locality := fs.Float64("locality", 0.5, "probability that a request repeats the previous one")
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintln(w, "usage: gateway lru-sim generate [--seed 1] [--requests 1000] [--specialists 8] [--zipf 1.0] [--locality 0.5]")
		fmt.Fprintln(w, "Writes a request trace for lru-sim --trace to stdout.")
		fs.PrintDefaults()
	}
	if code, ok := parse(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(stderr, "lru-sim generate: unexpected arguments: "+strings.Join(fs.Args(), " ")+"; it takes only flags")
		return 2
	}
	if *n < 1 || *specialists < 1 || *locality < 0 || *locality > 1 || *zipfS < 0 {
		fmt.Fprintln(stderr, "lru-sim generate: --requests and --specialists must be at least 1, --zipf at least 0, --locality from 0 to 1")
		return 2
	}
	trace := Generate(*seed, *n, *specialists, *zipfS, *locality)
	if err := WriteTrace(stdout, GenerateHeader(*seed, *n, *specialists, *zipfS, *locality), trace); err != nil {
		fmt.Fprintln(stderr, "lru-sim generate:", err)
		return 1
	}
	return 0
}

// GenerateHeader is the header of a generated trace: the command that makes it again.
func GenerateHeader(seed int64, n, specialists int, zipfS, locality float64) string {
	return fmt.Sprintf("generated by: gateway lru-sim generate --seed %d --requests %d --specialists %d --zipf %g --locality %g\n"+
		"Zipf popularity with temporal locality; the same flags give the same trace on every platform\n",
		seed, n, specialists, zipfS, locality)
}
