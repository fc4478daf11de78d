package upstream

import (
	"context"
	"errors"
	"io"
	"net"
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
