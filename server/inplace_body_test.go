package server_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Chat requests pipelined on one connection, each body in the same read as its head and so
// taken where it is in the connection's read buffer (internal/h1's InPlace): each reaches the
// upstream as it was sent, the next one's bytes untouched by the request before, and each
// answer comes back in turn.
func TestPipelinedBodiesReachTheUpstreamWhole(t *testing.T) {
	g, up := keyed(t)
	c := dialRawGateway(t, g)
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	body := func(i int) string {
		return fmt.Sprintf(`{"model":"saif","messages":[{"role":"user","content":"request number %d, %s"}]}`, i, strings.Repeat("x", 100*i))
	}
	head := func(b string) string {
		return "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + laptopKey +
			"\r\nContent-Type: application/json\r\nContent-Length: " + fmt.Sprint(len(b)) + "\r\n\r\n"
	}
	// The fourth chunked: read into the pooled state's buffer, which must not be the bytes the
	// others were taken in place from (they are this connection's read buffer, which the chunked
	// body is read out of).
	var all string
	for i := range 3 {
		all += head(body(i)) + body(i)
	}
	chunked := body(3)
	all += strings.Replace(head(""), "Content-Length: 0", "Transfer-Encoding: chunked", 1) +
		fmt.Sprintf("%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n", 40, chunked[:40], len(chunked)-40, chunked[40:])
	if _, err := io.WriteString(c, all); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("answer %d: %d %s", i, resp.StatusCode, b)
		}
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if len(up.bodies) != 4 {
		t.Fatalf("the upstream got %d requests, want 4", len(up.bodies))
	}
	for i, b := range up.bodies {
		if want := fmt.Sprintf("request number %d, %s", i, strings.Repeat("x", 100*i)); !strings.Contains(string(b), `"content":"`+want+`"`) {
			t.Errorf("request %d reached the upstream as %s", i, b)
		}
	}
}
