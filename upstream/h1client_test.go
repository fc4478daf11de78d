package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/core"
)

const answerJSON = `{"id":"x","object":"chat.completion","choices":[{"index":0}]}`

// h1Set is a Set over one http:// target, checked to be served by the synchronous client.
func h1Set(t *testing.T, url string) (*Set, *core.Target) {
	t.Helper()
	tg := target(url)
	s := newSet(t, tg)
	if _, ok := s.clients[tg.Index].Transport.(*h1Transport); !ok {
		t.Fatalf("an http:// target is served by %T, want *h1Transport", s.clients[tg.Index].Transport)
	}
	return s, tg
}

// Answers of every framing leave the connection reusable, and one that says Connection: close
// does not.
func TestH1ConnectionReuse(t *testing.T) {
	tests := []struct {
		name      string
		handler   http.HandlerFunc
		wantConns int64
	}{
		{"content-length", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(len(answerJSON)))
			_, _ = io.WriteString(w, answerJSON)
		}, 1},
		{"chunked", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, answerJSON[:10])
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, answerJSON[10:])
		}, 1},
		{"connection close", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Connection", "close")
			_, _ = io.WriteString(w, answerJSON)
		}, 3},
		{"error status", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"error":{"message":"slow down"}}`)
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				tt.handler(w, r)
			})
			s, tg := h1Set(t, srv.URL)
			for i := range 3 {
				resp, err := s.Chat(context.Background(), tg, chatReq(false))
				if tt.name == "error status" {
					if !errors.As(err, new(*core.StatusError)) {
						t.Fatalf("request %d: %v, want a StatusError", i, err)
					}
					continue
				}
				if err != nil || string(resp.Body) != answerJSON {
					t.Fatalf("request %d: %v %+v", i, err, resp)
				}
			}
			if got := conns.Load(); got != tt.wantConns {
				t.Errorf("upstream accepted %d connections for 3 requests, want %d", got, tt.wantConns)
			}
		})
	}
}

// A pooled connection the server closed while it was idle is replaced, and the request is sent
// once on the new one. The pool's peek finds it closed: a server closes an idle connection after
// seconds, past peekAfter, which the test cannot wait out. Found closed only once the request
// went out whole, it would not be replaced (TestH1WrittenRequestNeverSentTwice).
func TestH1StalePooledConnection(t *testing.T) {
	var hits atomic.Int64
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, answerJSON)
	})
	s, tg := h1Set(t, srv.URL)
	s.clients[tg.Index].Transport.(*h1Transport).peekAfter = 0
	if _, err := s.Chat(context.Background(), tg, chatReq(false)); err != nil {
		t.Fatal(err)
	}
	srv.CloseClientConnections()
	if _, err := s.Chat(context.Background(), tg, chatReq(false)); err != nil {
		t.Fatalf("request after the server closed the idle connection: %v", err)
	}
	if diff := cmp.Diff([]int64{2, 2}, []int64{hits.Load(), conns.Load()}); diff != "" {
		t.Errorf("[requests served, connections] mismatch (-want +got):\n%s", diff)
	}
}

// An answer that broke off after its headers is never sent again.
func TestH1NoRetryAfterAnswerStarted(t *testing.T) {
	var hits atomic.Int64
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if hits.Add(1) == 1 {
			_, _ = io.WriteString(w, answerJSON)
			return
		}
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	})
	s, tg := h1Set(t, srv.URL)
	if _, err := s.Chat(context.Background(), tg, chatReq(false)); err != nil {
		t.Fatal(err)
	}
	_, err := s.Chat(context.Background(), tg, chatReq(false))
	if !errors.As(err, new(*core.StreamError)) {
		t.Fatalf("Chat error = %v (%T), want *core.StreamError", err, err)
	}
	if got := hits.Load(); got != 2 {
		t.Errorf("server saw %d requests, want 2", got)
	}
}

// A body closed before its end takes its connection with it: the next answer is read from a
// new connection, not from the rest of the old one.
func TestH1BodyClosedEarly(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n")
		_, _ = io.WriteString(w, strings.Repeat(": padding\n", 20000))
		_, _ = io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	})
	s, tg := h1Set(t, srv.URL)
	for i := range 2 {
		resp, err := s.Chat(context.Background(), tg, chatReq(true))
		if err != nil {
			t.Fatal(err)
		}
		if ev, err := resp.Stream.Next(); err != nil || !strings.Contains(string(ev), "hi") {
			t.Fatalf("request %d: first event %q, %v", i, ev, err)
		}
		_ = resp.Stream.Close()
	}
	if got := conns.Load(); got != 2 {
		t.Errorf("upstream accepted %d connections, want 2", got)
	}
}

// The caller giving up in the middle of a body ends the read with the caller's context error,
// so that errmap sees a client gone rather than an upstream that broke.
func TestH1CancelMidBody(t *testing.T) {
	sent := make(chan struct{})
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n")
		w.(http.Flusher).Flush()
		close(sent)
		<-r.Context().Done()
	})
	s, tg := h1Set(t, srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := s.Chat(ctx, tg, chatReq(true))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Stream.Close()
	if _, err := resp.Stream.Next(); err != nil {
		t.Fatal(err)
	}
	<-sent
	cancel()
	_, err = resp.Stream.Next()
	if !errors.Is(err, context.Canceled) || !errors.As(err, new(*core.StreamError)) {
		t.Fatalf("Next after cancel = %v (%T), want a StreamError wrapping context.Canceled", err, err)
	}
}

// An https:// target and a target with a Transport template keep net/http.
func TestH1OnlyForPlainHTTP(t *testing.T) {
	tls := &core.Target{Name: "tls", URL: "https://example.invalid/v1"}
	plain := &core.Target{Name: "plain", Index: 1, URL: "http://127.0.0.1:1/v1"}
	s := NewSet([]*core.Target{tls, plain}, Options{})
	defer s.Close()
	tmpl := NewSet([]*core.Target{plain}, Options{Transport: &http.Transport{}})
	defer tmpl.Close()
	got := []string{typeName(s.clients[0].Transport), typeName(s.clients[1].Transport), typeName(tmpl.clients[1].Transport)}
	want := []string{"*http.Transport", "*upstream.h1Transport", "*http.Transport"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("transports mismatch (-want +got):\n%s", diff)
	}
}

func typeName(v any) string {
	switch v.(type) {
	case *http.Transport:
		return "*http.Transport"
	case *h1Transport:
		return "*upstream.h1Transport"
	}
	return "other"
}

// Concurrent requests never open more connections than there are requests in flight.
func TestH1ConcurrentReuse(t *testing.T) {
	const workers, each = 8, 20
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, answerJSON)
	})
	s, tg := h1Set(t, srv.URL)
	concurrently(t, workers, each, func(int) error {
		_, err := s.Chat(context.Background(), tg, chatReq(false))
		return err
	})
	if got := conns.Load(); got > workers {
		t.Errorf("upstream accepted %d connections for %d workers, want at most %d", got, workers, workers)
	}
}

// The response-header timeout is a read deadline that ends the attempt with a TimeoutError; the
// connection it cut is not pooled, and the deadline does not linger on the next one.
func TestH1HeaderTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var hits atomic.Int64
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if hits.Add(1) == 1 {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		_, _ = io.WriteString(w, answerJSON)
	})
	tg := target(srv.URL)
	tg.Timeout = 50 * time.Millisecond
	s := newSet(t, tg)
	_, err := s.Chat(context.Background(), tg, chatReq(false))
	if !errors.As(err, new(*core.TimeoutError)) {
		t.Fatalf("Chat error = %v (%T), want *core.TimeoutError", err, err)
	}
	for i := range 2 {
		if _, err := s.Chat(context.Background(), tg, chatReq(false)); err != nil {
			t.Fatalf("request %d after the timeout: %v", i, err)
		}
	}
	if got := conns.Load(); got != 2 {
		t.Errorf("upstream accepted %d connections, want 2 (the timed-out one replaced, then reused)", got)
	}
}

// A pooled connection idle for longer than IdleConnTimeout is closed rather than reused.
func TestH1IdleTimeout(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, answerJSON)
	})
	s, tg := h1Set(t, srv.URL)
	tr := s.clients[tg.Index].Transport.(*h1Transport)
	age := func(d time.Duration) {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		for _, l := range tr.idle {
			for _, c := range l.conns {
				c.idleAt -= d
			}
		}
	}
	var got []int64
	for _, d := range []time.Duration{0, tr.idleTimeout - time.Second, 0, tr.idleTimeout + time.Second} {
		age(d)
		if _, err := s.Chat(context.Background(), tg, chatReq(false)); err != nil {
			t.Fatal(err)
		}
		got = append(got, conns.Load())
	}
	if diff := cmp.Diff([]int64{1, 1, 1, 2}, got); diff != "" {
		t.Errorf("connections after each request (-want +got):\n%s", diff)
	}
}

// The answers on one connection share a header map in turn (see h1Transport.post): an error
// keeps a header of its own, and an answer without a body, once closed, leaves the connection
// to the next one.
func TestH1SharedHeaderMap(t *testing.T) {
	var seq atomic.Int64
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("X-Seq", strconv.FormatInt(seq.Add(1), 10))
		w.Header().Set("Retry-After", "7")
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	s, tg := h1Set(t, srv.URL)
	var errs []*core.StatusError
	for range 3 {
		_, err := s.Chat(context.Background(), tg, chatReq(false))
		var se *core.StatusError
		if !errors.As(err, &se) {
			t.Fatalf("Chat error = %v (%T), want a StatusError", err, err)
		}
		errs = append(errs, se)
	}
	var got []string
	for _, se := range errs {
		got = append(got, se.Header.Get("X-Seq")+" "+se.RetryAfter.String())
	}
	if diff := cmp.Diff([]string{"1 7s", "2 7s", "3 7s"}, got); diff != "" {
		t.Errorf("[X-Seq RetryAfter] of each error (-want +got):\n%s", diff)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("upstream accepted %d connections, want 1", n)
	}
}

// An adapter's Response is built in its answer's allocation (responseFor): the answers that come
// after it on the same connection, whole or streamed, leave a Response the caller kept as it was.
func TestH1ResponsesAreTheAnswers(t *testing.T) {
	var seq atomic.Int64
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		n := strconv.FormatInt(seq.Add(1), 10)
		if r.Header.Get("Accept") == "text/event-stream" {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, `data: {"id":"`+n+`","choices":[{"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"`+n+`","object":"chat.completion","choices":[{"index":0}]}`)
	})
	s, tg := h1Set(t, srv.URL)
	var kept []*Response
	var got []string
	for i := range 6 {
		stream := i%3 == 2
		resp, err := s.Chat(context.Background(), tg, chatReq(stream))
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		if stream {
			ev, err := resp.Stream.Next()
			if err != nil {
				t.Fatalf("answer %d: %v", i, err)
			}
			got = append(got, string(ev))
			for err == nil {
				_, err = resp.Stream.Next()
			}
			_ = resp.Stream.Close()
		}
		kept = append(kept, resp)
	}
	for i, r := range kept {
		for _, o := range kept[:i] {
			if r == o {
				t.Fatalf("answer %d's Response is an earlier answer's", i)
			}
		}
		if r.Stream == nil {
			got = append(got, string(r.Body))
		}
	}
	want := []string{`{"id":"3","choices":[{"delta":{},"finish_reason":"stop"}]}`, `{"id":"6","choices":[{"delta":{},"finish_reason":"stop"}]}`,
		`{"id":"1","object":"chat.completion","choices":[{"index":0}]}`, `{"id":"2","object":"chat.completion","choices":[{"index":0}]}`,
		`{"id":"4","object":"chat.completion","choices":[{"index":0}]}`, `{"id":"5","object":"chat.completion","choices":[{"index":0}]}`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the answers kept (-want +got):\n%s", diff)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("upstream accepted %d connections, want 1", n)
	}
}

// A whole answer's memory, given back by Release, serves the next answers: concurrent requests
// whose answers come in lengths that grow, shrink and pass maxKeptBody each get their own body,
// whole, while answers released before them are reused under them. Release does nothing for a
// stream's Response; a second Release right after the first, with no answer handed out in
// between, finds no owner (a second Release after another answer may have reused the memory
// would free that answer's: Release is called once).
func TestReleasedAnswersServeTheNext(t *testing.T) {
	answer := func(id int) string {
		pad := strings.Repeat("x", id%7*150)
		if id%25 == 0 {
			pad = strings.Repeat("y", maxKeptBody+100)
		}
		return `{"id":"a-` + strconv.Itoa(id) + `","object":"chat.completion","pad":"` + pad + `","choices":[{"index":0}]}`
	}
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, rest, _ := strings.Cut(string(b), `"content":"q-`)
		id, _ := strconv.Atoi(rest[:strings.IndexByte(rest, '"')])
		_, _ = io.WriteString(w, answer(id))
	})
	s, tg := h1Set(t, srv.URL)
	concurrently(t, 6, 40, func(id int) error {
		body := `{"model":"auto","messages":[{"role":"user","content":"q-` + strconv.Itoa(id) + `"}]}`
		resp, err := s.Chat(context.Background(), tg, &core.Request{Model: "auto", Body: []byte(body)})
		if err != nil {
			return err
		}
		if got, want := string(resp.Body), answer(id); got != want {
			return errors.New("request " + strconv.Itoa(id) + " got another body: " + got[:min(len(got), 40)])
		}
		resp.Release()
		return nil
	})

	resp, err := s.Chat(context.Background(), tg, &core.Request{Model: "auto",
		Body: []byte(`{"model":"auto","messages":[{"role":"user","content":"q-3"}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	resp.Release()
	resp.Release() // nothing was handed out since the first: the owner is gone
	if resp.owner != nil || resp.Body != nil {
		t.Errorf("after Release: owner %p, body %d bytes; want both dropped", resp.owner, len(resp.Body))
	}
	st := &Response{Stream: nil}
	st.Release() // nothing to give back
}

// Bytes a server sends on a connection after its answer (an unsolicited second answer, or the
// tail of a body longer than its Content-Length) belong to no request: a connection that has
// them is closed, never handed to the next request, which would read them as its own answer.
func TestH1UnsolicitedBytesNotReadAsTheNextAnswer(t *testing.T) {
	const leak = `{"id":"LEAK","object":"chat.completion","choices":[{"index":0}]}`
	answer := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(answerJSON)) + "\r\n\r\n" + answerJSON
	unsolicited := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(leak)) + "\r\n\r\n" + leak
	for _, together := range []bool{true, false} {
		t.Run(map[bool]string{true: "with the answer", false: "after the answer"}[together], func(t *testing.T) {
			var n atomic.Int64
			sent, extra, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
			t.Cleanup(func() { close(done) })
			srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				if n.Add(1) > 1 {
					w.Header().Set("Content-Type", "application/json")
					_, _ = io.WriteString(w, answerJSON)
					return
				}
				c, bw, err := http.NewResponseController(w).Hijack()
				if err != nil {
					t.Error(err)
					return
				}
				defer c.Close()
				if together {
					_, _ = bw.WriteString(answer + unsolicited)
					_ = bw.Flush()
				} else {
					_, _ = bw.WriteString(answer)
					_ = bw.Flush()
					<-extra // the client has its answer and pooled the connection
					_, _ = bw.WriteString(unsolicited)
					_ = bw.Flush()
				}
				close(sent)
				<-done // the connection stays open: only its bytes say it is unusable
			})
			s, tg := h1Set(t, srv.URL)
			// Every reuse peeked, however soon: the test cannot wait out peekAfter.
			s.clients[tg.Index].Transport.(*h1Transport).peekAfter = 0
			if resp, err := s.Chat(context.Background(), tg, chatReq(false)); err != nil || string(resp.Body) != answerJSON {
				t.Fatalf("first request: %v %+v", err, resp)
			}
			if !together {
				close(extra)
			}
			// On loopback, a write that returned has reached the peer's receive queue.
			<-sent
			resp, err := s.Chat(context.Background(), tg, chatReq(false))
			if err != nil {
				t.Fatalf("second request: %v", err)
			}
			if string(resp.Body) != answerJSON {
				t.Errorf("second request's answer = %s, want %s", resp.Body, answerJSON)
			}
			if got := conns.Load(); got != 2 {
				t.Errorf("upstream accepted %d connections, want 2", got)
			}
		})
	}
}

// TestReleasedTranslationsServeTheNext is TestReleasedAnswersServeTheNext for the translating
// adapters, whose request bodies the transport lends (lendBody) and whose translated answers live
// in its pooled answers (translatedResponse): requests of several sizes from several goroutines
// at once, each upstream request holding the client's own text and each answer the upstream's
// answer to it, whole, until its Release. A buffer given back while still in use, or lent twice,
// sends one request's text in another's, or answers one with another's (and -race sees it).
func TestReleasedTranslationsServeTheNext(t *testing.T) {
	pad := func(id int) string { return strings.Repeat("ص", id%7*150) } // ص: two bytes, as the prompts' Arabic
	for _, adapter := range []core.AdapterKind{core.AdapterOllama, core.AdapterSAIF} {
		t.Run(adapter.String(), func(t *testing.T) {
			srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				_, rest, _ := strings.Cut(string(b), "q-")
				id, _ := strconv.Atoi(rest[:strings.IndexAny(rest, ` "<`)])
				if !strings.Contains(string(b), pad(id)+" q-"+strconv.Itoa(id)+" ") {
					http.Error(w, "the request is not its own: "+string(b), http.StatusBadRequest)
					return
				}
				text := "a-" + strconv.Itoa(id) + " " + pad(id*3)
				if adapter == core.AdapterOllama {
					_, _ = io.WriteString(w, `{"model":"m","created_at":"2025-11-30T00:00:00Z","message":{"role":"assistant","content":"`+
						text+`"},"done":true,"done_reason":"stop","prompt_eval_count":3,"eval_count":`+strconv.Itoa(id)+`}`)
					return
				}
				_, _ = io.WriteString(w, `{"id":"s","specialist":"webapp","text":"`+text+`","finish_reason":"stop",`+
					`"usage":{"prompt_tokens":3,"completion_tokens":`+strconv.Itoa(id)+`}}`)
			})
			tg := &core.Target{Name: "x", Adapter: adapter, URL: srv.URL, Model: "m", Timeout: 30 * time.Second, Stats: &core.Stats{}}
			s := NewSet([]*core.Target{tg}, Options{}) // newSet's ids are for one goroutine
			t.Cleanup(s.Close)
			if _, ok := s.clients[tg.Index].Transport.(*h1Transport); !ok {
				t.Fatalf("served by %T, want *h1Transport", s.clients[tg.Index].Transport)
			}
			const workers, each = 6, 40
			reqs := make([]*core.Request, workers*each) // made here: clientRequest may fail t
			for id := range reqs {
				body := `{"model":"m","messages":[{"role":"user","content":"` + pad(id) + ` q-` + strconv.Itoa(id) + ` "}]}`
				reqs[id] = clientRequest(t, []byte(body))
				reqs[id].Validated = true
			}
			concurrently(t, workers, each, func(id int) error {
				resp, err := s.Chat(context.Background(), tg, reqs[id])
				if err != nil {
					return err
				}
				want := `"content":"a-` + strconv.Itoa(id) + " " + pad(id*3) + `"`
				if !strings.Contains(string(resp.Body), want) || resp.Usage == nil || resp.Usage.Completion != uint64(id) {
					return errors.New("request " + strconv.Itoa(id) + " got another answer: " + string(resp.Body[:min(len(resp.Body), 200)]))
				}
				resp.Release()
				return nil
			})
		})
	}
}

// concurrently sends request(id) for ids 0 … workers×each−1 from workers goroutines at once,
// each its own run of each in turn, and fails t with the first error any of them returns.
func concurrently(t *testing.T, workers, each int, request func(id int) error) {
	t.Helper()
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			for i := range each {
				if err := request(w*each + i); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestLentStreamReadersServeTheNext streams from 6 goroutines at once through an ollama and a
// saif target, each stream's tokens naming its request, and closes every third stream after
// its second chunk: the line and SSE readers the Set lends (readerPool) go back on Close and
// serve the next stream, and a reader given back while its stream still read, or lent to two,
// would put one stream's tokens in another's chunks (or fail -race).
func TestLentStreamReadersServeTheNext(t *testing.T) {
	for _, adapter := range []core.AdapterKind{core.AdapterOllama, core.AdapterSAIF} {
		t.Run(adapter.String(), func(t *testing.T) {
			srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				_, rest, _ := strings.Cut(string(b), "q-")
				id := rest[:strings.IndexAny(rest, ` "<`)]
				rc := http.NewResponseController(w)
				if adapter == core.AdapterOllama {
					w.Header().Set("Content-Type", "application/x-ndjson")
				} else {
					w.Header().Set("Content-Type", "text/event-stream")
				}
				for k := range 6 {
					tok := " a-" + id + "-" + strconv.Itoa(k)
					if adapter == core.AdapterOllama {
						_, _ = io.WriteString(w, `{"model":"m","created_at":"2025-11-30T00:00:00Z","message":{"role":"assistant","content":"`+tok+`"},"done":false}`+"\n")
					} else {
						_, _ = io.WriteString(w, `data: {"text":"`+tok+`","specialist":"webapp"}`+"\n\n")
					}
					_ = rc.Flush()
				}
				if adapter == core.AdapterOllama {
					_, _ = io.WriteString(w, `{"model":"m","created_at":"2025-11-30T00:00:00Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"}`+"\n")
				} else {
					_, _ = io.WriteString(w, saifDoneEvent)
				}
			})
			tg := &core.Target{Name: "x", Adapter: adapter, URL: srv.URL, Model: "m", Timeout: 30 * time.Second, Stats: &core.Stats{}}
			s := NewSet([]*core.Target{tg}, Options{})
			t.Cleanup(s.Close)
			const workers, each = 6, 30
			reqs := make([]*core.Request, workers*each)
			for id := range reqs {
				reqs[id] = clientRequest(t, []byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"q-`+strconv.Itoa(id)+` "}]}`))
				reqs[id].Validated = true
			}
			concurrently(t, workers, each, func(id int) error {
				resp, err := s.Chat(context.Background(), tg, reqs[id])
				if err != nil {
					return err
				}
				defer resp.Release()
				mine := " a-" + strconv.Itoa(id) + "-"
				tokens := 0
				var other []byte
				_, err = eachChunk(resp.Stream, func(c []byte) bool {
					if strings.Contains(string(c), " a-") && !strings.Contains(string(c), mine) {
						other = bytes.Clone(c)
						return false
					}
					if strings.Contains(string(c), mine) {
						tokens++
					}
					return id%3 != 0 || tokens < 2 // every third stream is closed after its second token
				})
				if err != nil {
					return err
				}
				if other != nil {
					return errors.New("stream " + strconv.Itoa(id) + " got another's chunk: " + string(other))
				}
				if err := resp.Stream.Close(); err != nil && id%3 != 0 {
					return err
				}
				if want := 6; id%3 != 0 && tokens != want {
					return fmt.Errorf("stream %d: %d of its tokens, want %d", id, tokens, want)
				}
				return nil
			})
		})
	}
}

// TestReleaseIntoAListThatIsGone: a connection goes back to its address's list without a lookup
// (the list it came from), but when that list left the pool while the connection was out (the
// reap of an empty list, CloseIdleConnections), it goes into the pool's list for its address, and
// the next exchange gets it. Pooled into the list that was gone, it would count as idle and
// never be reused.
func TestReleaseIntoAListThatIsGone(t *testing.T) {
	ctx := context.Background()
	for _, how := range []string{"reaped", "closed"} {
		t.Run(how, func(t *testing.T) {
			tr := &h1Transport{idle: map[string]*idleList{}, maxIdle: 4, peekAfter: time.Hour,
				idleTimeout: time.Minute, epoch: time.Now(), fallback: &http.Transport{}}
			t.Cleanup(tr.CloseIdleConnections)
			a, b := net.Pipe()
			t.Cleanup(func() { a.Close(); b.Close() })
			c := &h1Conn{Conn: a, addr: "upstream:1"}
			if _, pooled := tr.release(c, true); !pooled {
				t.Fatal("a new connection was not pooled")
			}
			if got := tr.get(ctx, c.addr); got != c {
				t.Fatalf("get = %p, want the pooled %p", got, c)
			}
			switch how {
			case "reaped": // an idle timeout later, the next get reaps the empty list
				tr.mu.Lock()
				tr.epoch = tr.epoch.Add(-2 * tr.idleTimeout)
				tr.mu.Unlock()
			case "closed":
				tr.CloseIdleConnections()
			}
			if got := tr.get(ctx, c.addr); got != nil {
				t.Fatalf("get = %p with the connection out, want none", got)
			}
			tr.mu.Lock()
			if _, ok := tr.idle[c.addr]; ok {
				t.Error("the connection's list is still in the pool")
			}
			tr.mu.Unlock()
			if _, pooled := tr.release(c, true); !pooled {
				t.Fatal("the connection was not pooled again")
			}
			if got := tr.get(ctx, c.addr); got != c {
				t.Fatalf("get = %p after its release, want %p (pooled %d)", got, c, tr.nIdle)
			}
			tr.release(c, false)
		})
	}
}
