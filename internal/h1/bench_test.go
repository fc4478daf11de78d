package h1

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// discardConn is a net.Conn whose reads come from r and whose writes go nowhere.
type discardConn struct {
	net.Conn
	r io.Reader
}

func (c *discardConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c *discardConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *discardConn) SetReadDeadline(time.Time) error  { return nil }
func (c *discardConn) SetWriteDeadline(time.Time) error { return nil }
func (c *discardConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *discardConn) Close() error                     { return nil }

// chatExchange is a 1 KB chat request as the Python SDK sends it, and a handler that reads its
// body and writes a 300-byte JSON answer with its length, as the gateway does.
func chatExchange() (raw []byte, h http.Handler) {
	body := `{"model":"saif","messages":[{"role":"user","content":"` + strings.Repeat("x", 960) + `"}]}`
	req := "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept-Encoding: gzip, deflate\r\n" +
		"Connection: keep-alive\r\nAccept: application/json\r\nContent-Type: application/json\r\n" +
		"User-Agent: OpenAI/Python 1.99.0\r\nX-Stainless-Lang: python\r\nX-Stainless-Package-Version: 1.99.0\r\n" +
		"Authorization: Bearer sk-test\r\nContent-Length: " + itoa(len(body)) + "\r\n\r\n" + body
	answer := []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		strings.Repeat("y", 180) + `"},"finish_reason":"stop"}]}`)
	return []byte(req), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("X-Hayula-Chain", "saif-local")
		_, _ = w.Write(answer)
	})
}

// BenchmarkRequest1KB is the server's own work for one kept-alive request: parse the chat
// request, run the handler, frame and flush the answer.
func BenchmarkRequest1KB(b *testing.B) {
	rawb, h := chatExchange()
	s := &Server{Handler: h}
	src := bytes.NewReader(rawb)
	nc := &discardConn{r: src}
	c := s.newConn(nc)
	c.bufs = s.getBufs(c)
	b.SetBytes(int64(len(rawb)))
	b.ReportAllocs()
	for b.Loop() {
		src.Reset(rawb)
		c.bufs.br.Reset(connReader{c})
		if err := c.readRequest(); err != nil {
			b.Fatal(err)
		}
		if !c.handle() {
			b.Fatal("connection not kept")
		}
	}
}

// repeatReader hands out raw once per Read, n times, then io.EOF: a client that sends its next
// request when the answer to the last one is in.
type repeatReader struct {
	raw []byte
	n   int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	r.n--
	return copy(p, r.raw), nil
}

// BenchmarkKeepAlive1KB is BenchmarkRequest1KB through the connection's own loop (serve): the
// idle wait, the state changes and the deadlines of a kept-alive connection, with the
// timeouts the gateway sets. One connection serves every request of the run.
func BenchmarkKeepAlive1KB(b *testing.B) {
	rawb, h := chatExchange()
	s := &Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadBodyTimeout: time.Minute,
		IdleTimeout: 2 * time.Minute}
	src := &repeatReader{raw: rawb, n: b.N}
	c := s.newConn(&discardConn{r: src})
	b.SetBytes(int64(len(rawb)))
	b.ReportAllocs()
	b.ResetTimer()
	c.serve()
	if src.n != 0 {
		b.Fatalf("the connection ended with %d requests unserved", src.n)
	}
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}
