package health_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/health"
	"github.com/hayula/gateway/internal/conntest"
)

// TestWedgedTLSCheckLeavesNothingBehind: a check of an https:// health URL whose server accepts
// the connection and never answers the TLS hello fails at health_timeout, and leaves nothing
// behind while the Checker runs on. net/http dials apart from the request (a check that gives
// up does not end its dial), and the Checker's Transport had no TLS handshake timeout and no
// dial timeout: every check of such a target left a dial and a handshake goroutine, and a
// socket, waiting for as long as the server kept the connection, one more each interval.
func TestWedgedTLSCheckLeavesNothingBehind(t *testing.T) {
	tg := checked("a", "https://"+conntest.Wedged(t)+"/health", 0)
	tg.HealthTimeout = 50 * time.Millisecond
	c := health.NewChecker(health.NewTracker(1, health.NewManualClock(t0), health.Policy{}), []*core.Target{tg},
		health.CheckerOptions{})
	defer c.Close()
	before := goleak.IgnoreCurrent()
	for range 3 {
		if r, _ := c.Check(context.Background(), tg); r.Err == nil {
			t.Fatal("a check of a server that never answers passed")
		}
	}
	if err := goleak.Find(before); err != nil {
		t.Errorf("checks that ended left goroutines behind: %v", err)
	}
}
