package server

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
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

// tlsListener hands out TLS server connections. The handshake runs in the connection's own
// goroutine, on its first read (under the HTTP server's idle deadline), not in Accept.
type tlsListener struct {
	net.Listener
	config *tls.Config
}

func newTLSListener(ln net.Listener, certs *Certificates) net.Listener {
	return &tlsListener{Listener: ln, config: &tls.Config{
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
	return plainRefusing{tls.Server(nc, l.config)}, nil
}

// plainRefusing is a TLS connection that answers a plain HTTP request, the mistake of a client
// given http:// for an https:// gateway, with a 400 that says so (as net/http does), where the
// handshake's failure alone would close the connection with no word.
type plainRefusing struct{ *tls.Conn }

func (c plainRefusing) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	var re tls.RecordHeaderError
	if err != nil && errors.As(err, &re) && re.Conn != nil && looksLikeHTTP(re.RecordHeader) {
		answerPlain(re.Conn)
	}
	return n, err
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
