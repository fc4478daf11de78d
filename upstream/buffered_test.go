package upstream

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/hayula/gateway/core"
)

func TestSSEBuffered(t *testing.T) {
	tests := []struct {
		name, rest string
		want       bool
	}{
		{"nothing", "", false},
		{"whole event", "data: b\n\n", true},
		{"event without its blank line", "data: b\n", false},
		{"half a line", "data: b", false},
		{"comment only", ": keep-alive\n\n", false},
		{"comment then event", ": keep-alive\n\ndata: b\n\n", true},
		{"blank data", "data:\n\n", false},
		{"blank data then event", "data: \n\ndata: b\n\n", true},
		{"done", "data: [DONE]\n\n", true},
		{"named event, CRLF", "event: x\r\ndata: b\r\n\r\n", true},
		{"name only", "event: x\n\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One Read hands the whole input to the buffer, as one TCP segment would.
			s := newSSEReader(strings.NewReader("data: a\n\n" + tt.rest))
			if ev, err := s.next(); err != nil || string(ev.data) != "a" {
				t.Fatalf("first event %q, %v", ev.data, err)
			}
			if got := s.buffered(); got != tt.want {
				t.Errorf("buffered() with %q left = %v, want %v", tt.rest, got, tt.want)
			}
		})
	}
}

func TestLineBuffered(t *testing.T) {
	tests := []struct {
		name, rest string
		want       bool
	}{
		{"nothing", "", false},
		{"whole line", "{\"b\":2}\n", true},
		{"blank lines", "\n\r\n", false},
		{"blank then line", "\n{\"b\":2}\r\n", true},
		{"half a line", "{\"b\"", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLineReader(strings.NewReader("{\"a\":1}\n" + tt.rest))
			if line, _, err := l.next(); err != nil || string(line) != `{"a":1}` {
				t.Fatalf("first line %q, %v", line, err)
			}
			if got := l.buffered(); got != tt.want {
				t.Errorf("buffered() with %q left = %v, want %v", tt.rest, got, tt.want)
			}
		})
	}
}

// stallReader hands out its input once, then blocks reads until the test ends, as an upstream
// that went quiet: a Next that reads would hang the test.
type stallReader struct {
	r     io.Reader
	stall <-chan struct{}
}

func (s *stallReader) Read(p []byte) (int, error) {
	if n, _ := s.r.Read(p); n > 0 {
		return n, nil
	}
	<-s.stall
	return 0, io.EOF
}

func (s *stallReader) Close() error { return nil }

// A translated stream counts only what yields a chunk: an upstream event with nothing to say
// is translated by Buffered and does not make it true.
func TestTranslatedStreamsBuffered(t *testing.T) {
	now := func() time.Time { return time.Unix(1, 0) }
	id := func() string { return "id" }
	tests := []struct {
		name  string
		input string
		open  func(io.ReadCloser) Stream
		want  []bool // Buffered after each Next that returns a chunk
	}{
		{"saif", `data: {"text":"a","specialist":"s"}` + "\n\n" + `data: {"text":""}` + "\n\n" +
			`data: {"text":"b"}` + "\n\n" + `data: {"text":""}` + "\n\n" + `data: {"te`,
			func(b io.ReadCloser) Stream {
				return &saifStream{target: "s", body: b, sse: newSSEReader(b), out: newChunker("id", 1, "m", 0),
					header: http.Header{}}
			}, []bool{true, false}},
		{"ollama", `{"message":{"content":"a"},"done":false}` + "\n" + `{"message":{"content":""},"done":false}` +
			"\n" + `{"message":{"con`,
			func(b io.ReadCloser) Stream {
				a := &openaiOllama{t: &core.Target{Name: "o", Model: "m"}, now: now, newID: id}
				return a.newStream(b, false, a.t.Reasoning)
			}, []bool{false}},
		{"ollama done", `{"message":{"content":"a"},"done":false}` + "\n" +
			`{"message":{"content":""},"done":true,"done_reason":"stop"}` + "\n",
			func(b io.ReadCloser) Stream {
				a := &openaiOllama{t: &core.Target{Name: "o", Model: "m"}, now: now, newID: id}
				return a.newStream(b, false, a.t.Reasoning)
			}, []bool{true, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stall := make(chan struct{})
			defer close(stall)
			st := tt.open(&stallReader{r: strings.NewReader(tt.input), stall: stall}).(BufferedStream)
			var got []bool
			for range tt.want {
				if _, err := st.Next(); err != nil {
					t.Fatalf("Next: %v", err)
				}
				got = append(got, st.Buffered())
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("Buffered after chunk %d = %v, want %v (all: %v)", i, got[i], tt.want[i], got)
				}
			}
		})
	}
}

// buffered's search for the common event, and the line ending it leaves for whole, change
// nothing: asked before every event, it answers as the line-by-line reading does, and the
// events read are those of a reader never asked, however the bytes arrive.
func FuzzSSEBufferedAgrees(f *testing.F) {
	f.Add([]byte("data: a\n\ndata: b\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: a\n\ndata: \n\ndata: b\r\n\r\n: c\n\ndata:x\n\n"))
	f.Add([]byte("\xef\xbb\xbfdata: a\n\ndata: b\rdata: c\n\n"))
	f.Add([]byte("data: a\r\n\r\ndata: b\n\nevent: x\ndata: c\n\n"))
	f.Add([]byte("data: a\ndata: b\n\ndata: {\"x\":1}\n\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		readers := map[string]func() io.Reader{
			"whole":    func() io.Reader { return bytes.NewReader(b) },
			"bytewise": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) },
			"halves":   func() io.Reader { return iotest.HalfReader(bytes.NewReader(b)) },
		}
		for name, r := range readers {
			asked, plain := newSSEReader(r()), newSSEReader(r())
			for i := 0; ; i++ {
				if i > len(b)+2 {
					t.Fatalf("%s: no end after %d events", name, i)
				}
				if !asked.eof {
					peek, _ := asked.r.Peek(asked.r.Buffered())
					want := asked.bufferedLines(peek)
					if got := asked.buffered(); got != want {
						t.Fatalf("%s, event %d: buffered() = %v, line by line %v (buffer %q)", name, i, got, want, peek)
					}
				}
				got, gerr := asked.next()
				want, werr := plain.next()
				if (gerr == nil) != (werr == nil) || string(got.name) != string(want.name) ||
					string(got.data) != string(want.data) || got.cut != want.cut {
					t.Fatalf("%s, event %d: asked %q/%q %v %v, plain %q/%q %v %v", name, i,
						got.name, got.data, got.cut, gerr, want.name, want.data, want.cut, werr)
				}
				if gerr != nil {
					break
				}
			}
		}
	})
}

// blank and trimSpace answer as bytes.TrimSpace does, on any bytes.
func FuzzTrimSpace(f *testing.F) {
	for _, s := range []string{"", " ", "\t\n\v\f\r ", " {}", "{} ", "{}", "\x00", " \x01", "\u0085", "\u00a0x", "x\u00a0",
		"\u2000", " \xff", "\xc2", "a", " a ", "\x1c"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want := bytes.TrimSpace(b)
		if got := blank(b); got != (len(want) == 0) {
			t.Errorf("blank(%q) = %v, TrimSpace leaves %q", b, got, want)
		}
		got := trimSpace(b)
		if !bytes.Equal(got, want) || cap(got) != cap(want) || len(got) > 0 && &got[0] != &want[0] {
			t.Errorf("trimSpace(%q) = %q (cap %d), TrimSpace %q (cap %d)", b, got, cap(got), want, cap(want))
		}
	})
}

// An event an upstream sent as the relay writes it is handed back in its frame, and only then:
// not one whose framing differs, nor one Next changed in a way the frame does not show.
func TestFramedEvent(t *testing.T) {
	body := "data: {\"a\":1}\n\n" + // framed as it came
		"data:{\"b\":2}\n\n" + // no space after the colon: the relay's framing differs
		"data:  {\"c\":3}\n\n" + // a second space, trimmed
		"data: {\"d\":4,\"error\":null}\n\n" + // its error member taken out
		"data: {\"choices\":[{\"finish_reason\":\"null\"}]}\n\n" + // rewritten in place: the frame shows it
		"event: x\ndata: {\"e\":5}\n\n" + // not the shape whole takes
		"data: [DONE]\n\n"
	want := []bool{true, false, false, false, true, false}
	s := newOpenAIStream("t", io.NopCloser(strings.NewReader(body)), nil)
	for i, framed := range want {
		ev, err := s.Next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		f := FramedEvent(s, ev)
		if (f != nil) != framed {
			t.Errorf("event %d %q: frame %q, want framed %v", i, ev, f, framed)
		}
		if f != nil && string(f) != "data: "+string(ev)+"\n\n" {
			t.Errorf("event %d %q framed as %q", i, ev, f)
		}
	}
	if _, err := s.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("end: %v", err)
	}
	_ = s.Close()
	if f := FramedEvent(s, []byte("x")); f != nil {
		t.Errorf("a closed stream framed %q", f)
	}
}

// failAfter reads its bytes, then fails a read with err, once, and ends (a connection reset:
// the read after it finds the socket closed).
type failAfter struct {
	b    []byte
	err  error
	told bool
}

func (f *failAfter) Read(p []byte) (int, error) {
	if len(f.b) == 0 {
		if !f.told {
			f.told = true
			return 0, f.err
		}
		return 0, io.EOF
	}
	n := copy(p, f.b)
	f.b = f.b[n:]
	return n, nil
}

// The read next makes before whole, when nothing is in hand, keeps its error for the line
// reading that follows: a read that fails after an event fails the next event, not as an end.
func TestSSEReadErrorAfterWholeEvent(t *testing.T) {
	boom := errors.New("connection reset")
	s := newSSEReader(&failAfter{b: []byte("data: a\n\n"), err: boom})
	if ev, err := s.next(); err != nil || string(ev.data) != "a" {
		t.Fatalf("first event %q, %v", ev.data, err)
	}
	if ev, err := s.next(); !errors.Is(err, boom) {
		t.Fatalf("after the event: %q, %v; want %v", ev.data, err, boom)
	}
	s = newSSEReader(&failAfter{b: []byte("data: a\n\n"), err: io.EOF})
	if _, err := s.next(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("at the end: %v, want io.EOF", err)
	}
}
