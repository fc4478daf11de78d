package server

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/hayula/gateway/internal/testcert"
)

// TestConnLimitOverHTTPS: on an HTTPS gateway at its cap, connections that opened and sent no
// ClientHello are idle ones like any other: the oldest is closed to make room for a client that
// shakes hands and sends a request, which is served (max_connections), without waiting for the
// handshake's 10 s bound.
func TestConnLimitOverHTTPS(t *testing.T) {
	c := testcert.Write(t, t.TempDir(), "cert.pem", "key.pem", 1, time.Now().AddDate(1, 0, 0))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := NewConnLimit(2)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	serveTLSForTest(t, ln, h, c, WithConnLimit(conns))
	var silent []net.Conn
	for range 2 {
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		silent = append(silent, nc)
		for deadline := time.Now().Add(time.Minute); conns.Stats().Open != int64(len(silent)); {
			if time.Now().After(deadline) {
				t.Fatalf("the gateway has %d connections open, want %d", conns.Stats().Open, len(silent))
			}
			time.Sleep(time.Millisecond)
		}
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: testcert.Pool(c)}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: time.Minute}).Get("https://" + ln.Addr().String() + "/healthz")
	if err != nil {
		t.Fatalf("a client with a request, at the cap of two silent connections: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "ok" {
		t.Fatalf("got %d %q", resp.StatusCode, b)
	}
	_ = silent[0].SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := silent[0].Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the oldest silent connection was not closed to make room: %v", err)
	}
	if st := conns.Stats(); st.IdleClosed != 1 || st.Waited != 1 {
		t.Errorf("stats = %+v, want IdleClosed 1, Waited 1", st)
	}
}
