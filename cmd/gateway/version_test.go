package main

import (
	"bytes"
	"context"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersionLine: what a build records (a release's version, or a checkout's commit, dirty or
// not, and its time) is what `gateway version` says, and a binary without build information
// still names its toolchain.
func TestVersionLine(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i+1 < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"release", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"},
			Settings: vcs("GOOS", "linux", "GOARCH", "amd64")}, true, "gateway v1.2.3 go1.26.8 linux/amd64"},
		{"checkout", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: vcs("GOOS", "linux", "GOARCH", "arm64", "vcs.revision", "0123456789abcdef0123", "vcs.time", "2026-12-01T12:00:00Z", "vcs.modified", "false")},
			true, "gateway (devel) commit 0123456789ab (2026-12-01T12:00:00Z) go1.26.8 linux/arm64"},
		{"dirty", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: vcs("GOOS", "linux", "GOARCH", "amd64", "vcs.revision", "abc", "vcs.modified", "true")},
			true, "gateway (devel) commit abc+dirty go1.26.8 linux/amd64"},
	} {
		if got := versionLine(tc.bi, tc.ok); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := versionLine(nil, false); !regexp.MustCompile(`^gateway \(unknown\) go\S+ \S+/\S+$`).MatchString(got) {
		t.Errorf("no build information: %q", got)
	}
}

// TestVersionCommand: `gateway version` and `gateway --version` print one line on stdout and exit
// 0; an argument after it is a usage error.
func TestVersionCommand(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, &out, &errOut); code != 0 || errOut.Len() != 0 ||
			!strings.HasPrefix(out.String(), "gateway ") || strings.Count(out.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out.String(), errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"version", "extra"}, &out, &errOut); code != 2 || out.Len() != 0 ||
		!strings.Contains(errOut.String(), `"extra"`) {
		t.Errorf("version extra: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}
