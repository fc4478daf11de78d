package main

import (
	"strings"
	"testing"
)

// TestHelpSaysWhatEachCommandDoes: `gateway help` lists every command with what it does, and each
// command's help says it under its usage line, before its flags: it was the usage line alone for
// check-config, keygen, route and version, and serve's, demo's and conformance's went from the
// usage to the flags.
func TestHelpSaysWhatEachCommandDoes(t *testing.T) {
	_, top, _ := runCmd(t, "help")
	_, list, ok := strings.Cut(top, "\nCommands:\n")
	if !ok {
		t.Fatalf("gateway help has no Commands list:\n%s", top)
	}
	list, _, _ = strings.Cut(list, "\n\n")
	for _, cmd := range []string{"serve", "demo", "check-config", "keygen", "route", "import", "lru-sim", "conformance", "version"} {
		t.Run(cmd, func(t *testing.T) {
			if !strings.Contains(list, "\n  "+cmd+" ") && !strings.HasPrefix(list, "  "+cmd+" ") {
				t.Errorf("gateway help's Commands list does not name %s:\n%s", cmd, list)
			}
			code, out, _ := runCmd(t, "help", cmd)
			lines := strings.Split(out, "\n")
			i := 1
			for i < len(lines) && strings.HasPrefix(lines[i], "       ") { // the usage's own continuation
				i++
			}
			if code != 0 || i >= len(lines) || lines[i] == "" || lines[i][0] < 'A' || lines[i][0] > 'Z' {
				t.Errorf("help %s: exit %d; want the usage, then what the command does, then its flags:\n%s", cmd, code, out)
			}
		})
	}
}
