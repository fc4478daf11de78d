package lrusim

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strings"
)

// Generate returns a trace of n requests over `specialists` names (SpecialistName(0…)). Each
// request repeats the previous one with probability locality (a follow-up turn of the same
// conversation: temporal locality); otherwise it draws a name with Zipf popularity, name k having
// weight 1/(k+1)^zipfS (zipfS 0 = uniform). The same arguments give the same trace on every
// platform and Go version: it uses its own splitmix64 generator, not math/rand. n or specialists
// below 1 give nil; locality is clamped to [0, 1] and a negative zipfS is taken as 0.
func Generate(seed int64, n, specialists int, zipfS float64, locality float64) []string {
	if n < 1 || specialists < 1 {
		return nil
	}
	zipfS = max(zipfS, 0)
	locality = min(max(locality, 0), 1)
	cum := make([]float64, specialists)
	total := 0.0
	for k := range specialists {
		total += 1 / math.Pow(float64(k+1), zipfS)
		cum[k] = total
	}
	names := make([]string, specialists)
	for k := range names {
		names[k] = SpecialistName(k)
	}

	rng := splitmix{state: uint64(seed)}
	out := make([]string, n)
	prev := -1
	for i := range out {
		k := prev
		if prev < 0 || rng.float() >= locality {
			u := rng.float() * total
			k = 0
			for k < specialists-1 && cum[k] <= u {
				k++
			}
		}
		out[i] = names[k]
		prev = k
	}
	return out
}

// SpecialistName is the name Generate gives to popularity rank k (0 = most popular).
func SpecialistName(k int) string { return fmt.Sprintf("spec-%d", k+1) }

// splitmix is splitmix64: tiny, fixed forever, good enough for synthetic traces.
type splitmix struct{ state uint64 }

func (r *splitmix) next() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// float is uniform in [0, 1).
func (r *splitmix) float() float64 { return float64(r.next()>>11) / (1 << 53) }

// ParseTrace reads one target name a line; blank lines and lines starting with # are skipped and
// surrounding spaces trimmed.
func ParseTrace(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, line)
	}
	return out, sc.Err()
}

// WriteTrace writes a trace in the form ParseTrace reads, after a comment header.
func WriteTrace(w io.Writer, header string, trace []string) error {
	bw := bufio.NewWriter(w)
	for line := range strings.Lines(header) {
		fmt.Fprintf(bw, "# %s", line)
		if !strings.HasSuffix(line, "\n") {
			bw.WriteByte('\n')
		}
	}
	for _, name := range trace {
		bw.WriteString(name)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}
