package upstream

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hayula/gateway/core"
)

// recycledKinds are the ways an exchange of TestRecycledBuffersStayTheirExchanges ends.
const (
	rkLength  = iota // a whole answer by Content-Length, the connection kept
	rkClose          // a whole answer with Connection: close
	rkChunked        // a chunked answer sent in pieces, read to its end
	rkCut            // the server drops the connection in the middle of the body
	rkCancel         // a slow body whose caller gives up after its first piece
	rkStall          // a body that stops: the sweeper's idle timeout ends it
	rkEarly          // the caller closes the body after its first bytes
	rkStatus         // a 500 read by statusError
	rkNoBody         // a 204, closed without a read
	recycledKinds
)

// TestRecycledBuffersStayTheirExchanges: eight callers make 45 exchanges each at once over one
// synchronous client with a pool of three, through every way an exchange ends, so that
// connections close all the time (by the server's Connection: close, a cut, a timeout, a
// cancellation, a body closed early) and each new one is lent a closed one's reader, writer,
// arena and header map. Every answer carries its request's token in a header and throughout its
// body (longer than the reader's buffer for some): the header, read before the body as the
// adapters do, and every byte of the body read are the exchange's own. Buffers lent while the
// exchange that gave them back still read them, or lent twice, would show another's token, and
// under -race as a race.
func TestRecycledBuffersStayTheirExchanges(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		tok := r.Header.Get("X-Request-Id")
		kind, _ := strconv.Atoi(strings.SplitN(tok, ".", 2)[0])
		body := strings.Repeat(tok+";", 20+len(tok)*(kind+1)*20)
		h := w.Header()
		h.Set("X-Token", tok)
		h.Set("Content-Type", "text/plain")
		switch kind {
		case rkLength:
			h.Set("Content-Length", strconv.Itoa(len(body)))
			_, _ = io.WriteString(w, body)
		case rkClose:
			h.Set("Connection", "close")
			_, _ = io.WriteString(w, body)
		case rkChunked, rkCancel, rkEarly, rkStall:
			for i := 0; i < len(body); i += 1000 {
				_, _ = io.WriteString(w, body[i:min(i+1000, len(body))])
				w.(http.Flusher).Flush()
				if kind == rkCancel || kind == rkStall {
					<-r.Context().Done() // until the caller gives up or times out
					return
				}
			}
		case rkCut:
			c, bw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nX-Token: %s\r\nContent-Length: %d\r\n\r\n%s", tok, len(body), body[:len(body)/2])
			_ = bw.Flush()
			_ = c.Close()
		case rkStatus:
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, body)
		case rkNoBody:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	t.Cleanup(srv.Close)
	d := &net.Dialer{Timeout: time.Second}
	tr := &h1Transport{fallback: &http.Transport{}, idle: map[string]*idleList{}, dial: d.DialContext, maxIdle: 3,
		timeout: 5 * time.Second, bodyIdle: 150 * time.Millisecond, target: "t", epoch: time.Now()}
	t.Cleanup(tr.CloseIdleConnections)
	tg := &core.Target{Name: "t"}

	var wg sync.WaitGroup
	for c := range 8 {
		wg.Go(func() {
			for i := range 45 {
				kind := (c*5 + i) % recycledKinds
				tok := fmt.Sprintf("%d.%d.%d", kind, c, i)
				if err := recycledExchange(tr, tg, srv.URL, kind, tok); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if n := len(tr.live); n != 0 {
		t.Errorf("%d exchanges live with every caller done", n)
	}
}

// recycledExchange makes one exchange of kind and checks that what it reads is tok's.
func recycledExchange(tr *h1Transport, tg *core.Target, url string, kind int, tok string) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, _, err := tr.post(ctx, url+"/v1", "/chat/completions", tg, &payload{[]byte(`{"t":"` + tok + `"}`)}, "text/plain", tok)
	if err != nil {
		return fmt.Errorf("%s: %v", tok, err)
	}
	if got := resp.Header.Get("X-Token"); got != tok {
		_ = resp.Body.Close()
		return fmt.Errorf("%s: the answer's header says %q", tok, got)
	}
	var got []byte
	switch kind {
	case rkNoBody:
		return resp.Body.Close()
	case rkStatus:
		e := statusError(tg, resp, time.Now)
		if h := e.Header.Get("X-Token"); h != tok {
			return fmt.Errorf("%s: the error's header says %q", tok, h)
		}
		got = e.Body
	case rkCancel, rkEarly:
		br := bufio.NewReaderSize(resp.Body, 16)
		line, err := br.ReadString(';')
		if err != nil || line != tok+";" {
			return fmt.Errorf("%s: first piece %q, %v", tok, line, err)
		}
		if kind == rkCancel {
			cancel()
			got, err = io.ReadAll(br)
			if err == nil {
				return fmt.Errorf("%s: the body read to its end after the caller gave up", tok)
			}
		}
	default:
		got, err = io.ReadAll(resp.Body)
		if kind == rkCut || kind == rkStall {
			if err == nil {
				return fmt.Errorf("%s: a cut or stalled body read without error", tok)
			}
		} else if err != nil {
			return fmt.Errorf("%s: %v", tok, err)
		}
	}
	_ = resp.Body.Close()
	// Every whole piece read, and any piece cut short at its end, is the token's.
	pieces := strings.Split(string(got), ";")
	for i, p := range pieces {
		if p != tok && (i < len(pieces)-1 || !strings.HasPrefix(tok, p)) {
			return fmt.Errorf("%s: read %q in its body", tok, p)
		}
	}
	return nil
}

// A connection retired twice gives its buffers back once: two new connections never share
// them.
func TestRetireTwiceLendsOnce(t *testing.T) {
	tr := &h1Transport{}
	for range 100 {
		a, b := net.Pipe()
		c := &h1Conn{Conn: a}
		tr.lend(c)
		tr.retire(c)
		tr.retire(c)
		_ = b.Close()
		one, two := &h1Conn{Conn: b}, &h1Conn{Conn: b}
		tr.lend(one)
		tr.lend(two)
		if one.bufs == two.bufs {
			t.Fatal("two connections were lent the same buffers")
		}
	}
}
