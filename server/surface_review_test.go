package server_test

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hayula/gateway/server"
)

// TestUnauthorizedChallengesBearer: every 401 the gateway answers names the scheme it takes in
// WWW-Authenticate, as RFC 9110 §11.6.1 requires of a 401 ("MUST send a WWW-Authenticate
// header field"): Bearer, without a realm or an error code, on every endpoint that takes a key,
// whatever was wrong with the credential. It had none.
func TestUnauthorizedChallengesBearer(t *testing.T) {
	g, _ := keyed(t)
	body := `{"model":"saif","messages":[{"role":"user","content":"x"}]}`
	for _, c := range []struct {
		name, method, path string
		hdr                []string
	}{
		{"chat, no key", http.MethodPost, "/v1/chat/completions", nil},
		{"chat, wrong key", http.MethodPost, "/v1/chat/completions", []string{"Authorization", "Bearer hk-nobody"}},
		{"chat, another scheme", http.MethodPost, "/v1/chat/completions", []string{"Authorization", "Basic eDp5"}},
		{"chat, wrong x-api-key", http.MethodPost, "/v1/chat/completions", []string{"X-Api-Key", "hk-nobody"}},
		{"responses", http.MethodPost, "/v1/responses", nil},
		{"embeddings", http.MethodPost, "/v1/embeddings", nil},
		{"explain", http.MethodPost, "/v1/route/explain", nil},
		{"models", http.MethodGet, "/v1/models", nil},
		{"a model", http.MethodGet, "/v1/models/saif", nil},
		{"models, HEAD", http.MethodHead, "/v1/models", nil},
		{"metrics", http.MethodGet, "/metrics", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			hdr := append([]string{"Content-Type", "application/json"}, c.hdr...)
			rep := g.do(t, c.method, c.path, body, hdr...)
			if rep.status != http.StatusUnauthorized {
				t.Fatalf("status %d: %s", rep.status, rep.body)
			}
			if got := rep.header.Values("Www-Authenticate"); len(got) != 1 || got[0] != "Bearer" {
				t.Errorf("WWW-Authenticate %q, want one: Bearer", got)
			}
		})
	}
	if rep := g.chat(t, "saif", "Authorization", "Bearer "+laptopKey); rep.header.Get("Www-Authenticate") != "" {
		t.Errorf("a 200 challenges: %q", rep.header.Get("Www-Authenticate"))
	}
}

// TestEmptyBearerReadsXAPIKey: an Authorization field that carries no key ("Bearer" alone, as a
// client configured with an empty API key sends it) is no key, as an empty Authorization is, so
// the key the request sends in x-api-key is read. It was answered 401 "You didn't provide an API
// key" beside the key it provided. A credential in Authorization still wins over x-api-key, and a
// malformed one is still refused.
func TestEmptyBearerReadsXAPIKey(t *testing.T) {
	g, _ := keyed(t)
	for _, c := range []struct {
		name, auth, xkey string
		status           int
	}{
		{"bearer alone", "Bearer", laptopKey, http.StatusOK},
		{"bearer and spaces", "Bearer   ", laptopKey, http.StatusOK},
		{"lower-case bearer alone", "bearer", laptopKey, http.StatusOK},
		{"empty authorization", "", laptopKey, http.StatusOK},
		{"bearer alone, wrong x-api-key", "Bearer", "hk-nobody", http.StatusUnauthorized},
		{"a wrong bearer wins", "Bearer hk-nobody", laptopKey, http.StatusUnauthorized},
		{"a malformed one wins", "Basic eDp5", laptopKey, http.StatusUnauthorized},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := g.post(t, "/v1/chat/completions", `{"model":"saif","messages":[{"role":"user","content":"x"}]}`,
				"Authorization", c.auth, "X-Api-Key", c.xkey)
			if rep.status != c.status {
				t.Fatalf("status %d, want %d: %s", rep.status, c.status, rep.body)
			}
		})
	}
}

// TestUnknownURLSaysWhereItIsServed: a client whose base URL lacks /v1 (some are configured with
// the host alone), or ends in a slash the SDK doubles, or a path with a trailing slash, reaches a
// path the gateway does not serve; it stays a 404 unknown_url, as OpenAI answers it, and its
// message now names the path the gateway serves the request at, so that the fix is in the answer.
// A path that no such slip explains, or that the method is not served at, gets no hint, and
// nothing is served under the slipped path.
func TestUnknownURLSaysWhereItIsServed(t *testing.T) {
	g, up := keyed(t)
	auth := []string{"Authorization", "Bearer " + laptopKey}
	body := `{"model":"saif","messages":[{"role":"user","content":"x"}]}`
	for _, c := range []struct{ method, path, want string }{
		{http.MethodPost, "/chat/completions", "/v1/chat/completions"},
		{http.MethodPost, "/responses", "/v1/responses"},
		{http.MethodPost, "/embeddings", "/v1/embeddings"},
		{http.MethodGet, "/models", "/v1/models"},
		{http.MethodGet, "/models/saif", "/v1/models/saif"},
		{http.MethodPost, "//v1/chat/completions", "/v1/chat/completions"},
		{http.MethodPost, "/v1//chat/completions", "/v1/chat/completions"},
		{http.MethodPost, "/v1/chat/completions/", "/v1/chat/completions"},
		{http.MethodGet, "/v1/models/", "/v1/models"},
		{http.MethodPost, "/chat/completions/", "/v1/chat/completions"},
		{http.MethodGet, "/chat/completions", ""}, // served only for POST
		{http.MethodPost, "/v1/nope", ""},
		{http.MethodPost, "/", ""},
		{http.MethodGet, "/v1", ""},
	} {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			rep := g.do(t, c.method, c.path, body, append([]string{"Content-Type", "application/json"}, auth...)...)
			if rep.status != http.StatusNotFound || rep.errorField(t, "code") != "unknown_url" {
				t.Fatalf("status %d: %s", rep.status, rep.body)
			}
			msg, _ := rep.errorField(t, "message").(string)
			if !strings.HasPrefix(msg, "Unrecognized request URL ("+c.method+" "+c.path+").") {
				t.Errorf("message %q", msg)
			}
			hint := strings.Contains(msg, "served at")
			if c.want == "" {
				if hint {
					t.Errorf("a hint where none fits: %q", msg)
				}
				return
			}
			if !strings.Contains(msg, " served at "+c.want+": ") {
				t.Errorf("message %q does not name %s", msg, c.want)
			}
		})
	}
	if n := up.hits.Load(); n != 0 {
		t.Fatalf("the upstream was asked %d times", n)
	}
}

// TestByteOrderMarkRefusedClearly: a body that starts with a UTF-8 byte order mark (a file saved
// by a Windows editor and sent with curl -d @file) is refused 400 invalid_json on every endpoint
// that reads JSON, as before (RFC 8259 §8.1: JSON sent over a network must not carry one), but the
// message now says what is wrong, where it said "invalid character 'ï' looking for beginning of
// value", naming a character the client never wrote. A BOM inside a string is text, and served.
func TestByteOrderMarkRefusedClearly(t *testing.T) {
	g, up := keyed(t)
	auth := []string{"Authorization", "Bearer " + laptopKey}
	const bom = "\xef\xbb\xbf"
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"saif","messages":[{"role":"user","content":"x"}]}`},
		{"/v1/completions", `{"model":"saif","prompt":"x"}`},
		{"/v1/embeddings", `{"model":"saif","input":"x"}`},
		{"/v1/responses", `{"model":"saif","input":"x"}`},
		{"/v1/route/explain", `{"model":"saif","messages":[{"role":"user","content":"x"}]}`},
	} {
		t.Run(c.path, func(t *testing.T) {
			rep := g.post(t, c.path, bom+c.body, auth...)
			if rep.status != http.StatusBadRequest || rep.errorField(t, "code") != "invalid_json" {
				t.Fatalf("status %d: %s", rep.status, rep.body)
			}
			if msg, _ := rep.errorField(t, "message").(string); !strings.Contains(msg, "byte order mark") || strings.Contains(msg, "ï") {
				t.Errorf("message %q", msg)
			}
		})
	}
	if n := up.hits.Load(); n != 0 {
		t.Fatalf("the upstream was asked %d times", n)
	}
	if rep := g.post(t, "/v1/chat/completions", `{"model":"saif","messages":[{"role":"user","content":"`+bom+`x"}]}`, auth...); rep.status != http.StatusOK {
		t.Fatalf("a BOM in a string: status %d: %s", rep.status, rep.body)
	}
}

// TestQueryStringKeyNeitherReadNorLogged: a key sent in the query string (api_key=, key=,
// api-key=, as some clients and Azure-minded code send it) is not a credential: the request is
// refused 401 as one without a key, and neither the answer nor any log line (debug included)
// holds it, on the OpenAI endpoints, /v1/models and a path the gateway does not serve. A request
// with its key in Authorization and a query string is served.
func TestQueryStringKeyNeitherReadNorLogged(t *testing.T) {
	const key = "hk-query-string-secret-5e7f"
	var logs syncBuffer
	up := newFake(t, "up")
	cfg := target("t", up.url(), "private") + "[routes.r]\ntargets = [\"t\"]\n" +
		"[[keys]]\nname = \"k\"\nsha256 = \"" + sha256hex(key) + "\"\n"
	g := newGateway(t, cfg, nil, func(o *server.Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	chat := `{"model":"r","messages":[{"role":"user","content":"hi"}]}`
	var answers strings.Builder
	for _, q := range []string{"api_key=", "key=", "api-key=", "x=1&api_key="} {
		for _, c := range []struct {
			method, path, body string
			status             int
		}{
			{http.MethodPost, "/v1/chat/completions", chat, http.StatusUnauthorized},
			{http.MethodPost, "/v1/responses", `{"model":"r","input":"hi"}`, http.StatusUnauthorized},
			{http.MethodGet, "/v1/models", "", http.StatusUnauthorized},
			{http.MethodPost, "/chat/completions", chat, http.StatusNotFound},
		} {
			rep := g.do(t, c.method, c.path+"?"+q+key, c.body, "Content-Type", "application/json")
			if rep.status != c.status {
				t.Errorf("%s %s?%s…: status %d, want %d: %s", c.method, c.path, q, rep.status, c.status, rep.body)
			}
			fmt.Fprintf(&answers, "%v %s\n", rep.header, rep.body)
		}
	}
	if rep := g.post(t, "/v1/chat/completions?api-version=2024-10-21", chat, "Authorization", "Bearer "+key); rep.status != http.StatusOK {
		t.Fatalf("a query string beside a key: status %d: %s", rep.status, rep.body)
	}
	if up.hits.Load() != 1 {
		t.Fatalf("the upstream was asked %d times, want once", up.hits.Load())
	}
	for what, text := range map[string]string{"answers": answers.String(), "log": logs.String()} {
		if strings.Contains(text, key) {
			t.Errorf("the %s hold the key:\n%s", what, text)
		}
	}
	if !strings.Contains(logs.String(), "msg=request") {
		t.Fatalf("no request was logged: the test would prove nothing:\n%s", logs.String())
	}
}

// TestBearerSpellingsTaken: the spellings of a good key that HTTP allows are taken: the scheme in
// any case (RFC 9110 §11.1: auth-scheme is case-insensitive), several spaces after it (1*SP),
// whitespace after the key (trimmed as OWS), a lower-case field name; and through x-api-key, the
// key with whitespace around it. A key with a comma after it (two credentials joined by a proxy)
// is no key the gateway knows.
func TestBearerSpellingsTaken(t *testing.T) {
	g, _ := keyed(t)
	addr := strings.TrimPrefix(g.ts.URL, "http://")
	body := `{"model":"saif","messages":[{"role":"user","content":"x"}]}`
	for _, c := range []struct {
		name, field string
		status      int
	}{
		{"bearer", "Authorization: bearer " + laptopKey, 200},
		{"BEARER", "Authorization: BEARER " + laptopKey, 200},
		{"bEaReR", "Authorization: bEaReR " + laptopKey, 200},
		{"three spaces", "Authorization: Bearer   " + laptopKey, 200},
		{"trailing spaces and tab", "Authorization: Bearer " + laptopKey + " \t ", 200},
		{"lower-case field", "authorization: Bearer " + laptopKey, 200},
		{"x-api-key with spaces", "x-api-key:   " + laptopKey + "  ", 200},
		{"comma after the key", "Authorization: Bearer " + laptopKey + ",", 401},
		{"two keys joined", "Authorization: Bearer " + laptopKey + ", Bearer hk-ci", 401},
	} {
		t.Run(c.name, func(t *testing.T) {
			c2, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c2.Close()
			_ = c2.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(c2, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s\r\n"+
				"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", c.field, len(body), body)
			resp, err := http.ReadResponse(bufio.NewReader(c2), nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, b)
			}
		})
	}
}
