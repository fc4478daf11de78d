package server_test

import (
	"net/http"
	"testing"
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
