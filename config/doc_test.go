package config

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hayula/gateway/autoroute"
)

// TestConfigDocExampleLoads keeps CONFIG.md's complete example true: it must load as written.
func TestConfigDocExampleLoads(t *testing.T) {
	doc, err := os.ReadFile("../CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "## A complete example")
	if !ok {
		t.Fatal("CONFIG.md has no complete example")
	}
	_, rest, _ = strings.Cut(rest, "```toml\n")
	example, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("the complete example has no toml block")
	}
	env := map[string]string{"OPENROUTER_API_KEY": "sk-test"}
	cfg, err := Parse([]byte(example), "CONFIG.md", func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("CONFIG.md's complete example does not load:\n%v", err)
	}
	if cfg.Auto == nil || len(cfg.Routes) < 4 {
		t.Fatalf("example compiled to %d routes, auto %v", len(cfg.Routes), cfg.Auto != nil)
	}
}

// TestConfigDocListsEveryKey keeps CONFIG.md complete: every key the decoder accepts has a row
// in a key table ("| `url` |"), and every table-valued key such a row or a mention of its table
// ("[cooldown]", "[[keys]]", "[[auto.intents]]"). A key added to a decode type without its row
// fails here.
func TestConfigDocListsEveryKey(t *testing.T) {
	raw, err := os.ReadFile("../CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for _, v := range []any{fileTOML{}, keyTOML{}, cooldownTOML{}, targetTOML{}, routeTOML{},
		groupTOML{}, autoroute.Rules{}, autoroute.IntentRule{}} {
		typ := reflect.TypeOf(v)
		for i := range typ.NumField() {
			f := typ.Field(i)
			key := f.Tag.Get("toml")
			t.Run(typ.Name()+"."+key, func(t *testing.T) {
				row := strings.Contains(doc, "| `"+key+"` |")
				if isTable(f.Type) {
					if !row && !strings.Contains(doc, "["+key) && !strings.Contains(doc, "."+key+"]") {
						t.Errorf("CONFIG.md names no table [%s]", key)
					}
					return
				}
				if !row {
					t.Errorf("CONFIG.md has no row for key %q", key)
				}
			})
		}
	}
}

// isTable reports whether a decode field holds a table or an array of tables.
func isTable(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct || t.Kind() == reflect.Map
}

// TestConfigDocDefaults keeps the Default column of CONFIG.md's key tables equal to the
// constants Parse uses: a default changed in config.go without its row fails here.
func TestConfigDocDefaults(t *testing.T) {
	raw, err := os.ReadFile("../CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	// defaultCell is the Default column (the third) of key's row, unquoted, without a remark
	// such as "(10 MiB)".
	defaultCell := func(t *testing.T, key string) string {
		for _, l := range strings.Split(string(raw), "\n") {
			if !strings.HasPrefix(l, "| `"+key+"` |") {
				continue
			}
			cells := strings.Split(l, " | ")
			if len(cells) < 3 {
				t.Fatalf("row of %s has no Default column: %s", key, l)
			}
			v, _, _ := strings.Cut(strings.Trim(cells[2], "` "), "` (")
			return strings.Trim(v, "`\"")
		}
		t.Fatalf("CONFIG.md has no row for %s", key)
		return ""
	}
	for key, want := range map[string]time.Duration{
		"timeout":         DefaultTimeout,
		"idle_timeout":    DefaultIdleTimeout,
		"base":            DefaultCooldownBase,
		"max":             DefaultCooldownMax,
		"health_interval": DefaultHealthInterval,
		"health_timeout":  DefaultHealthTimeout,
		"degraded_after":  DefaultDegradedAfter,
		"load_timeout":    DefaultLoadTimeout,
	} {
		t.Run(key, func(t *testing.T) {
			cell := defaultCell(t, key)
			got, err := time.ParseDuration(cell)
			if err != nil || got != want {
				t.Errorf("CONFIG.md gives %s the default %q; Parse uses %v", key, cell, want)
			}
		})
	}
	for key, want := range map[string]string{
		"listen":         DefaultListen,
		"max_body_bytes": strconv.Itoa(DefaultMaxBodyBytes),
		"failures":       strconv.Itoa(DefaultFailures),
	} {
		t.Run(key, func(t *testing.T) {
			if cell := defaultCell(t, key); cell != want {
				t.Errorf("CONFIG.md gives %s the default %q; Parse uses %q", key, cell, want)
			}
		})
	}
}
