package upstream

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/errmap"
)

// TestEarlyGarbageIsAProtocolError: an upstream whose first bytes, sent while the request's body
// is still being written, are no HTTP answer at all (or more informational heads than
// readResponse takes) has answered with something that is not HTTP, which the sweeper's peek
// stops the write for (earlyVerdict) as it does a refusal. The attempt fails as the same bytes
// after a whole request do: a *core.ProtocolError (class server_error, bad_upstream_response),
// not a connection error. It failed as errAnsweredEarly, a *core.ConnError, before. The target's
// timeout is 30 s; the attempt must end within generous.
func TestEarlyGarbageIsAProtocolError(t *testing.T) {
	body := `{"model":"auto","messages":[{"role":"user","content":"` + strings.Repeat("x", 48<<20) + `"}]}`
	for _, tc := range []struct{ name, answer string }{
		{"no status line", "<html><body>busy</body></html>\r\n\r\n"},
		{"too many informational", strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", max1xx+1) + "HTTP/1.1 200 OK\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The same bytes after a whole request: what the answer's failure is on the
			// normal read path.
			small := target(answersAtOnce(t, tc.answer))
			s := NewSet([]*core.Target{small}, Options{Now: fixedNow, DialTimeout: 2 * time.Second})
			t.Cleanup(s.Close)
			ctx, cancel := context.WithTimeout(context.Background(), generous)
			defer cancel()
			_, want := s.Chat(ctx, small, &core.Request{Model: "auto", Body: []byte(`{"model":"auto","messages":[]}`)})
			if _, ok := errors.AsType[*core.ProtocolError](want); !ok {
				t.Fatalf("after a whole request: error %v (%T), want a *core.ProtocolError", want, want)
			}

			tg := target(answersAtOnce(t, tc.answer))
			tg.Timeout = 30 * time.Second
			s = NewSet([]*core.Target{tg}, Options{Now: fixedNow, DialTimeout: 2 * time.Second})
			t.Cleanup(s.Close)
			resp, err := s.Chat(ctx, tg, &core.Request{Model: "auto", Body: []byte(body)})
			if err == nil {
				resp.Release()
				t.Fatal("an answer from an upstream that answered no HTTP")
			}
			if ctx.Err() != nil {
				t.Fatalf("the attempt did not end within %v: %v", generous, err)
			}
			if _, ok := errors.AsType[*core.ProtocolError](err); !ok {
				t.Fatalf("error %v (%T), want a *core.ProtocolError as after a whole request (%v)", err, err, want)
			}
			if got, w := errmap.Classify(err), errmap.Classify(want); got.Class != w.Class || got.Status != w.Status {
				t.Errorf("classified %+v, want %+v as after a whole request", got, w)
			}
			if got, w := err.Error(), want.Error(); got != w {
				t.Errorf("error %q, want %q as after a whole request", got, w)
			}
		})
	}
}
