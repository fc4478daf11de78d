package upstream

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hayula/gateway/core"
)

// closingServer serves requests one connection at a time and closes a connection, without
// saying Connection: close, after the answer closeAfter(conn, answer) picks (both counted from
// 0). It reports on the returned channel, after each answer, whether it closed the connection
// after it (once the close is made).
func closingServer(t *testing.T, closeAfter func(conn, answer int) bool) (string, <-chan bool) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan bool, 100)
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for conn := 0; ; conn++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			br := bufio.NewReader(c)
			for answer := 0; ; answer++ {
				req, err := http.ReadRequest(br)
				if err != nil {
					break
				}
				if _, err := io.Copy(io.Discard, req.Body); err != nil {
					break
				}
				if _, err := io.WriteString(c, okAnswer()); err != nil {
					break
				}
				if closeAfter(conn, answer) {
					_ = c.Close()
					events <- true
					break
				}
				events <- false
			}
			_ = c.Close()
		}
	}()
	return "http://" + ln.Addr().String(), events
}

// silentRequests sends n requests one after the other, each after the server has closed its
// connection if it did so after the previous answer, and returns how many failed on a connection
// the server had closed, and closesSilently after each request.
func silentRequests(t *testing.T, s *Set, tg *core.Target, tr *h1Transport, events <-chan bool, n int) (failed int, left []int32) {
	t.Helper()
	for i := range n {
		resp, err := s.Chat(context.Background(), tg, chatReq(false))
		switch {
		case errors.As(err, new(*core.ConnError)):
			failed++
		case err != nil:
			t.Fatalf("request %d: %v (%T)", i, err, err)
		case string(resp.Body) != answerJSON:
			t.Fatalf("request %d: %s", i, resp.Body)
		default:
			<-events // the server's close, if it made one, has reached the client on loopback
		}
		left = append(left, tr.closesSilently.Load())
	}
	return failed, left
}

// TestH1SilentCloseDecays: one silent close (the server's first connection, after its first
// answer: a keep-alive timeout that crossed the reuse, say) makes the next reuses peeked, but
// only for a run of them that find their connection open; after it a reuse within peekAfter is
// not peeked again (this test failed first: the transport peeked every reuse until the next
// reload).
func TestH1SilentCloseDecays(t *testing.T) {
	url, events := closingServer(t, func(conn, answer int) bool { return conn == 0 && answer == 0 })
	s, tg := h1Set(t, url)
	tr := s.clients[tg.Index].Transport.(*h1Transport)
	tr.peekAfter = time.Hour // every reuse comes before the peek
	tr.silentRun = 3
	failed, left := silentRequests(t, s, tg, tr, events, 7)
	// 1: answered, closed; 2: fails on the closed connection (run 3); 3: a new connection;
	// 4, 5, 6: reuses that peek and find it open; 7: not peeked.
	if want := []int32{0, 3, 3, 2, 1, 0, 0}; failed != 1 || !slices.Equal(left, want) {
		t.Errorf("failed %d (want 1), closesSilently after each request %v, want %v", failed, left, want)
	}
}

// TestH1SilentCloserStaysPeeked: a server that closes every connection silently after its second
// answer keeps every reuse peeked, however long: each peek that finds a connection it closed
// starts the run again, and so only the first of its closes costs a request.
func TestH1SilentCloserStaysPeeked(t *testing.T) {
	url, events := closingServer(t, func(_, answer int) bool { return answer == 1 })
	s, tg := h1Set(t, url)
	tr := s.clients[tg.Index].Transport.(*h1Transport)
	tr.peekAfter = time.Hour
	tr.silentRun = 2
	failed, left := silentRequests(t, s, tg, tr, events, 20)
	if failed != 1 {
		t.Errorf("%d of 20 requests failed on connections their server had closed, want 1 (closesSilently: %v)", failed, left)
	}
	if got := left[len(left)-1]; got <= 0 {
		t.Errorf("closesSilently %d at the end, want still on (%v)", got, left)
	}
}
