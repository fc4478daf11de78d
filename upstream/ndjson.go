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
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 4<<10)}
}

// next returns the next non-blank line without its ending, valid until the next call. At the end
// of the input it returns io.EOF; a last line without a newline is returned with cut set, since
// the upstream may have been cut off inside it.
func (l *lineReader) next() (line []byte, cut bool, err error) {
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

// buffered reports whether a complete non-blank line is already in the buffer, so that next
// returns it without reading.
func (l *lineReader) buffered() bool {
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
