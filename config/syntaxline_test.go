package config

import (
	"strings"
	"testing"
)

// TestSyntaxErrorLine: a syntax error is said at the line that holds it. The TOML library counts
// the line of an error found at a line's end (a table header left open, a key without its value
// on the last line) after it has read the newline, one line too far: check-config sent the
// operator to the line after the mistake, a blank line or the next table's header.
func TestSyntaxErrorLine(t *testing.T) {
	tests := []struct {
		name string
		toml string
		line int
		msg  string
	}{
		{"table header left open", "listen = \"127.0.0.1:8000\"\n[targets.a\nadapter = \"openai\"\n", 2, "end table name"},
		{"table header left open before a blank line", "listen = \"127.0.0.1:8000\"\n[targets.a\n\n\n[routes.r]\n", 2, "end table name"},
		{"table header left open, CRLF", "listen = \"127.0.0.1:8000\"\r\n[targets.a\r\n\r\n", 2, "end table name"},
		{"key without a value", "listen = \"127.0.0.1:8000\"\nx = \n\n", 2, "expected value"},
		{"string left open", "listen = \"127.0.0.1:8000\"\nx = \"abc\n\n", 2, "newlines"},
		{"junk after a value", "a = 1\nb = \"x\"y\n", 2, "'y'"},
		{"table header left open at the end", "a = 1\n[t", 2, "end table name"},
		{"after text that is not ASCII", "# مرحبا — ünïcode\nname = \"é\"\n[targets.a\n\n", 3, "end table name"},
		{"after a byte order mark", "\ufeff\n[targets.a\n\n", 2, "end table name"},
		{"array left open at the end", "a = 1\nb = [1,\n2\n", 3, "end of file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.toml), "g.toml", nil)
			errs := Errors(err)
			if len(errs) != 1 || errs[0].Line != tt.line || !strings.Contains(errs[0].Msg, tt.msg) {
				t.Errorf("Parse: %v; want one error at line %d holding %q", err, tt.line, tt.msg)
			}
		})
	}
}
