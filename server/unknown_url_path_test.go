package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode"
)

// TestUnknownURLNamesThePathAsSent: the 404 unknown_url (and 405) message names the path as the
// client spelt it, so that the client can find it in its code: the message showed the decoded
// path when the spelling was Go's own (so %0A, %1B and %C2%9B arrived in the message as a line
// break, an ESC and a C1 control, which a client that prints the message hands its terminal or
// log line), and Go's re-escaping of the whole path when it was not (a template slip
// /v1/{model}/chat%2Fcompletions was shown as /v1/%7Bmodel%7D/chat/completions, without the
// escaped slash its own hint was about). Now the spelling as sent, every byte outside printable
// ASCII escaped, and an escaped slash's segment named.
func TestUnknownURLNamesThePathAsSent(t *testing.T) {
	up := newFake(t, "up")
	g := newGateway(t, target("up", up.url(), "private")+"[routes.r]\ntargets = [\"up\"]\n", nil)
	for _, c := range []struct {
		method, raw, shown, also string
		status                   int
	}{
		{http.MethodPost, "/v1/{model}/chat%2Fcompletions", "/v1/{model}/chat%2Fcompletions", `(%2F) in "chat%2Fcompletions" is not`, 404},
		{http.MethodPost, "/v1/chat%2fcompletions", "/v1/chat%2fcompletions", `(%2F) in "chat%2fcompletions" is not`, 404},
		{http.MethodPost, "/v1/{model}/chat/completions", "/v1/{model}/chat/completions", "", 404},
		{http.MethodPost, "/v1/x%0Ay", "/v1/x%0Ay", "", 404},
		{http.MethodPost, "/v1/x%1B%5B31m", "/v1/x%1B%5B31m", "", 404},
		{http.MethodPost, "/v1/x%00y", "/v1/x%00y", "", 404},
		{http.MethodPost, "/v1/caf\xc2\x9b", "/v1/caf%C2%9B", "", 404},
		{http.MethodPost, "/v1/caf%C3%A9", "/v1/caf%C3%A9", "", 404},
		{http.MethodPost, "/v1/a%20b", "/v1/a%20b", "", 404},
		{http.MethodPost, "/v1/chat/completion%73/", "/v1/chat/completion%73/", "served at /v1/chat/completions:", 404},
		{http.MethodDelete, "/v1/models/x%1B%5B2J", "/v1/models/x%1B%5B2J", "", 405},
	} {
		t.Run(c.method+" "+c.raw, func(t *testing.T) {
			req, err := http.NewRequest(c.method, g.ts.URL, strings.NewReader(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			// Opaque is sent as it is: Go's client would re-escape an unusual spelling.
			req.URL = &url.URL{Scheme: req.URL.Scheme, Host: req.URL.Host, Opaque: c.raw}
			req.Header.Set("Content-Type", "application/json")
			rep := g.send(t, req)
			if rep.status != c.status {
				t.Fatalf("status %d, want %d: %s", rep.status, c.status, rep.body)
			}
			msg, _ := rep.errorField(t, "message").(string)
			want := "Unrecognized request URL (" + c.method + " " + c.shown + ")."
			if c.status == 405 {
				want = "Method " + c.method + " is not allowed on " + c.shown + "."
			}
			if !strings.HasPrefix(msg, want) {
				t.Errorf("message %q, want it to begin %q", msg, want)
			}
			if c.also != "" && !strings.Contains(msg, c.also) {
				t.Errorf("message %q does not say %q", msg, c.also)
			}
			if i := strings.IndexFunc(msg, func(r rune) bool { return unicode.IsControl(r) || r > unicode.MaxASCII }); i >= 0 {
				t.Errorf("message %q holds %q", msg, msg[i:])
			}
		})
	}
}
