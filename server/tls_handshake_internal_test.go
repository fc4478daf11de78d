package server

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/hayula/gateway/internal/conntest"
	"github.com/hayula/gateway/internal/testcert"
)

// serveTLSForTest serves h over HTTPS on ln (a loopback listener) with the certificate c, and
// stops it when the test ends.
func serveTLSForTest(t *testing.T, ln net.Listener, h http.Handler, c testcert.Cert, opts ...ServeOption) {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ln, h, time.Second, nil, append([]ServeOption{WithTLS(NewCertificates(&pair))}, opts...)...)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}

// TestTLSHandshakeBounded: a client that opens a connection to the HTTPS port and sends nothing,
// or half a ClientHello, is closed once the handshake's own bound (10 s, the head's) has passed,
// not held for the 120 s a kept-alive connection may idle. The listener's clock is set an hour
// back, so that the bound has passed as the handshake begins.
func TestTLSHandshakeBounded(t *testing.T) {
	c := testcert.Write(t, t.TempDir(), "cert.pem", "key.pem", 1, time.Now().AddDate(1, 0, 0))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	serveTLSForTest(t, ln, h, c, withTLSClock(func() time.Time { return time.Now().Add(-time.Hour) }))
	for _, tt := range []struct {
		name string
		send []byte
	}{
		{"silent", nil},
		// A handshake record header that announces 512 bytes, and 4 of them.
		{"half a ClientHello", []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			nc, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			if _, err := nc.Write(tt.send); err != nil {
				t.Fatal(err)
			}
			// Far short of the 120 s idle bound, far past the handshake's (passed at once here).
			_ = nc.SetReadDeadline(time.Now().Add(20 * time.Second))
			_, err = io.Copy(io.Discard, nc)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal("the gateway still holds a connection whose handshake is past its bound")
			}
		})
	}
}

// TestTLSHandshakeDeadlineRestored: the handshake's deadline is the handshake's alone. Once it
// is done, the deadline the HTTP server had put on the socket for the request's first byte is
// back, and a kept-alive connection carries a second request.
func TestTLSHandshakeDeadlineRestored(t *testing.T) {
	c := testcert.Write(t, t.TempDir(), "cert.pem", "key.pem", 1, time.Now().AddDate(1, 0, 0))
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var set []time.Time
	ln := &conntest.Listener{Listener: inner, OnReadDeadline: func(d time.Time) {
		mu.Lock()
		set = append(set, d)
		mu.Unlock()
	}}
	// Half a minute ahead, so that the handshake's deadline is told from the server's own (its
	// idle deadline, 120 s, is later).
	base := time.Now().Add(30 * time.Second)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	serveTLSForTest(t, ln, h, c, withTLSClock(func() time.Time { return base }))

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: testcert.Pool(c)}}}
	defer client.CloseIdleConnections()
	url := "https://" + ln.Addr().String() + "/"
	for i := range 2 {
		res, err := client.Get(url)
		if err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		b, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if string(b) != "ok" {
			t.Fatalf("request %d answered %q", i+1, b)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	hs := base.Add(tlsHandshakeTimeout)
	i := -1
	for j, d := range set {
		if d.Equal(hs) {
			i = j
			break
		}
	}
	if i < 1 || i+1 >= len(set) {
		t.Fatalf("no handshake deadline (%v) between two of the server's in %v", hs, set)
	}
	if !set[i+1].Equal(set[i-1]) {
		t.Errorf("after the handshake the socket's read deadline is %v, want the server's %v back (all: %v)", set[i+1], set[i-1], set)
	}
}

// TestCertificatesSetDuringHandshakes: a reload's Set while handshakes are under way (run with
// -race) gives each handshake one whole certificate, the old or the new.
func TestCertificatesSetDuringHandshakes(t *testing.T) {
	dir := t.TempDir()
	a := testcert.Write(t, dir, "a.pem", "a-key.pem", 1, time.Now().AddDate(1, 0, 0))
	b := testcert.Write(t, dir, "b.pem", "b-key.pem", 2, time.Now().AddDate(1, 0, 0))
	pairA, err := tls.LoadX509KeyPair(a.CertFile, a.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	pairB, err := tls.LoadX509KeyPair(b.CertFile, b.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	certs := NewCertificates(&pairA)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ln, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), time.Second, nil, WithTLS(certs))
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: testcert.Pool(a, b), ServerName: "127.0.0.1"})
				if err != nil {
					t.Errorf("handshake: %v", err)
					return
				}
				if s := c.ConnectionState().PeerCertificates[0].SerialNumber.Int64(); s != 1 && s != 2 {
					t.Errorf("served serial %d", s)
				}
				_ = c.Close()
			}
		})
	}
	for i := range 200 {
		if i%2 == 0 {
			certs.Set(&pairB)
		} else {
			certs.Set(&pairA)
		}
		runtime.Gosched()
	}
	wg.Wait()
}
