package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode"
)

// TestNotFoundEchoesNoControlCharacters: the 404s that repeat a name the client gave (a model
// that does not exist, from the body or from GET /v1/models/{id}; a stored response's id) repeat
// it with its control characters escaped, as the unknown_url 404 shows its path: a model
// "a\u001b[2Jb" or a path /v1/models/x%1B%5B2J came back with a raw ESC[2J, which clears the
// terminal of a client that prints the message, and a %0A split its log line.
func TestNotFoundEchoesNoControlCharacters(t *testing.T) {
	up := newFake(t, "up")
	g := newGateway(t, target("up", up.url(), "private")+"[routes.r]\ntargets = [\"up\"]\n", nil)
	for _, c := range []struct {
		name, method, path, body, code, shown string
	}{
		{"a model in the body", http.MethodPost, "/v1/chat/completions",
			`{"model":"a\u001b[2Jb\nc\u009bd","messages":[{"role":"user","content":"x"}]}`, "model_not_found", `a\u001b[2Jb\u000ac\u009bd`},
		{"a model in the path", http.MethodGet, "/v1/models/x%1B%5B2J%0Ay", "", "model_not_found", `x\u001b[2J\u000ay`},
		{"a stored response's id", http.MethodGet, "/v1/responses/x%1B%5B2J", "", "response_not_found", `x\u001b[2J`},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(c.method, g.ts.URL, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			req.URL = &url.URL{Scheme: req.URL.Scheme, Host: req.URL.Host, Opaque: c.path}
			req.Header.Set("Content-Type", "application/json")
			rep := g.send(t, req)
			if rep.status != http.StatusNotFound || rep.errorField(t, "code") != c.code {
				t.Fatalf("status %d: %s", rep.status, rep.body)
			}
			msg, _ := rep.errorField(t, "message").(string)
			if i := strings.IndexFunc(msg, unicode.IsControl); i >= 0 {
				t.Errorf("message %q holds %q", msg, msg[i:])
			}
			if !strings.Contains(msg, c.shown) {
				t.Errorf("message %q does not show %s", msg, c.shown)
			}
		})
	}
}
