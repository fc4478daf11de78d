package server_test

import (
	"context"
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
