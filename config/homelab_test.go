package config

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hayula/gateway/core"
)

// TestHomelabExampleLoads keeps testdata/homelab.toml, the homelab CONFIG.md shows (Ollama, a
// llama-server started on demand, a paid tail, family keys, a LAN browser), loading and meaning
// what its comments say, and CONFIG.md showing it as it is.
func TestHomelabExampleLoads(t *testing.T) {
	raw, err := os.ReadFile("testdata/homelab.toml")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OPENROUTER_API_KEY": "sk-or-test"}
	cfg, err := Parse(raw, "homelab.toml", func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("homelab.toml does not load:\n%v", err)
	}
	type keyView struct {
		Name    string
		Routes  []string
		RPM     int
		TPM     int
		Scrapes bool // routes = []: a key for /metrics only
	}
	var keys []keyView
	for _, k := range cfg.Keys {
		v := keyView{Name: k.Name, RPM: k.RPM, TPM: k.TPM, Scrapes: k.Routes != nil && len(k.Routes) == 0}
		for r := range k.Routes {
			v.Routes = append(v.Routes, r)
		}
		keys = append(keys, v)
	}
	want := []keyView{{Name: "alice"}, {Name: "bob"}, {Name: "kid", Routes: []string{"llama3.1"}, RPM: 20, TPM: 20000}, {Name: "prometheus", Scrapes: true}}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	for _, r := range cfg.Routes {
		if r.Name != "qwen-coder" {
			continue
		}
		// The comment's promise: a cold llama-server is waited for, not paid around.
		if g := r.Guard[1]; g.Has(core.ClassLoading) || !g.Has(core.ClassConnection) {
			t.Errorf("qwen-coder's guard on openrouter = %v, want every class but loading", g.Classes())
		}
	}
	if !cfg.Lifecycle.Managed("qwen-coder") {
		t.Error("qwen-coder is not started on demand")
	}

	doc, err := os.ReadFile("../CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```toml\n"+string(raw)+"```\n") {
		t.Error("CONFIG.md does not show config/testdata/homelab.toml as it is: copy the file into its homelab section")
	}
}
