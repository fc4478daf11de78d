package upstream

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/hayula/gateway/internal/httpwire"
)

// The synchronous client's wire format: writing a request and reading an answer's head with
// fewer allocations and copies than http.Request.Write and http.ReadResponse (which sort the
// headers through a pool, and read each line through textproto with its own buffers). Both fall
// back to net/http for anything but the plain shapes an inference server exchanges.

// writeRequest writes req to bw as HTTP/1.1: the head, then the body. A request whose length
// is not known, or whose headers ask for framing of their own, goes through req.Write.
func writeRequest(bw *bufio.Writer, req *http.Request) error {
	hasBody := req.Body != nil && req.Body != http.NoBody
	// A ContentLength of 0 with a Body is a body of unknown length (http.Request's rule, and
	// what http.NewRequest leaves for a reader it cannot measure), not an empty one.
	if req.ContentLength < 0 || req.ContentLength == 0 && hasBody || req.ContentLength > 0 && req.Body == nil ||
		len(req.TransferEncoding) > 0 || req.Close || !plainHeader(req.Header) {
		return req.Write(bw)
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	if !httpwire.IsToken(method) {
		// req.Write would write it as it is, and a method is the first thing on the wire.
		return fmt.Errorf("upstream: invalid method %q", method)
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	if !plainHost(host) {
		return req.Write(bw) // it refuses a bad Host, drops an IPv6 zone and an empty port
	}
	_, _ = bw.WriteString(method)
	_ = bw.WriteByte(' ')
	_, _ = bw.WriteString(req.URL.RequestURI())
	_, _ = bw.WriteString(" HTTP/1.1\r\nHost: ")
	_, _ = bw.WriteString(host)
	_, _ = bw.WriteString("\r\n")
	if _, ok := req.Header["User-Agent"]; !ok {
		_, _ = bw.WriteString("User-Agent: hayula-gateway\r\n")
	}
	for k, vs := range req.Header {
		for _, v := range vs {
			_, _ = bw.WriteString(k)
			_, _ = bw.WriteString(": ")
			_, _ = bw.WriteString(v)
			_, _ = bw.WriteString("\r\n")
		}
	}
	if req.ContentLength > 0 || method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		_, _ = bw.WriteString("Content-Length: ")
		_, _ = bw.Write(strconv.AppendInt(bw.AvailableBuffer(), req.ContentLength, 10))
		_, _ = bw.WriteString("\r\n")
	}
	_, _ = bw.WriteString("\r\n")
	if req.ContentLength == 0 {
		closeReqBody(req)
		return nil
	}
	n, err := io.Copy(bw, req.Body)
	closeReqBody(req)
	if err == nil && n != req.ContentLength {
		err = fmt.Errorf("upstream: request body is %d bytes, not the %d its ContentLength says", n, req.ContentLength)
	}
	return err
}

// plainHost reports whether host can go into the Host field as it is: a name or an address
// with an optional port, no IPv6 zone, no empty port, nothing that could end the line.
func plainHost(host string) bool {
	if host == "" || host[len(host)-1] == ':' {
		return false
	}
	for i := 0; i < len(host); i++ {
		switch b := host[i]; {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		case b == '.' || b == '-' || b == '_' || b == ':' || b == '[' || b == ']':
		default:
			return false
		}
	}
	return true
}

// plainHeader reports whether every field of h can be written as it is: valid names, no line
// breaks or other controls in values, and none of the fields that writeRequest writes itself
// or that change the framing.
func plainHeader(h http.Header) bool {
	for k, vs := range h {
		switch k {
		case "Host", "Content-Length", "Transfer-Encoding", "Trailer", "Connection":
			return false
		}
		if !httpwire.IsToken(k) {
			return false
		}
		for _, v := range vs {
			if !httpwire.ValidValue(v) {
				return false
			}
		}
	}
	return true
}

// errBadAnswer is an answer head that is not HTTP/1.x.
var errBadAnswer = errors.New("malformed HTTP answer")

// badAnswerError is an errBadAnswer naming what was wrong and, whole, the text at fault. The
// text is kept unquoted and uncut so that a key in it can be redacted before it is cut to
// maxQuote and quoted: cut first, a key's prefix would survive the redaction; quoted first, a
// key holding a quote or a backslash would not match.
type badAnswerError struct {
	what string // "status line", "Content-Length"…
	text string // the text at fault; "" for none
	// after1xx: the answer had begun, with an informational head, before this went wrong.
	after1xx bool
}

func badAnswer(what, text string) error { return &badAnswerError{what: what, text: text} }

// maxQuote bounds how much of the text at fault an error quotes, in bytes before quoting.
const maxQuote = 60

func (e *badAnswerError) Error() string { return e.redacted("") }

func (e *badAnswerError) Is(target error) bool { return target == errBadAnswer }

// beforeStatus reports whether the answer failed at its first status line: on a reused connection,
// bytes the previous answer left there, not this request's answer (see exchange).
func (e *badAnswerError) beforeStatus() bool {
	return !e.after1xx && (e.what == whatStatus || e.what == whatEmpty)
}

const (
	whatStatus = "status line"
	whatEmpty  = "empty lines where a status line was expected"
)

// redacted is the error's text with key, when not empty, replaced in the text at fault before
// the text is cut and quoted. Quoting escapes CR, LF and every control byte.
func (e *badAnswerError) redacted(key string) string {
	what, quote := e.parts(key)
	if quote == "" {
		return what
	}
	return what + ": " + quote
}

// parts is what was wrong, and the text at fault (key, when not empty, replaced before it is
// cut) quoted; "" for none.
func (e *badAnswerError) parts(key string) (what, quote string) {
	what = errBadAnswer.Error() + ": " + e.what
	if e.text == "" {
		return what, ""
	}
	text := e.text
	if key != "" {
		text = strings.ReplaceAll(text, key, "[redacted]")
	}
	if len(text) > maxQuote {
		text = strings.ToValidUTF8(text[:maxQuote], "")
	}
	return what, strconv.Quote(text)
}

// quoted is redacted as an error whose quote of the upstream's bytes the log leaves out
// (TestMalformedAnswerSaysWhatOnce).
func (e *badAnswerError) quoted(key string) error {
	what, quote := e.parts(key)
	if quote == "" {
		return errors.New(what)
	}
	return &quotedError{what: what, words: quote}
}

// maxAnswerHead bounds an answer's status line and headers.
const maxAnswerHead = 64 << 10

// answer is what readResponse fills: the response and, in the same allocation, the reader that
// frames its body and room for its header values.
type answer struct {
	// header is a map another answer filled, to fill over (see readAnswerHead) instead of a new
	// one; nil for a new one.
	header http.Header
	resp   http.Response
	framed answerBody
	te     [1]string // resp.TransferEncoding
	vals   [8]string // the header values of the first 8 lines
}

// readResponse reads an answer's head from br into a and frames its body, for a request with
// method. An EOF before the status line is io.ErrUnexpectedEOF, as http.ReadResponse reports it
// (the caller tells a stale pooled connection by it).
//
// Informational answers (1xx but a protocol switch) are read past, at most max1xx of them: an
// upstream that sends them without end must not keep the caller reading.
func readResponse(br *bufio.Reader, method string, hs *heads, a *answer) error {
	for n := 0; ; n++ {
		if err := readAnswerHead(br, method, hs, a); err != nil {
			if bad, ok := err.(*badAnswerError); ok && n > 0 {
				bad.after1xx = true
			}
			return err
		}
		if c := a.resp.StatusCode; c >= 200 || c == http.StatusSwitchingProtocols {
			return nil
		}
		if n == max1xx {
			return badAnswer(fmt.Sprintf("more than %d informational answers", max1xx), "")
		}
	}
}

// max1xx is how many informational answers may come before the real one, as in net/http.
const max1xx = 5

// readAnswerHead reads one answer's head, 1xx or not, into a.
func readAnswerHead(br *bufio.Reader, method string, hs *heads, a *answer) error {
	raw, lines, err := hs.read(br)
	if err != nil {
		return err
	}
	line, rest := httpwire.CutLine(raw)
	proto, status, ok := strings.Cut(line, " ")
	if !ok || len(status) < 3 {
		return badAnswer(whatStatus, line)
	}
	minor := 1
	switch proto {
	case "HTTP/1.1":
	case "HTTP/1.0":
		minor = 0
	default:
		return badAnswer(whatStatus, line)
	}
	code, err := strconv.Atoi(status[:3])
	if err != nil || code < 100 || len(status) > 3 && status[3] != ' ' {
		return badAnswer(whatStatus, line)
	}
	n := lines - 1 // the field lines and the empty one
	h := a.header
	if h == nil {
		h = make(http.Header, n)
	}
	vals := a.vals[:]
	if n > len(vals) {
		vals = make([]string, n)
	}
	// Each field is assigned without a lookup first, over whatever the map held: the answers on
	// a connection (which share its map, see post) come with the same names, so their map has
	// one assignment per field and neither a clear nor a lookup. A head with a name twice (or
	// more fields than keys holds), or a map that then holds more names than the head has
	// fields (another answer's), is cleared and filled again, the values of a name gathered.
	var keys [len(answer{}.vals)]string
	fr, nf, err := fillHeader(h, rest, vals, keys[:], hs)
	if err != nil {
		return err
	}
	if nf < 0 || len(h) != nf {
		clear(h)
		if fr, _, err = fillHeader(h, rest, vals, nil, hs); err != nil {
			return err
		}
	}
	a.resp = http.Response{Status: status, StatusCode: code, Proto: proto, ProtoMajor: 1, ProtoMinor: minor,
		Header: h, ContentLength: -1}
	var conn []string
	if fr.conn {
		conn = h["Connection"]
	}
	a.resp.Close = httpwire.Closes(conn, minor)
	return frame(a, br, method, &fr)
}

// framing is what fillHeader noted of the fields that frame an answer, so that frame looks up
// only those present.
type framing struct {
	te, cl int    // how many Transfer-Encoding and Content-Length fields
	teV    string // the value of the first of each
	clV    string
	conn   bool // a Connection field came
}

// fillHeader parses the field lines of a head (rest, after its status line) into h, each
// value in vals (one for each line), and returns the framing fields it saw and how many fields
// there were. With keys nil a name's values are appended to those before it. With keys (room
// for the names seen), each field is assigned over what h held without a lookup, and nf is -1,
// h left half filled, as soon as a name comes twice or keys is full: the caller fills h again
// without keys.
func fillHeader(h http.Header, rest string, vals, keys []string, hs *heads) (fr framing, nf int, err error) {
	for li := 0; ; li++ {
		var line string
		line, rest = httpwire.CutLine(rest)
		if line == "" {
			return fr, nf, nil
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return fr, nf, badAnswer("header line", line)
		}
		var key string
		// An empty name is no token, and the zero fieldName must not vouch for it.
		if li < len(hs.names) && name != "" && name == hs.names[li].raw {
			key = hs.names[li].key
		} else {
			if !httpwire.IsToken(name) {
				return fr, nf, badAnswer("header line", line)
			}
			key = httpwire.CanonicalKey(name, answerKeys[:])
			if li < len(hs.names) {
				hs.names[li] = fieldName{name, key}
			}
		}
		value = httpwire.TrimOWS(value)
		// A bare CR or NUL in a value is refused as net/http refuses it, so that both
		// transports take the same answers and no such byte reaches a caller.
		if !httpwire.ValidValue(value) {
			return fr, nf, badAnswer("header line", line)
		}
		switch key {
		case "Content-Length":
			if fr.cl++; fr.cl == 1 {
				fr.clV = value
			}
		case "Transfer-Encoding":
			if fr.te++; fr.te == 1 {
				fr.teV = value
			}
		case "Connection":
			fr.conn = true
		}
		if keys == nil {
			if vs, ok := h[key]; ok {
				h[key] = append(vs, value)
				continue
			}
		} else {
			if nf == len(keys) || slices.Contains(keys[:nf], key) {
				return fr, -1, nil
			}
			keys[nf] = key
		}
		vals[nf] = value
		h[key] = vals[nf : nf+1 : nf+1]
		nf++
	}
}

// frame sets the answer's body from its framing headers (RFC 9112 §6.3), as fr noted them.
func frame(a *answer, br *bufio.Reader, method string, fr *framing) error {
	resp := &a.resp
	h := resp.Header
	switch c := resp.StatusCode; {
	case c == http.StatusSwitchingProtocols:
		// What follows is not HTTP: the connection must not go back to the pool.
		resp.Body, resp.ContentLength, resp.Close = http.NoBody, 0, true
		return nil
	case method == http.MethodHead || c < 200 || c == http.StatusNoContent || c == http.StatusNotModified:
		resp.Body, resp.ContentLength = http.NoBody, 0
		if c == http.StatusNoContent && (fr.te > 0 || fr.cl > 0 && fr.clV != "0") {
			// A 204 has no body and may announce none (RFC 9110 §8.6, RFC 9112 §6.1). One
			// that does is read without it, as net/http reads it, but what its sender then
			// writes would be read as the next answer: the connection is not reused
			// (TestReadResponseHostile).
			resp.Close = true
		}
		return nil
	}
	if fr.te > 0 && resp.ProtoMinor == 0 {
		// HTTP/1.0 has no transfer codings: the framing is faulty (RFC 9112 §6.1). Read it
		// as net/http does, by its length or to the close, and do not reuse the connection.
		delete(h, "Transfer-Encoding")
		resp.Close = true
	} else if fr.te > 0 {
		if fr.te != 1 || !strings.EqualFold(fr.teV, "chunked") {
			return badAnswer("Transfer-Encoding", strings.Join(h["Transfer-Encoding"], ", "))
		}
		if fr.cl > 0 {
			// Chunked wins (RFC 9112 §6.3), but a sender of both may frame the next answer
			// differently from us too: the connection is not reused.
			resp.Close = true
			delete(h, "Content-Length")
		}
		delete(h, "Transfer-Encoding")
		a.te[0] = "chunked"
		resp.TransferEncoding = a.te[:]
		a.framed = answerBody{br: br, chunked: true, cr: chunkedReader{r: br}}
		resp.Body = &a.framed
		return nil
	}
	if fr.cl > 0 {
		n, ok := httpwire.ParseLength(fr.clV)
		if !ok {
			return badAnswer("Content-Length", fr.clV)
		}
		if fr.cl > 1 {
			cl := h["Content-Length"]
			for _, v := range cl[1:] {
				if v != cl[0] {
					return badAnswer("Content-Length", strings.Join(cl, ", "))
				}
			}
		}
		resp.ContentLength = n
		if n == 0 {
			resp.Body = http.NoBody
			return nil
		}
		a.framed = answerBody{br: br, left: n}
		resp.Body = &a.framed
		return nil
	}
	// Neither: the body runs to the close.
	resp.Close = true
	a.framed = answerBody{br: br, left: -1}
	resp.Body = &a.framed
	return nil
}

// answerBody reads an answer's body off the connection's reader.
type answerBody struct {
	br      *bufio.Reader
	left    int64 // bytes left of a Content-Length body; -1 to the close
	chunked bool  // the body is chunked, cr its decoder
	cr      chunkedReader
	eof     bool
}

func (b *answerBody) Read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	if b.chunked {
		n, err := b.cr.Read(p)
		if errors.Is(err, io.EOF) {
			if n > 0 && !trailerEndBuffered(b.br) {
				// The last chunk's data goes to the caller now, not once the trailer section
				// has come: a stream's last events must not wait for a trailer field the
				// upstream sends later (TestSSERelayShapes). The decoder's EOF is sticky, so the
				// next Read reads the trailer.
				return n, nil
			}
			if terr := skipTrailer(b.br); terr != nil {
				return n, terr
			}
			b.eof = true
		}
		return n, err
	}
	if b.left < 0 {
		n, err := b.br.Read(p)
		if errors.Is(err, io.EOF) {
			b.eof = true
		}
		return n, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.br.Read(p)
	b.left -= int64(n)
	if b.left == 0 {
		b.eof = true
		return n, io.EOF
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (b *answerBody) Close() error { return nil }

// heads is a connection's arena of answer heads (httpwire.Arena): every string cut from them
// (status, header values, which a caller may keep past the next answer: StatusError.Header's
// clone holds them) stays as it was for as long as something holds it. The zero value is ready.
type heads struct {
	b httpwire.Arena
	// names are the field names of the connection's last answers, by line, as they came and
	// canonical: a server sends the same names in the same order, and a name the same as the
	// one last seen on its line is known to be a token and needs no CanonicalKey again. Both
	// strings are immutable (the one as it came is the arena's), so an answer never sees
	// another's but by having the same bytes on the same line.
	names [8]fieldName
}

type fieldName struct{ raw, key string }

// read reads the lines through the empty one that ends a head into the arena and returns them
// and how many there are; a few empty lines before the first are skipped (a stray CRLF after a
// previous body), not a stream of them.
func (hs *heads) read(br *bufio.Reader) (head string, lines int, err error) {
	hs.b.Trim()
	start := hs.b.Len()
	lineStart, skipped := true, 0
	for {
		frag, err := br.ReadSlice('\n')
		if hs.b.Len()-start+len(frag) > maxAnswerHead {
			return "", 0, badAnswer(fmt.Sprintf("head over %d bytes", maxAnswerHead), "")
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			start = hs.b.Append(start, frag)
			lineStart = false
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return "", 0, err
		}
		if lineStart && (len(frag) == 1 || len(frag) == 2 && frag[0] == '\r') {
			if hs.b.Len() == start {
				if skipped++; skipped > 4 {
					return "", 0, badAnswer(whatEmpty, "")
				}
				continue
			}
			start = hs.b.Append(start, frag)
			return hs.b.From(start), lines + 1, nil
		}
		start = hs.b.Append(start, frag)
		lineStart = true
		lines++
	}
}

// trailerEndBuffered reports whether br holds an empty trailer section (its blank line), which
// skipTrailer reads without waiting.
func trailerEndBuffered(br *bufio.Reader) bool {
	b, _ := br.Peek(min(br.Buffered(), 2))
	return len(b) > 0 && b[0] == '\n' || len(b) == 2 && b[0] == '\r' && b[1] == '\n'
}

// skipTrailer reads a chunked body's trailer section through its empty line.
func skipTrailer(br *bufio.Reader) error {
	total, lineStart := 0, true
	for {
		frag, err := br.ReadSlice('\n')
		total += len(frag)
		if total > maxAnswerHead {
			return badAnswer(fmt.Sprintf("trailer over %d bytes", maxAnswerHead), "")
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			lineStart = false
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		if lineStart && (len(frag) == 1 || len(frag) == 2 && frag[0] == '\r') {
			return nil
		}
		lineStart = true
	}
}

// answerKeys are header names inference servers and proxies send, in canonical form, for
// httpwire.CanonicalKey: a server that writes them in lower case costs no allocation.
var answerKeys = [...]string{
	"Content-Type", "Content-Length", "Connection", "Date", "Server", "Transfer-Encoding",
	"Retry-After", "X-Request-Id", "Cache-Control", "Keep-Alive", "Openai-Processing-Ms",
	"Openai-Model", "Openai-Organization", "Openai-Version", "X-Ratelimit-Limit-Requests",
	"X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests", "X-Ratelimit-Limit-Tokens",
	"X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens", "Access-Control-Allow-Origin",
}
