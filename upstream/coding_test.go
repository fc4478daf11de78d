package upstream

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/errmap"
)

// TestCodedAnswerRefused: every request says it takes no content coding (Accept-Encoding:
// identity; with no Accept-Encoding at all, RFC 9110 §12.5.3 lets a server pick any coding),
// on every wire. An upstream that gzips its answer anyway has given one the gateway does not
// decode: a bad_upstream_response naming the coding, on which the chain moves on, as on every
// wire alike. It was read as it came: a whole answer failed as "response is not JSON" quoting
// the compressed bytes, a stream as "upstream closed the stream early"; and over https:// with
// a Transport that decodes gzip (a template's), it was served.
func TestCodedAnswerRefused(t *testing.T) {
	gz := func(s string) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write([]byte(s))
		_ = zw.Close()
		return b.Bytes()
	}
	for _, stream := range []bool{false, true} {
		for _, m := range wireModes {
			name := m.name + "/whole"
			if stream {
				name = m.name + "/stream"
			}
			t.Run(name, func(t *testing.T) {
				var mu sync.Mutex
				var asked []string
				srv, _, tmpl := m.start(t, func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					mu.Lock()
					asked = append(asked, r.Header.Get("Accept-Encoding"))
					mu.Unlock()
					body, ct := answerJSON, "application/json"
					if stream {
						body, ct = doneStream, "text/event-stream"
					}
					w.Header().Set("Content-Type", ct)
					w.Header().Set("Content-Encoding", "gzip")
					_, _ = w.Write(gz(body))
				})
				tg := target(srv.URL)
				tg.Timeout, tg.IdleTimeout = generous, generous
				s := NewSet([]*core.Target{tg}, Options{Now: fixedNow, DialTimeout: 2 * time.Second, Transport: tmpl})
				t.Cleanup(s.Close)
				got := parityExchange(t, s, tg, stream)
				want := parityOutcome{Class: core.ClassServerError, Status: 502, Client: errmap.ClientError{Status: 502,
					Message: `upstream local gave an answer the gateway could not read: answered in Content-Encoding "gzip", which it asked not to get (Accept-Encoding: identity) and does not decode`,
					Type:    "upstream_error", Code: "bad_upstream_response"}}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("outcome (-want +got):\n%s", diff)
				}
				mu.Lock()
				defer mu.Unlock()
				if len(asked) != 1 || asked[0] != "identity" {
					t.Errorf("Accept-Encoding %q, want identity", asked)
				}
			})
		}
	}
}

// TestCodedErrorBodySaid: an upstream's error answer (a non-2xx) in a content coding the gateway
// does not decode (br, zstd, two codings stacked), or in gzip or deflate that does not decode, is
// no answer it can read the words of: the client is told the status and that its body was coded,
// on every wire, whole and streamed, and the bytes are read as no error text (nothing is
// classified from them). It was told the status alone, as for an empty body, which left the
// operator to guess why the upstream's words were missing. A gzip body was in this test until
// gzip, x-gzip and deflate came to be decoded (TestCodedErrorBodyRead).
func TestCodedErrorBodySaid(t *testing.T) {
	words := []byte(`{"error":{"message":"bad thing","type":"invalid_request_error","param":"messages","code":null}}`)
	gz := codeWith(t, "gzip", words)
	badSum := bytes.Clone(gz)
	badSum[len(badSum)-8] ^= 0xff // the CRC-32 of the data
	codings := []struct {
		name, header string
		body         []byte
	}{
		{"br", "br", []byte("\x1b\x5d\x00\xf8\xa5\x40\x42\x02")},
		{"zstd", "zstd", []byte("\x28\xb5\x2f\xfd\x00\x58\x11\x00\x00")},
		{"unknown", "compress", []byte("\x1f\x9d\x90")},
		{"stacked", "deflate, gzip", codeWith(t, "gzip", codeWith(t, "zlib", words))},
		{"gzip and br", "gzip, br", gz},
		{"gzip truncated", "gzip", gz[:len(gz)/2]},
		{"gzip bad checksum", "gzip", badSum},
		{"gzip not gzip", "gzip", words},
		{"deflate not deflate", "deflate", []byte("\xff\xff\xff\xff not deflate")},
	}
	for _, c := range codings {
		for _, stream := range []bool{false, true} {
			for _, m := range codedWireModes() {
				t.Run(fmt.Sprintf("%s/%s/stream=%v", c.name, m.name, stream), func(t *testing.T) {
					srv, _, tmpl := m.start(t, func(w http.ResponseWriter, r *http.Request) {
						_, _ = io.Copy(io.Discard, r.Body)
						w.Header().Set("Content-Type", "application/json")
						w.Header().Set("Content-Encoding", c.header)
						w.WriteHeader(http.StatusBadRequest)
						_, _ = w.Write(c.body)
					})
					tg := codedTarget(m, srv)
					s := NewSet([]*core.Target{tg}, Options{Now: fixedNow, DialTimeout: 2 * time.Second, Transport: tmpl})
					t.Cleanup(s.Close)
					got := parityExchange(t, s, tg, stream)
					want := parityOutcome{Class: core.ClassRequest, Status: 400, Client: errmap.ClientError{Status: 400,
						Message: fmt.Sprintf(`upstream local answered 400 Bad Request, its body in Content-Encoding %q, which the gateway asked not to get (Accept-Encoding: identity) and could not decode`, c.header),
						Type:    "invalid_request_error"}}
					if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(parityOutcome{}, "Conns")); diff != "" {
						t.Errorf("outcome (-want +got):\n%s", diff)
					}
				})
			}
		}
	}
}
