package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestDuplicateAuthHeaderRefused: a request with two Authorization lines, or two x-api-key
// lines, is refused 401 whatever the first says. Reading only the first lets a proxy that checks
// the last line and the gateway disagree about who the caller is.
func TestDuplicateAuthHeaderRefused(t *testing.T) {
	priv, pub := newFake(t, "priv"), newFake(t, "pub")
	g := newGateway(t, keysConfig(priv, pub), nil)
	body := `{"model":"r","messages":[{"role":"user","content":"hi"}]}`
	for _, c := range []struct{ name, key, first, second string }{
		{"authorization", "Authorization", "Bearer hk-admin", "Bearer hk-kid"},
		{"authorization junk second", "Authorization", "Bearer hk-admin", "Basic eDp5"},
		{"x-api-key", "X-Api-Key", "hk-admin", "hk-kid"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, g.ts.URL+"/v1/chat/completions", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Add(c.key, c.first)
			req.Header.Add(c.key, c.second)
			rep := g.send(t, req)
			if rep.status != http.StatusUnauthorized {
				t.Fatalf("two %s lines: %d %s, want 401", c.key, rep.status, rep.body)
			}
			if m, _ := rep.errorField(t, "message").(string); strings.Contains(m, "hk-") {
				t.Errorf("message echoes a key: %q", m)
			}
		})
	}
}
