//go:build linux

package main

import (
	"context"
	"strings"
	"time"
)

// scenario is one row (two for a stream): the same request sent to each column in turn.
type scenario struct {
	name   string
	conc   int
	stream bool
	auto   bool // the columns are direct, explicit and auto
	cols   []*endpoint
	want   []byte // the body every answer must have, byte for byte
	skip   string // why the row is not measured
}

func (s *scenario) columnNames() string {
	var names []string
	for _, c := range s.cols {
		names = append(names, c.name)
	}
	return strings.Join(names, ", ")
}

// column is what one column measured over the rounds of a scenario.
type column struct {
	name     string
	p50, p99 []time.Duration // per round, of the whole answer
	// rounds is the round each entry of p50, p99, ttfb50 and ttfb99 was measured in: a round
	// without an answer has no entry, so that the lists of two columns can be paired by round.
	rounds []int
	ttfb50 []time.Duration // per round, of the first body byte
	ttfb99 []time.Duration
	thr    []float64 // requests per second, per round
	cpu    []float64 // the proxy's CPU µs per request, per round (rounds with a CPU reading)
	// client and upstream are the load generator's and the fake upstream's CPU µs per request,
	// per round (rounds with a reading of both).
	client, upstream []float64
	// user and sys are the proxy's clock ticks in user and in kernel mode over those rounds.
	user, sys int64
	requests  int
	// fewest is the fewest answers a measured round had: below 100, a round's p99 (nearest rank)
	// is its slowest answer, and the report says so.
	fewest   int
	errors   int
	firstErr error
}

// result is one scenario's columns, aligned with scenario.cols.
type result struct {
	sc   *scenario
	cols []*column
	// newConns is how many new connections carried chat requests to the fast upstream during the
	// measured rounds (after warm-up every pool is full, so any is churn); -1 when unknown.
	newConns int64
}

func (r *result) col(name string) *column {
	for _, c := range r.cols {
		if c.name == name {
			return c
		}
	}
	return nil
}

// runScenario warms every column up, then runs the rounds interleaved, in an order that turns
// round by round: column 1, 2, …, n, then n, …, 2, 1, then 1, 2, … so that whatever else the
// machine is doing falls on every column alike. In one fixed order a drift that is steady over a
// cycle (load rising, a clock settling) put column 2 a round later than column 1 every round,
// and its share of the drift in every round's difference (TestRoundsAlternateOrder).
func runScenario(ctx context.Context, sc *scenario, o options, conns func() int64) *result {
	res := &result{sc: sc}
	for _, ep := range sc.cols {
		res.cols = append(res.cols, &column{name: ep.name})
		if o.Warmup > 0 {
			runRound(ctx, ep, sc.want, sc.conc, o.Warmup)
		}
	}
	before := conns()
	defer func() {
		if after := conns(); before >= 0 && after >= 0 {
			res.newConns = after - before
		} else {
			res.newConns = -1
		}
	}()
	for round := range o.Rounds {
		for k := range sc.cols {
			i := k
			if round%2 == 1 {
				i = len(sc.cols) - 1 - k
			}
			ep := sc.cols[i]
			if ctx.Err() != nil {
				return res
			}
			r := runRound(ctx, ep, sc.want, sc.conc, o.RoundTime)
			c := res.cols[i]
			c.requests += len(r.total)
			c.errors += r.errors
			if c.firstErr == nil {
				c.firstErr = r.firstErr
			}
			if len(r.total) == 0 {
				continue
			}
			if c.fewest == 0 || len(r.total) < c.fewest {
				c.fewest = len(r.total)
			}
			c.rounds = append(c.rounds, round)
			c.p50 = append(c.p50, quantile(r.total, 0.50))
			c.p99 = append(c.p99, quantile(r.total, 0.99))
			c.ttfb50 = append(c.ttfb50, quantile(r.ttfb, 0.50))
			c.ttfb99 = append(c.ttfb99, quantile(r.ttfb, 0.99))
			c.thr = append(c.thr, r.throughput())
			if r.client.run > 0 && r.upstream.run > 0 {
				c.client = append(c.client, perAnswer(r.client, len(r.total)))
				c.upstream = append(c.upstream, perAnswer(r.upstream, len(r.total)))
			}
			if r.cpu.run > 0 {
				c.cpu = append(c.cpu, perAnswer(r.cpu, len(r.total)))
				c.user += r.cpu.user
				c.sys += r.cpu.sys
			}
		}
	}
	return res
}

// perAnswer is u's CPU time in µs per answer of n.
func perAnswer(u cpuUse, n int) float64 {
	return float64(u.run) / float64(time.Microsecond) / float64(n)
}
