package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/server"
)

// TestSAIFLoadingWithoutRetryAfter: a SAIF 503 {"status":"loading"} that names no Retry-After
// still reaches the client with one (the wait health holds the target back for), as every other
// model_loading answer of the gateway does; before, the first client got none.
func TestSAIFLoadingWithoutRetryAfter(t *testing.T) {
	up := newAdUpstream(t, func(w http.ResponseWriter, r *http.Request, body map[string]any) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"status":"loading"}`)
	})
	c, err := config.Parse([]byte(`
[targets.saif]
adapter = "saif"
url     = "`+up.srv.URL+`"
tools   = false
vision  = false

[routes.saif]
targets = ["saif"]
`), "saif.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Config: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ts := serveLive(t, srv.Handler())
	resp, err := ts.client.Post(ts.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"saif","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "model_loading") {
		t.Fatalf("got %d %s, want 503 model_loading", resp.StatusCode, b)
	}
	if ra := resp.Header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Errorf("Retry-After %q, want the wait health holds the target back for; body %s", ra, b)
	}
}
