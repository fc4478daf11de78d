package lrusim

import (
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

// Main is `gateway lru-sim --trace FILE --slots N [--pinned NAME…] [--swap 2.47s]`. It returns the
// exit code: 0 on success, 1 when the trace cannot be read, 2 on a usage error.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lru-sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
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
		fmt.Fprintln(stderr, "usage: gateway lru-sim --trace FILE --slots N [--pinned NAME…] [--swap 2.47s]")
		fmt.Fprintln(stderr, "Replays a trace under LRU, LFU and Belady's optimal and prints hits, misses and swap time.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
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
