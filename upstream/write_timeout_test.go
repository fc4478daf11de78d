package upstream

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/conntest"
)

// neverReads is a listener that accepts connections and reads nothing from them, as a wedged or
// stopped server whose kernel accepts for it; its address is returned as a target URL.
func neverReads(t *testing.T) string {
	return "http://" + conntest.Wedged(t)
}

// TestTimeoutBoundsTheWrite: the target's timeout, how long to wait for the answer's head, counts
// from the request's sending, its writing included, on both clients (the synchronous one for
// http:// targets, net/http's for https://, proxied targets and a Transport template): a body
// larger than the socket buffers sent to an upstream that reads nothing fails as a
// *core.TimeoutError, which errmap falls through on. Neither bounded the write: net/http's
// ResponseHeaderTimeout counts only once the request is written, and the sweeper left the write
// phase to the caller's context, so the attempt hung for as long as the client stayed.
func TestTimeoutBoundsTheWrite(t *testing.T) {
	body := `{"model":"auto","messages":[{"role":"user","content":"` + strings.Repeat("x", 48<<20) + `"}]}`
	for _, tc := range []struct {
		name string
		tmpl *http.Transport
	}{
		{"synchronous client", nil},
		{"net/http", &http.Transport{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := target(neverReads(t))
			tg.Timeout = 200 * time.Millisecond
			s := NewSet([]*core.Target{tg}, Options{Now: fixedNow, DialTimeout: 2 * time.Second, Transport: tc.tmpl})
			t.Cleanup(s.Close)
			// The test's own bound, far beyond the timeout: a hang fails here rather than at -timeout.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			resp, err := s.Chat(ctx, tg, &core.Request{Model: "auto", Body: []byte(body)})
			if err == nil {
				resp.Release()
				t.Fatal("an answer from an upstream that reads nothing")
			}
			var te *core.TimeoutError
			if !errors.As(err, &te) || ctx.Err() != nil {
				t.Fatalf("error %v (%T), want a *core.TimeoutError before the test's own deadline", err, err)
			}
		})
	}
}
