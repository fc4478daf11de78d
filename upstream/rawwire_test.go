package upstream

import (
	"bufio"
	"context"
	"errors"
	"github.com/hayula/gateway/core"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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

// okAnswer is a 200 with answerJSON, framed by its length, and extra header lines.
func okAnswer(extra ...string) string {
	h := ""
	for _, e := range extra {
		h += e + "\r\n"
	}
	return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + h + "Content-Length: " + strconv.Itoa(len(answerJSON)) + "\r\n\r\n" + answerJSON
}

// TestH1WrittenRequestNeverSentTwice: an inference request is not idempotent, so one that went
// out whole on a reused connection is never sent again, whatever came back: the server read it
// (the upstream here counts it) and may be running it. The connection closed without a byte of
// answer was sent again on a new connection, as if the server had closed it idle, and so was one
// answered with bytes that are no status line (taken for a previous answer's tail); the server
// then ran the request twice.
func TestH1WrittenRequestNeverSentTwice(t *testing.T) {
	for _, tc := range []struct {
		name, second string
		want         any
	}{
		{"closed without an answer", "", new(*core.ConnError)},
		{"closed after part of a status line", "HTTP/1.1 2", new(*core.ConnError)},
		{"a body's tail where the status line goes", "tail of a body\r\n\r\n", new(*core.ProtocolError)},
		{"a body's last brace", "}\n\r\n", new(*core.ProtocolError)},
		{"empty lines without end", strings.Repeat("\r\n", 10), new(*core.ProtocolError)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newWireUpstream(t, func(n, _ int64, _ *http.Request, _ string) (string, bool) {
				if n == 2 {
					return tc.second, false
				}
				return okAnswer(), true
			})
			s, tg := h1Set(t, u.url())
			if _, err := s.Chat(context.Background(), tg, chatReq(false)); err != nil {
				t.Fatal(err)
			}
			_, err := s.Chat(context.Background(), tg, chatReq(false))
			if !errors.As(err, tc.want) {
				t.Errorf("second request: %v (%T), want %T", err, err, tc.want)
			}
			if got := u.reqs.Load(); got != 2 {
				t.Errorf("the server read %d requests, want 2: the second was sent again", got)
			}
		})
	}
}

// A GET (a health check, a model list) can be run twice: found closed without a byte of answer
// on a reused connection, it is sent once more on a new one, as net/http sends it.
func TestH1GetSentAgainOnStaleConnection(t *testing.T) {
	u := newWireUpstream(t, func(n, _ int64, _ *http.Request, _ string) (string, bool) {
		if n == 2 {
			return "", false
		}
		return okAnswer(), true
	})
	c := &http.Client{Transport: newH1Transport(&http.Transport{DialContext: (&net.Dialer{}).DialContext}, "local", 0, 0)}
	defer c.CloseIdleConnections()
	for i := range 2 {
		resp, err := c.Get(u.url() + "/health")
		if err != nil {
			t.Fatalf("GET %d: %v", i, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	if got := u.reqs.Load(); got != 3 {
		t.Errorf("the server read %d requests, want 3", got)
	}
}

// TestH1EarlyAnswerToALargeBody: a server may answer before it has read the request's body (a
// 413 for a body it will not take, a 401 from a proxy that checks the key first) and close the
// connection, the body unread. Writing the rest of the body then fails, but the answer is there
// to read, as net/http's reader goroutine reads it: the attempt fails with the server's status,
// not as a connection that broke, on a new connection and on a reused one (which is not taken
// for stale: the server answered), and the request is not sent again.
func TestH1EarlyAnswerToALargeBody(t *testing.T) {
	const refusal = `{"error":{"message":"request entity too large"}}`
	for _, reused := range []bool{false, true} {
		t.Run(map[bool]string{false: "new connection", true: "reused connection"}[reused], func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			var heads atomic.Int64
			var wg sync.WaitGroup
			t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						defer c.Close()
						br := bufio.NewReader(c)
						for {
							req, err := http.ReadRequest(br)
							if err != nil {
								return
							}
							heads.Add(1)
							if req.ContentLength > 1<<20 {
								_, _ = io.WriteString(c, "HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\nConnection: close\r\n"+
									"Content-Length: "+strconv.Itoa(len(refusal))+"\r\n\r\n"+refusal)
								return // the body unread: the close resets the connection
							}
							_, _ = io.Copy(io.Discard, req.Body)
							_, _ = io.WriteString(c, okAnswer())
						}
					}()
				}
			}()
			s, tg := h1Set(t, "http://"+ln.Addr().String())
			if reused {
				if _, err := s.Chat(context.Background(), tg, chatReq(false)); err != nil {
					t.Fatal(err)
				}
			}
			big := `{"model":"auto","messages":[{"role":"user","content":"` + strings.Repeat("x", 32<<20) + `"}]}`
			_, err = s.Chat(context.Background(), tg, &core.Request{Model: "auto", Body: []byte(big)})
			se, ok := errors.AsType[*core.StatusError](err)
			if !ok || se.Status != http.StatusRequestEntityTooLarge || !strings.Contains(se.Message, "too large") {
				t.Fatalf("Chat error = %v (%T), want the server's 413", err, err)
			}
			want := int64(1)
			if reused {
				want = 2
			}
			if got := heads.Load(); got != want {
				t.Errorf("the server read %d request heads, want %d", got, want)
			}
		})
	}
}

// TestH1SilentCloserCostsOneRequest: a server that closes its connection after every answer
// without saying Connection: close fails a request that reuses the connection before the pool
// would peek at it, since that request went out whole and is not sent again
// (TestH1WrittenRequestNeverSentTwice). The first such failure teaches the transport that its
// server closes so: from then on every reuse is peeked, and a connection whose close has come is
// not reused. (The test waits for each close to be made before the next request, as the close of
// a server a network away has come by the time a gateway sends its next request.)
func TestH1SilentCloserCostsOneRequest(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var reqs atomic.Int64
	closed := make(chan struct{}, 100)
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			br := bufio.NewReader(c)
			if req, err := http.ReadRequest(br); err == nil {
				if _, err := io.Copy(io.Discard, req.Body); err == nil {
					reqs.Add(1)
					_, _ = io.WriteString(c, okAnswer())
				}
			}
			_ = c.Close()
			closed <- struct{}{}
		}
	}()
	s, tg := h1Set(t, "http://"+ln.Addr().String())
	s.clients[tg.Index].Transport.(*h1Transport).peekAfter = time.Hour // every reuse comes before the peek
	failed := 0
	for i := range 20 {
		resp, err := s.Chat(context.Background(), tg, chatReq(false))
		switch {
		case errors.As(err, new(*core.ConnError)):
			failed++ // on the connection closed before: no new one to wait for
			continue
		case err != nil:
			t.Fatalf("request %d: %v (%T)", i, err, err)
		case string(resp.Body) != answerJSON:
			t.Fatalf("request %d: %s", i, resp.Body)
		}
		<-closed // on loopback, the close has then reached the client
	}
	if failed != 1 {
		t.Errorf("%d of 20 requests failed on connections their server had closed, want 1", failed)
	}
	if got := reqs.Load(); got != 19 {
		t.Errorf("the server read %d requests, want 19", got)
	}
}

// TestH1TaggedAnswersUnderMixedFraming: many requests at once to one target whose answers come
// framed every way a connection may or may not survive (closed, with bytes behind them,
// informational heads first, HTTP/1.0 to the close, a length and chunked) each get their own
// answer, which echoes their tag, and each reaches the server once.
func TestH1TaggedAnswersUnderMixedFraming(t *testing.T) {
	u := newWireUpstream(t, func(n, _ int64, _ *http.Request, body string) (string, bool) {
		_, rest, _ := strings.Cut(body, `"content":"`)
		tag := rest[:strings.IndexByte(rest, '"')]
		js := `{"id":"` + tag + `","object":"chat.completion","choices":[{"index":0}]}`
		cl := "Content-Length: " + strconv.Itoa(len(js)) + "\r\n"
		chunked := strconv.FormatInt(int64(len(js)), 16) + "\r\n" + js + "\r\n0\r\n\r\n"
		switch n % 6 {
		case 0:
			return "HTTP/1.1 200 OK\r\nConnection: close\r\n" + cl + "\r\n" + js, false
		case 1:
			return "HTTP/1.1 200 OK\r\n" + cl + "\r\n" + js + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", true
		case 2:
			return "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked, true
		case 3:
			return "HTTP/1.0 200 OK\r\n\r\n" + js, false
		case 4:
			return "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked, true
		}
		return "HTTP/1.1 200 OK\r\n" + cl + "\r\n" + js, true
	})
	s, tg := h1Set(t, u.url())
	const workers, each = 16, 25
	errs := make(chan error, workers*each)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				tag := "t" + strconv.Itoa(w) + "-" + strconv.Itoa(i)
				body := `{"model":"auto","messages":[{"role":"user","content":"` + tag + `"}]}`
				resp, err := s.Chat(context.Background(), tg, &core.Request{Model: "auto", Body: []byte(body)})
				if err != nil {
					errs <- errors.New(tag + ": " + err.Error())
					continue
				}
				if !strings.Contains(string(resp.Body), `"id":"`+tag+`"`) {
					errs <- errors.New(tag + " got " + string(resp.Body))
				}
				resp.Release()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := u.reqs.Load(); got != workers*each {
		t.Errorf("the server read %d requests, want %d", got, workers*each)
	}
}
