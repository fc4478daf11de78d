package upstream

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// hidden reads its reader under another type: an sseReader over it never finds the chunked
// body beneath (chunksOf), and reads every event through its own buffer.
type hidden struct{ io.Reader }

// countingReader counts the reads that reach its reader.
type countingReader struct {
	r     io.Reader
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}

// chunkPieces frames sse as a chunked body, a piece of wire a chunk: each event (up to its
// blank line) a chunk of its own when sizes is empty, else chunks of the sizes given in turn
// (1 to 64 bytes), an extension on every third when ext is set; the last piece is the last
// chunk.
func chunkPieces(sse []byte, sizes []byte, ext bool) [][]byte {
	return chunkPiecesBy(sse, "\n\n", sizes, ext)
}

// chunkPiecesBy is chunkPieces with each piece of b up to sep a chunk when sizes is empty.
func chunkPiecesBy(b []byte, sep string, sizes []byte, ext bool) [][]byte {
	var data [][]byte
	if len(sizes) == 0 {
		for rest := b; len(rest) > 0; {
			i := bytes.Index(rest, []byte(sep))
			if i < 0 {
				data = append(data, rest)
				break
			}
			data = append(data, rest[:i+len(sep)])
			rest = rest[i+len(sep):]
		}
	} else {
		for k, rest := 0, b; len(rest) > 0; k++ {
			n := min(int(sizes[k%len(sizes)])%64+1, len(rest))
			data = append(data, rest[:n])
			rest = rest[n:]
		}
	}
	var pieces [][]byte
	for k, d := range data {
		var w bytes.Buffer
		fmt.Fprintf(&w, "%x", len(d))
		if ext && k%3 == 2 {
			w.WriteString(";x=y")
		}
		w.WriteString("\r\n")
		w.Write(d)
		w.WriteString("\r\n")
		pieces = append(pieces, w.Bytes())
	}
	return append(pieces, []byte("0\r\n\r\n"))
}

func chunkWire(sse []byte, sizes []byte, ext bool) []byte {
	return bytes.Join(chunkPieces(sse, sizes, ext), nil)
}

// pieceReader returns one piece a read (as much of it as fits), as a connection whose peer
// writes each chunk on its own would.
type pieceReader struct{ pieces [][]byte }

func (r *pieceReader) Read(p []byte) (int, error) {
	if len(r.pieces) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.pieces[0])
	if r.pieces[0] = r.pieces[0][n:]; len(r.pieces[0]) == 0 {
		r.pieces = r.pieces[1:]
	}
	return n, nil
}

// deliveries are ways the chunked body of some events comes off a connection.
var deliveries = map[string]func(pieces [][]byte) io.Reader{
	"whole":    func(pieces [][]byte) io.Reader { return bytes.NewReader(bytes.Join(pieces, nil)) },
	"bytewise": func(pieces [][]byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(bytes.Join(pieces, nil))) },
	"halves":   func(pieces [][]byte) io.Reader { return iotest.HalfReader(bytes.NewReader(bytes.Join(pieces, nil))) },
	"chunkwise": func(pieces [][]byte) io.Reader {
		return &pieceReader{pieces: slices.Clone(pieces)}
	},
}

// compareChunkEvents reads wire, a chunked body delivered by deliver, through an sseReader
// that takes whole chunks off the connection's buffer and through one that cannot: the events
// (name, data, the frame, cut, oneLine) and the error that ends them are the same. And when
// the first says buffered, its next event comes without a read of the connection.
func compareChunkEvents(t *testing.T, pieces [][]byte, bufSize int, deliver func([][]byte) io.Reader) {
	t.Helper()
	src := &countingReader{r: deliver(pieces)}
	br := bufio.NewReaderSize(src, bufSize)
	fast := newSSEReader(&answerBody{br: br, chunked: true, cr: chunkedReader{r: br}})
	if fast.chunks == nil {
		t.Fatal("the reader over a chunked body reads it through its own buffer")
	}
	pbr := bufio.NewReaderSize(deliver(pieces), bufSize)
	plain := newSSEReader(hidden{&answerBody{br: pbr, chunked: true, cr: chunkedReader{r: pbr}}})
	if plain.chunks != nil {
		t.Fatal("the reader over a hidden body found the chunks")
	}
	for i := 0; ; i++ {
		if i > len(bytes.Join(pieces, nil))+2 {
			t.Fatalf("no end after %d events", i)
		}
		buffered := !fast.eof && fast.buffered()
		reads := src.reads
		got, gerr := fast.next()
		want, werr := plain.next()
		if buffered && src.reads != reads {
			t.Fatalf("event %d: buffered() said it was in hand, and next read the connection", i)
		}
		if fmt.Sprint(gerr) != fmt.Sprint(werr) || string(got.name) != string(want.name) ||
			string(got.data) != string(want.data) || got.cut != want.cut || got.oneLine != want.oneLine ||
			string(fast.frame) != string(plain.frame) {
			t.Fatalf("event %d:\n fast  %q/%q cut %v one line %v frame %q err %v\n plain %q/%q cut %v one line %v frame %q err %v",
				i, got.name, got.data, got.cut, got.oneLine, fast.frame, gerr,
				want.name, want.data, want.cut, want.oneLine, plain.frame, werr)
		}
		if gerr != nil {
			return
		}
	}
}

func TestSSEChunkEvents(t *testing.T) {
	for k, events := range []string{
		// Every shape, a comment second: from there on the decoder copies what is in hand.
		"data: {\"a\":1}\n\n" + ": ping\n\n" + "data:{\"b\":2}\n\n" + "data: \n\n" + "event: x\ndata: y\n\n" +
			"data: a\ndata: b\n\n" + "data: c\r\n\r\n" + "data: {\"d\":\"مرحبا\"}\n\n" + "data: [DONE]\n\n",
		// A model's tokens, each taken whole (and found by buffered first), then the others.
		"data: {\"a\":1}\n\n" + "data: {\"b\":2}\n\n" + "data:{\"c\":3}\n\n" + "data: \n\n" + "data: {\"d\":4}\n\n" +
			": ping\n\n" + "data: {\"e\":5}\n\n" + "data: [DONE]\n\n",
	} {
		for name, deliver := range deliveries {
			for _, bufSize := range []int{16, 64, 4096} {
				for _, sizes := range []string{"", "\x00", "\x07\x20", "\x3f"} {
					for _, ext := range []bool{false, true} {
						t.Run(fmt.Sprintf("%d/%s/%d/%q/%v", k, name, bufSize, sizes, ext), func(t *testing.T) {
							compareChunkEvents(t, chunkPieces([]byte(events), []byte(sizes), ext), bufSize, deliver)
						})
					}
				}
			}
		}
	}
	// Broken framing, as it comes: the errors are the decoder's.
	for _, wire := range []string{
		"f\r\ndata: a\n\n\r\n5\r\ndata:", // cut in a chunk
		"f\r\ndata: a\n\n\r\n",           // cut between chunks
		"f\r\ndata: a\n\nXY",             // no CRLF after the data
		"f\r\ndata: a\n\n\r\nzz\r\n",     // a bad size
		"f \r\ndata: a\n\n\r\n0\r\n\r\n", // white space after the size
		"f\ndata: a\n\n\r\n0\r\n\r\n",    // a bare LF
		"11111111111111111\r\ndata: a\n\n\r\n",
		"0000000000000000f\r\ndata: a\n\n\r\n0\r\n\r\n", // 17 digits
		"000000000000000f\r\ndata: a\n\n\r\n0\r\n\r\n",  // 16
	} {
		for name, deliver := range deliveries {
			t.Run(fmt.Sprintf("%s/%q", name, wire), func(t *testing.T) {
				compareChunkEvents(t, [][]byte{[]byte(wire)}, 64, deliver)
			})
		}
	}
}

// FuzzSSEChunkEvents: an sseReader that takes events off the connection's buffer reads what
// one reading every byte through its own buffer reads, fails as it fails, and says an event
// is buffered only when it is, over any events framed in any chunks, or any bytes at all.
func FuzzSSEChunkEvents(f *testing.F) {
	f.Add([]byte("data: a\n\ndata: b\n\ndata: [DONE]\n\n"), []byte{}, false, uint8(0))
	f.Add([]byte("data: a\n\n: c\n\ndata:x\n\nevent: e\ndata: y\n\n"), []byte{3, 9}, true, uint8(1))
	f.Add([]byte("\xef\xbb\xbfdata: a\n\ndata: b\rdata: c\n\n"), []byte{}, false, uint8(2))
	f.Add([]byte("5\r\ndata:\r\n6\r\n a\n\n\r\n\r\n0\r\n\r\n"), []byte{}, false, uint8(3))
	f.Fuzz(func(t *testing.T, sse, sizes []byte, ext bool, mode uint8) {
		pieces := chunkPieces(sse, sizes, ext)
		if mode%5 == 4 {
			pieces = [][]byte{sse} // the bytes as the chunked body itself
		}
		deliver := deliveries[[...]string{"whole", "bytewise", "halves", "chunkwise"}[mode%5%4]]
		compareChunkEvents(t, pieces, 16+int(mode/5)*16, deliver)
	})
}

// An event that came as a chunk of its own is read where it lies in the connection's buffer:
// not copied into the SSE reader's, and the frame is the chunk's data as it came.
func TestSSEChunkEventNotCopied(t *testing.T) {
	events := []string{"data: {\"a\":1}\n\n", "data: {\"b\":2}\n\n"}
	wire := chunkWire([]byte(strings.Join(events, "")), nil, false)
	br := bufio.NewReaderSize(bytes.NewReader(wire), 4096)
	s := newSSEReader(&answerBody{br: br, chunked: true, cr: chunkedReader{r: br}})
	all, _ := br.Peek(len(wire)) // the whole body in the connection's buffer
	for k, e := range events {
		ev, err := s.next()
		if err != nil {
			t.Fatal(err)
		}
		at := bytes.Index(all, []byte(e))
		if string(s.frame) != e {
			t.Fatalf("event %d: frame %q, want %q", k, s.frame, e)
		}
		// Changed in the connection's buffer, the event read changes with it.
		all[at+len("data: {")] = 'Z'
		if ev.data[1] != 'Z' || s.frame[len("data: {")] != 'Z' {
			t.Fatalf("event %d: %q is a copy, not the connection's bytes", k, ev.data)
		}
		if s.r.Buffered() != 0 {
			t.Fatalf("event %d: %d bytes went into the SSE reader's buffer", k, s.r.Buffered())
		}
	}
}

// wholeChunk finds a chunk only when all of it is in the buffer, between chunks, in the plain
// shape; everything else is Read's.
func TestWholeChunk(t *testing.T) {
	for _, tt := range []struct {
		in       string
		checkEnd bool
		n        uint64
		want     string // the data; "-" for none
		span     int
	}{
		{"5\r\nhello\r\n", false, 0, "hello", 10},
		{"5\r\nhello\r\n5\r\nworld\r\n", false, 0, "hello", 10},
		{"A\r\n0123456789\r\n", false, 0, "0123456789", 15},
		{"\r\n5\r\nhello\r\n", true, 0, "hello", 12}, // the CRLF owed to the chunk before
		{"5\r\nhello\r\n", true, 0, "-", 0},          // owed, and not there
		{"XY5\r\nhello\r\n", true, 0, "-", 0},
		{"5\r\nhello\r\n", false, 3, "-", 0}, // inside a chunk
		{"5\r\nhell", false, 0, "-", 0},      // not all in
		{"5\r\nhello\r", false, 0, "-", 0},
		{"5\r\nhelloXY", false, 0, "-", 0},
		{"0\r\n\r\n", false, 0, "-", 0}, // the last chunk is Read's
		{"5;x\r\nhello\r\n", false, 0, "-", 0},
		{"5 \r\nhello\r\n", false, 0, "-", 0},
		{"\r\nhello\r\n", false, 0, "-", 0},
		{"0000000000000005\r\nhello\r\n", false, 0, "hello", 25},
		{"00000000000000005\r\nhello\r\n", false, 0, "-", 0}, // 17 digits: Read's error
		{"5\nhello\r\n", false, 0, "-", 0},
	} {
		br := bufio.NewReaderSize(strings.NewReader(tt.in), 64)
		_, _ = br.Peek(len(tt.in))
		cr := &chunkedReader{r: br, checkEnd: tt.checkEnd, n: tt.n}
		data, span, _, ok := cr.wholeChunk()
		got := "-"
		if ok {
			got = string(data)
		}
		if got != tt.want || ok && span != tt.span {
			t.Errorf("%q (checkEnd %v, n %d): %q over %d, want %q over %d", tt.in, tt.checkEnd, tt.n, got, span, tt.want, tt.span)
		}
	}
}

// The chunks taken whole count against the overhead limit as Read counts them: events between
// chunks whose extensions dwarf their data keep the stream under it, as they do for Read
// (uncounted, the extensions alone would pass it after about sixty).
func TestSSEChunkEventsCountOverhead(t *testing.T) {
	var pieces [][]byte
	ev := "data: " + strings.Repeat("x", 200) + "\n\n"
	for range 120 {
		// An event Read takes, for its extension; one taken whole.
		pieces = append(pieces, fmt.Appendf(nil, "9;%s\r\ndata: y\n\n\r\n", strings.Repeat("e", 300)),
			fmt.Appendf(nil, "%x\r\n%s\r\n", len(ev), ev))
	}
	pieces = append(pieces, []byte("0\r\n\r\n"))
	for name, deliver := range deliveries {
		t.Run(name, func(t *testing.T) { compareChunkEvents(t, pieces, 4096, deliver) })
	}
}

// A stream says an event is buffered only when its Next returns without reading: an event of
// blank data in the connection's buffer, which Next skips, is none.
func TestStreamBufferedOverChunks(t *testing.T) {
	a := `data: {"choices":[{"delta":{"content":"a"}}]}` + "\n\n"
	b := `data: {"choices":[{"delta":{"content":"b"}}]}` + "\n\n"
	stop := `data: {"choices":[{"delta":{},"finish_reason":"stop"}]}` + "\n\n"
	// Each line a read of the connection's: a blank event last in the buffer, then first.
	reads := [][]string{{a, "data: \n\n"}, {"data:  \n\n", b, "data: \n\n"}, {stop, "data: [DONE]\n\n"}}
	var pieces [][]byte
	for _, r := range reads {
		pieces = append(pieces, bytes.Join(chunkPieces([]byte(strings.Join(r, "")), nil, false)[:len(r)], nil))
	}
	pieces = append(pieces, []byte("0\r\n\r\n"))
	src := &countingReader{r: &pieceReader{pieces: pieces}}
	br := bufio.NewReaderSize(src, 4096)
	st := newOpenAIStream("t", &answerBody{br: br, chunked: true, cr: chunkedReader{r: br}}, nil)
	defer st.Close()
	var got []string
	for {
		buffered, reads := st.Buffered(), src.reads
		ev, err := st.Next()
		if buffered && src.reads != reads {
			t.Fatalf("after %q: Buffered said the next event was in hand, and Next read", got)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
		got = append(got, string(ev))
	}
	if len(got) != 3 {
		t.Fatalf("%d events, want 3: %q", len(got), got)
	}
}

// Once the chunk decoder has failed, the next event is its error, at once: no wait on the
// connection for bytes after the broken framing (an upstream that keeps the connection open
// would hold the stream until its idle timeout).
func TestSSEChunkDecoderErrorNotWaited(t *testing.T) {
	g := &gateReader{b: []byte("9\r\ndata: a\n\nXY")} // no CRLF after the chunk's data
	br := bufio.NewReaderSize(g, 64)
	s := newSSEReader(&answerBody{br: br, chunked: true, cr: chunkedReader{r: br}})
	if ev, err := s.next(); err != nil || string(ev.data) != "a" {
		t.Fatalf("first event %q, %v", ev.data, err)
	}
	g.gated = false
	if _, err := s.next(); !errors.Is(err, errChunkMalformed) {
		t.Fatalf("second event's error %v, want %v", err, errChunkMalformed)
	}
	if g.gated {
		t.Fatal("the reader waited on the connection after the decoder had failed")
	}
	// And a line reader's.
	g = &gateReader{b: []byte("6\r\n{\"a\":1XY")} // no CRLF after the chunk's data
	br = bufio.NewReaderSize(g, 64)
	l := newLineReader(&answerBody{br: br, chunked: true, cr: chunkedReader{r: br}})
	g.gated = false
	if line, _, err := l.next(); !errors.Is(err, errChunkMalformed) {
		t.Fatalf("line %q, error %v, want %v", line, err, errChunkMalformed)
	}
	g.gated = false
	if _, _, err := l.next(); !errors.Is(err, errChunkMalformed) {
		t.Fatalf("second line's error %v, want %v", err, errChunkMalformed)
	}
	if g.gated {
		t.Fatal("the line reader waited on the connection after the decoder had failed")
	}
}

// compareChunkLines is compareChunkEvents for NDJSON lines (lineReader): the lines, cut and the
// error that ends them are those of a reader that cannot take chunks whole, and when the first
// says buffered, its next line comes without a read of the connection.
func compareChunkLines(t *testing.T, pieces [][]byte, bufSize int, deliver func([][]byte) io.Reader) {
	t.Helper()
	src := &countingReader{r: deliver(pieces)}
	br := bufio.NewReaderSize(src, bufSize)
	fast := newLineReader(&answerBody{br: br, chunked: true, cr: chunkedReader{r: br}})
	pbr := bufio.NewReaderSize(deliver(pieces), bufSize)
	plain := newLineReader(hidden{&answerBody{br: pbr, chunked: true, cr: chunkedReader{r: pbr}}})
	if fast.chunks == nil || plain.chunks != nil {
		t.Fatal("chunksOf found the wrong bodies")
	}
	for i := 0; ; i++ {
		if i > len(bytes.Join(pieces, nil))+2 {
			t.Fatalf("no end after %d lines", i)
		}
		buffered, reads := fast.buffered(), src.reads
		got, gcut, gerr := fast.next()
		want, wcut, werr := plain.next()
		if buffered && src.reads != reads {
			t.Fatalf("line %d: buffered() said it was in hand, and next read the connection", i)
		}
		if fmt.Sprint(gerr) != fmt.Sprint(werr) || string(got) != string(want) || gcut != wcut {
			t.Fatalf("line %d:\n fast  %q cut %v err %v\n plain %q cut %v err %v", i, got, gcut, gerr, want, wcut, werr)
		}
		if gerr != nil {
			return
		}
	}
}

func TestNDJSONChunkLines(t *testing.T) {
	lines := `{"message":{"content":"a"},"done":false}` + "\n" + `{"message":{"content":"b"}}` + "\n" + "\n" + "  \r\n" +
		` {"c":3} ` + "\r\n" + `{"d":"مرحبا"}` + "\n" + `{"e":5}` + "\n" + `{"f":6}` + "\n" + `{"g":7}` + "\n" + `{"done":true}`
	// Two lines in one chunk, between chunks of one line.
	two := bytes.Join(chunkPiecesBy([]byte(`{"a":1}`+"\n"+`{"b":2}`+"\n"+`{"c":3}`+"\n\n"+`{"d":4}`+"\n"), "\n\n", nil, false), nil)
	for name, deliver := range deliveries {
		t.Run(name+"/two lines a chunk", func(t *testing.T) {
			compareChunkLines(t, [][]byte{two}, 4096, deliver)
		})
		for _, bufSize := range []int{16, 64, 4096} {
			for _, sizes := range []string{"", "\x00", "\x07\x20", "\x3f"} {
				for _, ext := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/%d/%q/%v", name, bufSize, sizes, ext), func(t *testing.T) {
						compareChunkLines(t, chunkPiecesBy([]byte(lines), "\n", []byte(sizes), ext), bufSize, deliver)
					})
				}
			}
		}
	}
}

// FuzzNDJSONChunkLines: a line reader that takes lines off the connection's buffer reads what
// one reading every byte through its own buffer reads, as FuzzSSEChunkEvents for events.
func FuzzNDJSONChunkLines(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n{\"b\":2}\n\n{\"c\":3}\r\n"), []byte{}, false, uint8(0))
	f.Add([]byte(" x \n\n\ny\nz"), []byte{3, 9}, true, uint8(1))
	f.Add([]byte("5\r\n{\"a\r\n3\r\n\":1\r\n2\r\n}\n\r\n0\r\n\r\n"), []byte{}, false, uint8(4))
	f.Fuzz(func(t *testing.T, b, sizes []byte, ext bool, mode uint8) {
		pieces := chunkPiecesBy(b, "\n", sizes, ext)
		if mode%5 == 4 {
			pieces = [][]byte{b}
		}
		deliver := deliveries[[...]string{"whole", "bytewise", "halves", "chunkwise"}[mode%5%4]]
		compareChunkLines(t, pieces, 16+int(mode/5)*16, deliver)
	})
}

// A line that came as a chunk of its own is read where it lies in the connection's buffer.
func TestNDJSONChunkLineNotCopied(t *testing.T) {
	wire := bytes.Join(chunkPiecesBy([]byte("{\"a\":1}\n{\"b\":2}\n"), "\n", nil, false), nil)
	br := bufio.NewReaderSize(bytes.NewReader(wire), 4096)
	l := newLineReader(&answerBody{br: br, chunked: true, cr: chunkedReader{r: br}})
	all, _ := br.Peek(len(wire))
	for k, want := range []string{`{"a":1}`, `{"b":2}`} {
		line, _, err := l.next()
		if err != nil || string(line) != want {
			t.Fatalf("line %d: %q, %v", k, line, err)
		}
		all[bytes.Index(all, []byte(want))+2] = 'Z'
		if line[2] != 'Z' || l.r.Buffered() != 0 {
			t.Fatalf("line %d: %q is a copy, not the connection's bytes", k, line)
		}
	}
}

// errOnce fails its first read with err, and ends (io.EOF) after: a connection reset, whose next
// read finds the connection closed.
type errOnce struct {
	err    error
	failed bool
}

func (r *errOnce) Read([]byte) (int, error) {
	if r.failed {
		return 0, io.EOF
	}
	r.failed = true
	return 0, r.err
}

// A wait for the next chunk that fails fails the read with its error, not with what a second
// read of the connection would say.
func TestChunkWaitErrorKept(t *testing.T) {
	boom := errors.New("connection reset by peer")
	br := bufio.NewReaderSize(&errOnce{err: boom}, 64)
	s := newSSEReader(&answerBody{br: br, chunked: true, cr: chunkedReader{r: br}})
	if _, err := s.next(); !errors.Is(err, boom) {
		t.Fatalf("event's error %v, want %v", err, boom)
	}
	br = bufio.NewReaderSize(&errOnce{err: boom}, 64)
	l := newLineReader(&answerBody{br: br, chunked: true, cr: chunkedReader{r: br}})
	if _, _, err := l.next(); !errors.Is(err, boom) {
		t.Fatalf("line's error %v, want %v", err, boom)
	}
}
