package demo_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hayula/gateway/demo"
)

// TestBackendsCloseEndsStreamsInFlight: Close stops the simulators even with a stream under way
// that outlasts its drain (a chunk delay of an hour, a client that stays): the stream is cut
// off, and its handler does not go on waiting with nobody to stop it.
func TestBackendsCloseEndsStreamsInFlight(t *testing.T) {
	before := goleak.IgnoreCurrent()
	b, err := demo.StartBackends(0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(b.URLs["openrouter"])
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"tell me a long story"}]}`
	fmt.Fprintf(c, "POST %s/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		u.Path, u.Host, len(body), body)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	// The first event: the simulator is now waiting out its chunk delay.
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if err := goleak.Find(before); err != nil {
		t.Fatalf("the simulators left goroutines behind after Close: %v", err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err == nil {
		t.Error("the stream ended cleanly; Close should have cut it off")
	}
}
