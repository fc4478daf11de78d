//go:build unix

package upstream

import (
	"net"
	"testing"
	"time"
)

// TestRefusedEarlyDoesNotWaitForARead: the sweeper peeks for an early answer while it holds the
// transport's lock, and between its look at the exchange's phase and the peek the exchange may
// have gone on to read the answer's head, a read that waits on the socket. The peek must not
// wait for that read (it took the connection's read lock, through RawConn.Read, and waited for
// it, the transport's lock held: no other exchange of the target could be timed out or
// cancelled, and the waiting read itself only the sweeper could end). The 10 s bound is a
// watchdog, not a speed check.
func TestRefusedEarlyDoesNotWaitForARead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv := <-accepted
	defer srv.Close()

	reading := make(chan struct{})
	readDone := make(chan error, 1)
	go func() {
		close(reading)
		_, err := c.Read(make([]byte, 1)) // waits: the server sends nothing yet
		readDone <- err
	}()
	<-reading
	time.Sleep(50 * time.Millisecond) // let the read reach the poller (either way the peek must not wait)

	got := make(chan bool, 1)
	go func() { refused, _ := earlyAnswer(c); got <- refused }()
	select {
	case r := <-got:
		if r {
			t.Error("earlyAnswer: refused with nothing sent and the connection open")
		}
	case <-time.After(10 * time.Second):
		_ = c.Close() // ends the read, and the peek waiting for it
		<-got
		t.Fatal("earlyAnswer waited for the connection's read to end")
	}
	if _, err := srv.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := <-readDone; err != nil {
		t.Fatalf("the exchange's read: %v", err)
	}
}
