package upstream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/jsonx"
)

const (
	chunkRole   = `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}`
	chunkHello  = `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}`
	chunkFinish = `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	chunkUsage  = `{"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`
)

// drain reads a stream to its end and renders what a client would see.
func drain(s Stream) (events []string, end string) {
	for i := 0; ; i++ {
		b, err := s.Next()
		if err != nil {
			return events, describeEnd(err)
		}
		if i > 10000 {
			return events, "runaway stream"
		}
		events = append(events, string(b))
	}
}

func describeEnd(err error) string {
	var se *core.StreamError
	switch {
	case errors.Is(err, io.EOF):
		return "EOF"
	case errors.As(err, &se):
		return "StreamError: " + se.Message
	}
	return fmt.Sprintf("%T: %v", err, err)
}

func TestStreamParsing(t *testing.T) {
	long := `{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"` + strings.Repeat("a", 200<<10) +
		`"}}]},"finish_reason":"tool_calls"}]}`
	tests := []struct {
		name string
		body string
		want []string
		end  string
	}{
		{"done", "data: " + chunkRole + "\n\ndata: " + chunkHello + "\n\ndata: " + chunkFinish + "\n\ndata: [DONE]\n\n",
			[]string{chunkRole, chunkHello, chunkFinish}, "EOF"},
		{"no space after colon", "data:" + chunkHello + "\n\ndata:[DONE]\n\n", []string{chunkHello}, "EOF"},
		{"crlf", "data: " + chunkHello + "\r\n\r\ndata: [DONE]\r\n\r\n", []string{chunkHello}, "EOF"},
		{"comments and keep-alives", ": ping\n\n: OPENROUTER PROCESSING\n\ndata: " + chunkHello + "\n\n:\n\ndata: [DONE]\n\n",
			[]string{chunkHello}, "EOF"},
		{"event, id and retry lines", "event: message\nid: 7\nretry: 1000\ndata: " + chunkHello + "\n\ndata: [DONE]\n\n",
			[]string{chunkHello}, "EOF"},
		{"multi-line data", "data: {\"choices\":\ndata: []}\n\ndata: [DONE]\n\n", []string{`{"choices": []}`}, "EOF"},
		{"done without trailing newline", "data: " + chunkHello + "\n\ndata: [DONE]", []string{chunkHello}, "EOF"},
		{"empty data skipped", "data:\n\ndata: " + chunkHello + "\n\ndata: [DONE]\n\n", []string{chunkHello}, "EOF"},
		{"bom", "\xef\xbb\xbfdata: " + chunkHello + "\n\ndata: [DONE]\n\n", []string{chunkHello}, "EOF"},
		{"line longer than any buffer", "data: " + long + "\n\ndata: [DONE]\n\n", []string{long}, "EOF"},
		{"clean end after finish", "data: " + chunkHello + "\n\ndata: " + chunkFinish + "\n\n", []string{chunkHello, chunkFinish}, "EOF"},
		{"end after empty finish reasons", "data: " + strings.ReplaceAll(chunkHello, `"finish_reason":null`, `"finish_reason":""`) + "\n\n",
			[]string{strings.ReplaceAll(chunkHello, `"finish_reason":null`, `"finish_reason":""`)}, "StreamError: upstream closed the stream early"},
		{"clean end after finish and usage", "data: " + chunkFinish + "\n\ndata: " + chunkUsage + "\n\n",
			[]string{chunkFinish, chunkUsage}, "EOF"},
		{"end without finish", "data: " + chunkRole + "\n\ndata: " + chunkHello + "\n\n", []string{chunkRole, chunkHello},
			"StreamError: upstream closed the stream early"},
		{"empty body", "", nil, "StreamError: upstream closed the stream early"},
		{"only comments", ": ping\n\n", nil, "StreamError: upstream closed the stream early"},
		// A whole JSON object can be cut from nothing but its line end (TestSSEFinishedStreamLastEventWithoutLineEnd).
		{"finished, the last event without its line end", "data: " + chunkFinish + "\n\ndata: " + chunkUsage, []string{chunkFinish, chunkUsage}, "EOF"},
		{"the finishing event without its line end", "data: " + chunkHello + "\r\n\r\ndata: " + chunkFinish, []string{chunkHello, chunkFinish}, "EOF"},
		{"unfinished, the last event without its line end", "data: " + chunkRole + "\n\ndata: " + chunkHello, []string{chunkRole},
			"StreamError: upstream closed the stream inside an event"},
		{"finished, then cut inside an event", "data: " + chunkFinish + "\n\ndata: " + chunkUsage[:len(chunkUsage)-1], []string{chunkFinish},
			"StreamError: upstream closed the stream inside an event"},
		{"finished, then cut after an inner object", "data: " + chunkFinish + "\n\ndata: " + chunkFinish[:strings.Index(chunkFinish, `{}`)+2],
			[]string{chunkFinish}, "StreamError: upstream closed the stream inside an event"},
		{"error event without its line end", `data: {"error":{"message":"the request exceeds the available context size"}}`, nil,
			"StreamError: the request exceeds the available context size"},
		{"cut inside an event", "data: " + chunkHello + "\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"Hel", []string{chunkHello},
			"StreamError: upstream closed the stream inside an event"},
		{"error event mid-stream (vLLM)", "data: " + chunkHello + "\n\n" +
			`data: {"error":{"object":"error","message":"CUDA error: an illegal memory access was encountered","type":"InternalServerError","param":null,"code":500}}` + "\n\n",
			[]string{chunkHello}, "StreamError: CUDA error: an illegal memory access was encountered"},
		{"error event llama-server", `data: {"error":{"code":500,"message":"the request exceeds the available context size","type":"server_error"}}` + "\n\n",
			nil, "StreamError: the request exceeds the available context size"},
		{"error as string", `data: {"error":"model unloaded"}` + "\n\n", nil, "StreamError: model unloaded"},
		{"named error event", "event: error\ndata: {\"message\":\"overloaded\"}\n\n", nil, "StreamError: overloaded"},
		// A chunk all the same, relayed without the member, at which openai-go would end the
		// client's stream (TestSDKReadsChunksWithNullError).
		{"error null is a chunk", `data: {"error":null,"choices":[{"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n",
			[]string{`{"choices":[{"delta":{},"finish_reason":"stop"}]}`}, "EOF"},
		{"error empty is a chunk", `data: {"choices":[{"delta":{},"finish_reason":"stop"}], "error" : ""}` + "\n\ndata: [DONE]\n\n",
			[]string{`{"choices":[{"delta":{},"finish_reason":"stop"}]}`}, "EOF"},
		{"event that is not JSON mid-stream", "data: " + chunkHello + "\n\ndata: {not json\n\ndata: " + chunkFinish + "\n\ndata: [DONE]\n\n",
			[]string{chunkHello}, "StreamError: upstream sent an event that is not a JSON object"},
		{"first event an HTML page", "data: <html><body>502 Bad Gateway</body></html>\n\n", nil,
			"StreamError: upstream sent an event that is not a JSON object"},
		{"error inside content is a chunk", `data: {"choices":[{"delta":{"content":"\"error\": 1"},"finish_reason":null}]}` + "\n\ndata: [DONE]\n\n",
			[]string{`{"choices":[{"delta":{"content":"\"error\": 1"},"finish_reason":null}]}`}, "EOF"},
		// How servers end a generation they aborted (CONFIG.md, "An openai target's stream"): an
		// error event, which ends the stream before the [DONE] that vLLM and SGLang write after
		// it whatever happened; vLLM's engine aborts (shutdown, sleep, scale-down) and SGLang's
		// aborts without an error status end with the finish_reason "abort" and [DONE]
		// (vllm-project/vllm#57082), relayed as it came, ending with an AbortedError, which Is
		// io.EOF (TestStreamAbort). None is
		// known to write [DONE] after an abort with neither, so [DONE] ends a stream with or
		// without a finish_reason.
		{"error event then [DONE] (vLLM, SGLang)", "data: " + chunkHello + "\n\n" +
			`data: {"error":{"object":"error","message":"engine dead","type":"InternalServerError","code":500}}` + "\n\ndata: [DONE]\n\n",
			[]string{chunkHello}, "StreamError: engine dead"},
		{"abort finish then [DONE] (vLLM, SGLang)", "data: " + chunkHello + "\n\n" + `data: {"choices":[{"index":0,"delta":{},"finish_reason":"abort"}]}` + "\n\ndata: [DONE]\n\n",
			[]string{chunkHello, `{"choices":[{"index":0,"delta":{},"finish_reason":"abort"}]}`}, "EOF"},
		{"content then [DONE] without a finish", "data: " + chunkRole + "\n\ndata: " + chunkHello + "\n\ndata: [DONE]\n\n",
			[]string{chunkRole, chunkHello}, "EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newOpenAIStream("local", io.NopCloser(strings.NewReader(tt.body)), nil)
			defer s.Close()
			got, end := drain(s)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events mismatch (-want +got):\n%s", diff)
			}
			if end != tt.end {
				t.Errorf("end = %q, want %q", end, tt.end)
			}
			// The end is sticky: a caller that asks again gets the same answer.
			if _, err := s.Next(); describeEnd(err) != tt.end {
				t.Errorf("second end = %q, want %q", describeEnd(err), tt.end)
			}
		})
	}
}

func TestHasFinishReason(t *testing.T) {
	tests := []struct {
		chunk string
		want  bool
	}{
		{chunkHello, false},
		{chunkFinish, true},
		{`{"choices":[{"finish_reason" : "length"}]}`, true},
		{`{"choices":[{"delta":{"content":"finish_reason"},"finish_reason":null}]}`, false},
		{`{"choices":[{"delta":{"content":"\"finish_reason\": \"stop\""},"finish_reason":null}]}`, false},
		{`{"choices":[{"finish_reason":null},{"finish_reason":"stop"}]}`, true},
		{chunkUsage, false},
		{`"finish_reason"`, false},
		// The search anchors inside the key (see scanKeys): other keys that end as it does, or
		// a piece of it at the very start, are not the finish reason.
		{`{"choices":[{"stop_reason":"x","finish_reason":null}]}`, false},
		{`{"choices":[{"native_finish_reason":"stop","finish_reason":null}]}`, false},
		{`_reason":"stop"}`, false},
		{`{"x_reason":"a","finish_reason":"stop"}`, true},
		{"{\"delta\":{\"content\":\"a\nb\"},\"finish_reason\":\"stop\"}", true},
		// An empty reason is none (TestSSEEmptyFinishReasonIsNoFinish), and a later choice's may
		// still say one.
		{`{"choices":[{"delta":{"content":"a"},"finish_reason":""}]}`, false},
		{`{"choices":[{"finish_reason" : ""},{"finish_reason":"stop"}]}`, true},
		{`{"choices":[{"finish_reason":"`, false},
		// KoboldCpp's string "null" is none either (SaysFinish); a longer reason that begins
		// so, or one cut short after "null, is not that string.
		{`{"choices":[{"delta":{"content":"a"},"finish_reason":"null"}]}`, false},
		{`{"choices":[{"finish_reason" : "null" },{"finish_reason":"stop"}]}`, true},
		{`{"choices":[{"finish_reason":"nullish"}]}`, true},
		{`{"choices":[{"finish_reason":"null`, true},
	}
	for _, tt := range tests {
		t.Run(tt.chunk, func(t *testing.T) {
			if got := hasFinishReason([]byte(tt.chunk)); got != tt.want {
				t.Errorf("hasFinishReason(%s) = %v, want %v", tt.chunk, got, tt.want)
			}
		})
	}
}

// TestNullReasonsRewritten: every finish_reason that is the string "null" becomes JSON null in
// place, the event's length and its other members as they were, and the raw scan finds the
// events that need it and no other.
func TestNullReasonsRewritten(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"choices":[{"finish_reason":"null"}]}`, `{"choices":[{"finish_reason":null  }]}`},
		{`{"choices":[{"finish_reason" :  "null","index":0},{"finish_reason":"null"}]}`,
			`{"choices":[{"finish_reason" :  null  ,"index":0},{"finish_reason":null  }]}`},
		{`{"choices":[{"delta":{"content":"\"finish_reason\":\"null\""},"finish_reason":"null"}]}`,
			`{"choices":[{"delta":{"content":"\"finish_reason\":\"null\""},"finish_reason":null  }]}`},
		{`{"choices":[{"finish_reason":"nullish"}]}`, ``},
		{`{"choices":[{"finish_reason":null}]}`, ``},
		{chunkFinish, ``},
	} {
		_, _, null := scanKeys([]byte(tt.in))
		if null != (tt.want != "") {
			t.Errorf("scanKeys(%s): null reason %v", tt.in, null)
		}
		if !null {
			continue
		}
		b := []byte(tt.in)
		nullReasons(b)
		if string(b) != tt.want {
			t.Errorf("nullReasons(%s) = %s, want %s", tt.in, b, tt.want)
		}
	}
}

// TestStreamOverHTTP relays a stream from a real upstream, with a pause between events that the
// test controls, to show events reach the caller as they are sent rather than at the end.
func TestStreamOverHTTP(t *testing.T) {
	next := make(chan struct{})
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		for _, c := range []string{chunkRole, chunkHello, chunkFinish} {
			_, _ = fmt.Fprintf(w, "data: %s\n\n", c)
			w.(http.Flusher).Flush()
			<-next
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	})
	tg := target(srv.URL)
	resp, err := newSet(t, tg).Chat(context.Background(), tg, chatReq(true))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Stream.Close()
	if resp.Body != nil {
		t.Errorf("streaming Response has a Body: %q", resp.Body)
	}
	var got []string
	for range 3 {
		b, err := resp.Stream.Next()
		if err != nil {
			t.Fatalf("Next after %d events: %v", len(got), err)
		}
		got = append(got, string(b))
		next <- struct{}{}
	}
	if _, err := resp.Stream.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("Next after [DONE] = %v, want io.EOF", err)
	}
	if diff := cmp.Diff([]string{chunkRole, chunkHello, chunkFinish}, got); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
}

func TestStreamUpstreamDiesMidStream(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = fmt.Fprintf(w, "data: %s\n\ndata: %s\n\n", chunkRole, chunkHello)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	})
	tg := target(srv.URL)
	resp, err := newSet(t, tg).Chat(context.Background(), tg, chatReq(true))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Stream.Close()
	got, end := drain(resp.Stream)
	if diff := cmp.Diff([]string{chunkRole, chunkHello}, got); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(end, "StreamError: upstream broke off") {
		t.Errorf("end = %q, want a StreamError saying the upstream broke off", end)
	}
}

func TestStreamCallerCancels(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = fmt.Fprintf(w, "data: %s\n\n", chunkHello)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	tg := target(srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := newSet(t, tg).Chat(ctx, tg, chatReq(true))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Stream.Close()
	if _, err := resp.Stream.Next(); err != nil {
		t.Fatal(err)
	}
	cancel()
	_, err = resp.Stream.Next()
	var se *core.StreamError
	if !errors.As(err, &se) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Next after cancel = %v (%T), want a *core.StreamError wrapping context.Canceled", err, err)
	}
}

func TestStreamClose(t *testing.T) {
	body := &closeRecorder{Reader: strings.NewReader("data: " + chunkHello + "\n\n")}
	s := newOpenAIStream("local", body, nil)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !body.closed {
		t.Error("Close did not close the body")
	}
	if _, err := s.Next(); !errors.Is(err, errStreamClosed) {
		t.Errorf("Next after Close = %v, want errStreamClosed", err)
	}
}

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

type rawEvent struct{ Name, Data string }

// parseAll runs the SSE layer alone over b.
func parseAll(b []byte) ([]rawEvent, error) { return parseFrom(bytes.NewReader(b)) }

// parseFrom runs the SSE layer alone over what r reads.
func parseFrom(rd io.Reader) ([]rawEvent, error) {
	r := newSSEReader(rd)
	var out []rawEvent
	for {
		ev, err := r.next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, rawEvent{string(ev.name), string(ev.data)})
	}
}

// serialise writes events back as SSE with LF endings.
func serialise(events []rawEvent) []byte {
	var b bytes.Buffer
	for _, ev := range events {
		if ev.Name != "" {
			b.WriteString("event: " + ev.Name + "\n")
		}
		for _, line := range strings.Split(ev.Data, "\n") {
			b.WriteString("data: " + line + "\n")
		}
		b.WriteString("\n")
	}
	return b.Bytes()
}

func TestSSERoundTrip(t *testing.T) {
	events := []rawEvent{{"", chunkHello}, {"error", `{"message":"x"}`}, {"", "a\n\nb"}, {"", ""}, {"", " leading space"}}
	got, err := parseAll(serialise(events))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(events, got); diff != "" {
		t.Errorf("round trip mismatch (-want +got):\n%s", diff)
	}
}

func FuzzSSE(f *testing.F) {
	f.Add([]byte("data: " + chunkHello + "\n\ndata: [DONE]\n\n"))
	f.Add([]byte("event: error\r\ndata: {\"error\":\"x\"}\r\n\r\n"))
	f.Add([]byte(": c\ndata\ndata:  two\n\nid: 1\nretry\n\ndata: {\"choices\":[{\"finish_reason\":\"stop\"}]}"))
	f.Add([]byte("\xef\xbb\xbfdata:\r\r\n\n"))
	f.Add([]byte("data: a\rdata: b\r\r\ndata: c\r\n\r\n"))
	f.Add([]byte("data: {}\n\ndata: {\"a\":1,\r\"b\":2}\n\ndata: {\"a\":\n\n"))
	f.Add([]byte("data: {}\n\ndata: {\"a\":\r\ndata: 1}\r\n\r\ndata: {\"b\":\ndata: 2}\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		// The relaying layer must end, with io.EOF or a StreamError, on any input; and an event
		// it relays holds no CR or LF, which would split the client's event, whether the reader
		// took it whole (sseEvent.oneLine) or line by line, in one read or a byte at a time.
		for _, r := range []io.Reader{bytes.NewReader(b), iotest.OneByteReader(bytes.NewReader(b))} {
			s := newOpenAIStream("fuzz", io.NopCloser(r), nil)
			for i := 0; ; i++ {
				if i > len(b)+2 {
					t.Fatalf("stream did not end after %d events", i)
				}
				data, err := s.Next()
				if err == nil {
					if bytes.ContainsAny(data, "\r\n") {
						t.Fatalf("relayed event %q holds a line break", data)
					}
					// Its frame, when the relay would write that instead, is the same bytes.
					if f := FramedEvent(s, data); f != nil && string(f) != "data: "+string(data)+"\n\n" {
						t.Fatalf("event %q framed as %q", data, f)
					}
					// openai-go ends a stream at an event with a top-level "error" member. (An
					// event that is not JSON, which only its first and last bytes are checked
					// for, fails the client's SDK anyway.)
					if hasErrorKey(data) && jsonx.Valid(data) && jsonx.Has(data, "error") {
						t.Fatalf("relayed event %q has an error member", data)
					}
					continue
				}
				var se *core.StreamError
				if !errors.Is(err, io.EOF) && !errors.As(err, &se) {
					t.Fatalf("Next = %v (%T), want io.EOF or *core.StreamError", err, err)
				}
				break
			}
		}
		// The SSE layer's events, written back out, read back the same.
		first, err := parseAll(b)
		if err != nil {
			t.Fatal(err)
		}
		// And they are the same whatever reads the bytes come in: a byte at a time (a CR
		// whose LF comes in the next read included).
		bytewise, err := parseFrom(iotest.OneByteReader(bytes.NewReader(b)))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(first, bytewise); diff != "" {
			t.Fatalf("events read a byte at a time differ (-whole +bytewise):\n%s", diff)
		}
		again, err := parseAll(serialise(first))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(first, again); diff != "" {
			t.Fatalf("re-serialised events differ (-first +again):\n%s", diff)
		}
	})
}

// loopReader repeats one SSE event forever, standing in for a long upstream stream.
type loopReader struct {
	event []byte
	off   int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], l.event[l.off:])
		n += c
		l.off = (l.off + c) % len(l.event)
	}
	return n, nil
}

// eventReader repeats one SSE event forever, one a read.
type eventReader struct{ event []byte }

func (e *eventReader) Read(p []byte) (int, error) { return copy(p, e.event), nil }

// BenchmarkStreamRelay measures one SSE event relayed: parsed from the upstream body and written
// to the client as an SSE event. It should not allocate in steady state.
func BenchmarkStreamRelay(b *testing.B) {
	b.Run("events in hand", func(b *testing.B) { benchStreamRelay(b, false) })
	// As between a model's tokens: each read brings one event, and the buffer is empty when the
	// next is asked for.
	b.Run("one event a read", func(b *testing.B) { benchStreamRelay(b, true) })
	// A chunked answer of the gateway's client, an event a chunk and many in the connection's
	// buffer: each taken where it lies (chunkEvent), and each copied by the chunk decoder into
	// the SSE reader's buffer first, as every event was before.
	b.Run("chunked, taken whole", func(b *testing.B) { benchChunkedRelay(b, false) })
	b.Run("chunked, through the decoder", func(b *testing.B) { benchChunkedRelay(b, true) })
}

// piecesReader gives per copies of piece a read, forever: an upstream's whole chunks as they
// come off the connection, a few to a read.
type piecesReader struct {
	piece []byte
	per   int
}

func (r *piecesReader) Read(p []byte) (int, error) {
	n := 0
	for k := 0; k < r.per && len(p)-n >= len(r.piece); k++ {
		n += copy(p[n:], r.piece)
	}
	return n, nil
}

func benchChunkedRelay(b *testing.B, decoder bool) {
	event := "data: " + chunkHello + "\n\n"
	br := bufio.NewReaderSize(&piecesReader{piece: fmt.Appendf(nil, "%x\r\n%s\r\n", len(event), event), per: 8}, 4<<10)
	var body io.ReadCloser = &answerBody{br: br, chunked: true, cr: chunkedReader{r: br}}
	if decoder {
		body = io.NopCloser(hidden{body})
	}
	s := newOpenAIStream("bench", body, nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(event)))
	for b.Loop() {
		payload, err := s.Next()
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Discard.Write(FramedEvent(s, payload))
		_ = s.Buffered() // as the relay asks, to know whether to flush
	}
}

func benchStreamRelay(b *testing.B, oneARead bool) {
	event := []byte("data: " + chunkHello + "\n\n")
	var r io.Reader = &loopReader{event: event}
	if oneARead {
		r = &eventReader{event: event}
	}
	s := newOpenAIStream("bench", io.NopCloser(r), nil)
	out := io.Discard
	prefix, suffix := []byte("data: "), []byte("\n\n")
	b.ReportAllocs()
	b.SetBytes(int64(len(event)))
	for b.Loop() {
		payload, err := s.Next()
		if err != nil {
			b.Fatal(err)
		}
		_, _ = out.Write(prefix)
		_, _ = out.Write(payload)
		_, _ = out.Write(suffix)
	}
}

// A stream lends its reader back to the pool when closed, keeps answering errStreamClosed, and
// the next stream reads its own bytes through the same reader.
func TestStreamReaderPooled(t *testing.T) {
	var pool readerPool
	first := newOpenAIStream("a", io.NopCloser(strings.NewReader("data: "+chunkHello+"\n\n")), &pool)
	if ev, err := first.Next(); err != nil || !strings.Contains(string(ev), "Hello") {
		t.Fatalf("first stream: %q, %v", ev, err)
	}
	lent := first.sse
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if first.sse != nil {
		t.Fatal("the closed stream still holds its reader")
	}
	if _, err := first.Next(); !errors.Is(err, errStreamClosed) {
		t.Errorf("Next after Close = %v, want errStreamClosed", err)
	}
	if !first.Buffered() {
		t.Error("a closed stream must report its (terminal) answer as ready without reading")
	}
	second := newOpenAIStream("b", io.NopCloser(strings.NewReader("data: {\"x\":2}\n\ndata: [DONE]\n\n")), &pool)
	if second.sse != lent {
		t.Log("the pool handed out a new reader (sync.Pool may drop entries); reuse not checked")
	}
	if ev, err := second.Next(); err != nil || string(ev) != `{"x":2}` {
		t.Fatalf("second stream: %q, %v", ev, err)
	}
	if _, err := second.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("second stream end: %v", err)
	}
	_ = second.Close()
	_ = second.Close() // twice is safe
}

// isEventStream agrees with mime.ParseMediaType on the Content-Types servers send and on the
// odd ones.
func TestIsEventStream(t *testing.T) {
	for _, ct := range []string{
		"text/event-stream", "text/event-stream; charset=utf-8", "Text/Event-Stream;charset=UTF-8",
		" text/event-stream ", "text/event-stream;", "text/event-stream; charset", `text/event-stream; a="x;y"`,
		"text/event-stream; a=1; a=2", "text/event-stream; a=1; a=1", "application/json", "", "text/event-stream2",
		"text/event-\u017ftream", "text/event-stream\u00a0", "text/event-stream\u0085; a=1", "text/plain; x=text/event-stream",
	} {
		t.Run(ct, func(t *testing.T) {
			mt, _, _ := mime.ParseMediaType(ct)
			if got, want := isEventStream(ct), mt == "text/event-stream"; got != want {
				t.Errorf("isEventStream(%q) = %v, mime.ParseMediaType says %q", ct, got, mt)
			}
		})
	}
}

func FuzzIsEventStream(f *testing.F) {
	for _, ct := range []string{"text/event-stream", "text/event-stream; charset=utf-8", "TEXT/EVENT-STREAM ;a=b;a=c", "text/html"} {
		f.Add(ct)
	}
	f.Fuzz(func(t *testing.T, ct string) {
		mt, _, _ := mime.ParseMediaType(ct)
		if got, want := isEventStream(ct), mt == "text/event-stream"; got != want {
			t.Errorf("isEventStream(%q) = %v, mime.ParseMediaType says %q", ct, got, mt)
		}
	})
}

// A reader goes back to the pool reset for the next stream, without the buffers a huge event
// grew.
func TestReaderPoolDropsHugeBuffers(t *testing.T) {
	var pool readerPool
	s := pool.sse(strings.NewReader(""))
	s.data = make([]byte, 10, maxPooledBuf+1)
	s.name = make([]byte, 3, 16)
	s.first, s.eof = false, true
	pool.put(s)
	got := []any{s.data == nil, len(s.name), cap(s.name), s.first, s.eof}
	if diff := cmp.Diff([]any{true, 0, 16, true, false}, got); diff != "" {
		t.Errorf("[data dropped, len(name), cap(name), first, eof] (-want +got):\n%s", diff)
	}
}

// TestStreamErrorField: llama-server builds of 2025 sent a stream's error in an "error:" field
// of its own (ggml-org/llama.cpp#16109), then [DONE]. It is the stream's error, with the
// upstream's message, not a stream that ended before its first event.
func TestStreamErrorField(t *testing.T) {
	body := "error: {\"code\":400,\"message\":\"the request exceeds the available context size. try increasing the context size or enable context shift\",\"type\":\"invalid_request_error\"}\n\ndata: [DONE]\n\n"
	s := newOpenAIStream("ls", io.NopCloser(strings.NewReader(body)), nil)
	_, err := s.Next()
	se, ok := errors.AsType[*core.StreamError](err)
	if !ok {
		t.Fatalf("Next = %v (%T), want a *core.StreamError", err, err)
	}
	if want := "the request exceeds the available context size. try increasing the context size or enable context shift"; se.Message != want {
		t.Errorf("message %q, want %q", se.Message, want)
	}
}

// hasFinishReason is scanKeys's finish alone, as the stream reads it.
func hasFinishReason(data []byte) bool {
	_, finish, _ := scanKeys(data)
	return finish
}

// plainReasons is scanKeys's finish and nullReason as plain searches: each "finish_reason" after
// the last, followed by a colon and a string that is not empty (finish), or before the first
// such the string "null" (null).
func plainReasons(data []byte) (finish, null bool) {
	finishKey := []byte(`"finish_reason"`)
	for {
		i := bytes.Index(data, finishKey)
		if i < 0 {
			return false, null
		}
		data = data[i+len(finishKey):]
		f, n := reasonValue(data)
		if null = null || n; f {
			return true, null
		}
	}
}

// FuzzKeySearches holds scanKeys, the one pass over an event for both keys, to the plain
// searches for each (TestKeySearchesAgree tries near misses strung together at random).
func FuzzKeySearches(f *testing.F) {
	for _, s := range []string{chunkHello, chunkFinish, chunkUsage, `{"error":{"message":"x"}}`, `"finish_reason"finish_reason":"stop"`,
		`{"x":"rror","finish_reason" : "length","error":null}`, `rr"error"r`, benchChunk} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkKeys(t, data) })
}

// checkKeys fails t unless scanKeys answers for data as the plain searches for each key do.
func checkKeys(t *testing.T, data []byte) {
	t.Helper()
	errorKey, finish, nullReason := scanKeys(data)
	if want := bytes.Contains(data, []byte(`"error"`)); errorKey != want {
		t.Errorf("scanKeys(%q): errorKey %v, want %v", data, errorKey, want)
	}
	wantFinish, wantNull := plainReasons(data)
	if finish != wantFinish {
		t.Errorf("scanKeys(%q): finish %v, want %v", data, finish, wantFinish)
	}
	if nullReason != wantNull {
		t.Errorf("scanKeys(%q): nullReason %v, want %v", data, nullReason, wantNull)
	}
}

// scanKeys (and hasErrorKey, its error key alone) searches for its keys from a byte other than
// the opening quote; it must answer as the plain searches it replaced, on any input (checkKeys).
func TestKeySearchesAgree(t *testing.T) {
	// The search is what is tested: both sides read what follows a key the same way.
	// Pieces that make near misses of both keys when strung together at random.
	pieces := []string{`"`, `e`, `rror`, `rror"`, `"error"`, `_reason"`, `"finish`, `finish`, `_reason`, `:`, ` `,
		`"stop"`, `null`, `\"`, `x`, `{`, `}`, `,`, `"err`, `or"`, `r`, `"finish_reason"`, `"error`, `_r`,
		`"null"`, `er`, `_`}
	rng := rand.New(rand.NewPCG(1, 2))
	inputs := []string{chunkHello, chunkFinish, chunkUsage, `{"error":{"message":"x"}}`, `{"e":"rror"}`, `"error"`, `rror"`, ``,
		`"finish_reason"finish_reason":"stop"`, `{"finish_reason":null,"x":"finish_reason"}`, `"error"finish_reason":"x"`,
		benchChunk, `r`, `er`, `"er`, `_r`}
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		inputs = append(inputs, b.String())
	}
	for _, in := range inputs {
		d := []byte(in)
		if got, want := hasErrorKey(d), bytes.Contains(d, []byte(`"error"`)); got != want {
			t.Errorf("hasErrorKey(%q) = %v, want %v", in, got, want)
		}
		checkKeys(t, d)
	}
}
