package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hayula/gateway/core"
)

// idleSet is a Set over tg whose idle timeout is idle, with the options newSet gives.
func idleSet(t *testing.T, tg *core.Target, idle time.Duration, tmpl *http.Transport) *Set {
	t.Helper()
	tg.IdleTimeout = idle
	s := NewSet([]*core.Target{tg}, Options{Now: fixedNow, DialTimeout: 2 * time.Second, Transport: tmpl})
	t.Cleanup(s.Close)
	return s
}

// waitReading waits until the only live exchange of tr is in its body phase with a read blocked
// on the upstream.
func waitReading(t *testing.T, tr *h1Transport) {
	t.Helper()
	deadline := time.Now().Add(generous)
	for {
		tr.mu.Lock()
		ok := len(tr.live) == 1 && tr.live[0].phase.Load() == phaseBody && tr.live[0].reads.Load()&1 == 1
		tr.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no read of the body is waiting on the upstream")
		}
		runtime.Gosched()
	}
}

// idleAfter checks that err is the idle timeout of a target named "local" after idle, as
// errmap reads it: a *core.TimeoutError in its chain.
func idleAfter(t *testing.T, err error, idle time.Duration) {
	t.Helper()
	var ie *IdleTimeoutError
	var te *core.TimeoutError
	if !errors.As(err, &ie) || !errors.As(err, &te) || te.After != idle || te.Target != "local" {
		t.Fatalf("error = %v (%T), want an IdleTimeoutError wrapping a TimeoutError after %s", err, err, idle)
	}
}

func liveIdle(tr *h1Transport) (live, idle int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.live), tr.nIdle
}

// An http:// answer whose body stops after its head (a whole answer, a stream before its first
// event, a stream after one) fails at the first tick at or past the idle timeout counted from
// the tick that first saw the read waiting, not before, with an IdleTimeoutError that errmap
// reads as a timeout; the connection is closed, not pooled.
func TestH1BodyIdleTimeout(t *testing.T) {
	for _, when := range []string{"whole answer", "stream before its first event", "stream after an event"} {
		t.Run(when, func(t *testing.T) {
			srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				switch when {
				case "whole answer":
					w.Header().Set("Content-Length", "1000")
					_, _ = io.WriteString(w, `{"id":"x",`)
				default:
					w.Header().Set("Content-Type", "text/event-stream")
					if when == "stream after an event" {
						_, _ = fmt.Fprintf(w, "data: %s\n\n", chunkHello)
					}
				}
				w.(http.Flusher).Flush()
				stall(t, r)
			})
			tg := target(srv.URL)
			const idle = 30 * time.Second
			s := idleSet(t, tg, idle, nil)
			tr, ft := injectTicks(t, s, tg)

			var done chan error
			if when == "whole answer" {
				done = make(chan error, 1)
				go func() {
					_, err := s.Chat(context.Background(), tg, chatReq(false))
					done <- err
				}()
			} else {
				resp, err := s.Chat(context.Background(), tg, chatReq(true))
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Stream.Close()
				if when == "stream after an event" {
					if ev, err := resp.Stream.Next(); err != nil || string(ev) != chunkHello {
						t.Fatalf("first event %q, %v", ev, err)
					}
				}
				done = nextAsync(resp.Stream)
			}
			waitReading(t, tr)
			t0 := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
			ft.round(t, t0)
			ft.round(t, t0.Add(idle-time.Nanosecond))
			select {
			case err := <-done:
				t.Fatalf("the read ended before the idle timeout: %v", err)
			default:
			}
			ft.round(t, t0.Add(idle))
			err := wait(t, done)
			idleAfter(t, err, idle)
			if when != "whole answer" {
				var se *core.StreamError
				if !errors.As(err, &se) {
					t.Errorf("a stream's idle timeout is %T, want it inside a *core.StreamError", err)
				}
			}
			if live, pooled := liveIdle(tr); live != 0 || pooled != 0 || conns.Load() != 1 {
				t.Errorf("%d live, %d pooled of %d connections, want the one connection closed", live, pooled, conns.Load())
			}
		})
	}
}

// give hands ev to the upstream's handler, which takes it while its request lives: a stream the
// gateway cut ends that request, and an unbounded send then hung until the test binary's timeout.
func give(t *testing.T, more chan<- string, ev string) {
	t.Helper()
	select {
	case more <- ev:
	case <-time.After(generous):
		t.Fatal("the upstream's handler takes no more events: its request has ended")
	}
}

func nextAsync(st Stream) chan error {
	done := make(chan error, 1)
	go func() {
		_, err := st.Next()
		done <- err
	}()
	return done
}

// A stream whose bytes come more often than the idle timeout is not cut, however long it runs,
// and neither is one whose caller does not read for longer than that (its own client is slow):
// only a read that waits on the upstream counts. The connection goes back to the pool.
func TestH1SteadyStreamNotCut(t *testing.T) {
	more := make(chan string)
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		for {
			select {
			case ev, ok := <-more:
				if !ok {
					return
				}
				_, _ = io.WriteString(w, ev)
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	})
	tg := target(srv.URL)
	const idle = 30 * time.Second
	s := idleSet(t, tg, idle, nil)
	tr, ft := injectTicks(t, s, tg)
	resp, err := s.Chat(context.Background(), tg, chatReq(true))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Stream.Close()
	t0 := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	hello := fmt.Sprintf("data: %s\n\n", chunkHello)
	// Three events, each after a wait just short of the limit: the stream runs for three times
	// the limit.
	for i := range 3 {
		done := nextAsync(resp.Stream)
		waitReading(t, tr)
		at := t0.Add(time.Duration(i) * idle)
		ft.round(t, at)
		ft.round(t, at.Add(idle-time.Nanosecond))
		give(t, more, hello)
		if err := wait(t, done); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	// The caller reads nothing for ten times the limit while an event waits in the socket.
	give(t, more, hello)
	ft.round(t, t0.Add(10*idle))
	ft.round(t, t0.Add(20*idle))
	if ev, err := resp.Stream.Next(); err != nil || string(ev) != chunkHello {
		t.Fatalf("the event read after the caller's pause: %q, %v", ev, err)
	}
	give(t, more, doneStream)
	close(more)
	if ev, end := drain(resp.Stream); len(ev) != 1 || end != "EOF" {
		t.Fatalf("events %q, end %s", ev, end)
	}
	_ = resp.Stream.Close()
	if live, pooled := liveIdle(tr); live != 0 || pooled != 1 || conns.Load() != 1 {
		t.Errorf("%d live, %d pooled of %d connections, want the one connection pooled", live, pooled, conns.Load())
	}
}

// tlsServer is an httptest TLS upstream that counts the connections it accepted, and the
// Transport template that trusts it.
func tlsServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64, *http.Transport) {
	t.Helper()
	srv, conns := counting(t, h, (*httptest.Server).StartTLS)
	return srv, conns, srv.Client().Transport.(*http.Transport).Clone()
}

// An https:// answer (net/http's Transport) whose body stops after its head fails with an
// IdleTimeoutError, as a whole answer and as a stream, and its connection is not reused: the
// next request, answered at once, comes on a new one.
func TestFallbackBodyIdleTimeout(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			var stalled atomic.Bool
			stalled.Store(true)
			srv, conns, tmpl := tlsServer(t, func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				if !stalled.Load() {
					_, _ = io.WriteString(w, answerJSON)
					return
				}
				if stream {
					w.Header().Set("Content-Type", "text/event-stream")
					_, _ = fmt.Fprintf(w, "data: %s\n\n", chunkHello)
				} else {
					w.Header().Set("Content-Length", "1000")
					_, _ = io.WriteString(w, `{"id":"x",`)
				}
				w.(http.Flusher).Flush()
				stall(t, r)
			})
			tg := target(srv.URL)
			// Generous against a stall that lasts until the test ends; no test waits on it to
			// pass.
			const idle = 100 * time.Millisecond
			s := idleSet(t, tg, idle, tmpl)
			if _, ok := s.clients[tg.Index].Transport.(*idleTransport); !ok {
				t.Fatalf("an https:// target is served by %T, want *idleTransport", s.clients[tg.Index].Transport)
			}
			var err error
			if stream {
				resp, cerr := s.Chat(context.Background(), tg, chatReq(true))
				if cerr != nil {
					t.Fatal(cerr)
				}
				if _, nerr := resp.Stream.Next(); nerr != nil {
					t.Fatal(nerr)
				}
				err = wait(t, nextAsync(resp.Stream))
				_ = resp.Stream.Close()
			} else {
				done := chatAsync(s, context.Background(), tg, chatReq(false))
				err = wait(t, done).err
			}
			idleAfter(t, err, idle)
			stalled.Store(false)
			if _, err := s.Chat(context.Background(), tg, chatReq(false)); err != nil {
				t.Fatal(err)
			}
			if n := conns.Load(); n != 2 {
				t.Errorf("upstream accepted %d connections, want 2 (the stalled one closed)", n)
			}
		})
	}
}

// An https:// stream whose events come more often than the idle timeout runs for longer than
// it without being cut.
func TestFallbackSteadyStreamNotCut(t *testing.T) {
	const idle, gap, events = 400 * time.Millisecond, 20 * time.Millisecond, 40 // 800 ms in all
	srv, _, tmpl := tlsServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		tick := time.NewTicker(gap)
		defer tick.Stop()
		for range events {
			_, _ = fmt.Fprintf(w, "data: %s\n\n", chunkHello)
			w.(http.Flusher).Flush()
			<-tick.C
		}
		_, _ = io.WriteString(w, doneStream)
	})
	tg := target(srv.URL)
	s := idleSet(t, tg, idle, tmpl)
	resp, err := s.Chat(context.Background(), tg, chatReq(true))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Stream.Close()
	if ev, end := drain(resp.Stream); len(ev) != events+1 || end != "EOF" {
		t.Fatalf("%d events, end %s; want %d and EOF", len(ev), end, events+1)
	}
}

// A stream request answered 200 with a body that is not an event stream (a server that ignored
// "stream": true) and that stops after its head is an idle timeout like any other body that does:
// errmap must read a *core.TimeoutError, not the NotSSEError of the bytes read before the wait
// ran out (a server_error, which a route falling through on timeouts only does not move past).
func TestNotEventStreamIdleTimeout(t *testing.T) {
	for _, adapter := range []core.AdapterKind{core.AdapterOpenAI, core.AdapterSAIF} {
		t.Run(adapter.String(), func(t *testing.T) {
			srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Length", "1000")
				_, _ = io.WriteString(w, `{"id":"x",`)
				w.(http.Flusher).Flush()
				stall(t, r)
			})
			tg := target(srv.URL)
			tg.Adapter = adapter
			const idle = 30 * time.Second
			s := idleSet(t, tg, idle, nil)
			tr, ft := injectTicks(t, s, tg)
			done := chatAsync(s, context.Background(), tg, chatReq(true))
			waitReading(t, tr)
			t0 := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
			ft.round(t, t0)
			ft.round(t, t0.Add(idle))
			idleAfter(t, wait(t, done).err, idle)
			if live, pooled := liveIdle(tr); live != 0 || pooled != 0 || conns.Load() != 1 {
				t.Errorf("%d live, %d pooled of %d connections, want the one connection closed", live, pooled, conns.Load())
			}
		})
	}
}
