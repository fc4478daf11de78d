package upstream

import (
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
)

// TestH1PoolUnderMixedLoad: eight clients make 40 exchanges each at once over one target's
// synchronous client, with a pool of three and every reuse peeked at, through every way an
// exchange ends: a whole answer (by length, chunked, with Connection: close), a stream read to
// its end, left by its caller's cancellation or closed early, a 500, a connection the server
// drops without an answer. Each caller gets its own answer (a connection handed to two
// exchanges would give one the other's); afterwards nothing is live, the pool holds each
// connection once, open and clean, and no more than three, and once it is emptied every
// connection the server accepted is closed: none was neither pooled nor closed.
func TestH1PoolUnderMixedLoad(t *testing.T) {
	const kinds = 8
	var (
		mu   sync.Mutex
		open = map[net.Conn]bool{}
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		id := r.Header.Get("X-Request-Id")
		kind, _ := strconv.Atoi(strings.SplitN(id, ".", 2)[0])
		answer := `{"id":"` + id + `","object":"chat.completion","choices":[{"index":0}]}`
		event := "data: {\"id\":\"" + id + "\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n"
		switch kind {
		case 0:
			w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
			_, _ = io.WriteString(w, answer)
		case 1:
			_, _ = io.WriteString(w, answer[:10])
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, answer[10:])
		case 2:
			w.Header().Set("Connection", "close")
			_, _ = io.WriteString(w, answer)
		case 3, 4, 5:
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, event)
			w.(http.Flusher).Flush()
			if kind == 4 {
				<-r.Context().Done() // until the caller gives up
				return
			}
			_, _ = io.WriteString(w, event+"data: [DONE]\n\n")
		case 6:
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, `{"error":{"message":"boom"}}`)
		case 7:
			c, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = c.Close()
			}
		}
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		switch s {
		case http.StateNew:
			open[c] = true
		case http.StateClosed, http.StateHijacked:
			delete(open, c)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	s, tg := h1Set(t, srv.URL)
	h1 := s.clients[tg.Index].Transport.(*h1Transport)
	h1.maxIdle, h1.peekAfter = 3, 0

	var wg sync.WaitGroup
	for c := range 8 {
		wg.Go(func() {
			for i := range 40 {
				kind := (c*3 + i) % kinds
				id := fmt.Sprintf("%d.%d.%d", kind, c, i)
				ctx, cancel := context.WithCancel(context.Background())
				resp, err := s.ChatID(ctx, tg, chatReq(kind >= 3 && kind <= 5), id)
				switch {
				case kind >= 6:
					if err == nil {
						t.Errorf("%s: answered, want an error", id)
					}
				case err != nil:
					t.Errorf("%s: %v", id, err)
				case resp.Stream == nil:
					if !strings.Contains(string(resp.Body), `"id":"`+id+`"`) {
						t.Errorf("%s: got another's answer: %s", id, resp.Body)
					}
				default:
					ev, err := resp.Stream.Next()
					if err != nil || !strings.Contains(string(ev), `"id":"`+id+`"`) {
						t.Errorf("%s: first event %s, %v; want its own", id, ev, err)
					}
					switch kind {
					case 3:
						for err == nil {
							_, err = resp.Stream.Next()
						}
						if err != io.EOF {
							t.Errorf("%s: stream ended with %v", id, err)
						}
					case 4:
						cancel()
						_, _ = resp.Stream.Next()
					}
					_ = resp.Stream.Close()
				}
				cancel()
			}
		})
	}
	wg.Wait()

	h1.mu.Lock()
	if n := len(h1.live); n != 0 {
		t.Errorf("%d exchanges live with every caller done", n)
	}
	seen, pooled := map[*h1Conn]bool{}, 0
	for _, l := range h1.idle {
		for _, c := range l.conns {
			if seen[c] {
				t.Errorf("a connection is in the pool twice: two exchanges would get it")
			}
			seen[c] = true
			pooled++
			if unsolicited(c.Conn) {
				t.Errorf("a pooled connection is closed, or has bytes waiting that are no answer's")
			}
		}
	}
	if pooled != h1.nIdle || pooled > 3 {
		t.Errorf("the pool holds %d connections and counts %d; at most 3", pooled, h1.nIdle)
	}
	h1.mu.Unlock()

	h1.CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(open)
		mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still open with the pool emptied: neither pooled nor closed", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
