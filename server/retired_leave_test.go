package server_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/server"
)

// TestRetiredClientLeavesMidStream: a client that leaves a stream under way on a server a reload
// replaced ends it there as on a current one: the upstream's request is cancelled, the replaced
// server drains and is closed (as the gateway's reload closes it), its upstream connection is
// closed rather than left in its pool, and nothing of the request or of the replaced server is
// left running (goleak).
func TestRetiredClientLeavesMidStream(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	gone, end := make(chan struct{}), make(chan struct{})
	defer close(end)
	closed := make(chan struct{}, 16)
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`+"\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			close(gone)
		case <-end:
		}
	}))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed <- struct{}{}
		}
	}
	up.Start()
	defer up.Close()
	cfg, err := config.Parse([]byte(target("m", up.URL+"/v1", "private")+"[routes.r]\ntargets = [\"m\"]\n"),
		"test.toml", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	old := newReloadServer(t, cfg, nil, nil)
	l := server.NewLive(old)
	h := serveLive(t, l)
	resp, _, _ := openHeldStream(t, h, "r")
	retired := l.Replace(newReloadServer(t, cfg, nil, old))
	resp.Body.Close() // the client leaves
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream's request was not cancelled")
	}
	select {
	case <-retired.Drained():
	case <-time.After(10 * time.Second):
		t.Fatal("the replaced server did not drain once its last request had ended")
	}
	if left := retired.Close(); left != 0 {
		t.Errorf("Close: %d in flight, want 0", left)
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Error("the replaced server's upstream connection is still open")
	}
}
