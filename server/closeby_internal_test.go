package server

import (
	"os"
	"testing"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/lifecycle"
)

// TestProcsCloseOutlastsKillWait: the gateway's wait for its processes at the stop lasts longer
// than a stop can (the SIGTERM grace, then KillWait for a process the kernel cannot kill yet), so
// that it does not exit while one is still under way, with the state file not yet saved (the
// manager saves it once every stop has ended).
func TestProcsCloseOutlastsKillWait(t *testing.T) {
	cfg, err := config.Parse([]byte(`listen = "127.0.0.1:0"

[targets.p]
adapter = "openai"
url     = "http://127.0.0.1:{port}/v1"
command = ["/bin/true", "{port}"]

[routes.r]
targets = ["p"]
`), "gateway.toml", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if longest := lifecycle.DefaultStopGrace + lifecycle.KillWait; s.procs.closeBy <= longest {
		t.Errorf("the stop waits %v for the processes; one may take %v", s.procs.closeBy, longest)
	}
}
