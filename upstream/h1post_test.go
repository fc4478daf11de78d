package upstream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/core"
)

// TestDestHeads: the prebuilt head of each target URL reads back with net/http as the
// request the URL names, and a URL the head cannot carry as it is goes to the http.Client.
func TestDestHeads(t *testing.T) {
	type read struct{ Addr, URI, Host string }
	tests := []struct {
		url  string
		want *read // nil: not served by the prebuilt heads
	}{
		{"http://127.0.0.1:8080/v1/chat/completions", &read{"127.0.0.1:8080", "/v1/chat/completions", "127.0.0.1:8080"}},
		{"http://h/api/chat?x=1&y=%20", &read{"h:80", "/api/chat?x=1&y=%20", "h"}},
		{"http://h", &read{"h:80", "/", "h"}},
		{"http://h/x#frag", &read{"h:80", "/x", "h"}},
		{"http://[::1]:11434/api/chat", &read{"[::1]:11434", "/api/chat", "[::1]:11434"}},
		{"http://[::1]/x", &read{"[::1]:80", "/x", "[::1]"}},
		{"http://h/a%2Fb", &read{"h:80", "/a%2Fb", "h"}},
		{"http://user:pw@h/x", nil},
		{"https://h/x", nil},
		{"http:opaque", nil},
		{"http://h:/x", nil},                  // net/http drops the empty port from Host
		{"http://[fe80::1%25eth0]:80/x", nil}, // and the zone
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			d := parseDest(tt.url)
			if tt.want == nil {
				if d != nil {
					t.Fatalf("served with head %q, want the http.Client", d.head)
				}
				return
			}
			if d == nil {
				t.Fatal("not served")
			}
			var out bytes.Buffer
			bw := bufio.NewWriter(&out)
			p := &postRequest{head: d.head, key: "k", body: whole([]byte("{}")), accept: "application/json"}
			if err := p.write(bw); err != nil {
				t.Fatal(err)
			}
			_ = bw.Flush()
			req, err := http.ReadRequest(bufio.NewReader(&out))
			if err != nil {
				t.Fatalf("%v in %q", err, out.String())
			}
			if d := cmp.Diff(*tt.want, read{d.addr, req.RequestURI, req.Host}); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			if req.Header.Get("Authorization") != "Bearer k" || req.ContentLength != 2 {
				t.Errorf("head %q", out.String())
			}
		})
	}
}

// TestPostRefusesABadKey: a key with a line break would add header lines to the request
// (net/http refuses such a value); the post fails before the target is even dialed.
func TestPostRefusesABadKey(t *testing.T) {
	dialed := false
	tr := &h1Transport{idle: map[string]*idleList{}, dial: func(context.Context, string, string) (net.Conn, error) {
		dialed = true
		return nil, errors.New("no network in this test")
	}}
	tg := &core.Target{APIKey: core.Secret("k\r\nX-Injected: 1")}
	_, sent, err := tr.post(context.Background(), "http://127.0.0.1:9/v1", "/x", tg, &payload{[]byte("{}")}, "application/json", "")
	if !sent || err == nil || !strings.Contains(err.Error(), "key") || dialed {
		t.Errorf("sent=%v err=%v dialed=%v, want an error about the key and no dial", sent, err, dialed)
	}
}

// TestDestCache: an endpoint's head is built once per base URL and kept; a base URL that moved
// (a managed process restarted on another port) gets heads of its own, and a URL the
// synchronous client does not serve stays unserved.
func TestDestCache(t *testing.T) {
	var tr h1Transport
	const a, b = "http://127.0.0.1:8001/v1", "http://127.0.0.1:8002/v1"
	chat := tr.dest(a, "/chat/completions")
	emb := tr.dest(a, "/embeddings")
	type got struct {
		SameChat, SameEmb bool
		Moved             string
		Unserved          bool
	}
	g := got{
		SameChat: tr.dest(a, "/chat/completions") == chat,
		SameEmb:  tr.dest(a, "/embeddings") == emb,
	}
	if d := tr.dest(b, "/chat/completions"); d != nil {
		g.Moved = d.addr + " " + string(d.head[:strings.Index(string(d.head), "\r\n")])
	}
	for range 2 { // built, then from the cache
		g.Unserved = tr.dest("http://user:pw@127.0.0.1:8001/v1", "/x") == nil
	}
	want := got{SameChat: true, SameEmb: true, Moved: "127.0.0.1:8002 POST /v1/chat/completions HTTP/1.1", Unserved: true}
	if d := cmp.Diff(want, g); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if chat == nil || emb == nil || chat == emb || string(chat.head) == string(emb.head) {
		t.Errorf("chat %v and embeddings %v heads must be two", chat, emb)
	}
}

// notTCP hides a connection's type, so that a request goes through the write buffer.
type notTCP struct{ net.Conn }

// postDials are the dials for the two ways a POST goes out: "tcp", on a TCP connection, in one
// write(2) or writev(2) (outgoing.send), and "buffered", through the write buffer, on a
// connection whose type is hidden.
func postDials() map[string]func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return map[string]func(ctx context.Context, network, addr string) (net.Conn, error){
		"tcp": d.DialContext,
		"buffered": func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			return notTCP{c}, err
		},
	}
}

// TestPostSameBytesBothWays: a POST goes out as the same bytes whether written in one write(2)
// with its body copied after the head (a TCP connection, a body that fits in the write buffer),
// in one writev(2) from the caller's body (a TCP connection, a larger body) or through the write
// buffer (any other connection), and the body's parts may be reused once the answer is back.
func TestPostSameBytesBothWays(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	raws := make(chan string, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.SetDeadline(time.Now().Add(5 * time.Second)) // a body sent short fails, not hangs
			var raw bytes.Buffer
			req, err := http.ReadRequest(bufio.NewReader(io.TeeReader(c, &raw)))
			if err == nil {
				_, _ = io.Copy(io.Discard, req.Body)
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
			}
			raws <- raw.String()
			c.Close()
		}
	}()
	dials := postDials()
	tg := &core.Target{APIKey: core.Secret("sk-test")}
	base := "http://" + ln.Addr().String() + "/v1"
	// The small body fits in the write buffer after the head (one write); the large one does
	// not (4 KB), and goes as it is kept (one writev).
	pad := `,"pad":"` + strings.Repeat("x", 5000) + `"`
	for _, size := range []string{"small", "large"} {
		got := map[string]string{}
		tail := `,"stream":false}`
		if size == "large" {
			tail = `,"stream":false` + pad + `}`
		}
		for _, name := range []string{"tcp", "buffered"} {
			tr := &h1Transport{fallback: &http.Transport{}, idle: map[string]*idleList{}, dial: dials[name], maxIdle: 1}
			t.Cleanup(tr.CloseIdleConnections)
			body := payload{[]byte(`{"model":`), []byte(`"m"`), []byte(tail)}
			resp, sent, err := tr.post(context.Background(), base, "/chat/completions", tg, &body, "application/json", "")
			if !sent || err != nil {
				t.Fatalf("%s, %s: sent=%v err=%v", size, name, sent, err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			copy(body[0], "XXXXXXXXX")
			got[name] = <-raws
		}
		content := `{"model":"m"` + tail
		want := "POST /v1/chat/completions HTTP/1.1\r\nHost: " + ln.Addr().String() +
			"\r\nUser-Agent: hayula-gateway\r\nContent-Type: application/json\r\nAccept-Encoding: identity\r\nAccept: application/json" +
			"\r\nAuthorization: Bearer sk-test\r\nContent-Length: " + strconv.Itoa(len(content)) + "\r\n\r\n" + content
		if diff := cmp.Diff(map[string]string{"tcp": want, "buffered": want}, got); diff != "" {
			t.Errorf("%s: requests as the upstream read them (-want +got):\n%s", size, diff)
		}
	}
}
