package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hayula/gateway/server"
)

// TestStopPastGraceLogsCutRequests: a stream cut off because the gateway's stop outlasted its
// grace is logged, as every request is, before Serve returns. Serve closed the connections and
// returned at once; the handlers woken by the cancel logged their request lines after, and a
// gateway then exits (cmd/gateway flushes its log and returns), so the requests it cut left no
// trace: the operator's log ended with the listening line.
func TestStopPastGraceLogsCutRequests(t *testing.T) {
	started, end := make(chan struct{}), make(chan struct{})
	defer close(end)
	up := newFake(t, "openai")
	up.set(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}`+"\n\n")
		w.(http.Flusher).Flush()
		close(started)
		select {
		case <-r.Context().Done():
		case <-end:
		}
	})
	logs := &syncBuffer{}
	g := newGateway(t, fmt.Sprintf("[targets.t]\nadapter = \"openai\"\nurl = %q\nclass = \"private\"\n\n[routes.r]\ntargets = [\"t\"]\n", up.url()), nil, withLog(logs))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- server.Serve(ctx, ln, g.srv.Handler(), 50*time.Millisecond, nil) }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"model":"r","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream got no request")
	}
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return once its grace had passed")
	}
	// Read as the gateway's exit would leave it: at once.
	if got := logs.String(); !strings.Contains(got, "msg=request") || !strings.Contains(got, "route=r") {
		t.Errorf("once Serve has returned, the log holds no line for the request it cut:\n%s", got)
	}
}
