package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hayula/gateway/internal/conntest"
	"github.com/hayula/gateway/server"
)

func streamBody(model string) string {
	return fmt.Sprintf(`{"model":%q,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, model)
}

// readEvents reads SSE data payloads until the body ends.
func readEvents(t *testing.T, resp *http.Response) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, p)
		}
	}
	return out
}

func TestStreamPassThrough(t *testing.T) {
	g, _, _, _ := threeChain(t)
	resp := postStream(t, g, "saif")
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	if resp.Header.Get("x-hayula-chain") != "saif" {
		t.Fatalf("chain %q", resp.Header.Get("x-hayula-chain"))
	}
	ev := readEvents(t, resp)
	if len(ev) != 5 || ev[4] != "[DONE]" || !strings.Contains(ev[0], `"role":"assistant"`) || !strings.Contains(ev[2], " saif") {
		t.Fatalf("events %q", ev)
	}
}

func TestStreamFallbackBeforeFirstByte(t *testing.T) {
	g, saif, _, _ := threeChain(t)
	saif.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"error\":{\"message\":\"model crashed\",\"type\":\"server_error\"}}\n\n")
	})
	resp := postStream(t, g, "saif")
	if got := resp.Header.Get("x-hayula-chain"); got != "saif→deepseek-r1 (served by deepseek-r1)" {
		t.Fatalf("chain %q", got)
	}
	if ev := readEvents(t, resp); len(ev) != 5 || !strings.Contains(ev[2], "deepseek-r1") {
		t.Fatalf("events %q", ev)
	}
}

// Each event reaches the client before the upstream sends the next one.
func TestStreamFlushesEachEvent(t *testing.T) {
	g, saif, _, _ := threeChain(t)
	release := make(chan struct{})
	saif.set(stalledStream("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"first\"}}]}\n\n", "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n", release))
	br, line := openStream(t, g, "saif")
	if !strings.Contains(line, "first") {
		t.Fatalf("first event not delivered before the upstream went on: %q", line)
	}
	close(release)
	rest := new(strings.Builder)
	_, _ = bufio.NewReader(br).WriteTo(rest)
	if !strings.HasSuffix(rest.String(), "data: [DONE]\n\n") {
		t.Fatalf("rest %q", rest.String())
	}
}

func TestStreamMidStreamFailure(t *testing.T) {
	g, saif, r1, _ := threeChain(t)
	saif.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"partial\"}}]}\n\n")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the upstream dies mid-stream
	})
	resp := postStream(t, g, "saif")
	ev := readEvents(t, resp)
	if len(ev) != 2 || !strings.Contains(ev[0], "partial") || !strings.HasPrefix(ev[1], `{"error":{`) {
		t.Fatalf("events %q", ev)
	}
	// The error event names the target and a cause, not the connection's addresses.
	if !strings.Contains(ev[1], "saif: connection closed") || strings.Contains(ev[1], "127.0.0.1") {
		t.Errorf("error event %q, want the target and the cause without an address", ev[1])
	}
	if r1.hits.Load() != 0 {
		t.Error("fell through after the first byte")
	}
}

// TestStreamErrorMessageCut: an upstream's error line mid-stream is its to size; the client's
// error event carries at most about a kilobyte of it, cut at a character.
func TestStreamErrorMessageCut(t *testing.T) {
	g, saif, _, _ := threeChain(t)
	saif.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"partial\"}}]}\n\n")
		fmt.Fprintf(w, "data: {\"error\":{\"message\":%q}}\n\n", strings.Repeat("é", 100000))
	})
	ev := readEvents(t, postStream(t, g, "saif"))
	if len(ev) != 2 || !strings.HasPrefix(ev[1], `{"error":{`) {
		t.Fatalf("events %d: %.200q", len(ev), ev)
	}
	if len(ev[1]) > 1400 || !strings.Contains(ev[1], "éé…") {
		t.Errorf("error event of %d bytes, want the upstream's message cut to about 1 KiB at a character: %.300s", len(ev[1]), ev[1])
	}
}

func TestClientDisconnectCancelsUpstream(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			g, saif, _, _ := threeChain(t)
			started, cancelled := make(chan struct{}), make(chan struct{})
			saif.set(func(w http.ResponseWriter, r *http.Request) {
				if stream {
					w.Header().Set("Content-Type", "text/event-stream")
					fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n")
					w.(http.Flusher).Flush()
				}
				close(started)
				<-r.Context().Done()
				close(cancelled)
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			body := `{"model":"saif","messages":[{"role":"user","content":"hi"}]}`
			if stream {
				body = streamBody("saif")
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.ts.URL+"/v1/chat/completions", strings.NewReader(body))
			done := make(chan struct{})
			go func() {
				defer close(done)
				resp, err := g.ts.Client().Do(req)
				if err == nil {
					_, _ = bufio.NewReader(resp.Body).ReadString('\n')
					<-ctx.Done()
					resp.Body.Close()
				}
			}()
			<-started
			cancel()
			select {
			case <-cancelled:
			case <-time.After(10 * time.Second):
				t.Fatal("upstream request was not cancelled after the client left")
			}
			<-done
		})
	}
}

// flushCounter is a ResponseWriter that records what was written and counts flushes, and the
// bytes written before each.
type flushCounter struct {
	h       http.Header
	status  int
	body    strings.Builder
	flushes []int // body length at each flush
}

func (f *flushCounter) Header() http.Header         { return f.h }
func (f *flushCounter) WriteHeader(status int)      { f.status = status }
func (f *flushCounter) Write(b []byte) (int, error) { return f.body.Write(b) }
func (f *flushCounter) Flush()                      { f.flushes = append(f.flushes, f.body.Len()) }

const (
	burstChunk  = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n"
	burstFinish = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
)

// Events that reach the gateway together leave it together: one flush for a burst, not one per
// event; the first event is flushed alone, and the last event of the burst before the gateway
// waits for more.
func TestStreamBurstFlushedOnce(t *testing.T) {
	g, saif, _, _ := threeChain(t)
	release := make(chan struct{})
	saif.set(stalledStream(strings.Repeat(burstChunk, 5), burstFinish, release))
	req, err := http.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(streamBody("saif")))
	if err != nil {
		t.Fatal(err)
	}
	fc := &flushCounter{h: http.Header{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.srv.Handler().ServeHTTP(fc, req)
	}()
	// The five events reach the gateway in one write; releasing the upstream at once keeps the
	// test from waiting on anything but the gateway. fc is read only after the handler is done.
	close(release)
	<-done
	if fc.status != http.StatusOK {
		t.Fatalf("status %d: %s", fc.status, fc.body.String())
	}
	events := strings.Count(fc.body.String(), "data: ")
	if events != 7 {
		t.Fatalf("%d events, want 7: %q", events, fc.body.String())
	}
	if len(fc.flushes) >= events {
		t.Errorf("%d flushes for %d events; a burst should share its flush", len(fc.flushes), events)
	}
	// The first event goes out with the head at once, not coalesced with the burst behind it.
	if first := strings.Index(fc.body.String(), "\n\n") + 2; len(fc.flushes) == 0 || fc.flushes[0] != first {
		t.Errorf("first flush after %v bytes, want %d (the first event alone)", fc.flushes, first)
	}
	// What arrives with the stream's end is not flushed by the handler: the server writes it
	// with the end of the chunked body when the handler returns, in one write instead of two
	// (TestStreamPassThrough and TestStreamEndsInOneWrite read such streams to their end over a
	// real server). It is all there.
	if !strings.HasSuffix(fc.body.String(), burstFinish) {
		t.Errorf("the stream does not end with the finish event and [DONE]: %q", fc.body.String())
	}
}

// The last event of a burst reaches the client while the upstream stalls.
func TestStreamBurstThenStall(t *testing.T) {
	g, saif, _, _ := threeChain(t)
	release := make(chan struct{})
	saif.set(stalledStream(strings.Repeat(burstChunk, 3), burstFinish, release))
	resp := postStream(t, g, "saif")
	br := bufio.NewReader(resp.Body)
	for i := range 3 {
		line, err := br.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "data: {") {
			t.Fatalf("event %d of the burst not delivered while the upstream stalls: %q %v", i, line, err)
		}
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	rest := new(strings.Builder)
	_, _ = br.WriteTo(rest)
	if !strings.HasSuffix(rest.String(), "data: [DONE]\n\n") {
		t.Fatalf("rest %q", rest.String())
	}
}

// When the stream's last event and [DONE] arrive together, they reach the client in one write,
// and the end of the chunked body in one more. Leaving [DONE] for the end of the body (one write
// in all) made it wait for the upstream's tail (TestStreamDoneNotHeldForUpstreamTail).
func TestStreamEndsInOneWrite(t *testing.T) {
	g, saif, _, _ := threeChain(t)
	release := make(chan struct{})
	saif.set(stalledStream(burstChunk, burstFinish, release))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var writes atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	counted := &conntest.Listener{Listener: ln, OnWrite: func() { writes.Add(1) }}
	go func() { done <- server.Serve(ctx, counted, g.srv.Handler(), time.Second, nil) }()
	defer func() {
		cancel()
		<-done
	}()

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		close(release)
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	body := streamBody("saif")
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		close(release)
		t.Fatal(err)
	}
	events := bufio.NewReader(resp.Body)
	for _, want := range []string{"data: ", "\n"} { // the first event and its blank line
		line, err := events.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, want) {
			close(release)
			t.Fatalf("first event: %q, %v", line, err)
		}
	}
	before := writes.Load()
	close(release)
	rest, err := io.ReadAll(events)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Fatalf("the rest of the stream: %q", rest)
	}
	if n := writes.Load() - before; n != 2 {
		t.Errorf("the stream's end took %d writes to the client, want 2 (the burst with [DONE], the body's end)", n)
	}
}

// A stream's [DONE] reaches the client when it comes, not after the upstream's tail: the
// gateway drains what follows [DONE] on the upstream connection (for up to drainWait) when it
// closes the stream, and a [DONE] left unflushed for the end of the answer waited for that
// drain. Here the upstream ends its body only once the client has [DONE]: if the client's
// [DONE] waits for the drain, the drain runs out of time and the connection is not reused.
func TestStreamDoneNotHeldForUpstreamTail(t *testing.T) {
	g, saif, _, _ := threeChain(t)
	clientDone := make(chan struct{})
	remotes := make(chan string, 2)
	saif.set(func(w http.ResponseWriter, r *http.Request) {
		remotes <- r.RemoteAddr
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, burstChunk+burstFinish)
		w.(http.Flusher).Flush()
		select {
		case <-clientDone:
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.Serve(ctx, ln, g.srv.Handler(), time.Second, nil) }()
	defer func() {
		cancel()
		<-done
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	body := streamBody("saif")
	for i := range 2 {
		fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		events := bufio.NewReader(resp.Body)
		for {
			line, err := events.ReadString('\n')
			if err != nil {
				t.Fatalf("request %d, before [DONE]: %v", i, err)
			}
			if line == "data: [DONE]\n" {
				break
			}
		}
		if i == 0 {
			close(clientDone)
		}
		_, _ = io.ReadAll(events) // the end of the answer: the gateway is done with the upstream
	}
	if first, second := <-remotes, <-remotes; first != second {
		t.Errorf("the upstream connection was not reused (%s, then %s): the client's [DONE] waited for the gateway's drain of the upstream's tail, which ran out of time", first, second)
	}
}

// stalledStream is an upstream that sends first, flushed, then waits for release (or for the
// gateway to give up) before it sends rest and ends.
func stalledStream(first, rest string, release <-chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, first)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, rest)
	}
}

// A stream yields the CPU once, after its first event has gone out (Options.Yield): the hook
// below waits for the client to have read that event, which it could not if the yield came
// first. A whole answer does not yield, nor does a stream while another one is being relayed.
func TestStreamYieldsOnceAfterFirstEvent(t *testing.T) {
	saif := newFake(t, "saif")
	var calls atomic.Int32
	gotFirst, late := make(chan struct{}), make(chan struct{})
	g := newGateway(t, target("saif", saif.url(), "private")+"[routes.saif]\ntargets = [\"saif\"]\n", nil,
		func(o *server.Options) {
			o.Yield = func() {
				if calls.Add(1) != 1 {
					return
				}
				select {
				case <-gotFirst:
				case <-time.After(10 * time.Second):
					close(late)
				}
			}
		})
	var burst strings.Builder
	for i := range 5 {
		fmt.Fprintf(&burst, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"e%d\"}}]}\n\n", i)
	}
	burst.WriteString("data: [DONE]\n\n")
	saif.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, burst.String()) // every event at once: the relay has a burst behind the first
	})
	br, line := openStream(t, g, "saif")
	if !strings.Contains(line, "e0") {
		t.Fatalf("first event %q", line)
	}
	close(gotFirst)
	rest, err := io.ReadAll(br)
	if err != nil || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") || !strings.Contains(string(rest), "e4") {
		t.Fatalf("rest of the stream %q, %v", rest, err)
	}
	select {
	case <-late:
		t.Fatal("the stream yielded before its first event reached the client")
	default:
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("a stream yielded %d times, want once", n)
	}

	saif.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)
	})
	if rep := g.chat(t, "saif"); rep.status != http.StatusOK {
		t.Fatalf("whole answer: status %d", rep.status)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("after a whole answer the yields are %d, want still 1", n)
	}

	// Stream A stays open after its first event (it yields: it is alone); stream B, relayed
	// meanwhile, does not yield.
	release := make(chan struct{})
	saif.set(stalledStream("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n", "data: [DONE]\n\n", release))
	brA, lineA := openStream(t, g, "saif")
	if !strings.Contains(lineA, `"a"`) {
		t.Fatalf("stream A's first event %q", lineA)
	}
	saif.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, burst.String())
	})
	brB, _ := openStream(t, g, "saif")
	restB, err := io.ReadAll(brB)
	if err != nil || !strings.HasSuffix(string(restB), "data: [DONE]\n\n") {
		t.Fatalf("stream B %q, %v", restB, err)
	}
	close(release)
	if _, err := io.ReadAll(brA); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("after stream A (alone) and stream B (beside A) the yields are %d, want 2", n)
	}
}

// openStream posts a stream request for model and reads its first line: the body's reader
// (closed when the test ends) and that line.
func openStream(t *testing.T, g *gateway, model string) (*bufio.Reader, string) {
	t.Helper()
	br := bufio.NewReader(postStream(t, g, model).Body)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("first line: %v (%q)", err, line)
	}
	return br, line
}

// postStream posts a stream request for model; the answer's body is closed when the test ends.
func postStream(t *testing.T, g *gateway, model string) *http.Response {
	t.Helper()
	resp, err := g.ts.Client().Post(g.ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(streamBody(model)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}
