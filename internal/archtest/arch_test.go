package archtest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/hayula/gateway"

// rules: each package may depend (directly or not) only on the listed packages of ours. The
// shared leaf types live in core, which depends on nothing of ours, so that filter never imports
// upstream and errmap never imports server.
var rules = map[string][]string{
	"core":                        {},
	"filter":                      {"core", "internal/jsonx", "internal/utf8x"},
	"select":                      {"core"},
	"internal/logbuf":             {},
	"internal/testcert":           {},
	"internal/h1":                 {"internal/httpwire", "internal/swar"},
	"internal/httpwire":           {"internal/swar"},
	"internal/logfmt":             {"internal/swar"},
	"internal/swar":               {},
	"internal/echo":               {},
	"internal/coding":             {},
	"internal/keepalive":          {},
	"errmap":                      {"core", "lifecycle"}, // lifecycle is a leaf: its typed start/load errors
	"health":                      {"core", "internal/coding", "internal/keepalive"},
	"metrics":                     {"core", "internal/jsonx", "internal/utf8x"},
	"autoroute":                   {"core", "internal/jsonx", "internal/utf8x"},
	"internal/jsonx":              {"internal/utf8x"},
	"internal/utf8x":              {},
	"conformance":                 {},
	"lifecycle":                   {},
	"lifecycle/lrusim":            {},
	"upstream":                    {"core", "internal/jsonx", "internal/utf8x", "internal/httpwire", "internal/swar", "internal/echo", "internal/coding", "internal/keepalive"},
	"config":                      {"core", "autoroute", "lifecycle", "internal/jsonx", "internal/utf8x", "internal/tomlx", "internal/netclass"},
	"config/litellm":              {"internal/tomlx", "internal/netclass"}, // it writes TOML text; its tests load it with config
	"conformance/conformancetest": {},
}

func TestImportRules(t *testing.T) {
	for pkg, allowed := range rules {
		t.Run(pkg, func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", module+"/"+pkg).CombinedOutput()
			if err != nil {
				// A package renamed or removed takes its rule with it: the rule is mended, not
				// passed over, so that no package goes unchecked unnoticed.
				t.Fatalf("go list %s (a rule names it: is it renamed or gone?): %v\n%s", pkg, err, out)
			}
			ok := map[string]bool{module + "/" + pkg: true}
			for _, a := range allowed {
				ok[module+"/"+a] = true
			}
			for _, dep := range strings.Fields(string(out)) {
				if strings.HasPrefix(dep, module+"/") && !ok[dep] {
					t.Errorf("%s depends on %s, which the architecture forbids (allowed: %v)", pkg, dep, allowed)
				}
			}
		})
	}
}

// TestReadmeNamesEveryPackage: README's package list says what each package owns; a package added
// without a word there is a package nobody can find. Each is named in backquotes (`lifecycle/lrusim`).
func TestReadmeNamesEveryPackage(t *testing.T) {
	out, err := exec.Command("go", "list", module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
		if rel == "" {
			continue
		}
		if !strings.Contains(string(readme), "`"+rel+"`") {
			t.Errorf("README.md does not name package %s (as `%s`)", p, rel)
		}
	}
}
