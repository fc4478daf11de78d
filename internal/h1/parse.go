package h1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/hayula/gateway/internal/httpwire"
	"github.com/hayula/gateway/internal/swar"
)

// parseError is a request the server answers with status and then closes the connection on.
type parseError struct {
	status int
	code   string
	msg    string
}

func (e *parseError) Error() string { return e.msg }

func bad(msg string) error {
	return &parseError{status: http.StatusBadRequest, code: "malformed_http_request", msg: msg}
}

// readHead reads a request's line and headers, through the empty line that ends them. Empty
// lines before the request line are skipped (RFC 9112 §2.2); a line may end in CRLF or LF.
// The head is copied into the connection's arena of heads, and the string returned is the
// arena's: the request's strings are slices of it, without a copy of their own. ends are
// where each of its lines ends (after its LF), the last one empty; they are the connection's,
// good until the next head.
func (c *conn) readHead() (head string, ends []int32, err error) {
	br := c.bufs.br
	limit := c.s.MaxHeaderBytes
	if limit <= 0 {
		limit = defaultMaxHeader
	}
	a := &c.bufs.heads
	a.Trim()
	if err := checkLineStart(br); err != nil {
		return "", nil, err
	}
	if head, ok := c.headInBuffer(limit); ok {
		return head, c.bufs.ends, nil
	}
	ends = c.bufs.ends[:0]
	start := a.Len()
	lineStart, lines, skipped := true, 0, c.skipped
	for {
		frag, err := br.ReadSlice('\n')
		if a.Len()-start+len(frag) > limit {
			if lines == 0 {
				return "", nil, &parseError{http.StatusRequestURITooLong, "uri_too_long",
					"the request line is longer than " + strconv.Itoa(limit) + " bytes"}
			}
			return "", nil, &parseError{http.StatusRequestHeaderFieldsTooLarge, "header_too_large",
				"the request's headers are larger than " + strconv.Itoa(limit) + " bytes"}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			start = a.Append(start, frag)
			lineStart = false
			continue
		}
		if err != nil {
			return "", nil, err // the client closed or timed out mid-request: nothing to answer
		}
		if lineStart && (len(frag) == 1 || len(frag) == 2 && frag[0] == '\r') {
			if lines == 0 {
				if skipped++; skipped > maxEmptyLines {
					return "", nil, bad("empty lines where a request line was expected")
				}
				if err := checkLineStart(br); err != nil {
					return "", nil, err
				}
				continue
			}
			start = a.Append(start, frag)
			ends = append(ends, int32(a.Len()-start))
			c.bufs.ends = ends
			return a.From(start), ends, nil
		}
		start = a.Append(start, frag)
		ends = append(ends, int32(a.Len()-start))
		lineStart = true
		lines++
	}
}

// checkLineStart waits for the first byte of a request line and refuses it at once when no
// request line can begin with it: a method is a token (RFC 9110), and empty lines may come
// first. A TLS ClientHello on the plain-HTTP port (0x16), or any other stranger, would otherwise
// wait out the head timeout for a line end that never comes. An error from the read is returned
// as it is: the client closed or timed out, and there is nothing to answer.
func checkLineStart(br *bufio.Reader) error {
	b, err := br.Peek(1)
	if err != nil {
		return err
	}
	if c := b[0]; c == '\r' || c == '\n' || httpwire.IsToken(string(b)) {
		return nil
	}
	if b[0] == tlsHandshake {
		return bad("a TLS handshake on a plain-HTTP port: this port speaks HTTP without TLS")
	}
	return bad("the request does not begin with a method")
}

// maxEmptyLines is how many empty lines may come before a request line.
const maxEmptyLines = 4

// tlsHandshake is the first byte of a TLS record that carries a handshake message.
const tlsHandshake = 0x16

// headInBuffer is readHead for a head that is in the read buffer whole, as a request that came
// in one segment is: its lines found in one pass, and copied into the arena at once. false
// leaves the head to readHead's loop: not all there yet, over the limit, or after empty lines.
func (c *conn) headInBuffer(limit int) (string, bool) {
	br := c.bufs.br
	buf, _ := br.Peek(br.Buffered())
	ends := c.bufs.ends[:0]
	for i := 0; ; {
		j := bytes.IndexByte(buf[i:], '\n')
		if j < 0 {
			return "", false
		}
		end := i + j + 1
		if end > limit {
			return "", false
		}
		ends = append(ends, int32(end))
		if j == 0 || j == 1 && buf[i] == '\r' {
			if i == 0 {
				return "", false
			}
			start := c.bufs.heads.Append(c.bufs.heads.Len(), buf[:end])
			_, _ = br.Discard(end)
			c.bufs.ends = ends
			return c.bufs.heads.From(start), true
		}
		i = end
	}
}

// headLine is the line of head from from to end (readHead's ends), without its LF or CRLF.
func headLine(head string, from, end int32) string {
	line := head[from : end-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line
}

// maxKeptFields bounds the header map a connection keeps for its next request: clearing a map
// costs in proportion to its size, and a rare request with many fields should not make every
// later one pay for them.
const maxKeptFields = 64

// readRequest reads and checks one request's head into c.base and sets up its body. The
// strings of the request (method, path, header values) are all slices of the head's string in
// the arena (see readHead). The URL (when its path is plain), the header map and the array of its values
// are the connection's, cleared and filled again for each request.
func (c *conn) readRequest() error {
	raw, ends, err := c.readHead()
	if err != nil {
		return err
	}
	c.slot = c.bufs.slot()

	line := headLine(raw, 0, ends[0])
	method, rem, ok := strings.Cut(line, " ")
	if !ok || !httpwire.IsToken(method) {
		return bad("malformed request line")
	}
	sp := strings.LastIndexByte(rem, ' ')
	if sp < 0 {
		return bad("malformed request line")
	}
	target, proto := rem[:sp], rem[sp+1:]
	minor, perr := parseProto(proto)
	if perr != nil {
		return perr
	}
	if target == "" || !visible(target) {
		return bad("malformed request target")
	}
	u, err := parseTarget(method, target, &c.url)
	if err != nil {
		return err
	}

	kept := &c.bufs.kept
	hdr := kept.hdr
	if hdr == nil || len(hdr) > maxKeptFields {
		hdr = make(http.Header) // no hint: up to 8 names fit a map of one group, whose clear is a few stores
		kept.hdr = hdr
	} else {
		clear(hdr)
	}
	// Each value's slice is one element of vals, its capacity cut to one so that an append to
	// it (a handler's Add) copies it out. Each field is assigned without looking first whether
	// its name came before: the map then has fewer names than vals has values, and is filled
	// again, in the rare request that repeats a name, with each name's values gathered.
	vals, keys := kept.vals[:0], kept.keys[:0]
	// lines is written over kept.lines, each line's after it was read: one array, so that a
	// head refused halfway leaves each line's name, key and bit together.
	lines := kept.lines[:0]
	hosts := 0
	var host string
	var fields uint8 // the framing fields seen (see framingField)
	var seen uint64  // the bits of the names in hdr (see nameBit)
	for i := 1; i < len(ends); i++ {
		line := headLine(raw, ends[i-1], ends[i])
		if line == "" {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			return bad("obsolete line folding in the headers is not accepted")
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return bad("malformed header line")
		}
		// A client sends the same names in the same order request after request: a name
		// that is the one the last request had on this line was checked then, and its
		// canonical form is known.
		var fl fieldLine
		if n := len(lines); n < len(kept.lines) && kept.lines[n].name == name {
			fl = kept.lines[n]
			fl.name = name // this head's bytes, not the last one's
		} else {
			if !httpwire.IsToken(name) {
				return bad("malformed header line")
			}
			key := httpwire.CanonicalKey(name, commonKeys[:])
			fl = fieldLine{name: name, key: key, bit: nameBit(key)}
		}
		lines = append(lines, fl)
		key := fl.key
		value = httpwire.TrimOWS(value)
		if !httpwire.ValidValue(value) {
			return bad("invalid character in the value of header " + strconv.Quote(name))
		}
		if key == "Host" {
			hosts++
			host = value
			continue
		}
		fields |= framingField(key)
		seen |= fl.bit
		vals, keys = append(vals, value), append(keys, key)
		n := len(vals)
		hdr[key] = vals[n-1 : n : n]
	}
	if len(hdr) < len(vals) {
		clear(hdr)
		for i, key := range keys {
			if vs, ok := hdr[key]; ok {
				hdr[key] = append(vs, vals[i])
				continue
			}
			hdr[key] = vals[i : i+1 : i+1]
		}
	}
	if cap(vals) <= 4*maxKeptFields {
		kept.vals, kept.keys = vals, keys
	}
	if cap(lines) <= 4*maxKeptFields {
		kept.lines = lines
	} else {
		kept.lines = nil
	}

	if hosts > 1 || hosts == 0 && minor == 1 {
		return bad("a request must carry exactly one Host header")
	}
	if !visible(host) && host != "" {
		return bad("malformed Host header")
	}
	if u.Host != "" {
		host = u.Host // absolute form: the target's authority wins (RFC 9112 §3.2.2)
	}

	c.names = seen
	req := &c.base
	*req = http.Request{
		Method:     method,
		URL:        u,
		Proto:      proto,
		ProtoMajor: 1,
		ProtoMinor: minor,
		Header:     hdr,
		Host:       host,
		RemoteAddr: c.remote,
		RequestURI: target,
	}
	var conn []string
	if fields&fieldConnection != 0 {
		conn = hdr["Connection"]
	}
	req.Close = closes(conn, minor)
	return c.setBody(req, &c.slot.body, fields)
}

// The framing fields, which the server reads itself: readRequest notes which a request has, so
// that one without them costs no map lookup for them.
const (
	fieldLength uint8 = 1 << iota
	fieldTE
	fieldExpect
	fieldConnection
)

// framingField is key's bit among the framing fields; key is in canonical form.
func framingField(key string) uint8 {
	switch key {
	case "Content-Length":
		return fieldLength
	case "Transfer-Encoding":
		return fieldTE
	case "Expect":
		return fieldExpect
	case "Connection":
		return fieldConnection
	}
	return 0
}

// closes is httpwire.Closes, without its token loop for the usual single value.
func closes(conn []string, minor int) bool {
	if len(conn) == 1 {
		switch conn[0] {
		case "keep-alive", "Keep-Alive":
			return false
		case "close", "Close":
			return true
		}
	}
	return httpwire.Closes(conn, minor)
}

// setBody reads the framing headers (fields says which the request has) and sets the
// request's Body (handle, when it has one) and ContentLength.
func (c *conn) setBody(req *http.Request, handle *bodyHandle, fields uint8) error {
	h := req.Header
	size := int64(0)
	if fields&fieldLength != 0 {
		cls := h["Content-Length"]
		for i, v := range cls {
			n, err := parseLength(v)
			if err != nil {
				return err
			}
			if i > 0 && n != size {
				return bad("conflicting Content-Length headers")
			}
			size = n
		}
		if len(cls) > 1 {
			h["Content-Length"] = cls[:1] // equal duplicates count once, as in net/http
		}
	}
	chunked := false
	if fields&fieldTE != 0 {
		tes := h["Transfer-Encoding"]
		if req.ProtoMinor == 0 {
			return bad("Transfer-Encoding is not allowed in HTTP/1.0")
		}
		if fields&fieldLength != 0 {
			return bad("a request must not carry both Content-Length and Transfer-Encoding")
		}
		if len(tes) != 1 || !strings.EqualFold(tes[0], "chunked") {
			return &parseError{http.StatusNotImplemented, "unsupported_transfer_encoding",
				"only Transfer-Encoding: chunked is supported"}
		}
		delete(h, "Transfer-Encoding")
		req.TransferEncoding = []string{"chunked"}
		chunked = true
		size = -1
	}
	cont := false
	if fields&fieldExpect != 0 && req.ProtoMinor == 1 {
		ex := h["Expect"]
		if len(ex) != 1 || !strings.EqualFold(ex[0], "100-continue") {
			return &parseError{http.StatusExpectationFailed, "expectation_failed",
				"only Expect: 100-continue is supported"}
		}
		cont = size != 0
	}
	req.ContentLength = size
	if size == 0 {
		req.Body = http.NoBody
		c.body.reset(0, false, false)
		return nil
	}
	c.body.reset(size, chunked, cont)
	handle.b = &c.body
	req.Body = handle
	return nil
}

func parseProto(p string) (minor int, err error) {
	switch p {
	case "HTTP/1.1":
		return 1, nil
	case "HTTP/1.0":
		return 0, nil
	}
	if len(p) == 8 && strings.HasPrefix(p, "HTTP/") && p[6] == '.' && isDigit(p[5]) && isDigit(p[7]) {
		return 0, &parseError{http.StatusHTTPVersionNotSupported, "http_version_not_supported",
			p + " is not supported; use HTTP/1.1"}
	}
	if p == "HTTP/2" || p == "HTTP/3" {
		return 0, &parseError{http.StatusHTTPVersionNotSupported, "http_version_not_supported",
			p + " is not supported; use HTTP/1.1"}
	}
	return 0, bad("malformed HTTP version " + strconv.Quote(p))
}

// parseTarget turns the request target into a URL; an origin-form path of plain characters,
// the common case, is taken as it is, into mem.
func parseTarget(method, target string, mem *url.URL) (*url.URL, error) {
	if target[0] == '/' && plainPath(target) {
		*mem = url.URL{Path: target}
		return mem, nil
	}
	if target == "*" && method == http.MethodOptions {
		*mem = url.URL{Path: "*"}
		return mem, nil
	}
	u, err := url.ParseRequestURI(target)
	if err != nil {
		return nil, bad("malformed request target")
	}
	return u, nil
}

func parseLength(v string) (int64, error) {
	n, ok := httpwire.ParseLength(v)
	if !ok {
		return 0, bad("invalid Content-Length " + strconv.Quote(v))
	}
	return n, nil
}

// commonKeys are header names clients send, in canonical form; HTTP/2-minded clients and
// Python's httpx send them in lower case.
var commonKeys = [...]string{
	"Host", "Accept", "Accept-Encoding", "Authorization", "Connection", "Content-Length",
	"Content-Type", "Expect", "Transfer-Encoding", "User-Agent", "X-Api-Key", "X-Route-Hint",
	"Openai-Organization", "Openai-Project", "X-Request-Id", "Idempotency-Key",
	"X-Stainless-Arch", "X-Stainless-Lang", "X-Stainless-Os", "X-Stainless-Package-Version",
	"X-Stainless-Retry-Count", "X-Stainless-Runtime", "X-Stainless-Runtime-Version",
	"X-Stainless-Async", "X-Stainless-Read-Timeout", "X-Stainless-Timeout",
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

// visible reports whether s has no space and no control character. Like plainPath it reads
// eight bytes a step (swar), and its words' tests are exact: a target and a Host of twenty or
// thirty bytes cost a third of what their byte loops did.
func visible(s string) bool {
	i := 0
	for ; i < len(s)-7; i += 8 {
		if spaceOrControl(swar.Word(s, i)) {
			return false
		}
	}
	return !spaceOrControl(swar.Short(s[i:], 'a'))
}

// spaceOrControl reports whether a byte of the word x is a space, a control character or DEL.
func spaceOrControl(x uint64) bool { return swar.Below(x, '!')|swar.Is(x, 0x7f) != 0 }

// plainPath reports whether an origin-form target needs no unescaping and has no query: no
// '%', '?', '#', DEL or byte above it.
func plainPath(s string) bool {
	i := 0
	for ; i < len(s)-7; i += 8 {
		if pathSpecial(swar.Word(s, i)) {
			return false
		}
	}
	return !pathSpecial(swar.Short(s[i:], 'a'))
}

func pathSpecial(x uint64) bool {
	return swar.Is(x, '%')|swar.Is(x, '?')|swar.Is(x, '#')|swar.Is(x, 0x7f)|swar.High(x) != 0
}

// readTrailer reads and drops a chunked body's trailer section, through its empty line. Its
// lines are framing as much as the chunk lines are: each must end in CRLF (a bare LF or CR is
// refused, as httputil's chunked reader refuses them in chunk lines) and be a well-formed field
// line, so that a front proxy that reads them otherwise cannot see a different end of the body.
func (c *conn) readTrailer() error {
	limit := c.s.MaxHeaderBytes
	if limit <= 0 {
		limit = defaultMaxHeader
	}
	total := 0
	for {
		line, err := c.bufs.br.ReadSlice('\n')
		total += len(line)
		if total > limit || errors.Is(err, bufio.ErrBufferFull) {
			return errors.New("h1: chunked body trailer too large")
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		n := len(line)
		if n < 2 || line[n-2] != '\r' {
			return errMalformedTrailer
		}
		if n == 2 {
			return nil
		}
		if !trailerField(string(line[:n-2])) {
			return errMalformedTrailer
		}
	}
}

// errMalformedTrailer is a trailer line that is not a field line ending in CRLF.
var errMalformedTrailer = errors.New("h1: malformed trailer in chunked body")

// trailerField reports whether line (without its CRLF) is a field line: a token, a colon, and
// a value with no control character but tab. A folded line (starting with SP or HT) is not.
func trailerField(line string) bool {
	name, value, ok := strings.Cut(line, ":")
	return ok && httpwire.IsToken(name) && httpwire.ValidValue(value)
}

// nameBit is the bit of a field name (in canonical form) in a request's names mask: one of 64,
// chosen by a multiplicative hash of the name's length and two of its bytes. A bit shared
// with a name that came only costs MayHave's caller the map's lookup; nameMul is a multiplier
// under which the names the gateway asks for share none with each other nor with the fields
// common clients send (TestNameBitsOfCommonFields).
func nameBit(key string) uint64 {
	n := len(key)
	if n == 0 {
		return 1
	}
	h := uint64(n) | uint64(key[n-1])<<8 | uint64(key[n/2])<<16
	return 1 << (h * nameMul >> 58)
}

const nameMul = 0xdd214064018153db

// MayHave reports whether a field named key (in canonical form) may be in r.Header: false only
// when r is a request this server read, whose Body is still the server's (a request with a
// body), and no field of that name came with it. A handler that asks for names nearly always
// absent (an Origin, a request ID, its own options) saves the map's lookup each time this says
// false. It answers for the Header as the request came, during the request: a handler that adds
// fields to r.Header must look in the map for them.
func MayHave(r *http.Request, key string) bool {
	h, _ := r.Body.(*bodyHandle)
	return h == nil || h.b.c.names&nameBit(key) != 0
}
