package config

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
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

// docTables says where CONFIG.md documents each table of the file: the section (its "## "
// heading, as written) and which key table of that section, counted from 0. A table the decode
// types gain without an entry here fails TestConfigDocListsEveryKey.
var docTables = map[string]struct {
	section string
	table   int
}{
	"":             {"## Top-level keys", 0},
	"keys":         {"## `[[keys]]`: API keys", 0},
	"cooldown":     {"## `[cooldown]`: benching a failing target", 0},
	"targets.NAME": {"## `[targets.NAME]`: upstreams", 0},
	"routes.NAME":  {"## `[routes.NAME]`: what clients ask for", 0},
	"groups.NAME":  {"## `command` and `[groups.NAME]`: processes the gateway runs", 0},
	"auto":         {"## `[auto]`: model \"auto\"", 0},
	"auto.intents": {"## `[auto]`: model \"auto\"", 1},
}

// docKey is one key the decoder accepts: the table that holds it (as docTables names it), its
// name, and whether it is itself a table (documented by its own section) rather than a value.
type docKey struct {
	table, name string
	isTable     bool
}

// decodedKeys walks the decode types from fileTOML down, through nested tables ([cooldown]),
// maps of tables ([targets.NAME]) and arrays of tables ([[auto.intents]]), and lists every key.
// [[keys]] is decoded in two steps (fileTOML holds toml.Primitive values), so keyTOML stands in.
func decodedKeys() []docKey {
	var out []docKey
	var walk func(table string, t reflect.Type)
	walk = func(table string, t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			name := f.Tag.Get("toml")
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			sub := name
			if table != "" {
				sub = table + "." + name
			}
			switch {
			case ft == reflect.TypeFor[[]toml.Primitive]() && name == "keys":
				out = append(out, docKey{table, name, true})
				walk(sub, reflect.TypeFor[keyTOML]())
			case ft.Kind() == reflect.Struct:
				out = append(out, docKey{table, name, true})
				walk(sub, ft)
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				out = append(out, docKey{table, name, true})
				walk(sub, ft.Elem())
			case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Struct:
				out = append(out, docKey{table, name, true})
				walk(sub+".NAME", ft.Elem())
			default:
				// Values, inline tables (a route's guard) included.
				out = append(out, docKey{table, name, false})
			}
		}
	}
	walk("", reflect.TypeFor[fileTOML]())
	return out
}

// docKeyTables returns the key tables of the CONFIG.md section whose heading is heading: each
// table's rows (header and separator left out), split into cells.
func docKeyTables(doc, heading string) ([][][]string, bool) {
	_, rest, ok := strings.Cut(doc, "\n"+heading+"\n")
	if !ok {
		return nil, false
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	var tables [][][]string
	in := false
	for _, l := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(l, "|") {
			in = false
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), " | ")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case !in && strings.EqualFold(cells[0], "key"):
			in = true
			tables = append(tables, nil)
		case in && strings.HasPrefix(cells[0], "---"):
		case in:
			tables[len(tables)-1] = append(tables[len(tables)-1], cells)
		}
	}
	return tables, true
}

// TestConfigDocListsEveryKey keeps CONFIG.md complete and true to the decoder: every key any
// table accepts, down to nested tables and arrays of tables, has a row in its own table's key
// table (not merely somewhere: targets and [auto] both have a `specialists`), with all five
// columns (key, type, default, example, what it does) filled in; a table-valued key has its own
// section or, nested, a row in its parent's; and every row names a key the decoder accepts, so
// a key renamed or removed in code cannot stay documented.
func TestConfigDocListsEveryKey(t *testing.T) {
	raw, err := os.ReadFile("../CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	// The name cell of a row: "`url`", or "`[[auto.intents]]`" for an array of tables.
	rowName := func(cells []string) string {
		n := strings.Trim(cells[0], "`")
		n = strings.Trim(n, "[]")
		if i := strings.LastIndexByte(n, '.'); i >= 0 {
			n = n[i+1:]
		}
		return n
	}
	accepted := map[string]map[string]bool{}
	for _, k := range decodedKeys() {
		if accepted[k.table] == nil {
			accepted[k.table] = map[string]bool{}
		}
		accepted[k.table][k.name] = true
	}
	rowsOf := func(t *testing.T, table string) [][]string {
		where, ok := docTables[table]
		if !ok {
			t.Fatalf("the decoder accepts a table %q that docTables does not place in CONFIG.md: "+
				"document it (a section with a key table) and add it to docTables", table)
		}
		tables, ok := docKeyTables(doc, where.section)
		if !ok {
			t.Fatalf("CONFIG.md has no section %q", where.section)
		}
		if where.table >= len(tables) {
			t.Fatalf("CONFIG.md's section %q has %d key tables, want table %d for [%s]", where.section, len(tables), where.table, table)
		}
		return tables[where.table]
	}
	for _, k := range decodedKeys() {
		t.Run(strings.TrimPrefix(k.table+"."+k.name, "."), func(t *testing.T) {
			sub := strings.TrimPrefix(k.table+"."+k.name, ".")
			if k.isTable {
				if _, own := docTables[sub]; !own {
					if _, own = docTables[sub+".NAME"]; !own {
						t.Fatalf("table [%s] has no section in docTables", sub)
					}
				}
				if k.table == "" {
					return // a section of its own
				}
			}
			for _, cells := range rowsOf(t, k.table) {
				if rowName(cells) != k.name {
					continue
				}
				if len(cells) != 5 {
					t.Errorf("row of %s has %d columns, want 5 (key, type, default, example, what it does): %q", sub, len(cells), cells)
				}
				for i, c := range cells {
					if c == "" {
						t.Errorf("row of %s has an empty column %d", sub, i+1)
					}
				}
				return
			}
			t.Errorf("CONFIG.md has no row for %s in its table of [%s] keys", k.name, k.table)
		})
	}
	for table := range docTables {
		t.Run("rows of ["+table+"]", func(t *testing.T) {
			for _, cells := range rowsOf(t, table) {
				if n := rowName(cells); !accepted[table][n] {
					t.Errorf("CONFIG.md documents %q in [%s], which the decoder does not accept", n, table)
				}
			}
		})
	}
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
	// The defaults that are no named constant, read off the smallest config.
	cfg, err := Parse([]byte(minimal), "minimal.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	tg, r := cfg.Targets[0], cfg.Routes[0]
	var fallback []string
	for _, c := range r.FallbackOn.Classes() {
		fallback = append(fallback, strconv.Quote(c.String()))
	}
	for key, want := range map[string]string{
		"listen":         DefaultListen,
		"max_body_bytes": strconv.Itoa(DefaultMaxBodyBytes),
		"failures":       strconv.Itoa(DefaultFailures),
		"metrics":        strconv.FormatBool(cfg.Metrics),
		"wait_healthy":   strconv.FormatBool(cfg.Lifecycle.WaitHealthy),
		"context_window": strconv.Itoa(tg.ContextWindow),
		"max_retries":    strconv.Itoa(tg.MaxRetries),
		"weight":         strconv.Itoa(tg.Weight),
		"class":          tg.Privacy.String(),
		"policy":         r.Policy.String(),
		"fallback_on":    "[" + strings.Join(fallback, ", ") + "]",
	} {
		t.Run(key, func(t *testing.T) {
			if cell := defaultCell(t, key); cell != want {
				t.Errorf("CONFIG.md gives %s the default %q; Parse uses %q", key, cell, want)
			}
		})
	}
}

// docFragments completes the TOML blocks of the docs that show a part of a config rather than a
// whole one, keyed by the block's first line: before is put ahead of the block, after behind it.
// The completed block must load, so the part shown is valid where the docs say to put it.
var docFragments = map[string]struct{ before, after string }{
	// The [auto] intents that restore the paper's behaviour: they go under the complete example's
	// [auto] table, its last.
	"[[auto.intents]]": {before: "complete example"},
	// A managed target in a group whose pinned member, router, the block names but does not show.
	`state_file = "lru.json"        # next to this config`: {after: `
[targets.router]
adapter = "openai"
url     = "http://127.0.0.1:{port}/v1"
command = ["llama-server", "-m", "/models/router.gguf", "--port", "{port}"]
group   = "specialists"

[routes.rev_eng]
targets = ["rev_eng"]
`},
}

// tomlBlocks returns the ```toml blocks of a Markdown document, in order.
func tomlBlocks(doc string) []string {
	var out []string
	for {
		_, rest, ok := strings.Cut(doc, "```toml\n")
		if !ok {
			return out
		}
		block, after, ok := strings.Cut(rest, "```")
		if !ok {
			return out
		}
		out = append(out, block)
		doc = after
	}
}

// TestDocTOMLBlocksLoad loads every TOML block of CONFIG.md and README.md: a whole config as it
// is, a part of one (docFragments) completed where the docs say it goes. A block added to the
// docs that does not load, or a part without its completion here, fails.
func TestDocTOMLBlocksLoad(t *testing.T) {
	env := map[string]string{"OPENROUTER_API_KEY": "sk-test"}
	getenv := func(k string) string { return env[k] }
	var complete string
	n := 0
	for _, file := range []string{"../CONFIG.md", "../README.md"} {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, block := range tomlBlocks(string(raw)) {
			n++
			first, _, _ := strings.Cut(block, "\n")
			if complete == "" {
				complete = block // CONFIG.md's first block is its complete example
			}
			t.Run(fmt.Sprintf("%s#%d %s", strings.TrimPrefix(file, "../"), i+1, first), func(t *testing.T) {
				src := block
				if f, ok := docFragments[first]; ok {
					before := f.before
					if before == "complete example" {
						before = complete
					}
					src = before + block + f.after
				}
				if _, err := Parse([]byte(src), file, getenv); err != nil {
					t.Errorf("does not load (a part of a config needs its completion in docFragments):\n%v\n--- block ---\n%s", err, block)
				}
			})
		}
	}
	if n < 4 {
		t.Errorf("found %d TOML blocks in CONFIG.md and README.md; the docs have at least 4", n)
	}
}

// TestFullTOMLUsesEveryKey keeps CONFIG.md's word that testdata/full.toml, whose compiled form
// is pinned by TestSummaryGolden, uses every key the decoder accepts.
func TestFullTOMLUsesEveryKey(t *testing.T) {
	var v map[string]any
	md, err := toml.DecodeFile("testdata/full.toml", &v)
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, k := range md.Keys() {
		k = slices.Clone(k)
		if len(k) > 1 && (k[0] == "targets" || k[0] == "routes" || k[0] == "groups") {
			k[1] = "NAME"
		}
		for n := 1; n <= len(k); n++ {
			used[strings.Join(k[:n], ".")] = true
		}
	}
	for _, k := range decodedKeys() {
		if full := strings.TrimPrefix(k.table+"."+k.name, "."); !used[full] {
			t.Errorf("testdata/full.toml does not use %s", full)
		}
	}
}

// TestConfigDocErrorSamples keeps the messages CONFIG.md's "Errors at load" shows true: each is
// what the loader says for the mistake it illustrates (lines aside, which are of a file not shown).
func TestConfigDocErrorSamples(t *testing.T) {
	doc, err := os.ReadFile("../CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "## Errors at load")
	section, _, _ = strings.Cut(section, "\n## ")
	_, rest, _ := strings.Cut(section, "```text\n")
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("Errors at load has no text block")
	}
	const target = "[targets.saif]\nadapter = \"saif\"\nurl = \"http://127.0.0.1:1\"\n"
	for i, tc := range []struct {
		file   string
		sample string // "" = the i-th line of the text block
	}{
		{"listen = \"0.0.0.0:8000\"\n" + target + "[routes.saif]\ntargets = [\"saif\"]\n", ""},
		{target + "urll = \"x\"\n[routes.saif]\ntargets = [\"saif\"]\n", ""},
		{target + "[targets.r1]\nadapter = \"openai\"\nurl = \"http://127.0.0.1:1/v1\"\n[routes.saif]\n" +
			"targets = [\"saif\", \"r1\", \"openrouterr\"]\n", ""},
		{target + "[routes.saif]\ntargets = [\"saif\"]\n[[keys]]\nname = \"k\"\nsha256 = \"" + hashTest + "\"\nrpm = \"20\"\n",
			"`keys[0].rpm: want an integer, got a string (a number is written without quotes: rpm = 20, not rpm = \"20\")`"},
		{"[targets.router]\nadapter = \"openai\"\nurl = \"http://127.0.0.1:{port}/v1\"\ncommand = [\"x\", \"{port}\"]\ngroup = \"g\"\n" +
			"[groups.g]\nslots = 1\npinned = \"router\"\n[routes.r]\ntargets = [\"router\"]\n",
			"`want an array, got a string (a list in brackets, even of one: pinned = [\"router\"])`"},
		{"[targets.router]\nadapter = \"openai\"\nurl = \"http://127.0.0.1:{port}/v1\"\ncommand = [\"x\", \"{port}\"]\nidle_stop = 900\n" +
			"[routes.r]\ntargets = [\"router\"]\n",
			"`want a string, got an integer (a duration is a string with its unit: idle_stop = \"900s\" for 900 seconds, not idle_stop = 900)`"},
	} {
		want := tc.sample
		if want == "" {
			lines := strings.Split(strings.TrimSpace(block), "\n")
			if i >= len(lines) {
				t.Fatalf("the text block has %d lines", len(lines))
			}
			// gateway.toml:N: message
			_, msg, _ := strings.Cut(lines[i], ": ")
			want = msg
		} else {
			// The prose wraps its samples: compared with every run of white space as one space.
			if !strings.Contains(strings.Join(strings.Fields(section), " "), want) {
				t.Fatalf("CONFIG.md no longer shows %s", want)
			}
			want = strings.Trim(want, "`")
		}
		_, err := Parse([]byte(tc.file), "gateway.toml", func(string) string { return "" })
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("sample %d: CONFIG.md shows\n  %s\nthe loader says\n  %v", i, want, err)
		}
	}
}

// TestConfigDocTypes keeps the Type column of CONFIG.md's key tables true to the decode types:
// an integer field's row says integer, a bool's bool, a duration's duration, a list's array, a
// table's table, and a string's string or the values it takes (`a` \| `b`). A field whose Go
// type changes without its row fails here.
func TestConfigDocTypes(t *testing.T) {
	raw, err := os.ReadFile("../CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]reflect.Type{}
	walk := func(table string, rt reflect.Type) {
		for i := range rt.NumField() {
			f := rt.Field(i)
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			fields[table+"\x1f"+f.Tag.Get("toml")] = ft
		}
	}
	walk("", reflect.TypeFor[fileTOML]())
	walk("keys", reflect.TypeFor[keyTOML]())
	walk("cooldown", reflect.TypeFor[cooldownTOML]())
	walk("targets.NAME", reflect.TypeFor[targetTOML]())
	walk("routes.NAME", reflect.TypeFor[routeTOML]())
	walk("groups.NAME", reflect.TypeFor[groupTOML]())
	walk("auto", reflect.TypeFor[autoroute.Rules]())
	walk("auto.intents", reflect.TypeFor[autoroute.IntentRule]())
	checked := 0
	for table, where := range docTables {
		tables, _ := docKeyTables(string(raw), where.section)
		if where.table >= len(tables) {
			continue // TestConfigDocListsEveryKey says so
		}
		for _, cells := range tables[where.table] {
			name := strings.Trim(strings.Trim(cells[0], "`"), "[]")
			if i := strings.LastIndexByte(name, '.'); i >= 0 {
				name = name[i+1:]
			}
			ft, ok := fields[table+"\x1f"+name]
			if !ok || len(cells) < 2 {
				continue // TestConfigDocListsEveryKey says so
			}
			typ := cells[1]
			var want []string
			switch k := ft.Kind(); {
			case ft == reflect.TypeFor[[]toml.Primitive]() || k == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				want = []string{"array of tables"}
			case k == reflect.Int || k == reflect.Int64:
				want = []string{"integer"}
			case k == reflect.Bool:
				want = []string{"bool"}
			case k == reflect.String && isDurationKey(name):
				want = []string{"duration"}
			case k == reflect.String:
				want = []string{"string", "` \\| `"}
			case k == reflect.Slice:
				want = []string{"array"}
			case k == reflect.Map:
				want = []string{"table"}
			default:
				t.Errorf("%s.%s: no rule for a %s", table, name, ft)
				continue
			}
			checked++
			if !slices.ContainsFunc(want, func(w string) bool { return strings.Contains(typ, w) }) {
				t.Errorf("CONFIG.md gives [%s] %s the type %q; the decoder reads a %s (want the cell to say %q)",
					table, name, typ, ft, strings.Join(want, "\" or \""))
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked %d rows; CONFIG.md documents more than 50 keys", checked)
	}
}
