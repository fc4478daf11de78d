package lifecycle

import (
	"context"
	"testing"
	"time"

	"github.com/hayula/gateway/internal/conntest"
	"go.uber.org/goleak"
)

// TestWedgedTLSProbeLeavesNothingBehind: a probe of an https:// health URL whose server accepts
// the connection and never answers the TLS hello fails at ProbeTimeout and leaves nothing
// behind. net/http dials apart from the request (a probe that gives up does not end its dial),
// and the probe client's Transport had no TLS handshake timeout: each probe of a process so
// wedged (stopped, say, with SIGSTOP) left a dial and a handshake goroutine for as long as the
// process kept the connection, one more every PollInterval while its start was waited for.
func TestWedgedTLSProbeLeavesNothingBehind(t *testing.T) {
	addr := conntest.Wedged(t) // never reads, never answers
	m, err := New(nil, nil, Options{ProbeTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Close(context.Background()) }()
	before := goleak.IgnoreCurrent()
	for range 3 {
		if m.probeOnce(context.Background(), "https://"+addr+"/health") {
			t.Fatal("a probe of a server that never answers passed")
		}
	}
	if err := goleak.Find(before); err != nil {
		t.Errorf("probes that ended left goroutines behind: %v", err)
	}
}
