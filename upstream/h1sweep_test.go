package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/hayula/gateway/core"
)

// generous bounds a wait that should end within a few sweeper ticks; reaching it fails a test
// instead of hanging it.
const generous = 10 * time.Second

// fakeTicks drives a transport's sweeper by hand. A send returns once the sweeper has taken
// the tick, so sending the same time twice returns after the first round has run.
type fakeTicks struct {
	c       chan time.Time
	started int           // sweepers started
	stopped chan struct{} // receives once per sweeper that ended
}

func injectTicks(t *testing.T, s *Set, tg *core.Target) (*h1Transport, *fakeTicks) {
	t.Helper()
	tr, ok := s.clients[tg.Index].Transport.(*h1Transport)
	if !ok {
		t.Fatalf("target served by %T", s.clients[tg.Index].Transport)
	}
	ft := &fakeTicks{c: make(chan time.Time), stopped: make(chan struct{}, 8)}
	tr.ticker = func() (<-chan time.Time, func()) {
		ft.started++ // under tr.mu
		return ft.c, func() { ft.stopped <- struct{}{} }
	}
	tr.tickTime = func(at time.Time) time.Time { return at }
	tr.now = fixedNow // the tests' first tick: a new connection's timeout counts from it
	return tr, ft
}

// tick sends at to the running sweeper.
func (ft *fakeTicks) tick(t *testing.T, at time.Time) {
	t.Helper()
	select {
	case ft.c <- at:
	case <-time.After(generous):
		t.Fatal("the sweeper is not running")
	}
}

// round sends at, then a zero time, so that the sweeper's round at at has finished when it
// returns and nothing of it is left to run. The zero tick is a fence: a round whose time is
// zero visits nothing (sweep skips it), and it counts as a tick as at's second copy did. With
// at sent twice, round returned while the second round at at could still be to run, and it ran
// against what the test did next: in TestH1SteadyStreamNotCut it saw the read waiting for the
// next event and dated its start at that tick rather than the next, so that the next round but
// one cut a wait one nanosecond short of the limit (under load, two failures and a hang in
// some 300 runs with -cpu 1,4).
func (ft *fakeTicks) round(t *testing.T, at time.Time) {
	t.Helper()
	ft.tick(t, at)
	ft.tick(t, time.Time{})
}

// tickUntilStopped sends at until the sweeper ends.
func (ft *fakeTicks) tickUntilStopped(t *testing.T, at time.Time) {
	t.Helper()
	timeout := time.After(generous)
	for {
		select {
		case ft.c <- at:
		case <-ft.stopped:
			return
		case <-timeout:
			t.Fatal("the sweeper did not end")
		}
	}
}

func (ft *fakeTicks) waitStopped(t *testing.T) {
	t.Helper()
	select {
	case <-ft.stopped:
	case <-time.After(generous):
		t.Fatal("the sweeper did not end")
	}
}

// livePhase is the phase of the only live exchange; -1 when none is live.
func livePhase(tr *h1Transport) int32 {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.live) != 1 {
		return -1
	}
	return tr.live[0].phase.Load()
}

// seenPhase is the phase the sweeper has stamped on the only live exchange.
func seenPhase(tr *h1Transport) int32 {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.live) != 1 {
		return -1
	}
	return tr.live[0].seen
}

// stall blocks a handler until its client goes or the test ends (t.Context is done before the
// server's Close runs), so that a failed test does not wait forever on that Close.
func stall(t *testing.T, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-t.Context().Done():
	}
}

type chatResult struct {
	resp *Response
	err  error
}

func chatAsync(s *Set, ctx context.Context, tg *core.Target, req *core.Request) chan chatResult {
	done := make(chan chatResult, 1)
	go func() {
		resp, err := s.Chat(ctx, tg, req)
		done <- chatResult{resp, err}
	}()
	return done
}

func wait[T any](t *testing.T, c chan T) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(generous):
		t.Fatalf("no result within %s", generous)
		panic("unreachable")
	}
}

// A caller that gives up ends the attempt with its context's error, promptly, whether the
// upstream stalls before the head or in the middle of a stream, and the connection is not
// pooled.
func TestH1SweeperCancels(t *testing.T) {
	for _, when := range []string{"before the head", "mid stream"} {
		t.Run(when, func(t *testing.T) {
			sent := make(chan struct{})
			srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				if when == "mid stream" {
					w.Header().Set("Content-Type", "text/event-stream")
					_, _ = fmt.Fprintf(w, "data: %s\n\n", chunkHello)
					w.(http.Flusher).Flush()
				}
				close(sent)
				stall(t, r)
			})
			tg := target(srv.URL)
			tg.Timeout = 2 * generous // only the cancellation can end the wait in time
			s := newSet(t, tg)
			tr := s.clients[tg.Index].Transport.(*h1Transport)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var err error
			if when == "before the head" {
				done := chatAsync(s, ctx, tg, chatReq(false))
				<-sent
				cancel()
				err = wait(t, done).err
			} else {
				resp, cerr := s.Chat(ctx, tg, chatReq(true))
				if cerr != nil {
					t.Fatal(cerr)
				}
				defer resp.Stream.Close()
				if _, err := resp.Stream.Next(); err != nil {
					t.Fatal(err)
				}
				<-sent
				next := make(chan error, 1)
				go func() {
					_, err := resp.Stream.Next()
					next <- err
				}()
				cancel()
				err = wait(t, next)
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("error = %v (%T), want one wrapping context.Canceled", err, err)
			}
			tr.mu.Lock()
			live, idle := len(tr.live), tr.nIdle
			tr.mu.Unlock()
			if live != 0 || idle != 0 {
				t.Errorf("after the cancellation: %d live, %d idle, want none (the connection closed)", live, idle)
			}
		})
	}
}

// The response-header timeout ends the attempt at the first tick at or past the limit counted
// from the tick that first saw the request sent (on this new connection, from its connect's
// start, which injectTicks stamps with that tick's time), not before, with a TimeoutError.
func TestH1SweeperHeaderTimeout(t *testing.T) {
	srv := serve(t, hang(t, nil))
	tg := target(srv.URL)
	tg.Timeout = 30 * time.Second
	s := newSet(t, tg)
	tr, ft := injectTicks(t, s, tg)
	done := chatAsync(s, context.Background(), tg, chatReq(false))
	t0 := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	// Rounds at t0 until one has seen the request sent (the client moves to the head phase
	// right after its flush).
	for i := 0; seenPhase(tr) != phaseHead; i++ {
		if i > 1e6 {
			t.Fatal("the exchange never reached the head phase")
		}
		ft.round(t, t0)
	}
	ft.round(t, t0.Add(tg.Timeout-time.Nanosecond))
	if ph := livePhase(tr); ph != phaseHead {
		t.Fatalf("phase %d just before the limit, want %d (still waiting for the head)", ph, phaseHead)
	}
	select {
	case r := <-done:
		t.Fatalf("the attempt ended before the limit: %v", r.err)
	default:
	}
	ft.round(t, t0.Add(tg.Timeout))
	err := wait(t, done).err
	var te *core.TimeoutError
	if !errors.As(err, &te) || te.After != tg.Timeout {
		t.Fatalf("error = %v (%T), want a TimeoutError after %s", err, err, tg.Timeout)
	}
}

// A tick that waited in the ticker's channel while the process was starved of CPU carries the
// time it was made, before the exchange began: the sweeper stamps the exchange with the clock's
// reading instead, so the limit is counted from no earlier than the exchange's start.
func TestH1SweeperStaleTick(t *testing.T) {
	srv := serve(t, hang(t, nil))
	tg := target(srv.URL)
	tg.Timeout = 30 * time.Second
	s := newSet(t, tg)
	tr, ft := injectTicks(t, s, tg)
	tr.tickTime, tr.now = nil, nil // the real clock, as in production; ticks below carry stale times
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := chatAsync(s, ctx, tg, chatReq(false))
	stale := time.Now().Add(-time.Hour)
	for i := 0; seenPhase(tr) != phaseHead; i++ {
		if i > 1e6 {
			t.Fatal("the exchange never reached the head phase")
		}
		ft.round(t, stale)
	}
	ft.round(t, time.Now())
	select {
	case r := <-done:
		t.Fatalf("the attempt timed out at once, counted from a stale tick: %v", r.err)
	default:
	}
	if ph := livePhase(tr); ph != phaseHead {
		t.Fatalf("phase %d, want %d (still waiting for the head)", ph, phaseHead)
	}
	cancel() // the caller gives up, and the next round ends the attempt
	ft.round(t, time.Now())
	if err := wait(t, done).err; !errors.Is(err, context.Canceled) {
		t.Fatalf("after the caller gave up: %v", err)
	}
}

// A stream's tail that does not come within drainWait costs the connection, and Close returns.
func TestH1SweeperDrainWait(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, doneStream)
		w.(http.Flusher).Flush()
		stall(t, r) // the chunked body's end never comes
	})
	tg := target(srv.URL)
	s := newSet(t, tg)
	tr, ft := injectTicks(t, s, tg)
	resp, err := s.Chat(context.Background(), tg, chatReq(true))
	if err != nil {
		t.Fatal(err)
	}
	if ev, end := drain(resp.Stream); len(ev) != 1 || end != "EOF" {
		t.Fatalf("events %q, end %s", ev, end)
	}
	closed := make(chan error, 1)
	go func() { closed <- resp.Stream.Close() }()
	t0 := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	for i := 0; seenPhase(tr) != phaseDrain; i++ {
		if i > 1e6 {
			t.Fatal("the stream never reached the drain phase")
		}
		ft.round(t, t0)
	}
	ft.round(t, t0.Add(drainWait))
	if err := wait(t, closed); err != nil {
		t.Fatal(err)
	}
	tr.mu.Lock()
	live, idle := len(tr.live), tr.nIdle
	tr.mu.Unlock()
	if live != 0 || idle != 0 || conns.Load() != 1 {
		t.Errorf("%d live, %d idle of %d connections, want the one connection closed", live, idle, conns.Load())
	}
}

// The sweeper ends after sweepQuiet ticks with nothing live, and the next exchange starts
// another; CloseIdleConnections ends it as soon as nothing is live, and an exchange still in
// flight keeps it (and its cancellation) until it ends.
func TestH1SweeperStops(t *testing.T) {
	sent := make(chan struct{}, 4)
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = fmt.Fprintf(w, "data: %s\n\n", chunkHello)
		w.(http.Flusher).Flush()
		sent <- struct{}{}
		stall(t, r)
	})
	tg := target(srv.URL)
	s := newSet(t, tg)
	tr, ft := injectTicks(t, s, tg)
	t0 := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)

	open := func(ctx context.Context) Stream {
		t.Helper()
		resp, err := s.Chat(ctx, tg, chatReq(true))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := resp.Stream.Next(); err != nil {
			t.Fatal(err)
		}
		<-sent
		return resp.Stream
	}

	// Quiet: the stream's end leaves nothing live; sweepQuiet rounds later the sweeper ends.
	st := open(context.Background())
	_ = st.Close()
	for range sweepQuiet - 1 {
		ft.tick(t, t0)
	}
	select {
	case <-ft.stopped:
		t.Fatal("the sweeper ended before sweepQuiet quiet ticks")
	default:
	}
	ft.tick(t, t0)
	ft.waitStopped(t)

	// Close while a stream is open: its cancellation still works, then the sweeper ends.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st = open(ctx)
	s.Close()
	next := make(chan error, 1)
	go func() {
		_, err := st.Next()
		next <- err
	}()
	cancel()
	ft.round(t, t0)
	if err := wait(t, next); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next after cancel = %v, want context.Canceled", err)
	}
	_ = st.Close()
	ft.tickUntilStopped(t, t0) // the first round that finds nothing live ends it

	// Close with nothing live ends the sweeper without a tick.
	_ = open(context.Background()).Close()
	s.Close()
	ft.waitStopped(t)

	tr.mu.Lock()
	started, sweeping := ft.started, tr.sweeping
	tr.mu.Unlock()
	if started != 3 || sweeping {
		t.Errorf("sweepers started %d, still running %v; want 3 and false", started, sweeping)
	}
}

// deadlineConn is a connection whose SetDeadline is counted, for sweeps of exchanges that have no
// socket behind them.
type deadlineConn struct {
	net.Conn
	set int
}

func (c *deadlineConn) SetDeadline(time.Time) error { c.set++; return nil }

// A tick visits at least sweepBatch live exchanges and beyond that a sweepRounds-th of them in
// turn, so that a thousand open streams cost a hundred visits a tick rather than a thousand;
// every exchange is still visited within a round, or two when another's end moved it.
func TestH1SweeperVisitsInBatches(t *testing.T) {
	now := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	for _, n := range []int{1, sweepBatch, sweepBatch + 1, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			tr := &h1Transport{sweeping: true} // no sweeper goroutine: the test ticks by hand
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			conns := make([]*h1Conn, n)
			for i := range conns {
				conns[i] = &h1Conn{Conn: &deadlineConn{}}
				tr.watchLocked(ctx, conns[i], time.Time{})
				conns[i].phase.Store(phaseBody)
			}
			canceled := func() int {
				k := 0
				for _, c := range conns {
					if c.phase.Load() == phaseCanceled {
						k++
					}
				}
				return k
			}
			want := min(n, max(sweepBatch, (n+sweepRounds-1)/sweepRounds))
			tr.sweepLocked(now)
			if got := canceled(); got != want {
				t.Fatalf("one tick interrupted %d of %d cancelled exchanges, want %d", got, n, want)
			}
			for range sweepRounds - 1 {
				tr.sweepLocked(now)
			}
			if got := canceled(); got != n {
				t.Fatalf("a round of %d ticks interrupted %d of %d", sweepRounds, got, n)
			}
			for _, c := range conns {
				if d := c.Conn.(*deadlineConn).set; d != 1 {
					t.Fatalf("an exchange's deadline was set %d times, want once", d)
				}
			}
		})
	}
	t.Run("ends move exchanges", func(t *testing.T) {
		tr := &h1Transport{sweeping: true}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		for range 1000 {
			c := &h1Conn{Conn: &deadlineConn{}}
			tr.watchLocked(ctx, c, time.Time{})
			c.phase.Store(phaseBody)
		}
		// Each tick, the exchange just behind the cursor ends, so that the last one (not yet
		// visited) fills its hole, behind the cursor.
		for range 2 * sweepRounds {
			tr.sweepLocked(now)
			if i := tr.cursor - 1; i >= 0 && i < len(tr.live) {
				tr.unwatchLocked(tr.live[i])
			}
		}
		for _, c := range tr.live {
			if c.phase.Load() != phaseCanceled {
				t.Fatal("an exchange moved by another's end was not visited within two rounds")
			}
		}
	})
}
