package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hayula/gateway/core"
)

// FuzzParse feeds Parse arbitrary text: it must never panic, must return either a config or
// errors (never both), every error must be a *Error, and a config must hold its invariants.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.toml")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		minimal,
		minimal + "[[keys]]\nname = \"k\"\nsha256 = \"" + hashTest + "\"\nroutes = [\"r\", \"auto\"]\n",
		"listen = \"0.0.0.0:1\"\n" + minimal,
		"keys = [{name = \"k\"}]\ntargets.a = {adapter = \"saif\", url = \"http://x\"}\nroutes.r.targets = [\"a\", \"a\"]",
		"[routes.r]\ntargets = [\"a\"]\nguard = { a = [], b = [\"overflow\"] }\n",
		"a = \"\"\"\n[x]\n\"\"\"\"\"\n[[b]]\n[[b]]\nc.d = [{e = 1}, [2]]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data, "fuzz.toml", func(string) string { return "v" })
		if err != nil {
			if cfg != nil {
				t.Fatal("a config and an error")
			}
			errs := Errors(err)
			if len(errs) == 0 {
				t.Fatalf("error %v holds no *Error", err)
			}
			for _, e := range errs {
				if e.File != "fuzz.toml" || e.Line < 0 || e.Msg == "" {
					t.Fatalf("bad error %#v", e)
				}
			}
			return
		}
		checkInvariants(t, cfg)
		_ = cfg.Summary()
	})
}

func checkInvariants(t *testing.T, cfg *Config) {
	t.Helper()
	if !slices.IsSortedFunc(cfg.Targets, func(a, b *core.Target) int { return strings.Compare(a.Name, b.Name) }) {
		t.Fatal("targets not sorted")
	}
	for i, tg := range cfg.Targets {
		if tg.Index != i || tg.Stats == nil || tg.Weight < 1 || tg.URL == "" {
			t.Fatalf("target %d: %+v", i, tg)
		}
	}
	if len(cfg.Routes) == 0 {
		t.Fatal("no routes")
	}
	for _, r := range cfg.Routes {
		if len(r.Targets) == 0 || len(r.Guard) != len(r.Targets) || r.Guard[0] != 0 {
			t.Fatalf("route %s: %d targets, guard %v", r.Name, len(r.Targets), r.Guard)
		}
		for _, tg := range r.Targets {
			if cfg.Targets[tg.Index] != tg {
				t.Fatalf("route %s: target %s is not the config's", r.Name, tg.Name)
			}
		}
	}
	if len(cfg.Keys) == 0 && !IsLoopback(cfg.Listen) {
		t.Fatalf("open gateway on %s", cfg.Listen)
	}
}
