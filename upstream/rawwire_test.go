package upstream

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
)

// wireUpstream is a TCP upstream whose answers are bytes a test writes as they are: it reads each
// request whole, counts it, and writes what answer returns for it; keep false closes the
// connection after writing. A nil answer reads the request and closes the connection without a
// byte of answer. The counts say how often a request reached the server.
type wireUpstream struct {
	ln    net.Listener
	conns atomic.Int64 // connections accepted
	reqs  atomic.Int64 // requests read whole
	wg    sync.WaitGroup
	mu    sync.Mutex
	open  []net.Conn
}

// rawAnswer answers the n-th request (from 1, counted over all connections) with body, on the
// c-th connection (from 1).
type rawAnswer func(n, c int64, req *http.Request, body string) (out string, keep bool)

func newWireUpstream(t *testing.T, answer rawAnswer) *wireUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &wireUpstream{ln: ln}
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			u.mu.Lock()
			u.open = append(u.open, nc)
			u.mu.Unlock()
			cn := u.conns.Add(1)
			u.wg.Add(1)
			go func() {
				defer u.wg.Done()
				defer nc.Close()
				br := bufio.NewReader(nc)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					b, err := io.ReadAll(req.Body)
					if err != nil {
						return
					}
					n := u.reqs.Add(1)
					if answer == nil {
						return
					}
					out, keep := answer(n, cn, req, string(b))
					if _, err := io.WriteString(nc, out); err != nil || !keep {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		u.mu.Lock()
		for _, c := range u.open {
			_ = c.Close()
		}
		u.mu.Unlock()
		u.wg.Wait()
	})
	return u
}

func (u *wireUpstream) url() string { return "http://" + u.ln.Addr().String() }
