package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestAuthMalformedNotMissing: a request that sends a credential the gateway cannot read (a tab
// instead of the space after Bearer, no scheme, another scheme) is refused 401 invalid_api_key
// as an incorrect key, not told that it sent none; the message never echoes what was sent. A
// request that sends none at all ("Bearer" alone included) is told so.
func TestAuthMalformedNotMissing(t *testing.T) {
	priv, pub := newFake(t, "priv"), newFake(t, "pub")
	g := newGateway(t, keysConfig(priv, pub), nil)
	body := `{"model":"r","messages":[{"role":"user","content":"hi"}]}`
	const missing, incorrect = "You didn't provide an API key", "Incorrect API key provided"
	for _, c := range []struct {
		name, key, value, want string
	}{
		{"none", "", "", missing},
		{"bearer alone", "Authorization", "Bearer", missing},
		{"bearer and spaces", "Authorization", "Bearer   ", missing},
		{"empty x-api-key", "X-Api-Key", " ", missing},
		{"tab", "Authorization", "Bearer\thk-admin", incorrect},
		{"two spaces", "Authorization", "Bearer  hk-admin", ""}, // accepted, as before
		{"no scheme", "Authorization", "hk-admin", incorrect},
		{"basic", "Authorization", "Basic aGstYWRtaW4=", incorrect},
		{"bearer no space", "Authorization", "Bearerhk-admin", incorrect},
		{"wrong key", "Authorization", "Bearer hk-nobody", incorrect},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, g.ts.URL+"/v1/chat/completions", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			if c.key != "" {
				req.Header.Set(c.key, c.value)
			}
			rep := g.send(t, req)
			if c.want == "" {
				if rep.status != http.StatusOK {
					t.Fatalf("%q: %d %s, want 200", c.value, rep.status, rep.body)
				}
				return
			}
			if rep.status != http.StatusUnauthorized {
				t.Fatalf("%q: %d %s, want 401", c.value, rep.status, rep.body)
			}
			m, _ := rep.errorField(t, "message").(string)
			if !strings.HasPrefix(m, c.want) {
				t.Errorf("%q: message %q, want one starting %q", c.value, m, c.want)
			}
			if code, _ := rep.errorField(t, "code").(string); code != "invalid_api_key" {
				t.Errorf("%q: code %q, want invalid_api_key", c.value, code)
			}
			for _, secret := range []string{"hk-", "aGst"} {
				if strings.Contains(m, secret) {
					t.Errorf("message echoes what was sent: %q", m)
				}
			}
		})
	}
}
