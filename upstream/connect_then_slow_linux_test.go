package upstream

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/errmap"
)

// slowConnectServer is a loopback HTTP server whose TCP connect is slow: it listens with a
// backlog of 0, its one place in the accept queue taken (fullAcceptQueue), so that the
// kernel drops a client's first SYN; after drainAfter it starts accepting, and the client's
// retransmitted SYN (a second after the first, on Linux) completes the connect. Each request is
// answered answerAfter after its body was read.
func slowConnectServer(t *testing.T, drainAfter, answerAfter time.Duration) string {
	t.Helper()
	f, addr := fullAcceptQueue(t)
	ln, err := net.FileListener(f) // a dup of fd: the same socket, its backlog of 0 kept
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-time.After(answerAfter):
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,`+
				`"message":{"role":"assistant","content":"late"},"finish_reason":"stop"}]}`)
		case <-r.Context().Done():
		case <-release:
		}
	}))
	_ = srv.Listener.Close()
	srv.Listener = ln
	started := make(chan struct{})
	go func() {
		defer close(started)
		select {
		case <-time.After(drainAfter):
			srv.Start()
		case <-release:
			_ = ln.Close()
		}
	}()
	t.Cleanup(func() {
		close(release)
		<-started
		if srv.URL != "" {
			srv.Close()
		}
	})
	return addr
}

// TestSlowConnectThenSlowAnswerTimesOut: on an http:// target the connect and the wait for the
// answer's head count inside one timeout from the attempt's start, as on https://. The connect
// takes about a second (its first SYN dropped), the answer comes 1.5 s after the request: within
// a 2 s timeout counted from the sending, but not from the connect's start. The synchronous
// client gave the head the whole timeout again after the connect, so that a slow connect and a
// slow answer took nearly twice the timeout, and this one was served at about 2.5 s.
func TestSlowConnectThenSlowAnswerTimesOut(t *testing.T) {
	addr := slowConnectServer(t, 300*time.Millisecond, 1500*time.Millisecond)
	tg := target("http://" + addr)
	tg.Timeout = 2 * time.Second
	s := NewSet([]*core.Target{tg}, Options{Now: fixedNow, DialTimeout: 30 * time.Second})
	t.Cleanup(s.Close)
	ctx, cancel := context.WithTimeout(context.Background(), generous)
	defer cancel()
	start := time.Now()
	resp, err := s.Chat(ctx, tg, chatReq(false))
	took := time.Since(start)
	if err == nil {
		resp.Release()
		t.Fatalf("served after %v: the head had the whole timeout again after the connect", took)
	}
	if ctx.Err() != nil {
		t.Fatalf("the attempt did not end within %v: %v", generous, err)
	}
	var te *core.TimeoutError
	if !errors.As(err, &te) || te.After != tg.Timeout {
		t.Fatalf("error %v (%T) after %v, want a *core.TimeoutError after the target's timeout", err, err, took)
	}
	if d := errmap.Classify(err); d.Class != core.ClassTimeout {
		t.Errorf("class %s, want timeout", d.Class)
	}
	if took >= 2*tg.Timeout {
		t.Errorf("the attempt took %v, twice its timeout", took)
	}
}
