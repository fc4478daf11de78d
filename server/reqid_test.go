package server_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/internal/logfmt"
	"github.com/hayula/gateway/server"
)

// generatedRequestID is the form of the IDs the gateway makes itself.
var generatedRequestID = regexp.MustCompile(`^req_[0-9a-f]{24}$`)

// countedIDs makes the gateway name its requests req-1, req-2… in the order they come.
func countedIDs() gwOption {
	var n atomic.Int64
	return func(o *server.Options) {
		o.NewRequestID = func() string { return "req-" + strconv.FormatInt(n.Add(1), 10) }
	}
}

// sentIDs are the X-Request-Id fields of each request f got.
func (f *fake) sentIDs() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids [][]string
	for _, h := range f.headers {
		ids = append(ids, h.Values("X-Request-Id"))
	}
	return ids
}

// Every answer carries the request's ID, once: the client's when it sent a usable one, else the
// gateway's; and every target asked gets the same ID, a fallback chain's each of its targets.
func TestRequestIDs(t *testing.T) {
	chatBody := `{"model":"saif","messages":[{"role":"user","content":"hi"}]}`
	tests := []struct {
		name       string
		method     string
		path, body string
		hdr        []string
		saifFails  bool
		status     int
		want       string
		saif, r1   [][]string // the X-Request-Id fields each upstream got, per request
	}{
		{name: "client's echoed and sent upstream", path: "/v1/chat/completions", body: chatBody,
			hdr: []string{"X-Request-Id", "client-7f3a.b_2:x"}, status: 200, want: "client-7f3a.b_2:x",
			saif: [][]string{{"client-7f3a.b_2:x"}}},
		{name: "client's with a space replaced", path: "/v1/chat/completions", body: chatBody,
			hdr: []string{"X-Request-Id", "two words"}, status: 200, want: "req-1", saif: [][]string{{"req-1"}}},
		{name: "client's too long replaced", path: "/v1/chat/completions", body: chatBody,
			hdr: []string{"X-Request-Id", strings.Repeat("a", 129)}, status: 200, want: "req-1", saif: [][]string{{"req-1"}}},
		{name: "client's not ASCII replaced", path: "/v1/chat/completions", body: chatBody,
			hdr: []string{"X-Request-Id", "réq"}, status: 200, want: "req-1", saif: [][]string{{"req-1"}}},
		{name: "client's comma list replaced", path: "/v1/chat/completions", body: chatBody,
			hdr: []string{"X-Request-Id", "a,b"}, status: 200, want: "req-1", saif: [][]string{{"req-1"}}},
		{name: "client's of 128 bytes kept", path: "/v1/chat/completions", body: chatBody,
			hdr: []string{"X-Request-Id", strings.Repeat("a", 128)}, status: 200, want: strings.Repeat("a", 128),
			saif: [][]string{{strings.Repeat("a", 128)}}},
		{name: "generated", path: "/v1/chat/completions", body: chatBody, status: 200, want: "req-1",
			saif: [][]string{{"req-1"}}},
		{name: "stream", path: "/v1/chat/completions", status: 200, want: "req-1", saif: [][]string{{"req-1"}},
			body: `{"model":"saif","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{name: "fallback chain", path: "/v1/chat/completions", body: chatBody, saifFails: true, status: 200,
			want: "req-1", saif: [][]string{{"req-1"}}, r1: [][]string{{"req-1"}}},
		{name: "every target failed", path: "/v1/chat/completions", status: 500, want: "req-1",
			body: `{"model":"saif","x-fallback-on":false,"messages":[{"role":"user","content":"hi"}]}`, saifFails: true,
			saif: [][]string{{"req-1"}}},
		{name: "embeddings", path: "/v1/embeddings", body: `{"model":"saif","input":"x"}`, status: 200, want: "req-1",
			saif: [][]string{{"req-1"}}},
		{name: "responses", path: "/v1/responses", body: `{"model":"saif","input":"hi"}`, status: 200, want: "req-1",
			saif: [][]string{{"req-1"}}},
		{name: "400 the gateway writes", path: "/v1/chat/completions", body: `{"model":`, status: 400, want: "req-1"},
		{name: "404 unknown model", path: "/v1/chat/completions", body: `{"model":"nope","messages":[{"role":"user","content":"hi"}]}`,
			status: 404, want: "req-1"},
		{name: "404 unknown URL", path: "/v1/nothing", body: "{}", status: 404, want: "req-1"},
		{name: "405", method: http.MethodPut, path: "/v1/chat/completions", body: "{}", status: 405, want: "req-1"},
		{name: "explain", path: "/v1/route/explain", body: chatBody, status: 200, want: "req-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			saif, r1 := newFake(t, "saif"), newFake(t, "deepseek-r1")
			if tt.saifFails {
				saif.set(errHandler(500, "internal", "boom"))
			}
			cfg := target("saif", saif.url(), "private") + target("deepseek-r1", r1.url(), "private") +
				"[routes.saif]\ntargets = [\"saif\", \"deepseek-r1\"]\n"
			g := newGateway(t, cfg, nil, countedIDs())
			method := tt.method
			if method == "" {
				method = http.MethodPost
			}
			rep := g.do(t, method, tt.path, tt.body, append([]string{"Content-Type", "application/json"}, tt.hdr...)...)
			if rep.status != tt.status {
				t.Fatalf("status %d, want %d: %s", rep.status, tt.status, rep.body)
			}
			if d := cmp.Diff([]string{tt.want}, rep.header.Values("X-Request-Id")); d != "" {
				t.Errorf("the answer's X-Request-Id (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.saif, saif.sentIDs()); d != "" {
				t.Errorf("X-Request-Id sent to saif (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.r1, r1.sentIDs()); d != "" {
				t.Errorf("X-Request-Id sent to deepseek-r1 (-want +got):\n%s", d)
			}
		})
	}
}

// Two requests get two IDs of the generator's form, whether the answer goes through internal/h1's
// field lines or through a header map.
func TestRequestIDsDiffer(t *testing.T) {
	up := newFake(t, "solo")
	g := newGateway(t, target("solo", up.url(), "private")+"[routes.solo]\ntargets = [\"solo\"]\n", nil)
	viaMap := func(body string) string {
		rec := httptest.NewRecorder()
		g.srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "http://localhost/v1/chat/completions", strings.NewReader(body)))
		return rec.Header().Get("X-Request-Id")
	}
	ok := `{"model":"solo","messages":[{"role":"user","content":"hi"}]}`
	ids := []string{
		g.chat(t, "solo").header.Get("X-Request-Id"),
		g.chat(t, "solo").header.Get("X-Request-Id"),
		g.post(t, "/v1/chat/completions", `{"model":`).header.Get("X-Request-Id"),
		viaMap(ok),
		viaMap(`{"model":`),
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if !generatedRequestID.MatchString(id) || seen[id] {
			t.Fatalf("IDs %q: want each of the form req_ and 24 hex digits, and each its own", ids)
		}
		seen[id] = true
	}
	if d := cmp.Diff([][]string{{ids[0]}, {ids[1]}, {ids[3]}}, up.sentIDs()); d != "" {
		t.Errorf("X-Request-Id sent upstream (-want +got):\n%s", d)
	}
}

// The request's line names its ID, and the upstream's own ID when the upstream sent one; the
// upstream's never reaches the client, whose ID is the gateway's.
func TestRequestIDLogged(t *testing.T) {
	for name, handler := range map[string]func(io.Writer) slog.Handler{
		"slog":   func(w io.Writer) slog.Handler { return slog.NewTextHandler(w, nil) },
		"logfmt": func(w io.Writer) slog.Handler { return logfmt.NewText(w, nil) },
	} {
		t.Run(name, func(t *testing.T) {
			var logs syncBuffer
			up := newFake(t, "solo")
			up.set(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Request-Id", "chatcmpl-up-9")
				okHandler("solo")(w, r)
			})
			g := newGateway(t, target("solo", up.url(), "private")+"[routes.solo]\ntargets = [\"solo\"]\n", nil,
				countedIDs(), func(o *server.Options) { o.Logger = slog.New(handler(&logs)) })
			whole := g.chat(t, "solo")
			stream := g.post(t, "/v1/chat/completions", `{"model":"solo","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
				"X-Request-Id", "mine-1")
			up.set(okHandler("solo"))
			plain := g.chat(t, "solo")
			bad := g.post(t, "/v1/chat/completions", `{"model":`)
			for i, rep := range []reply{whole, stream, plain, bad} {
				want := []string{[]string{"req-1", "mine-1", "req-2", "req-3"}[i]}
				if d := cmp.Diff(want, rep.header.Values("X-Request-Id")); d != "" {
					t.Errorf("answer %d's X-Request-Id (-want +got):\n%s", i, d)
				}
			}
			var tails []string
			for _, l := range logLines(&logs, 4, func(l string) bool { return strings.Contains(l, " msg=request ") }) {
				_, tail, _ := strings.Cut(l, " status=")
				_, tail, _ = strings.Cut(tail, " duration=")
				_, tail, _ = strings.Cut(tail, " ")
				tails = append(tails, tail)
			}
			want := []string{
				"request_id=req-1 upstream_request_id=chatcmpl-up-9",
				"request_id=mine-1 upstream_request_id=chatcmpl-up-9",
				"request_id=req-2",
				"request_id=req-3",
			}
			if d := cmp.Diff(want, tails); d != "" {
				t.Errorf("the request lines' last fields (-want +got):\n%s\n%s", d, logs.String())
			}
		})
	}
}

// A page the operator allowed may read the answer's X-Request-Id (CORS), and a refusal of a page
// not allowed carries one too.
func TestRequestIDForBrowsers(t *testing.T) {
	up := newFake(t, "a")
	g := newGateway(t, target("a", up.url(), "private")+"[routes.a]\ntargets = [\"a\"]\n", nil, countedIDs())
	const chat = `{"model":"a","messages":[{"role":"user","content":"x"}]}`
	ok := g.post(t, "/v1/chat/completions", chat, "Origin", "http://localhost:5173")
	exposed := strings.Split(ok.header.Get("Access-Control-Expose-Headers"), ", ")
	if ok.status != 200 || !slices.Contains(exposed, "X-Request-Id") || ok.header.Get("X-Request-Id") != "req-1" {
		t.Errorf("status %d, X-Request-Id %q, exposed %q", ok.status, ok.header.Get("X-Request-Id"), exposed)
	}
	refused := g.post(t, "/v1/chat/completions", chat, "Origin", "https://evil.example")
	if refused.status != 403 || refused.header.Get("X-Request-Id") != "req-2" {
		t.Errorf("refusal: status %d, X-Request-Id %q", refused.status, refused.header.Get("X-Request-Id"))
	}
}

// A failed attempt's line names the request it was for, as the request's own line does.
func TestAttemptLogNamesRequest(t *testing.T) {
	var logs syncBuffer
	saif, r1 := newFake(t, "saif"), newFake(t, "deepseek-r1")
	saif.set(errHandler(500, "internal", "boom"))
	cfg := target("saif", saif.url(), "private") + target("deepseek-r1", r1.url(), "private") +
		"[routes.saif]\ntargets = [\"saif\", \"deepseek-r1\"]\n"
	g := newGateway(t, cfg, nil, countedIDs(), withLog(&logs))
	if rep := g.chat(t, "saif"); rep.status != 200 {
		t.Fatalf("status %d: %s", rep.status, rep.body)
	}
	var got []string
	for _, l := range logLines(&logs, 2, func(l string) bool {
		return strings.Contains(l, "msg=\"attempt failed\"") || strings.Contains(l, "msg=request ")
	}) {
		got = append(got, l[strings.LastIndex(l, " ")+1:])
	}
	if d := cmp.Diff([]string{"request_id=req-1", "request_id=req-1"}, got); d != "" {
		t.Errorf("the lines' last fields (-want +got):\n%s\n%s", d, logs.String())
	}
}

// logLines is the lines of logs that keep takes, once there are n of them or 10 s have passed. A
// request's line is written after its answer, which the client may have read before.
func logLines(logs *syncBuffer, n int, keep func(string) bool) []string {
	var got []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		got = got[:0]
		for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			if keep(l) {
				got = append(got, l)
			}
		}
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
	}
}
