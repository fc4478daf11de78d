package upstream

import "testing"

// TestNotJSONErrorText: an answer that is not JSON is quoted after a colon, and an empty one says
// so rather than ending the message in a bare ": ".
func TestNotJSONErrorText(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{"", "response is not JSON: it is empty"},
		{" \r\n", "response is not JSON: it is empty"},
		{"<html>oops</html>\n", "response is not JSON: <html>oops</html>"},
	} {
		if got := (&NotJSONError{Body: []byte(c.body)}).Error(); got != c.want {
			t.Errorf("NotJSONError{%q}.Error() = %q, want %q", c.body, got, c.want)
		}
	}
}
