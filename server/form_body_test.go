package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestFormBodyToldJSON: a body sent as a form (multipart/form-data, as `curl -F` or a file upload
// sends it; application/x-www-form-urlencoded, as `curl -d 'model=r&…'`) to a JSON endpoint is a
// 400 invalid_json whose message says that the endpoint reads JSON and how the body was sent:
// it said only "invalid character '-' in numeric literal", about a character the client did not
// think of as JSON. A valid JSON body under a form's Content-Type (`curl -d '{…}'` sends one so)
// is still served, and invalid JSON sent as JSON gets no such note: only the refusal's message
// changes, and only for a form.
func TestFormBodyToldJSON(t *testing.T) {
	g, _ := oneTarget(t)
	const multipart = "--xx\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nr\r\n--xx--\r\n"
	for _, c := range []struct {
		name, path, ctype, body string
		status                  int
		note                    string // "" for none
	}{
		{"chat, multipart", "/v1/chat/completions", "multipart/form-data; boundary=xx", multipart, 400, "multipart/form-data"},
		{"chat, urlencoded", "/v1/chat/completions", "application/x-www-form-urlencoded", "model=r&messages=hi", 400, "application/x-www-form-urlencoded"},
		{"responses, multipart", "/v1/responses", "Multipart/Form-Data; boundary=xx", multipart, 400, "multipart/form-data"},
		{"embeddings, urlencoded", "/v1/embeddings", "application/x-www-form-urlencoded", "model=r&input=hi", 400, "application/x-www-form-urlencoded"},
		{"explain, urlencoded", "/v1/route/explain", "application/x-www-form-urlencoded", "model=r", 400, "application/x-www-form-urlencoded"},
		{"chat, JSON as urlencoded", "/v1/chat/completions", "application/x-www-form-urlencoded", `{"model":"r","messages":[{"role":"user","content":"x"}]}`, 200, ""},
		{"chat, bad JSON as JSON", "/v1/chat/completions", "application/json", "model=r", 400, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := g.do(t, http.MethodPost, c.path, c.body, "Content-Type", c.ctype)
			if rep.status != c.status {
				t.Fatalf("status %d, want %d: %s", rep.status, c.status, rep.body)
			}
			if c.status != 400 {
				return
			}
			if code := rep.errorField(t, "code"); code != "invalid_json" {
				t.Fatalf("code %v: %s", code, rep.body)
			}
			msg, _ := rep.errorField(t, "message").(string)
			if !strings.HasPrefix(msg, "the request body is not valid JSON: ") {
				t.Errorf("message %q lost its cause", msg)
			}
			told := strings.Contains(msg, "reads a JSON body")
			if c.note == "" {
				if told {
					t.Errorf("a form's note on a body sent as JSON: %q", msg)
				}
				return
			}
			if !told || !strings.Contains(msg, "sent as "+c.note) {
				t.Errorf("message %q does not say the endpoint reads JSON and the body was sent as %s", msg, c.note)
			}
		})
	}
}
