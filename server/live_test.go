package server_test

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/hayula/gateway/server"
)

// live is the gateway's handler served as `gateway serve` serves it (server.Serve, the h1
// engine) on a loopback port, with what the tests used of httptest.Server.
type live struct {
	URL    string
	client *http.Client
	stop   context.CancelFunc
	done   chan error
}

func serveLive(t *testing.T, h http.Handler) *live {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &live{URL: "http://" + ln.Addr().String(), stop: cancel, done: make(chan error, 1),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
	go func() { l.done <- server.Serve(ctx, ln, h, 5*time.Second, nil) }()
	t.Cleanup(l.Close)
	return l
}

func (l *live) Client() *http.Client { return l.client }

// Close stops the server (draining what is under way) and closes the client's connections;
// it may be called more than once.
func (l *live) Close() {
	if l.stop == nil {
		return
	}
	l.stop()
	l.stop = nil
	l.client.CloseIdleConnections()
	<-l.done
}
