package server

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Certificates holds the certificate the gateway serves HTTPS with. Each handshake takes the one
// it holds then: a reload puts a renewed certificate (certbot's) in with Set, and the next
// connection gets it while those already open keep theirs.
type Certificates struct {
	cur atomic.Pointer[tls.Certificate]
}

// NewCertificates holds c (config.TLS.Certificate).
func NewCertificates(c *tls.Certificate) *Certificates {
	h := new(Certificates)
	h.Set(c)
	return h
}

// Set makes c the certificate of the connections to come.
func (h *Certificates) Set(c *tls.Certificate) { h.cur.Store(c) }

// Current is the certificate a handshake now gets.
func (h *Certificates) Current() *tls.Certificate { return h.cur.Load() }

func (h *Certificates) get(*tls.ClientHelloInfo) (*tls.Certificate, error) { return h.cur.Load(), nil }

// WithTLS serves HTTPS with the certificate certs holds: TLS 1.2 or later, HTTP/1.1 (ALPN), as
// the gateway's HTTP server speaks no other.
func WithTLS(certs *Certificates) ServeOption {
	return func(o *serveOptions) { o.certs = certs }
}

// tlsHandshakeTimeout bounds a TLS handshake, from the connection's first read (as it is
// accepted) to its end: the HTTP server's head deadline, as net/http bounds it. The handshake runs
// in the connection's first read, which the HTTP server puts under its idle deadline (120 s), so
// a client that connected and sent nothing, or half a ClientHello, held a goroutine and a file
// descriptor for that long (TestTLSHandshakeBounded).
const tlsHandshakeTimeout = 10 * time.Second

// tlsListener hands out TLS server connections. The handshake runs in the connection's own
// goroutine, on its first read, not in Accept, under a deadline of its own (tlsConn).
type tlsListener struct {
	net.Listener
	config *tls.Config
	now    func() time.Time // time.Now but in tests
}

func newTLSListener(ln net.Listener, certs *Certificates, now func() time.Time) net.Listener {
	return &tlsListener{Listener: ln, now: now, config: &tls.Config{
		MinVersion:     tls.VersionTLS12,
		NextProtos:     []string{"http/1.1"},
		GetCertificate: certs.get,
	}}
}

func (l *tlsListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &tlsConn{Conn: tls.Server(nc, l.config), now: l.now}, nil
}

// withTLSClock makes the TLS listener read the time from now, for the handshake's deadline.
func withTLSClock(now func() time.Time) ServeOption {
	return func(o *serveOptions) { o.tlsNow = now }
}

// tlsConn is a TLS server connection whose handshake is bounded by tlsHandshakeTimeout, and
// which answers a plain HTTP request, the mistake of a client given http:// for an https://
// gateway, with a 400 that says so (as net/http does), where the handshake's failure alone would
// close the connection with no word.
//
// The HTTP server keeps track of the deadlines it puts on the socket (internal/h1's armRead keeps
// an idle deadline it set for the next wait), so the handshake's deadline must not outlive the
// handshake: tlsConn records the deadlines the server sets and puts them back once the handshake
// is over (TestTLSHandshakeDeadlineRestored).
type tlsConn struct {
	*tls.Conn
	now    func() time.Time
	shaken atomic.Bool // the handshake has been run (well or not)

	mu     sync.Mutex // guards the socket's deadlines and the two below
	rd, wd time.Time  // the read and write deadlines the server last set
}

func (c *tlsConn) Read(p []byte) (int, error) {
	if !c.shaken.Load() {
		if err := c.handshake(); err != nil {
			return 0, err
		}
	}
	return c.Conn.Read(p)
}

func (c *tlsConn) Write(p []byte) (int, error) {
	if !c.shaken.Load() {
		if err := c.handshake(); err != nil {
			return 0, err
		}
	}
	return c.Conn.Write(p)
}

// handshake runs the handshake under its own deadline (or the server's, if sooner), then puts
// the server's deadlines back.
func (c *tlsConn) handshake() error {
	c.shaken.Store(true)
	end := c.now().Add(tlsHandshakeTimeout)
	c.mu.Lock()
	_ = c.Conn.SetReadDeadline(sooner(c.rd, end))
	_ = c.Conn.SetWriteDeadline(sooner(c.wd, end))
	c.mu.Unlock()
	err := c.Conn.Handshake()
	c.mu.Lock()
	_ = c.Conn.SetReadDeadline(c.rd)
	_ = c.Conn.SetWriteDeadline(c.wd)
	c.mu.Unlock()
	var re tls.RecordHeaderError
	if err != nil && errors.As(err, &re) && re.Conn != nil && looksLikeHTTP(re.RecordHeader) {
		answerPlain(re.Conn)
	}
	return err
}

// sooner is the earlier of a deadline (zero: none) and end.
func sooner(d, end time.Time) time.Time {
	if d.IsZero() || end.Before(d) {
		return end
	}
	return d
}

func (c *tlsConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rd, c.wd = t, t
	return c.Conn.SetDeadline(t)
}

func (c *tlsConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rd = t
	return c.Conn.SetReadDeadline(t)
}

func (c *tlsConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wd = t
	return c.Conn.SetWriteDeadline(t)
}

// looksLikeHTTP reports whether a connection's first five bytes start an HTTP request (those
// net/http looks for, and the methods the gateway routes).
func looksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO", "DELET":
		return true
	}
	return false
}

// answerPlain writes, in clear, a 400 in OpenAI's shape saying to use https, then half-closes
// and reads what is left of the request for a moment: closed with it unread, the socket would
// reset the connection under the answer.
func answerPlain(nc net.Conn) {
	typ, body := rejectBody(http.StatusBadRequest, "https_required",
		"the gateway serves HTTPS on this port, and this request came in plain HTTP: use https:// in the base URL")
	head := "HTTP/1.1 400 Bad Request\r\nContent-Type: " + typ + "\r\nContent-Length: " + strconv.Itoa(len(body)) +
		"\r\nConnection: close\r\n\r\n"
	_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
	if _, err := io.WriteString(nc, head+string(body)); err != nil {
		return
	}
	if cw, ok := nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		_ = nc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		_, _ = io.Copy(io.Discard, io.LimitReader(nc, 64<<10))
	}
}
