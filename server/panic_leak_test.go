package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/server"
	"github.com/hayula/gateway/upstream"
)

// panicsOn panics in the attempts on target name while armed, and answers the others.
type panicsOn struct {
	name  string
	armed atomic.Bool
}

func (u *panicsOn) Chat(_ context.Context, t *core.Target, _ *core.Request) (*upstream.Response, error) {
	if t.Name == u.name && u.armed.Load() {
		panic("adapter bug")
	}
	return &upstream.Response{Body: []byte(`{"id":"x","object":"chat.completion","choices":[]}`)}, nil
}

// TestPanickingAttemptGivesBack: an attempt whose adapter panics (the recoverer answers 500)
// gives back what it took of its target: the in-flight count least-busy and
// hayula_upstream_in_flight read is back at 0, and, when it was the probe after a cooldown, the
// probe is over, so that the next request probes the target again instead of passing it by for
// good as one whose probe is still out.
func TestPanickingAttemptGivesBack(t *testing.T) {
	up := &panicsOn{name: "a"}
	g := newGateway(t, "[cooldown]\nfailures = 1\nbase = \"30s\"\n\n"+
		target("a", "http://a.invalid/v1", "private")+target("b", "http://b.invalid/v1", "private")+
		"[routes.r]\ntargets = [\"a\", \"b\"]\n", nil, func(o *server.Options) { o.Upstream = up })
	a := mustTarget(t, g, "a")
	up.armed.Store(true)
	for i := range 3 {
		if rep := g.chat(t, "r"); rep.status != 500 {
			t.Fatalf("request %d: %d %s, want the recoverer's 500", i, rep.status, rep.body)
		}
	}
	if n := a.Stats.InFlight(); n != 0 {
		t.Errorf("after 3 panicking attempts a has %d in flight, want 0", n)
	}

	g.srv.Health().Report(a, core.ClassServerError, 0)
	g.clock.Advance(31 * time.Second)
	if rep := g.chat(t, "r"); rep.status != 500 {
		t.Fatalf("the probe: %d %s, want the recoverer's 500", rep.status, rep.body)
	}
	if st := g.srv.Health().Snapshot(a); st.Probing {
		t.Errorf("after the probe panicked a is still %s, its probe out: %+v", st.Status, st)
	}
	up.armed.Store(false)
	if rep := g.chat(t, "r"); rep.status != 200 || rep.header.Get("x-hayula-chain") != "a" {
		t.Errorf("the next request: %d, chain %q; want a probed again and serving",
			rep.status, rep.header.Get("x-hayula-chain"))
	}
}

// mixedUpstream answers each attempt as its request's first message says: "ok", "stream" (three
// events), "fail" (a 500), "panic", "broken" (a stream that breaks after its first event) or
// "leave" (a stream that waits, after its first event, for its client to go).
type mixedUpstream struct{}

func (mixedUpstream) Chat(ctx context.Context, t *core.Target, req *core.Request) (*upstream.Response, error) {
	var kind string
	if len(req.Messages) > 0 {
		_ = json.Unmarshal(req.Messages[0].Content, &kind)
	}
	switch kind {
	case "fail":
		return nil, &core.StatusError{Target: t.Name, Status: 500, Message: "boom"}
	case "panic":
		panic("adapter bug")
	case "stream", "broken", "leave":
		return &upstream.Response{Stream: &mixedStream{ctx: ctx, kind: kind}}, nil
	}
	return &upstream.Response{Body: []byte(`{"id":"x","object":"chat.completion","choices":[]}`)}, nil
}

type mixedStream struct {
	ctx  context.Context
	kind string
	n    int
}

func (s *mixedStream) Next() ([]byte, error) {
	s.n++
	switch {
	case s.n == 1 || s.n <= 3 && s.kind == "stream":
		return []byte(`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`), nil
	case s.kind == "broken":
		return nil, &core.StreamError{Message: "broke off"}
	case s.kind == "leave":
		<-s.ctx.Done()
		return nil, s.ctx.Err()
	}
	return nil, io.EOF
}

func (s *mixedStream) Close() error { return nil }

// TestInFlightBackToZeroUnderLoad: eight clients send 24 requests each at once over a least-busy
// route of two targets, every way an attempt can end (served whole or streamed, a 500 that falls
// through, a panic, a stream broken by the upstream or left by its client), while the clock moves
// cooldowns on and off. Once every handler has returned each target's in-flight count, which
// least-busy picks by, is back at 0, and no probe is left out.
func TestInFlightBackToZeroUnderLoad(t *testing.T) {
	g := newGateway(t, "[cooldown]\nfailures = 2\nbase = \"1s\"\n\n"+
		target("a", "http://a.invalid/v1", "private")+target("b", "http://b.invalid/v1", "private")+
		"[routes.r]\ntargets = [\"a\", \"b\"]\npolicy = \"least-busy\"\n", nil,
		func(o *server.Options) { o.Upstream = mixedUpstream{} })
	kinds := []string{"ok", "stream", "fail", "panic", "broken", "leave"}
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Go(func() {
			for i := range 24 {
				kind := kinds[(c+i)%len(kinds)]
				stream := kind == "stream" || kind == "broken" || kind == "leave"
				body := fmt.Sprintf(`{"model":"r","stream":%t,"messages":[{"role":"user","content":%q}]}`, stream, kind)
				if kind == "leave" {
					g.openStream(t, body)()
				} else {
					g.post(t, "/v1/chat/completions", body)
				}
				if c == 0 && i%4 == 0 {
					g.clock.Advance(2 * time.Second) // cooldowns end: probes
				}
			}
		})
	}
	wg.Wait()
	g.ts.Close() // waits for every handler
	for _, name := range []string{"a", "b"} {
		tg := mustTarget(t, g, name)
		if n := tg.Stats.InFlight(); n != 0 {
			t.Errorf("%s: %d in flight with every request over, want 0", name, n)
		}
		if st := g.srv.Health().Snapshot(tg); st.Probing {
			t.Errorf("%s: a probe is still out with every request over: %+v", name, st)
		}
	}
}
