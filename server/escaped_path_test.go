package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestEscapedSlashReachesNoRoute: the router matches the decoded path, so POST
// /v1/chat%2Fcompletions was served as chat, while a proxy or WAF in front that reads the raw path
// (one that allows only /v1/chat/completions, or denies it) saw another path. A path whose escaped
// slash (%2F, %2f) would be read as one of a route's separators reaches no route: 404
// unknown_url, naming the path as it was sent, as any unknown path is answered, and the upstream
// is not asked. An escaped unreserved character is the same path (RFC 3986 §6.2.2.2) and is
// served; so is an escaped slash inside the model ID of /v1/models/{id}, which a route's name may
// hold and which the SDKs escape (openai-go's Models.Get).
func TestEscapedSlashReachesNoRoute(t *testing.T) {
	up := newFake(t, "up")
	g := newGateway(t, target("up", up.url(), "private")+"[routes.r]\ntargets = [\"up\"]\n[routes.\"org/m\"]\ntargets = [\"up\"]\n", nil)
	chat := `{"model":"r","messages":[{"role":"user","content":"x"}]}`
	for _, c := range []struct {
		method, path string
		status       int
		code         string
	}{
		{http.MethodPost, "/v1/chat%2Fcompletions", 404, "unknown_url"},
		{http.MethodPost, "/v1/chat%2fcompletions", 404, "unknown_url"},
		{http.MethodPost, "/v1%2Fchat%2Fcompletions", 404, "unknown_url"},
		{http.MethodPost, "/v1%2Fchat/completions", 404, "unknown_url"},
		{http.MethodPost, "/v1/route%2Fexplain", 404, "unknown_url"},
		{http.MethodGet, "/v1/models%2Fr", 404, "unknown_url"},
		{http.MethodGet, "/v1/responses/x%2Finput_items", 404, "unknown_url"},
		{http.MethodPost, "/v1/responses/x%2Fcancel", 404, "unknown_url"},
		// The same path as the route's: served.
		{http.MethodPost, "/v1/chat/completion%73", 200, ""},
		{http.MethodPost, "/v1/%63hat/completions", 200, ""},
		{http.MethodGet, "/v1/m%6Fdels/r", 200, ""},
		// A slash in a model ID.
		{http.MethodGet, "/v1/models/org%2Fm", 200, ""},
		{http.MethodGet, "/v1/models/org%2fm", 200, ""},
		{http.MethodGet, "/v1/models/org/m", 200, ""},
	} {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			before := up.hits.Load()
			rep := g.post(t, c.path, chat)
			if c.method != http.MethodPost {
				rep = g.do(t, c.method, c.path, "")
			}
			if rep.status != c.status {
				t.Fatalf("status %d, want %d: %s", rep.status, c.status, rep.body)
			}
			if c.code == "" {
				return
			}
			if code := rep.errorField(t, "code"); code != c.code {
				t.Fatalf("code %v, want %s: %s", code, c.code, rep.body)
			}
			msg, _ := rep.errorField(t, "message").(string)
			if !strings.HasPrefix(msg, "Unrecognized request URL ("+c.method+" "+c.path+").") {
				t.Errorf("message %q does not name the path as sent", msg)
			}
			if strings.Contains(msg, "served at") {
				t.Errorf("a hint to a path the request did not ask for: %q", msg)
			}
			if n := up.hits.Load() - before; n != 0 {
				t.Errorf("the upstream was asked %d times", n)
			}
		})
	}
	c := sdkClient(g, "unused")
	m, err := c.Models.Get(context.Background(), "org/m")
	if err != nil || m.ID != "org/m" {
		t.Fatalf("SDK Models.Get(org/m): %+v, %v", m, err)
	}
}

// TestModelsTrailingSlashUnknownURL: GET /v1/models/ is the list's path with a trailing slash,
// a slipped base URL as /v1/chat/completions/ is, and is answered as that one: 404 unknown_url
// naming /v1/models, whether or not the request carries a key. httprouter's catch-all took it
// for the model "" and answered model_not_found (or 401 without a key).
func TestModelsTrailingSlashUnknownURL(t *testing.T) {
	g, _ := keyed(t)
	for _, m := range []string{http.MethodGet, http.MethodHead} {
		for _, hdr := range [][]string{{"Authorization", "Bearer " + laptopKey}, nil} {
			rep := g.do(t, m, "/v1/models/", "", hdr...)
			if rep.status != http.StatusNotFound {
				t.Fatalf("%s, key %v: status %d: %s", m, hdr != nil, rep.status, rep.body)
			}
			if m == http.MethodHead {
				continue
			}
			if code := rep.errorField(t, "code"); code != "unknown_url" {
				t.Errorf("key %v: code %v: %s", hdr != nil, code, rep.body)
			}
			msg, _ := rep.errorField(t, "message").(string)
			if !strings.HasPrefix(msg, "Unrecognized request URL (GET /v1/models/).") || !strings.Contains(msg, " served at /v1/models: ") {
				t.Errorf("message %q", msg)
			}
		}
	}
}
