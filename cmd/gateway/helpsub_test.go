package main

import (
	"strings"
	"testing"
)

// TestHelpDescendsIntoSubcommands: `gateway help CMD SUB` is `gateway CMD SUB --help` wherever
// CMD has commands of its own (route eval, lru-sim generate); it printed CMD's help, ignoring SUB.
// A word after CMD that names none of its commands, or any more words, is a mistake said on
// stderr with exit 2, not CMD's help.
func TestHelpDescendsIntoSubcommands(t *testing.T) {
	for _, sub := range [][]string{{"route", "eval"}, {"import", "litellm"}, {"lru-sim", "generate"}} {
		t.Run(strings.Join(sub, " "), func(t *testing.T) {
			wantCode, want, _ := runCmd(t, append(sub, "--help")...)
			// The subcommand's own help says how it is called, then its flags.
			if !strings.HasPrefix(want, "usage: gateway "+strings.Join(sub, " ")+" ") || !strings.Contains(want, "\n  -") {
				t.Errorf("%s --help = %q, want its usage line, then its flags", strings.Join(sub, " "), want)
			}
			code, out, errOut := runCmd(t, append([]string{"help"}, sub...)...)
			if code != wantCode || out != want || errOut != "" {
				t.Errorf("help %s: exit %d, stdout %q, stderr %q; want %s --help's: exit %d, stdout %q",
					strings.Join(sub, " "), code, out, errOut, strings.Join(sub, " "), wantCode, want)
			}
		})
	}
	for _, args := range [][]string{
		{"help", "lru-sim", "frobnicate"},
		{"help", "route", "frobnicate"},
		{"help", "import", "frobnicate"},
		{"help", "serve", "frobnicate"},
		{"help", "route", "eval", "frobnicate"},
		{"help", "frobnicate", "frobnicate"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errOut := runCmd(t, args...)
			if code != 2 || out != "" || !strings.Contains(errOut, `"frobnicate"`) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and a mistake naming \"frobnicate\" on stderr", code, out, errOut)
			}
		})
	}
}
