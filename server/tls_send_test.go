package server_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hayula/gateway/internal/testcert"
	"github.com/hayula/gateway/server"
)

// TestSendTimeoutOverTLS: over HTTPS, a client that reads a stream's status line and then
// nothing more is cut by the send timeout as over plain HTTP (TestSendTimeoutReleasesStalledStream):
// the TLS connection's writes block in the socket as the plain ones do, the sweeper's close ends
// them (tls.Conn.Close with a write under way closes the socket without a close_notify that
// would block), the upstream's stream ends and the in-flight slot is given back.
func TestSendTimeoutOverTLS(t *testing.T) {
	up := newFake(t, "up")
	ended := make(chan struct{})
	up.set(func(w http.ResponseWriter, r *http.Request) {
		defer close(ended)
		w.Header().Set("Content-Type", "text/event-stream")
		event := "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" +
			strings.Repeat("x", 1000) + "\"}}]}\n\n"
		for r.Context().Err() == nil {
			if _, err := fmt.Fprint(w, event); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	})
	g := newGateway(t, target("up", up.url(), "private")+"[routes.r]\ntargets = [\"up\"]\n", nil)
	cert := testcert.Write(t, t.TempDir(), "cert.pem", "key.pem", 1, time.Now().AddDate(1, 0, 0))
	pair, err := tls.LoadX509KeyPair(cert.CertFile, cert.KeyFile)
	if err != nil {
		t.Fatal(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- server.Serve(ctx, ln, g.srv.Handler(), time.Second, nil, server.WithSendTimeout(200*time.Millisecond),
			server.WithTLS(server.NewCertificates(&pair)))
	}()
	defer func() {
		cancel()
		<-done
	}()

	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_ = raw.(*net.TCPConn).SetReadBuffer(32 << 10)
	c := tls.Client(raw, &tls.Config{RootCAs: testcert.Pool(cert), ServerName: "127.0.0.1"})
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	body := streamBody("r")
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("status line %q, %v", line, err)
	}
	// The client reads nothing more.
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream's stream still runs 10s after the client stopped reading")
	}
	hc := g.ts.Client()
	var n int64
	settles(func() bool { n = routeInFlight(t, hc, g.ts.URL, "r")["up"]; return n == 0 })
	if n != 0 {
		t.Fatalf("in_flight %d after the upstream's stream ended, want 0", n)
	}
}

// serveHTTPS serves g over HTTPS on a loopback port; stop cancels Serve and returns its error.
func serveHTTPS(t *testing.T, h http.Handler) (addr string, cert testcert.Cert, stop func() error) {
	t.Helper()
	cert = testcert.Write(t, t.TempDir(), "cert.pem", "key.pem", 1, time.Now().AddDate(1, 0, 0))
	pair, err := tls.LoadX509KeyPair(cert.CertFile, cert.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- server.Serve(ctx, ln, h, 10*time.Second, nil, server.WithTLS(server.NewCertificates(&pair)))
	}()
	var once sync.Once
	var serr error
	stop = func() error {
		once.Do(func() { cancel(); serr = <-done })
		return serr
	}
	t.Cleanup(func() { _ = stop() })
	return ln.Addr().String(), cert, stop
}

// TestHTTPSOtherPaths: what the HTTP server does besides a plain exchange holds over HTTPS: a
// 100 Continue before the body, an early 413 for a body over max_body_bytes read whole by the
// client, a plain-HTTP request sent a byte at a time still answered 400 https_required, and a stop
// that lets a stream under way on a TLS connection finish.
func TestHTTPSOtherPaths(t *testing.T) {
	up := newFake(t, "up")
	release := make(chan struct{})
	g := newGateway(t, "max_body_bytes = 2048\n"+target("up", up.url(), "private")+"[routes.r]\ntargets = [\"up\"]\n", nil)
	addr, cert, stop := serveHTTPS(t, g.srv.Handler())
	dial := func(t *testing.T) (*tls.Conn, *bufio.Reader) {
		t.Helper()
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: testcert.Pool(cert), ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		return c, bufio.NewReader(c)
	}
	status := func(t *testing.T, br *bufio.Reader, want string) {
		t.Helper()
		line, err := br.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, want) {
			t.Fatalf("status line %q (%v), want %q", line, err, want)
		}
	}
	body := `{"model":"r","messages":[{"role":"user","content":"hi"}]}`

	t.Run("100 Continue", func(t *testing.T) {
		c, br := dial(t)
		fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", len(body))
		status(t, br, "HTTP/1.1 100")
		if _, err := br.ReadString('\n'); err != nil { // the 100's empty line
			t.Fatal(err)
		}
		fmt.Fprint(c, body)
		status(t, br, "HTTP/1.1 200")
	})

	t.Run("early 413", func(t *testing.T) {
		c, br := dial(t)
		fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			1<<20, strings.Repeat(" ", 4096))
		status(t, br, "HTTP/1.1 413")
	})

	t.Run("plain HTTP a byte at a time", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		for _, b := range []byte("GET /v1/models HTTP/1.1\r\nHost: localhost\r\n\r\n") {
			if _, err := c.Write([]byte{b}); err != nil {
				break // the gateway answered after the fifth byte, and may have closed
			}
		}
		got, _ := io.ReadAll(c)
		if !strings.HasPrefix(string(got), "HTTP/1.1 400") || !strings.Contains(string(got), "https_required") {
			t.Fatalf("answered %q, want a 400 https_required", got)
		}
	})

	t.Run("stop drains a stream", func(t *testing.T) {
		up.set(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n")
			w.(http.Flusher).Flush()
			<-release
			fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
		})
		c, br := dial(t)
		sb := streamBody("r")
		fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(sb), sb)
		status(t, br, "HTTP/1.1 200")
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(line, `"content":"a"`) {
				break
			}
		}
		stopped := make(chan error, 1)
		go func() { stopped <- stop() }()
		// The stop has begun once the listener is closed: only then may the stream end.
		for i := 0; ; i++ {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				break
			}
			_ = nc.Close()
			if i == 10000 {
				t.Fatal("the listener still accepts after the stop began")
			}
			runtime.Gosched()
		}
		close(release)
		rest, err := io.ReadAll(br)
		if err != nil {
			t.Fatalf("reading the stream's rest: %v", err)
		}
		if !strings.Contains(string(rest), "data: [DONE]") {
			t.Errorf("the stream cut by the stop ended without [DONE]: %q", rest)
		}
		if err := <-stopped; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}
