package upstream

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// lineReader reads newline-delimited JSON (Ollama's streaming format): one value per line, blank
// lines skipped, LF or CRLF endings. A line may be longer than the buffer (a big tool call) but
// not longer than maxEvent.
type lineReader struct {
	r    *bufio.Reader
	line []byte
	// chunks is the chunked body r reads, as sseReader's (chunksOf): a line that came as a chunk
	// of its own is taken where it lies in the connection's buffer (chunkLine). chunk is the
	// line buffered found there for next, as sseReader's.
	chunks *answerBody
	chunk  foundChunk
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 4<<10), chunks: chunksOf(r)}
}

// next returns the next non-blank line without its ending, valid until the next call. At the end
// of the input it returns io.EOF; a last line without a newline is returned with cut set, since
// the upstream may have been cut off inside it.
func (l *lineReader) next() (line []byte, cut bool, err error) {
	found := l.chunk
	l.chunk = foundChunk{}
	if l.chunks != nil && l.r.Buffered() == 0 {
		if line, ok := l.chunkLine(found); ok {
			return line, false, nil
		}
	}
	for {
		b, err := l.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			l.line = append(l.line[:0], b...)
			for errors.Is(err, bufio.ErrBufferFull) {
				if len(l.line) > maxEvent {
					return nil, false, errEventTooLarge
				}
				b, err = l.r.ReadSlice('\n')
				l.line = append(l.line, b...)
			}
			b = l.line
			// The read that ended the line may have taken it past the limit too.
			if len(bytes.TrimRight(b, "\r\n")) > maxEvent {
				return nil, false, errEventTooLarge
			}
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, false, err
		}
		terminated := len(b) > 0 && b[len(b)-1] == '\n'
		b = bytes.TrimSpace(b)
		if len(b) > 0 {
			return b, !terminated, nil
		}
		if err != nil {
			return nil, false, io.EOF
		}
	}
}

// chunkLine returns the next line when it comes as a chunk of its own (Ollama writes each line
// so) and is not blank, read where it lies in the connection's buffer, as sseReader.chunkEvent
// returns an event: waiting for the connection's first bytes when none are in hand, leaving
// anything else, and a failed wait, to next's reads through r. found is the line buffered found,
// if it did.
func (l *lineReader) chunkLine(found foundChunk) ([]byte, bool) {
	b := l.chunks
	if found.data == nil {
		if !b.awaitChunk() {
			return nil, false
		}
		var ok bool
		if found, ok = l.findChunk(); !ok {
			return nil, false
		}
	}
	b.cr.took(found.span, found.line, found.n)
	return found.data, true
}

// findChunk finds the next line in the connection's buffer when it is a chunk of its own, not
// blank, as chunkLine takes it: data is the line trimmed as next trims one.
func (l *lineReader) findChunk() (foundChunk, bool) {
	data, span, line, ok := l.chunks.cr.wholeChunk()
	if !ok || data[len(data)-1] != '\n' || bytes.IndexByte(data, '\n') != len(data)-1 {
		return foundChunk{}, false
	}
	t := bytes.TrimSpace(data)
	if len(t) == 0 {
		return foundChunk{}, false
	}
	return foundChunk{data: t, span: span, line: line, n: len(data)}, true
}

// buffered reports whether a complete non-blank line is already in the buffer, so that next
// returns it without reading.
func (l *lineReader) buffered() bool {
	if l.r.Buffered() == 0 && l.chunks != nil {
		found, ok := l.findChunk()
		if ok {
			l.chunk = found
		}
		return ok
	}
	b, _ := l.r.Peek(l.r.Buffered())
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return false
		}
		if len(bytes.TrimSpace(b[:i])) > 0 {
			return true
		}
		b = b[i+1:]
	}
}
