package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hayula/gateway/server"
)

// A client that reads a stream's status line and then nothing more: the gateway's send timeout
// closes its connection and cancels the request, so the upstream's stream ends and the target's
// in-flight slot is given back. Without it the relay, blocked writing to the client, stopped
// reading the upstream and held both for ever.
func TestSendTimeoutReleasesStalledStream(t *testing.T) {
	up := newFake(t, "up")
	ended := make(chan struct{})
	up.set(func(w http.ResponseWriter, r *http.Request) {
		defer close(ended)
		w.Header().Set("Content-Type", "text/event-stream")
		event := "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" +
			strings.Repeat("x", 1000) + "\"}}]}\n\n"
		for r.Context().Err() == nil {
			if _, err := fmt.Fprint(w, event); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	})
	g := newGateway(t, target("up", up.url(), "private")+"[routes.r]\ntargets = [\"up\"]\n", nil)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- server.Serve(ctx, ln, g.srv.Handler(), time.Second, nil, server.WithSendTimeout(200*time.Millisecond))
	}()
	defer func() {
		cancel()
		<-done
	}()

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.(*net.TCPConn).SetReadBuffer(32 << 10)
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	body := streamBody("r")
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("status line %q, %v", line, err)
	}
	// The client reads nothing more.
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream's stream still runs 10s after the client stopped reading")
	}
	hc := g.ts.Client()
	// settles' bound is a hang's: the count ends a moment after the stream, later under load.
	var n int64
	settles(func() bool { n = routeInFlight(t, hc, g.ts.URL, "r")["up"]; return n == 0 })
	if n != 0 {
		t.Fatalf("in_flight %d after the upstream's stream ended, want 0", n)
	}
}

// routeInFlight is each candidate's in_flight, from /v1/route/explain for route.
func routeInFlight(t *testing.T, hc *http.Client, base, route string) map[string]int64 {
	t.Helper()
	resp, err := hc.Post(base+"/v1/route/explain", "application/json",
		strings.NewReader(`{"model":"`+route+`","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var x struct {
		Candidates []struct {
			Name     string `json:"name"`
			InFlight int64  `json:"in_flight"`
		} `json:"candidates"`
	}
	if err := decodeJSON(resp, &x); err != nil {
		t.Fatal(err)
	}
	m := map[string]int64{}
	for _, c := range x.Candidates {
		m[c.Name] = c.InFlight
	}
	if len(m) == 0 {
		t.Fatalf("explain listed no candidates for %s", route)
	}
	return m
}
