package upstream

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/hayula/gateway/core"
)

// A whole POST is put together in the transport's scratch buffer, which is back in its place
// once the request is written, holding it; while another exchange has it, the request is put
// together in the connection's write buffer instead, and the upstream reads the same bytes.
func TestPostBuiltInTheScratch(t *testing.T) {
	var (
		mu  sync.Mutex
		got []string
	)
	u := newWireUpstream(t, func(_, _ int64, _ *http.Request, body string) (string, bool) {
		mu.Lock()
		got = append(got, body)
		mu.Unlock()
		return "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", true
	})
	tr := newH1Transport(&http.Transport{DialContext: (&net.Dialer{}).DialContext}, "t", 0, 0)
	t.Cleanup(tr.CloseIdleConnections)
	tg := &core.Target{APIKey: core.Secret("sk-test")}
	exchange := func() {
		t.Helper()
		body := payload{[]byte(`{"model":`), []byte(`"m"`), []byte(`}`)}
		resp, sent, err := tr.post(context.Background(), u.url()+"/v1", "/chat/completions", tg, &body, "application/json", "")
		if !sent || err != nil {
			t.Fatalf("sent=%v err=%v", sent, err)
		}
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	exchange()
	sp := tr.scratch.Take() // back, and now held: another exchange's, for the next
	if sp == nil {
		t.Fatal("the scratch buffer did not come back")
	}
	if !bytes.HasPrefix(sp[:], []byte("POST /v1/chat/completions HTTP/1.1\r\n")) {
		t.Errorf("the scratch buffer holds %q, want the request", sp[:40])
	}
	exchange()
	if tr.scratch.Take() != nil {
		t.Error("an exchange that found the scratch taken put one back")
	}
	tr.scratch.Give(sp)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0] != `{"model":"m"}` || got[1] != got[0] {
		t.Errorf("the upstream read %q", got)
	}
}
