//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// newClient is the load generator's client: keep-alive, a pool as large as the concurrency so
// that no request pays for a new connection once warmed up, no compression, no proxy from the
// environment.
func newClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     5 * time.Minute,
		DisableCompression:  true,
		// Big enough that one read returns a whole small answer.
		ReadBufferSize:  32 << 10,
		WriteBufferSize: 8 << 10,
	}}
}

// endpoint is one column: where the same request is sent.
type endpoint struct {
	name   string // "direct", "gateway", "nginx", "auto"
	url    string // the full chat completions URL
	body   []byte // the request body; the auto column differs from the others only in "model"
	client *http.Client
	// cpu reads the CPU time the proxy serving this column has used; nil for none (direct).
	cpu func() cpuUse
	// peers reads the CPU time the load generator (the bench's own process) and the fake
	// upstream have used; nil when unknown. Beside the proxy's, it says where the machine's CPU
	// went in a round: what a throughput ratio on a machine they share comes down to.
	peers func() (client, upstream cpuUse)
}

// shot is one request as the client saw it.
type shot struct {
	ttfb, total time.Duration
}

// BadAnswerError is a request whose answer was not what the fake upstream sends.
type BadAnswerError struct {
	Endpoint string
	Status   int
	Got      int // body bytes
	Want     int
	// Differs is the offset of the first body byte that is not the fake upstream's, or −1.
	Differs int
	Snippet string
}

func (e *BadAnswerError) Error() string {
	switch {
	case e.Status != http.StatusOK:
		return fmt.Sprintf("%s: status %d: %s", e.Endpoint, e.Status, e.Snippet)
	case e.Got != e.Want:
		return fmt.Sprintf("%s: body of %d bytes, want %d (an event lost or added?)", e.Endpoint, e.Got, e.Want)
	}
	return fmt.Sprintf("%s: body of the right length, but byte %d on is not what the fake upstream sent", e.Endpoint, e.Differs)
}

// do sends one request and reads the whole answer, which must be want byte for byte (nil: any
// answer). ttfb is when the first body byte arrived: for a stream that is the first event (the
// gateway reads it before it answers, so that a stream that fails at once can still fall
// through). Each read's bytes are compared after its time is taken, so that the comparison is
// not in the last byte's time.
func do(ctx context.Context, ep *endpoint, want []byte, buf []byte) (shot, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.url, bytes.NewReader(ep.body))
	if err != nil {
		return shot{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := ep.client.Do(req)
	if err != nil {
		return shot{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return shot{}, &BadAnswerError{Endpoint: ep.name, Status: resp.StatusCode, Snippet: string(b)}
	}
	var s shot
	n, differs := 0, -1
	for {
		m, rerr := resp.Body.Read(buf)
		now := time.Since(start)
		if m > 0 && n == 0 {
			s.ttfb = now
		}
		if want != nil && differs < 0 {
			differs = mismatch(buf[:m], want, n)
		}
		n += m
		if errors.Is(rerr, io.EOF) {
			s.total = now
			break
		}
		if rerr != nil {
			return shot{}, rerr
		}
	}
	if want != nil && (n != len(want) || differs >= 0) {
		return shot{}, &BadAnswerError{Endpoint: ep.name, Status: resp.StatusCode, Got: n, Want: len(want), Differs: differs}
	}
	return s, nil
}

// mismatch is the offset of the first byte of got, read at offset off of a body, that is not
// want's byte there (past want's end counts as not), or −1.
func mismatch(got, want []byte, off int) int {
	if off >= len(want) {
		if len(got) > 0 {
			return off
		}
		return -1
	}
	w := want[off:min(off+len(got), len(want))]
	for i := range w {
		if got[i] != w[i] {
			return off + i
		}
	}
	if len(got) > len(w) {
		return off + len(w)
	}
	return -1
}

// round is one closed-loop run of one endpoint.
type round struct {
	total, ttfb []time.Duration // sorted
	errors      int
	firstErr    error
	elapsed     time.Duration
	cpu         cpuUse // the proxy's CPU use over the round; zero when unknown
	// client and upstream are the load generator's and the fake upstream's CPU use over the
	// round (endpoint.peers); zero when unknown.
	client, upstream cpuUse
}

func (r *round) throughput() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(len(r.total)) / r.elapsed.Seconds()
}

// maxShotsPerWorker bounds one worker's samples in one round (and so the harness's memory):
// at 20 µs a request a worker makes 50,000 requests a second.
const maxShotsPerWorker = 1 << 20

// runRound runs conc workers, each sending a request as soon as its previous answer has been read,
// until d has passed (or a worker's sample budget is spent). Every answer must be want (see do).
// Errors are counted, not retried.
func runRound(ctx context.Context, ep *endpoint, want []byte, conc int, d time.Duration) round {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	deadline := time.Now().Add(d)
	var (
		mu  sync.Mutex
		res round
		wg  sync.WaitGroup
	)
	var cpu0, client0, upstream0 cpuUse
	if ep.cpu != nil {
		cpu0 = ep.cpu()
	}
	if ep.peers != nil {
		client0, upstream0 = ep.peers()
	}
	start := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 32<<10)
			shots := make([]shot, 0, 1024)
			errs := 0
			var firstErr error
			// Each worker tries once at least: on a loaded machine a worker may first run after the
			// deadline, and a round of none measured nothing (TestRoundAgainstFakeUpstream once
			// saw 0 answers and 0 errors under a parallel test run).
			for len(shots) < maxShotsPerWorker && (len(shots)+errs == 0 || time.Now().Before(deadline)) && ctx.Err() == nil {
				s, err := do(ctx, ep, want, buf)
				if err != nil {
					errs++
					if firstErr == nil {
						firstErr = err
					}
					if errs > 100 && len(shots) == 0 {
						break // the endpoint is down: do not spin
					}
					continue
				}
				shots = append(shots, s)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, s := range shots {
				res.total = append(res.total, s.total)
				res.ttfb = append(res.ttfb, s.ttfb)
			}
			res.errors += errs
			if res.firstErr == nil {
				res.firstErr = firstErr
			}
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	if ep.cpu != nil {
		res.cpu = ep.cpu().minus(cpu0)
	}
	if ep.peers != nil {
		client, upstream := ep.peers()
		res.client, res.upstream = client.minus(client0), upstream.minus(upstream0)
	}
	slices.Sort(res.total)
	slices.Sort(res.ttfb)
	return res
}

// quantile is the nearest-rank quantile of sorted values; 0 for none.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// median is the median of values (the mean of the middle two for an even count).
func median(v []time.Duration) time.Duration {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func medianFloat(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
