package upstream

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/core"
)

// idUpstream answers every adapter's endpoint, whole or streamed, and keeps the X-Request-Id
// fields of each request it got; it answers with its own X-Request-Id when own is set.
type idUpstream struct {
	own string
	mu  sync.Mutex
	got [][]string
}

func (u *idUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.got = append(u.got, r.Header.Values("X-Request-Id"))
	u.mu.Unlock()
	if u.own != "" {
		w.Header().Set("X-Request-Id", u.own)
	}
	stream := strings.Contains(string(b), `"stream":true`)
	switch {
	case r.URL.Path == "/api/chat" && stream:
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = io.WriteString(w, `{"message":{"role":"assistant","content":"hi"},"done":false}`+"\n"+
			`{"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"}`+"\n")
	case r.URL.Path == "/api/chat":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"message":{"role":"assistant","content":"hi"},"done":true,"done_reason":"stop"}`)
	case stream:
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}],"text":"hi"}`+"\n\ndata: [DONE]\n\n")
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"text":"hi"}`)
	}
}

// TestRequestIDSentAndUpstreamIDRead: every adapter sends the gateway's request ID as
// X-Request-Id, over the synchronous client and over net/http, and reads the upstream's own ID
// from its answer into Response.UpstreamID; an ID that could break the head is not sent.
func TestRequestIDSentAndUpstreamIDRead(t *testing.T) {
	for _, adapter := range []core.AdapterKind{core.AdapterOpenAI, core.AdapterOllama, core.AdapterSAIF} {
		for _, transport := range []string{"h1", "net/http"} {
			for _, stream := range []bool{false, true} {
				name := string(adapter) + "/" + transport
				if stream {
					name += "/stream"
				}
				t.Run(name, func(t *testing.T) {
					u := &idUpstream{own: "req-upstream-7"}
					srv := httptest.NewServer(u)
					defer srv.Close()
					base := srv.URL
					if adapter == core.AdapterOpenAI {
						base += "/v1"
					}
					tg := &core.Target{Name: "t", Adapter: adapter, URL: base, Model: "m", Timeout: 10 * time.Second, Stats: &core.Stats{}}
					o := Options{}
					if transport == "net/http" {
						o.Transport = &http.Transport{}
					}
					s := NewSet([]*core.Target{tg}, o)
					defer s.Close()
					body := `{"model":"r","messages":[{"role":"user","content":"hi"}]`
					if stream {
						body += `,"stream":true`
					}
					req := &core.Request{Op: core.OpChat, Model: "r", Stream: stream, Body: []byte(body + "}"),
						Messages: []core.Message{{Role: "user", Content: []byte(`"hi"`)}}}
					var ups []string
					for _, id := range []string{"req_0123456789abcdef01234567", "bad id\r\nX-Evil: 1", ""} {
						resp, err := s.ChatID(context.Background(), tg, req, id)
						if err != nil {
							t.Fatalf("id %q: %v", id, err)
						}
						ups = append(ups, resp.UpstreamID)
						if resp.Stream != nil {
							for {
								if _, err := resp.Stream.Next(); err != nil {
									break
								}
							}
							_ = resp.Stream.Close()
						}
						resp.Release()
					}
					u.mu.Lock()
					got := u.got
					u.mu.Unlock()
					if d := cmp.Diff([][]string{{"req_0123456789abcdef01234567"}, nil, nil}, got); d != "" {
						t.Errorf("X-Request-Id the upstream got (-want +got):\n%s", d)
					}
					if d := cmp.Diff([]string{"req-upstream-7", "req-upstream-7", "req-upstream-7"}, ups); d != "" {
						t.Errorf("UpstreamID (-want +got):\n%s", d)
					}
				})
			}
		}
	}
}

// TestUpstreamIDHoldingKeyNotRead: an upstream whose X-Request-Id repeats the key it was sent
// (an Authorization header echoed into the answer's ID) has no UpstreamID, on every adapter,
// transport and kind of answer: the request's log line writes UpstreamID as it is
// (upstream_request_id), and the key was in it.
func TestUpstreamIDHoldingKeyNotRead(t *testing.T) {
	const key = "sk-id-echo-secret-0123456789"
	for _, adapter := range []core.AdapterKind{core.AdapterOpenAI, core.AdapterOllama, core.AdapterSAIF} {
		for _, transport := range []string{"h1", "net/http"} {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/stream=%v", adapter, transport, stream), func(t *testing.T) {
					srv := httptest.NewServer(&idUpstream{own: "req-" + key})
					defer srv.Close()
					base := srv.URL
					if adapter == core.AdapterOpenAI {
						base += "/v1"
					}
					tg := &core.Target{Name: "t", Adapter: adapter, URL: base, Model: "m", APIKey: key,
						Timeout: 10 * time.Second, Stats: &core.Stats{}}
					o := Options{}
					if transport == "net/http" {
						o.Transport = &http.Transport{}
					}
					s := NewSet([]*core.Target{tg}, o)
					defer s.Close()
					body := fmt.Sprintf(`{"model":"r","stream":%v,"messages":[{"role":"user","content":"hi"}]}`, stream)
					req := &core.Request{Op: core.OpChat, Model: "r", Stream: stream, Body: []byte(body),
						Messages: []core.Message{{Role: "user", Content: []byte(`"hi"`)}}}
					resp, err := s.ChatID(context.Background(), tg, req, "req_0123456789abcdef01234567")
					if err != nil {
						t.Fatal(err)
					}
					if resp.Stream != nil {
						for {
							if _, err := resp.Stream.Next(); err != nil {
								break
							}
						}
						_ = resp.Stream.Close()
					}
					if resp.UpstreamID != "" {
						t.Errorf("UpstreamID %q, want none: it holds the target's key", resp.UpstreamID)
					}
					resp.Release()
				})
			}
		}
	}
}

func TestValidRequestID(t *testing.T) {
	tests := []struct {
		id   string
		want bool
	}{
		{"req_0123456789abcdef01234567", true},
		{"6f1c2a7e-1b2c-4d5e-8f90-0123456789ab", true},
		{`a"b=c\d`, true},
		{"", false},
		{"a b", false},
		{"a\tb", false},
		{"a\r\nb", false},
		{"é", false},
		{"a\x7f", false},
		{"a\x00", false},
		{"a,b", false}, // two values of a field (RFC 9110, 5.3): two IDs are refused, so is their join
		{strings.Repeat("x", MaxRequestID), true},
		{strings.Repeat("x", MaxRequestID+1), false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			if got := ValidRequestID(tt.id); got != tt.want {
				t.Errorf("ValidRequestID(%q) = %v, want %v", tt.id, got, tt.want)
			}
		})
	}
}

// TestValidRequestIDByWord holds ValidRequestID, eight bytes a step, to the byte loop it was:
// every byte at every place of IDs of 1 to 40 bytes.
func TestValidRequestIDByWord(t *testing.T) {
	byByte := func(id string) bool {
		if id == "" || len(id) > MaxRequestID {
			return false
		}
		for i := 0; i < len(id); i++ {
			if id[i] <= ' ' || id[i] > '~' || id[i] == ',' {
				return false
			}
		}
		return true
	}
	for n := 1; n <= 40; n++ {
		for pos := range n {
			for c := range 256 {
				b := []byte(strings.Repeat("r", n))
				b[pos] = byte(c)
				if id := string(b); ValidRequestID(id) != byByte(id) {
					t.Fatalf("ValidRequestID(%q) = %v, byte by byte %v", id, ValidRequestID(id), byByte(id))
				}
			}
		}
	}
}
