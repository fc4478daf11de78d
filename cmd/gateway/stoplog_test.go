//go:build unix

package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStopIsLogged: told to stop, serve says so in its log, with how long it lets the requests
// in flight run, and says when it has stopped. The log of a gateway stopped by docker stop or
// systemctl stop ended with its listening line: nothing told a stop from a crash cut short.
func TestStopIsLogged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gateway.toml")
	writeFile(t, path, gatewayFile("127.0.0.1:0", fakeModel(t, nil).URL, "r"))
	_, logs, cancel, code := serving(t, path)
	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit %d", c)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not return")
	}
	got := logs.String()
	stopping, stopped := strings.Index(got, `msg="stopping`), strings.Index(got, "msg=stopped")
	if stopping < 0 || stopped < stopping || !strings.Contains(got, "grace=10s") {
		t.Errorf("log:\n%s\nwant a stopping line naming the grace (10s), then a stopped line", got)
	}
}
