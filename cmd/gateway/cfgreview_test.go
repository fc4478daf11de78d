package main

import (
	"strings"
	"testing"
)

// TestKeygenRefusesControlCharacters: config refuses a key name with a control character (it
// would forge a line of check-config's summary), so keygen, which printed a block for any name,
// refuses such a name before making a key whose block could not be loaded.
func TestKeygenRefusesControlCharacters(t *testing.T) {
	code, out, errOut := runCmd(t, "keygen", "alice\n  admin")
	if code != 2 || out != "" || !strings.Contains(errOut, "control character") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2, nothing on stdout, and why on stderr", code, out, errOut)
	}
}
