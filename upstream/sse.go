package upstream

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"mime"
	"strings"
	"sync"
	"unicode/utf8"
)

// maxEvent bounds one SSE event's data. Lines have no fixed limit (a chunk carrying a big tool
// call can be far longer than bufio's buffer), but an upstream must not make the gateway buffer
// without end.
const maxEvent = 32 << 20

// errEventTooLarge is an event over maxEvent.
var errEventTooLarge = errors.New("SSE event larger than 32 MiB")

// sseEvent is one dispatched event. Its slices are valid until the next call to next.
type sseEvent struct {
	name []byte
	data []byte
	// cut is set when the stream ended inside the event's last line: the data may be truncated.
	cut bool
	// oneLine is set when data is one line as it came, with no line break (CR or LF) in it.
	oneLine bool
}

// sseReader parses text/event-stream as the WHATWG spec describes, with two leniencies that
// upstreams need: an event still pending at EOF is dispatched (flagged cut when its last line had
// no newline), and an event's end is known as soon as its blank line's CR (or LF) is in. LF, CRLF
// and a lone CR end lines. Fields other than data and event (id, retry) are ignored. Buffers are
// reused across events.
type sseReader struct {
	r     *bufio.Reader
	line  []byte // a line longer than r's buffer is assembled here
	data  []byte
	name  []byte
	first bool
	eof   bool
	// skipLF: the last line ended in CR, so an LF that follows is part of its CRLF.
	skipLF bool
	// readErr is the error of a read next made for whole that brought nothing, for readLine.
	readErr error
	// frame is the last event next returned as it came, "data: " + its data + "\n\n", when whole
	// took it so (the data is then a slice of it); nil otherwise. See openaiStream.Framed.
	frame []byte
	// wholeLF: buffered found the next event in the shape whole takes, its line ending at
	// wholeLF−1 in the buffer (0: not found). Nothing reads between the two (buffered only
	// looks), so whole takes it without searching the same bytes again; whole clears it.
	wholeLF int
	// chunks is the body r reads when it is an answer of the gateway's own HTTP/1.1 client in
	// chunked framing (chunksOf), else nil: an event that came as a chunk of its own is then
	// taken where it lies in the connection's buffer (chunkEvent), not copied into r's by the
	// chunk decoder first.
	chunks *answerBody
	// chunk is the event buffered found in the connection's buffer for chunkEvent (zero: none).
	// Nothing reads between the two, so chunkEvent takes it without parsing the chunk and
	// searching its line again; next clears it.
	chunk foundChunk
}

// foundChunk is an event (a line, for lineReader) in a chunk of its own, as buffered found it
// for chunkEvent: what is read of the chunk's data, the buffered bytes the chunk spans, its size
// line's length, the length of its data (n) and the end of an event's data line.
type foundChunk struct {
	data               []byte
	span, line, n, end int
}

// newSSEReader reads r through a 4 KiB buffer: a model's event is a few hundred bytes and a
// longer line is assembled in line, while a 16 KiB buffer per stream was a third of all the
// bytes the gateway allocated under the bench's stream load.
func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 4<<10), first: true, chunks: chunksOf(r)}
}

// readerPool lends streams their readers (the 4 KiB buffered reader and the event buffers): SSE
// readers to the openai and saif adapters' streams, line readers to the ollama adapter's; a
// stream gives its reader back when it is closed. A nil pool lends new readers.
type readerPool struct {
	p     sync.Pool // of *sseReader
	lines sync.Pool // of *lineReader
}

func (rp *readerPool) sse(r io.Reader) *sseReader {
	if rp != nil {
		if s, ok := rp.p.Get().(*sseReader); ok {
			s.r.Reset(r)
			s.chunks = chunksOf(r)
			return s
		}
	}
	return newSSEReader(r)
}

// awaitChunk waits, when the connection's buffer is empty, for its first bytes, so that a chunk
// may be taken whole from it. It is false when the body is at its end or its decoder has failed
// (the error is Read's to return, at once), and when the wait fails: the decoder keeps that
// error, and the reader's next read returns it as the body's own reads would have.
func (b *answerBody) awaitChunk() bool {
	if b.eof || b.cr.err != nil {
		return false
	}
	if br := b.cr.r; br.Buffered() == 0 {
		if _, err := br.Peek(1); err != nil {
			b.cr.fail(err)
			return false
		}
	}
	return true
}

// chunksOf is the chunked body under r when r is one (sseReader.chunks): an answer body of the
// gateway's HTTP/1.1 client (h1Body) or the framing under it, not yet at its end. Any other
// reader (net/http's bodies, a translated stream's, a test's) is read through r's buffer alone.
func chunksOf(r io.Reader) *answerBody {
	if h, ok := r.(*h1Body); ok {
		if h.eof || h.done {
			return nil
		}
		r = h.body
	}
	if b, ok := r.(*answerBody); ok && b.chunked && !b.eof {
		return b
	}
	return nil
}

// maxPooledBuf bounds the event buffers a pooled reader keeps: one huge event must not hold
// its memory for every stream after it.
const maxPooledBuf = 64 << 10

// put takes back the reader of a stream that will not be read again; the stream must drop its
// pointer to it.
func (rp *readerPool) put(s *sseReader) {
	if rp == nil || s == nil {
		return
	}
	s.r.Reset(nil)
	*s = sseReader{r: s.r, line: pooledBuf(s.line), data: pooledBuf(s.data), name: pooledBuf(s.name), first: true}
	rp.p.Put(s)
}

// lineReader lends a line reader of r (an NDJSON stream's), as sse does an SSE reader.
func (rp *readerPool) lineReader(r io.Reader) *lineReader {
	if rp != nil {
		if l, ok := rp.lines.Get().(*lineReader); ok {
			l.r.Reset(r)
			l.chunks = chunksOf(r)
			return l
		}
	}
	return newLineReader(r)
}

// putLines takes back the line reader of a stream that will not be read again, as put does.
func (rp *readerPool) putLines(l *lineReader) {
	if rp == nil || l == nil {
		return
	}
	l.r.Reset(nil)
	*l = lineReader{r: l.r, line: pooledBuf(l.line)}
	rp.lines.Put(l)
}

func pooledBuf(b []byte) []byte {
	if cap(b) > maxPooledBuf {
		return nil
	}
	return b[:0]
}

// isEventStream reports whether the Content-Type ct names text/event-stream, as
// mime.ParseMediaType(ct) would, without the parameter map ParseMediaType builds for the shapes
// servers send: the type alone or with one parameter ("; charset=utf-8"). With one parameter
// ParseMediaType returns the type whether or not the parameter parses; only duplicates (two or
// more) can make it return none, and those go to it.
func isEventStream(ct string) bool {
	base, params, _ := strings.Cut(ct, ";")
	if !isASCII(base) || strings.Contains(params, ";") {
		mt, _, _ := mime.ParseMediaType(ct)
		return mt == "text/event-stream"
	}
	// For ASCII, TrimSpace and EqualFold do what ParseMediaType's TrimSpace and ToLower do.
	return strings.EqualFold(strings.TrimSpace(base), "text/event-stream")
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// readLine returns the next line without its line ending (LF, CRLF or a lone CR, as the spec
// says), whether it had one, and the read error (io.EOF once the input is exhausted and the
// returned line, if any, was the last). A line is returned as soon as its ending is in: a CR
// ends it without waiting to see whether an LF follows (skipLF drops that LF when it comes), so
// that an event framed with CRLF is dispatched when its blank line's CR arrives.
func (s *sseReader) readLine() (line []byte, terminated bool, err error) {
	long := false // the line so far is in s.line
	rerr := s.readErr
	s.readErr = nil
	for {
		buf, _ := s.r.Peek(s.r.Buffered())
		if s.skipLF && len(buf) > 0 {
			s.skipLF = false
			if buf[0] == '\n' {
				_, _ = s.r.Discard(1)
				buf = buf[1:]
			}
		}
		if i := lineEnd(buf); i >= 0 {
			s.skipLF = buf[i] == '\r'
			line, terminated = buf[:i], true
			_, _ = s.r.Discard(i + 1) // buf stays valid until the next read
		} else if rerr != nil {
			line = buf
			_, _ = s.r.Discard(len(buf))
		} else if len(buf) == s.r.Size() {
			// A line longer than the buffer is assembled in s.line.
			if !long {
				s.line, long = s.line[:0], true
			}
			s.line = append(s.line, buf...)
			_, _ = s.r.Discard(len(buf))
			if len(s.line) > maxEvent {
				return nil, false, errEventTooLarge
			}
			continue
		} else {
			// Wait for at least one more byte (bufio keeps an error that came with bytes for
			// the next call).
			if _, err := s.r.Peek(len(buf) + 1); err != nil && !errors.Is(err, bufio.ErrBufferFull) {
				rerr = err
			}
			continue
		}
		if long {
			s.line = append(s.line, line...)
			line = s.line
		}
		if s.first {
			s.first = false
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		return line, terminated, rerr
	}
}

// lineEnd is the index of the first CR or LF in b, or -1.
func lineEnd(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	end := i
	if i < 0 {
		end = len(b)
	}
	if j := bytes.IndexByte(b[:end], '\r'); j >= 0 {
		return j
	}
	return i
}

// next returns the next event, io.EOF at the end of the input, or the read error.
func (s *sseReader) next() (sseEvent, error) {
	s.data, s.name, s.frame = s.data[:0], s.name[:0], nil
	found := s.chunk
	s.chunk = foundChunk{}
	if s.r.Buffered() > 0 {
		if ev, ok := s.whole(); ok {
			return ev, nil
		}
	} else if !s.eof && !s.skipLF {
		// whole finds nothing in an empty buffer (and buffered left it no line ending).
		if s.chunks != nil && s.readErr == nil {
			if ev, ok := s.chunkEvent(found); ok {
				return ev, nil
			}
		}
		// Nothing in hand, as between a model's tokens, when each comes in a read of its own:
		// the read waited for here brings the event, which whole then takes as it takes one
		// already in hand. A read that fails with nothing fails readLine's first wait
		// (readErr): bufio hands a read's error to one Peek only.
		if _, err := s.r.Peek(1); err != nil {
			s.readErr = err
		} else if ev, ok := s.whole(); ok {
			return ev, nil
		}
	}
	hasData := false
	for {
		if s.eof {
			return sseEvent{}, io.EOF
		}
		line, terminated, err := s.readLine()
		if err != nil && !errors.Is(err, io.EOF) {
			return sseEvent{}, err
		}
		atEOF := err != nil
		if len(line) == 0 && terminated {
			if hasData {
				return s.dispatch(false), nil
			}
			s.name = s.name[:0]
			continue
		}
		if len(line) > 0 {
			hasData = s.field(line) || hasData
			if len(s.data) > maxEvent {
				return sseEvent{}, errEventTooLarge
			}
		}
		if atEOF {
			s.eof = true
			if hasData {
				return s.dispatch(len(line) > 0 && !terminated), nil
			}
			return sseEvent{}, io.EOF
		}
	}
}

// whole returns the event that almost every upstream sends, when it is in the buffer: one
// "data:" line and a blank line, both ending in LF, no CR in them. It is what next would make
// of those bytes, in one search for the line's end and one for a CR, where next reads two lines
// and parses a field (bench --count: about 450 instructions an event of a 32-event stream's
// 4,700). Its data is a slice of the buffer, not a copy (and the event as it came is kept in
// frame). Anything else — a first line that opens with a byte-order mark, an LF owed to a CR, a
// second data line, an event name, a comment, an event not yet whole — is left to next's lines.
func (s *sseReader) whole() (sseEvent, bool) {
	lf := s.wholeLF
	s.wholeLF = 0
	if s.skipLF || s.eof {
		return sseEvent{}, false
	}
	buf, _ := s.r.Peek(s.r.Buffered())
	i := lf - 1
	if lf == 0 {
		if i = wholeLine(buf); i < 0 {
			return sseEvent{}, false
		}
	}
	// The event is read where it lies in the buffer, not copied out: nothing reads the buffer
	// again before the next event is asked for (buffered only looks), which is as long as an
	// event is valid.
	v := buf[5:i]
	if len(v) > 0 && v[0] == ' ' {
		v, s.frame = v[1:], buf[:i+2]
	}
	_, _ = s.r.Discard(i + 2)
	s.first = false // a first line that opens with "data:" has no byte-order mark to drop
	return sseEvent{name: s.name, data: v, oneLine: true}, true
}

// chunkEvent returns the next event when it comes as a chunk of its own, with nothing in r's
// buffer before it: whole's shape filling the chunk's data, which is the event as it came (the
// frame) and is read where it lies in the connection's buffer. Every OpenAI-compatible server
// the gateway has met sends each event so (one write, one chunk). It waits for the connection's
// first bytes when none are in hand (awaitChunk), and leaves anything else (a chunk not yet
// whole, two events in one chunk, an event over two, a size line with an extension) and a failed
// wait to next's reads, which the chunk decoder then copies into r's buffer. found is the event
// buffered found, if it did.
func (s *sseReader) chunkEvent(found foundChunk) (sseEvent, bool) {
	b := s.chunks
	if found.data == nil {
		if !b.awaitChunk() {
			return sseEvent{}, false
		}
		var ok bool
		if found, ok = s.findChunk(); !ok {
			return sseEvent{}, false
		}
	}
	data, i := found.data, found.end
	// Valid until the connection's reader reads again, which is no sooner than the next event
	// is asked for: the same lifetime as an event read out of r's buffer.
	v := data[5:i]
	if len(v) > 0 && v[0] == ' ' {
		v, s.frame = v[1:], data
	}
	b.cr.took(found.span, found.line, found.n)
	s.first = false
	return sseEvent{name: s.name, data: v, oneLine: true}, true
}

// findChunk finds the next event in the connection's buffer when it is a chunk of its own in
// whole's shape, as chunkEvent takes it.
func (s *sseReader) findChunk() (foundChunk, bool) {
	data, span, line, ok := s.chunks.cr.wholeChunk()
	if !ok {
		return foundChunk{}, false
	}
	i := wholeLine(data)
	if i < 0 || i+2 != len(data) {
		return foundChunk{}, false
	}
	return foundChunk{data: data, span: span, line: line, n: len(data), end: i}, true
}

// wholeLine is the end of buf's first line when buf opens with an event in the shape whole
// takes (one "data:" line ending in LF, no CR in it, and a blank line ending in LF), or -1.
func wholeLine(buf []byte) int {
	if len(buf) < len("data:\n\n") || string(buf[:5]) != "data:" {
		return -1
	}
	i := bytes.IndexByte(buf, '\n')
	if i < 0 || i+1 >= len(buf) || buf[i+1] != '\n' || bytes.IndexByte(buf[:i], '\r') >= 0 {
		return -1
	}
	return i
}

// field applies one non-empty line and reports whether it was a data field.
func (s *sseReader) field(line []byte) bool {
	if line[0] == ':' {
		return false
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		s.data = append(s.data, value...)
		s.data = append(s.data, '\n')
		return true
	case "event":
		s.name = append(s.name[:0], value...)
	case "error":
		// llama-server before ggml-org/llama.cpp#16109 (2025) sent a stream's error in a field
		// of its own, "error: {…}", then "data: [DONE]". SSE says to ignore a field it does not
		// know, which loses the upstream's reason (a context overflow, most often) and leaves a
		// stream that ended before its first event. It is read as an event named "error".
		s.name = append(s.name[:0], "error"...)
		s.data = append(s.data, value...)
		s.data = append(s.data, '\n')
		return true
	}
	return false
}

func (s *sseReader) dispatch(cut bool) sseEvent {
	return sseEvent{name: s.name, data: s.data[:len(s.data)-1], cut: cut}
}

// buffered reports whether next will return without reading: the input ended, or a complete
// event whose data is not blank is already in the buffer. An event of blank data is skipped by
// every caller, so it does not count, nor does a comment. Lines end as readLine ends them.
func (s *sseReader) buffered() bool {
	if s.eof {
		return true
	}
	if s.r.Buffered() == 0 && s.chunks != nil && !s.skipLF && s.readErr == nil {
		// What chunkEvent would take next without reading. Anything else in the connection's
		// buffer is not counted: the relay flushes, as it does when nothing is in hand.
		found, ok := s.findChunk()
		if !ok || blank(found.data[5:found.end]) {
			return false
		}
		s.chunk = found
		return true
	}
	b, _ := s.r.Peek(s.r.Buffered())
	if !s.skipLF { // a first line with a byte-order mark is not in whole's shape
		// The event nearly every upstream sends, found as whole will take it: one search
		// serves both (bench --count: the two read each event's bytes twice).
		if i := wholeLine(b); i >= 0 && !blank(b[5:i]) {
			s.wholeLF = i + 1
			return true
		}
	}
	return s.bufferedLines(b)
}

// bufferedLines is buffered's answer for any buffer b, line by line as readLine reads them.
func (s *sseReader) bufferedLines(b []byte) bool {
	skipLF, hasData := s.skipLF, false
	for {
		if skipLF && len(b) > 0 {
			skipLF = false
			if b[0] == '\n' {
				b = b[1:]
			}
		}
		i := lineEnd(b)
		if i < 0 {
			return false
		}
		line := b[:i]
		skipLF = b[i] == '\r'
		b = b[i+1:]
		if len(line) == 0 {
			if hasData {
				return true
			}
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok && !blank(v) {
			hasData = true
		}
	}
}

// blank reports whether bytes.TrimSpace would leave v empty (an event of such data is skipped
// by every caller), looking at v's ASCII up to its first byte that is not white space, the first
// or second of an event's data.
func blank(v []byte) bool {
	for i, c := range v {
		switch {
		case c >= utf8.RuneSelf:
			return len(bytes.TrimSpace(v[i:])) == 0
		case c != ' ' && (c < '\t' || c > '\r'):
			return false
		}
	}
	return true
}

// trimSpace is bytes.TrimSpace, with its answer for an event's data (neither end white space, nor
// outside ASCII) found in two compares: bytes.TrimSpace took about 50 instructions for it, three
// times an event (bench --count).
func trimSpace(b []byte) []byte {
	if n := len(b); n > 0 && b[0] > ' ' && b[0] < utf8.RuneSelf && b[n-1] > ' ' && b[n-1] < utf8.RuneSelf {
		return b
	}
	return bytes.TrimSpace(b)
}
