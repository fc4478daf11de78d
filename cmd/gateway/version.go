package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// versionLine is what `gateway version` prints: the module's version (a release tag, or
// "(devel)" for a build from a checkout), the commit it was built from when the build recorded
// one (with "+dirty" for uncommitted changes) and its time, and the Go toolchain and platform.
// ok false (no build information) prints what the binary alone knows.
func versionLine(bi *debug.BuildInfo, ok bool) string {
	var b strings.Builder
	b.WriteString("gateway ")
	if !ok || bi == nil {
		fmt.Fprintf(&b, "(unknown) %s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return b.String()
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	b.WriteString(v)
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		b.WriteString(" commit ")
		b.WriteString(rev[:min(len(rev), 12)])
		if settings["vcs.modified"] == "true" {
			b.WriteString("+dirty")
		}
		if t := settings["vcs.time"]; t != "" {
			b.WriteString(" (" + t + ")")
		}
	}
	goos, goarch := settings["GOOS"], settings["GOARCH"]
	if goos == "" {
		goos, goarch = runtime.GOOS, runtime.GOARCH
	}
	fmt.Fprintf(&b, " %s %s/%s", bi.GoVersion, goos, goarch)
	return b.String()
}
