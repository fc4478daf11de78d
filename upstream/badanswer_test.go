package upstream

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/hayula/gateway/core"
)

// TestMalformedAnswerQuoteRedacted: the line a malformed answer is quoted by never carries any
// part of the target's key, even where the quote's 60-byte cut falls inside the key or the key
// holds a byte that quoting escapes, and the quote stays short whatever the line's length.
func TestMalformedAnswerQuoteRedacted(t *testing.T) {
	const key = `sk-abcdefghijklmnopqrstuvwxyz0123456789`
	pad := strings.Repeat("x", 40)
	cases := []struct {
		name, key, answer string
	}{
		{"cut inside the key", key, "HTTP/1.1 OK " + pad + key + "\r\n\r\n"},
		{"header line cut inside the key", key, "HTTP/1.1 200 OK\r\nX-Echo " + pad + key + "\r\n\r\n"},
		{"key with a quote", `sk-ab"cd\ef`, "HTTP/1.1 OK sk-ab\"cd\\ef\r\n\r\n"},
		{"content-length", key, "HTTP/1.1 200 OK\r\nContent-Length: " + key + strings.Repeat("9", 4000) + "\r\n\r\n"},
		{"transfer-encoding", key, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip " + key + "\r\n\r\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ln.Close() })
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				_, _ = c.Read(make([]byte, 64<<10))
				_, _ = io.WriteString(c, tc.answer)
			}()
			tg := target("http://" + ln.Addr().String())
			tg.APIKey = core.Secret(tc.key)
			_, err = newSet(t, tg).Chat(context.Background(), tg, chatReq(false))
			pe, ok := errors.AsType[*core.ProtocolError](err)
			if !ok {
				t.Fatalf("Chat error = %v (%T), want *core.ProtocolError", err, err)
			}
			msg := pe.Err.Error()
			// Any 8 bytes of the key, quoted or not, are a leak.
			for _, k := range []string{tc.key, strings.ReplaceAll(tc.key, `"`, `\"`)} {
				for i := 0; i+8 <= len(k); i++ {
					if strings.Contains(msg, k[i:i+8]) {
						t.Fatalf("ProtocolError = %q carries %q of the key", msg, k[i:i+8])
					}
				}
			}
			if len(msg) > 200 {
				t.Errorf("ProtocolError is %d bytes long, want a short quote: %.300q", len(msg), msg)
			}
			if !strings.Contains(msg, "malformed HTTP answer") {
				t.Errorf("ProtocolError = %q, want it to say the answer was malformed", msg)
			}
		})
	}
}

// TestMalformedAnswerSaysWhatOnce: the error for an answer head the gateway could not read says
// what was wrong once, then quotes the upstream's bytes, and the log's version counts only those
// bytes. The quote was built as the whole message and then cut after a prefix it never had, so
// both the client's message and the log repeated "malformed HTTP answer: status line".
func TestMalformedAnswerSaysWhatOnce(t *testing.T) {
	for _, tc := range []struct{ name, answer, want string }{
		{"status line", "HTTP/1.2 200 OK\r\nContent-Length: 0\r\n\r\n", `malformed HTTP answer: status line: "HTTP/1.2 200 OK"`},
		{"content-length", "HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok", `malformed HTTP answer: Content-Length: "2, 2"`},
		{"no quote", strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 6), `malformed HTTP answer: more than 5 informational answers`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newWireUpstream(t, func(_, _ int64, _ *http.Request, _ string) (string, bool) { return tc.answer, false })
			s, tg := h1Set(t, u.url())
			_, err := s.Chat(context.Background(), tg, chatReq(false))
			pe, ok := errors.AsType[*core.ProtocolError](err)
			if !ok {
				t.Fatalf("Chat error = %v (%T), want *core.ProtocolError", err, err)
			}
			if got := pe.Err.Error(); got != tc.want {
				t.Errorf("error = %q, want %q", got, tc.want)
			}
			if q, ok := pe.Err.(core.Quoting); ok {
				_, quote, _ := strings.Cut(tc.want, ": ")
				_, quote, _ = strings.Cut(quote, ": ")
				want := strings.TrimSuffix(tc.want, ": "+quote) + ": [the upstream's words: " + strconv.Itoa(len(quote)) + " bytes, not logged]"
				if got := q.Unquoted(); got != want {
					t.Errorf("Unquoted = %q, want %q", got, want)
				}
			}
		})
	}
}
