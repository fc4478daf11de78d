// This file ports code from Go's src/net/http/internal/chunked.go, under this notice:
//
// Copyright 2009 The Go Authors.
//
// Redistribution and use in source and binary forms, with or without
// modification, are permitted provided that the following conditions are
// met:
//
//    * Redistributions of source code must retain the above copyright
// notice, this list of conditions and the following disclaimer.
//    * Redistributions in binary form must reproduce the above
// copyright notice, this list of conditions and the following disclaimer
// in the documentation and/or other materials provided with the
// distribution.
//    * Neither the name of Google LLC nor the names of its
// contributors may be used to endorse or promote products derived from
// this software without specific prior written permission.
//
// THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS
// "AS IS" AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT
// LIMITED TO, THE IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR
// A PARTICULAR PURPOSE ARE DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT
// OWNER OR CONTRIBUTORS BE LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL,
// SPECIAL, EXEMPLARY, OR CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT
// LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR SERVICES; LOSS OF USE,
// DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER CAUSED AND ON ANY
// THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY, OR TORT
// (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE
// OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.

package upstream

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// chunkedReader decodes a chunked body off the connection's reader as net/http's own decoder
// (net/http/internal.chunkedReader, which httputil.NewChunkedReader returns) does: the same
// checks, limits, error texts and early returns, ported line for line (see the
// notice at the top of this file), with one early return more: data in hand is returned rather
// than wait for the rest of its chunk. It is a value that lives
// in the answer's allocation: NewChunkedReader allocated one for every streamed answer.
// FuzzChunkedReader holds it to net/http's.
type chunkedReader struct {
	r        *bufio.Reader
	n        uint64 // unread bytes in the chunk
	err      error
	buf      [2]byte
	checkEnd bool  // the CRLF after a chunk's data is still to be read
	excess   int64 // chunk overhead beyond what the data justifies (a sender wasting our reads)
}

// The errors net/http's decoder returns, with its texts: an upstream's broken stream reads the
// same in the log whichever transport served it.
var (
	errChunkLineTooLong = errors.New("header line too long")
	errChunkBareLF      = errors.New("chunked line ends with bare LF")
	errChunkCR          = errors.New("invalid CR in chunked line")
	errChunkMalformed   = errors.New("malformed chunked encoding")
	errChunkOverhead    = errors.New("chunked encoding contains too much non-data")
	errChunkEmptySize   = errors.New("empty hex number for chunk length")
	errChunkSizeByte    = errors.New("invalid byte in chunk length")
	errChunkSizeLarge   = errors.New("http chunk length too large")
)

// maxChunkLine bounds a chunk's size line, as net/http's maxLineLength.
const maxChunkLine = 4096

func (cr *chunkedReader) beginChunk() {
	var line []byte
	line, cr.err = readChunkLine(cr.r)
	if cr.err != nil {
		return
	}
	cr.excess += int64(len(line)) + 2 // the size line, and the CRLF after the data
	for len(line) > 0 && (line[len(line)-1] == ' ' || line[len(line)-1] == '\t') {
		line = line[:len(line)-1]
	}
	for i, c := range line { // a few bytes: a loop is cheaper than IndexByte's call
		if c == ';' {
			line = line[:i] // extensions are ignored
			break
		}
	}
	cr.n, cr.err = parseChunkSize(line)
	if cr.err != nil {
		return
	}
	// Streaming a byte a chunk is legitimate, extensions that dwarf the data are not: 16 bytes
	// of overhead a chunk are allowed, and twice the chunk's data.
	cr.excess -= 16 + (2 * int64(cr.n))
	cr.excess = max(cr.excess, 0)
	if cr.excess > 16*1024 {
		cr.err = errChunkOverhead
	}
	if cr.n == 0 {
		cr.err = io.EOF
	}
}

// wholeChunk returns the data of the next chunk when the decoder is between chunks and the
// whole chunk is in the connection's buffer: the CRLF owed to the chunk before (checkEnd), a
// size line of hex digits alone (no extension, no white space: those, and every error, are left
// to Read), a size that is not 0, the data and its CRLF. span is how many buffered bytes the
// chunk takes, line its size line's length without the CRLF. It reads nothing.
func (cr *chunkedReader) wholeChunk() (data []byte, span, line int, ok bool) {
	if cr.err != nil || cr.n != 0 {
		return nil, 0, 0, false
	}
	p, _ := cr.r.Peek(cr.r.Buffered())
	at := 0
	if cr.checkEnd {
		if len(p) < 2 || p[0] != '\r' || p[1] != '\n' {
			return nil, 0, 0, false
		}
		at = 2
	}
	// The size line ends at its CR, within the 16 digits parseChunkSize allows and one more.
	i := at
	for i < len(p) && i-at <= 16 && p[i] != '\r' {
		i++
	}
	if len(p)-i < 2 || p[i] != '\r' || p[i+1] != '\n' {
		return nil, 0, 0, false
	}
	size, err := parseChunkSize(p[at:i])
	if err != nil || size == 0 {
		return nil, 0, 0, false
	}
	start := i + 2
	if uint64(len(p)-start) < size+2 {
		return nil, 0, 0, false
	}
	end := start + int(size)
	if p[end] != '\r' || p[end+1] != '\n' {
		return nil, 0, 0, false
	}
	return p[start:end], end + 2, i - at, true
}

// took reads the chunk wholeChunk found, as Read would have: the decoder is between chunks
// after it, with the size line's overhead counted as beginChunk counts it (a size line of 16
// digits at most, for data of n > 0 bytes, never adds to it).
func (cr *chunkedReader) took(span, line, n int) {
	cr.checkEnd = false
	cr.excess = max(cr.excess+int64(line)+2-16-2*int64(n), 0)
	_, _ = cr.r.Discard(span)
}

// fail keeps err, a read of the connection's reader that brought nothing between chunks, as
// the decoder's error: what beginChunk keeps when the size line's read fails so.
func (cr *chunkedReader) fail(err error) {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	cr.err = err
}

func (cr *chunkedReader) chunkHeaderAvailable() bool {
	if n := cr.r.Buffered(); n > 0 {
		peek, _ := cr.r.Peek(n)
		return bytes.IndexByte(peek, '\n') >= 0
	}
	return false
}

func (cr *chunkedReader) Read(b []byte) (n int, err error) {
	for cr.err == nil {
		if cr.checkEnd {
			if n > 0 && cr.r.Buffered() < 2 {
				break // some data in hand: return it rather than wait for the CRLF
			}
			if p, _ := cr.r.Peek(cr.r.Buffered()); len(p) >= 2 {
				// In hand, as nearly always: read without io.ReadFull's calls (bench --count).
				_, _ = cr.r.Discard(2) // read, as io.ReadFull reads them
				if p[0] != '\r' || p[1] != '\n' {
					cr.err = errChunkMalformed
					break
				}
			} else if _, cr.err = io.ReadFull(cr.r, cr.buf[:2]); cr.err == nil {
				if string(cr.buf[:]) != "\r\n" {
					cr.err = errChunkMalformed
					break
				}
			} else {
				if cr.err == io.EOF {
					cr.err = io.ErrUnexpectedEOF
				}
				break
			}
			cr.checkEnd = false
		}
		if cr.n == 0 {
			if n > 0 && !cr.chunkHeaderAvailable() {
				break // some data in hand: do not wait for the next size line
			}
			cr.beginChunk()
			continue
		}
		if len(b) == 0 {
			break
		}
		if n > 0 && cr.r.Buffered() == 0 {
			// Some data in hand: return it rather than wait for the rest of the chunk. A chunk
			// need not come in one piece (a proxy passes the upstream's framing on as its bytes
			// come), and what is in hand may be an event the client must have now
			// (TestSSERelayShapes). net/http's decoder reads on here.
			break
		}
		rbuf := b
		if uint64(len(rbuf)) > cr.n {
			rbuf = rbuf[:cr.n]
		}
		var n0 int
		n0, cr.err = cr.r.Read(rbuf)
		n += n0
		b = b[n0:]
		cr.n -= uint64(n0)
		if cr.n == 0 && cr.err == nil {
			cr.checkEnd = true
		} else if cr.err == io.EOF {
			cr.err = io.ErrUnexpectedEOF
		}
	}
	return n, cr.err
}

// readChunkLine reads a size line, which must end in CRLF and hold no other CR.
func readChunkLine(b *bufio.Reader) ([]byte, error) {
	p, err := b.ReadSlice('\n')
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		} else if err == bufio.ErrBufferFull {
			err = errChunkLineTooLong
		}
		return nil, err
	}
	// The first CR must be the line's last byte but one. A size line is a few bytes (a longer
	// one is an extension's, rare): a loop, not IndexByte's call.
	idx := -1
	for i, c := range p {
		if c == '\r' {
			idx = i
			break
		}
	}
	if idx == -1 {
		return nil, errChunkBareLF
	} else if idx != len(p)-2 {
		return nil, errChunkCR
	}
	p = p[:len(p)-2]
	if len(p) >= maxChunkLine {
		return nil, errChunkLineTooLong
	}
	return p, nil
}

func parseChunkSize(v []byte) (n uint64, err error) {
	if len(v) == 0 {
		return 0, errChunkEmptySize
	}
	for i, b := range v {
		switch {
		case '0' <= b && b <= '9':
			b = b - '0'
		case 'a' <= b && b <= 'f':
			b = b - 'a' + 10
		case 'A' <= b && b <= 'F':
			b = b - 'A' + 10
		default:
			return 0, errChunkSizeByte
		}
		if i == 16 {
			return 0, errChunkSizeLarge
		}
		n <<= 4
		n |= uint64(b)
	}
	return n, nil
}
