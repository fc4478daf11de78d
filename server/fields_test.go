package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/server"
	"github.com/hayula/gateway/upstream"
)

// A whole answer and a stream's head go out through internal/h1 with prebuilt header lines
// (prebuiltFields), and through any other server by the header map. Both ways carry the same
// fields, and the h1 head names each of them once; so does an answer that needed the map (a
// fallback chain).
func TestWholeAnswerFieldsBothWays(t *testing.T) {
	g, saif, _, _ := threeChain(t)
	body := `{"model":"saif","messages":[{"role":"user","content":"hi"}]}`
	streamBody := `{"model":"saif","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	fields := func(h http.Header) map[string]string {
		m := map[string]string{}
		for k, vs := range h {
			if k != "Date" {
				m[k] = strings.Join(vs, ",")
			}
		}
		if generatedRequestID.MatchString(m["X-Request-Id"]) {
			m["X-Request-Id"] = "req_…" // each request its own (TestRequestIDs)
		}
		return m
	}
	// The head as it went over the wire, line by line.
	rawHead := func(body string) []string {
		t.Helper()
		c, err := net.Dial("tcp", strings.TrimPrefix(g.ts.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, _ = io.WriteString(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"+
			"Content-Length: "+strconv.Itoa(len(body))+"\r\nConnection: close\r\n\r\n"+body)
		br := bufio.NewReader(c)
		var lines []string
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("head: %v (%q)", err, lines)
			}
			if l == "\r\n" {
				return lines
			}
			lines = append(lines, strings.TrimRight(l, "\r\n"))
		}
	}
	once := func(name string, lines []string) {
		t.Helper()
		got := map[string]int{}
		for _, l := range lines[1:] {
			k, _, _ := strings.Cut(l, ":")
			got[http.CanonicalHeaderKey(k)]++
		}
		for k, n := range got {
			if n != 1 {
				t.Errorf("%s: the head has %d %s fields: %q", name, n, k, lines)
			}
		}
	}

	for _, kind := range []string{"whole", "stream"} {
		body := body
		if kind == "stream" {
			body = streamBody
		}
		resp, err := g.ts.Client().Post(g.ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		rec := httptest.NewRecorder()
		g.srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "http://localhost/v1/chat/completions", strings.NewReader(body)))
		want := map[string]string{"Content-Type": "application/json", "Content-Length": rec.Header().Get("Content-Length"),
			"X-Hayula-Route": "saif", "X-Hayula-Chain": "saif", "X-Hayula-Target": "saif", "X-Request-Id": "req_…"}
		if kind == "stream" {
			want = map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no",
				"X-Hayula-Route": "saif", "X-Hayula-Chain": "saif", "X-Hayula-Target": "saif", "X-Request-Id": "req_…"}
		}
		if diff := cmp.Diff(want, fields(rec.Header())); diff != "" {
			t.Errorf("%s, by the header map (-want +got):\n%s", kind, diff)
		}
		if diff := cmp.Diff(want, fields(resp.Header)); diff != "" {
			t.Errorf("%s, through internal/h1 (-want +got):\n%s", kind, diff)
		}
		once(kind+", first target", rawHead(body))
	}

	saif.set(errHandler(http.StatusInternalServerError, "internal", "boom")) // falls to deepseek-r1
	for _, b := range []string{body, streamBody} {
		lines := rawHead(b)
		once("fallback", lines)
		if !strings.Contains(strings.Join(lines, "\n"), "X-Hayula-Chain: saif→deepseek-r1") {
			t.Errorf("fallback head %q lacks its chain", lines)
		}
	}
}

// canceledUpstream fails the attempts on target saif with a wrapped context.Canceled, as an
// upstream whose own context was cancelled does, and answers every other target.
type canceledUpstream struct{}

func (canceledUpstream) Chat(_ context.Context, t *core.Target, _ *core.Request) (*upstream.Response, error) {
	if t.Name == "saif" {
		return nil, fmt.Errorf("upstream: %w", context.Canceled)
	}
	return &upstream.Response{Body: []byte(`{"id":"c","object":"chat.completion","choices":[]}`)}, nil
}

// An upstream error that wraps context.Canceled while the client is still there is that target
// failing (errmap.ClassifyFor), not the client gone: the chain moves on, and when nothing is left
// the client reads an error that names the route, by the header map and on the wire. Taken for
// the client gone, it got an empty 200.
func TestUpstreamCancellationIsNotClientGone(t *testing.T) {
	saif, r1 := newFake(t, "saif"), newFake(t, "deepseek-r1")
	g := newGateway(t, target("saif", saif.url(), "private")+target("deepseek-r1", r1.url(), "private")+
		"[routes.r]\ntargets = [\"saif\"]\n[routes.two]\ntargets = [\"saif\", \"deepseek-r1\"]\n", nil,
		func(o *server.Options) { o.Upstream = canceledUpstream{} })
	rec := httptest.NewRecorder()
	g.srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "http://localhost/v1/chat/completions",
		strings.NewReader(`{"model":"r","messages":[{"role":"user","content":"hi"}]}`)))
	wire := g.chat(t, "r")
	type answer struct {
		Status      int
		Route, Code string
	}
	code := func(b []byte) string {
		var e struct{ Error struct{ Code string } }
		_ = json.Unmarshal(b, &e)
		return e.Error.Code
	}
	got := []answer{{rec.Code, rec.Header().Get("X-Hayula-Route"), code(rec.Body.Bytes())},
		{wire.status, wire.header.Get("X-Hayula-Route"), code(wire.body)}}
	want := []answer{{502, "r", "upstream_unreachable"}, {502, "r", "upstream_unreachable"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("by the map, on the wire (-want +got):\n%s", diff)
	}
	two := g.chat(t, "two")
	if two.status != http.StatusOK || two.header.Get("X-Hayula-Chain") != "saif→deepseek-r1 (served by deepseek-r1)" {
		t.Errorf("route two: status %d, chain %q; want 200 from deepseek-r1 after saif", two.status, two.header.Get("X-Hayula-Chain"))
	}
}

// headerUpstream answers with a header of the adapter's own beside the answer (as the saif
// adapter's does), whole or streamed.
type headerUpstream struct{ header http.Header }

func (u headerUpstream) Chat(_ context.Context, _ *core.Target, req *core.Request) (*upstream.Response, error) {
	if req.Stream {
		return &upstream.Response{Header: u.header, Stream: &repeatStream{left: 1, payload: []byte(benchChunk)}}, nil
	}
	return &upstream.Response{Header: u.header, Body: []byte(`{"id":"c","object":"chat.completion","choices":[{"index":0}]}`)}, nil
}

// An adapter's own field goes out with the answer, once. One the server writes too (a stream's
// Cache-Control) takes the header map's way, where the server's value wins, and is not sent
// twice beside the prebuilt lines.
func TestAdapterFieldsGoOutOnce(t *testing.T) {
	fake := newFake(t, "saif")
	for _, field := range []string{"X-Saif-Specialist", "Cache-Control", "X-Accel-Buffering"} {
		g := newGateway(t, target("saif", fake.url(), "private")+"[routes.r]\ntargets = [\"saif\"]\n", nil,
			func(o *server.Options) { o.Upstream = headerUpstream{http.Header{field: {"adapter's"}}} })
		for _, stream := range []bool{false, true} {
			body := fmt.Sprintf(`{"model":"r","stream":%t,"messages":[{"role":"user","content":"hi"}]}`, stream)
			c, err := net.Dial("tcp", strings.TrimPrefix(g.ts.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			_, _ = io.WriteString(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"+
				"Content-Length: "+strconv.Itoa(len(body))+"\r\nConnection: close\r\n\r\n"+body)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			c.Close()
			want := []string{"adapter's"}
			if stream && field != "X-Saif-Specialist" {
				want = []string{map[string]string{"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}[field]}
			}
			if diff := cmp.Diff(want, resp.Header[field]); diff != "" {
				t.Errorf("%s, stream %t (-want +got):\n%s", field, stream, diff)
			}
		}
	}
}
