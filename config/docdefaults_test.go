package config

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// docDefaultBases are, for each table of the file (as docTables names them), a config in which a
// key of that table can be written (the line "%s" stands for) or left out. The config with the
// key left out and the one with the key written as CONFIG.md's Default column gives it must
// compile to the same thing.
var docDefaultBases = map[string]string{
	"":         "%s\n" + minimal,
	"keys":     minimal + "[[keys]]\nname = \"k\"\nsha256 = \"" + hashTest + "\"\n%s\n",
	"cooldown": minimal + "[cooldown]\n%s\n",
	"targets.NAME": "[targets.a]\nadapter = \"openai\"\nurl = \"http://127.0.0.1:1/v1\"\n%s\n" +
		"[routes.r]\ntargets = [\"a\"]\n",
	"routes.NAME": minimal + "%s\n",
	"groups.NAME": "[targets.a]\nadapter = \"openai\"\nurl = \"http://127.0.0.1:{port}/v1\"\n" +
		"command = [\"x\", \"{port}\"]\ngroup = \"g\"\n[groups.g]\nslots = 1\n%s\n[routes.r]\ntargets = [\"a\"]\n",
	"auto":         docAutoBase + "[auto]\n%s\n",
	"auto.intents": docAutoBase + "[auto]\n[[auto.intents]]\nname = \"x\"\nroute = \"saif\"\nterms = [\"a\"]\n%s\n",
}

// docAutoBase has the routes the built-in [auto] rules choose.
const docAutoBase = `[targets.saif]
adapter = "saif"
url = "http://127.0.0.1:1"
[targets.r1]
adapter = "openai"
url = "http://127.0.0.1:2/v1"
[targets.aq]
adapter = "ollama"
url = "http://127.0.0.1:3"
[routes.saif]
targets = ["saif"]
[routes.deepseek-r1]
targets = ["r1"]
[routes.averroes-q]
targets = ["aq"]
`

// docManagedBase is the base of the [targets.NAME] keys that only a target with a command takes.
const docManagedBase = "[targets.a]\nadapter = \"openai\"\nurl = \"http://127.0.0.1:{port}/v1\"\n" +
	"command = [\"x\", \"{port}\"]\n%s\n[routes.r]\ntargets = [\"a\"]\n"

// docDefaultsInProse are the keys whose Default column is prose rather than a value (or a value
// for each adapter, which docAdapterDefault reads), each with the reason.
var docDefaultsInProse = map[string]string{
	"state_file":               "none: nothing is kept",
	"tls_cert_file":            "none: plain HTTP",
	"tls_key_file":             "none: plain HTTP",
	"keys.name":                "required",
	"keys.sha256":              "required",
	"keys.routes":              "every route",
	"targets.NAME.adapter":     "required",
	"targets.NAME.url":         "required",
	"targets.NAME.model":       "the target's name",
	"targets.NAME.api_key_env": "none",
	"targets.NAME.command":     "none",
	"targets.NAME.group":       "none",
	"routes.NAME.targets":      "required",
	"routes.NAME.guard":        "none",
	"groups.NAME.slots":        "required",
	"groups.NAME.pinned":       "none",
	"auto.negations":           "the built-in English and Arabic cues",
	"auto.intents":             "the built-in intents",
	"auto.intents.name":        "required",
	"auto.intents.route":       "required",
	"auto.intents.terms":       "built-in for built-in names, else required",
	"auto.intents.add_terms":   "none",
	"auto.intents.against":     "built-in for built-in names",
	"auto.intents.pairs":       "built-in for security, else none",
	"auto.intents.languages":   "all",
}

// docAdapterDefault matches a Default cell's value for one adapter: "`saif`: `false`" or
// "for `adapter = "saif"`: `[…]`".
var docAdapterDefault = regexp.MustCompile("`(?:adapter = \")?(openai|ollama|saif)\"?`: `([^`]+)`")

// TestConfigDocDefaultsAreTheDefaults holds every value in the Default column of CONFIG.md's key
// tables to the loader: a config that writes a key as its Default column gives it compiles to the
// same config as one that leaves the key out, for each adapter a cell names a value for. A default
// changed in the code (or in the doc) without the other fails here, whatever the key's type and
// table, where TestConfigDocDefaults checks the keys it lists; a key whose default is prose
// ("required", "every route") is listed in docDefaultsInProse.
func TestConfigDocDefaultsAreTheDefaults(t *testing.T) {
	raw, err := os.ReadFile("../CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	load := func(src string) (*Config, error) {
		return Parse([]byte(src), "d.toml", func(string) string { return "" })
	}
	// same compiles base with the key left out and written as value, and says how they differ.
	same := func(t *testing.T, base, key, value string) {
		t.Helper()
		line := key + " = " + value
		if _, err := toml.Decode(line, new(map[string]any)); err != nil {
			t.Errorf("CONFIG.md's default %s is not a TOML value", value)
			return
		}
		out, err := load(strings.Replace(base, "%s", "", 1))
		if err != nil {
			t.Fatalf("the base config does not load: %v", err)
		}
		in, err := load(strings.Replace(base, "%s", line, 1))
		if err != nil {
			t.Errorf("%s, CONFIG.md's default written out, does not load: %v", line, err)
			return
		}
		if what := docConfigDiff(in, out); what != "" {
			t.Errorf("%s, CONFIG.md's default written out, compiles to another config than %s left out: %s differs", line, key, what)
		}
	}
	checked := 0
	for table, where := range docTables {
		tables, _ := docKeyTables(string(raw), where.section)
		if where.table >= len(tables) {
			continue // TestConfigDocListsEveryKey says so
		}
		for _, cells := range tables[where.table] {
			if len(cells) < 3 {
				continue // TestConfigDocListsEveryKey says so
			}
			name := strings.Trim(strings.Trim(cells[0], "`"), "[]")
			if i := strings.LastIndexByte(name, '.'); i >= 0 {
				name = name[i+1:]
			}
			full := strings.TrimPrefix(table+"."+name, ".")
			t.Run(full, func(t *testing.T) {
				cell := cells[2]
				base := docDefaultBases[table]
				if table == "targets.NAME" && (name == "idle_stop" || name == "load_timeout") {
					base = docManagedBase
				}
				if perAdapter := docAdapterDefault.FindAllStringSubmatch(cell, -1); len(perAdapter) > 0 && table == "targets.NAME" {
					for _, m := range perAdapter {
						checked++
						b := strings.Replace(base, `"openai"`, `"`+m[1]+`"`, 1)
						if m[1] != "openai" {
							b = strings.Replace(b, "/v1\"", "\"", 1) // the url as that adapter's is written
						}
						same(t, b, name, m[2])
					}
					if strings.HasPrefix(cell, "`openai`") || strings.HasPrefix(cell, "for `") {
						return // the cell gives no value for every adapter
					}
				}
				if why, prose := docDefaultsInProse[full]; prose {
					if strings.HasPrefix(cell, "`") && docAdapterDefault.FindStringIndex(cell) == nil {
						if _, err := toml.Decode(name+" = "+docValue(cell), new(map[string]any)); err == nil {
							t.Errorf("docDefaultsInProse says %s's default is prose (%s), yet CONFIG.md gives a value, %s: take it out of the list", full, why, cell)
						}
					}
					return
				}
				checked++
				same(t, base, name, docValue(cell))
			})
		}
	}
	if checked < 40 {
		t.Errorf("checked %d defaults; CONFIG.md gives more than 40", checked)
	}
}

// docValue is the value a Default cell gives: its first code span ("`\"30s\"` (…)" is "\"30s\""),
// or its first word when it has none ("2 (…)").
func docValue(cell string) string {
	if _, rest, ok := strings.Cut(cell, "`"); ok {
		v, _, _ := strings.Cut(rest, "`")
		return v
	}
	v, _, _ := strings.Cut(cell, " ")
	return v
}

// docClassifyTexts are what docConfigDiff asks two [auto] classifiers to classify: a question of
// each built-in intent, the docs' intent x's term "a", a negated one, Arabic, and a hint.
var docClassifyTexts = [][3]string{
	{"", "How do I exploit a buffer overflow in CVE-2021-3156?", ""},
	{"", "Explain step by step why the sum of two odd numbers is even.", ""},
	{"", "not step by step, just a poem", ""},
	{"", "a", ""},
	{"you are a helper", "hello there", ""},
	{"", "ما هي نقاط الضعف في تطبيقات الويب؟", ""},
	{"", "hello", "webapp"},
	{"", "hello", "saif"},
}

// docConfigDiff says what differs between two compiled configs ("" when nothing does). The [auto]
// classifiers, which hold a pool, are compared by what they report and decide; classDefaulted,
// which only says whether class was written, is left out.
func docConfigDiff(a, b *Config) string {
	ac, bc := *a, *b
	ac.classDefaulted, bc.classDefaulted = nil, nil
	ac.Auto, bc.Auto = nil, nil
	if !reflect.DeepEqual(ac, bc) {
		return "the config"
	}
	if (a.Auto == nil) != (b.Auto == nil) {
		return "[auto]"
	}
	if a.Auto == nil {
		return ""
	}
	for what, v := range map[string][2]any{
		"routes":           {a.Auto.Routes(), b.Auto.Routes()},
		"move order":       {a.Auto.MoveOrder(), b.Auto.MoveOrder()},
		"specialist route": {a.Auto.SpecialistRoute(), b.Auto.SpecialistRoute()},
		"specialists":      {a.Auto.Specialists(), b.Auto.Specialists()},
	} {
		if !reflect.DeepEqual(v[0], v[1]) {
			return "[auto]'s " + what
		}
	}
	for _, tx := range docClassifyTexts {
		if da, db := a.Auto.Classify(tx[0], tx[1], tx[2]), b.Auto.Classify(tx[0], tx[1], tx[2]); !reflect.DeepEqual(da, db) {
			return "[auto]'s decision for " + strconv.Quote(tx[1])
		}
	}
	return ""
}

// docBound reads the bound an integer key's Type column states: "integer ≥ 1", "integer 0–10".
var docBound = regexp.MustCompile(`^integer(?: (?:≥ (\d+)|(\d+)–(\d+)))?`)

// TestConfigDocIntegerBounds holds the Type column of every integer key to the loader's bounds:
// it must state one ("integer ≥ 1", "integer 0–10"), the bound itself loads, and a value one past
// it is refused at load. A bound changed in the code without the doc, or a key whose bound the
// doc leaves out, fails here.
func TestConfigDocIntegerBounds(t *testing.T) {
	raw, err := os.ReadFile("../CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	load := func(table, line string) error {
		base := docDefaultBases[table]
		if table == "groups.NAME" {
			base = strings.Replace(base, "slots = 1\n%s", "%s", 1)
		}
		_, err := Parse([]byte(strings.Replace(base, "%s", line, 1)), "b.toml", func(string) string { return "" })
		return err
	}
	checked := 0
	for table, where := range docTables {
		tables, _ := docKeyTables(string(raw), where.section)
		if where.table >= len(tables) {
			continue // TestConfigDocListsEveryKey says so
		}
		for _, cells := range tables[where.table] {
			if len(cells) < 2 || !strings.HasPrefix(cells[1], "integer") {
				continue
			}
			name := strings.Trim(cells[0], "`")
			full := strings.TrimPrefix(table+"."+name, ".")
			t.Run(full, func(t *testing.T) {
				m := docBound.FindStringSubmatch(cells[1])
				if m[1] == "" && m[2] == "" {
					t.Fatalf("CONFIG.md gives %s the type %q, with no bound: write the one the loader checks (\"integer ≥ 1\", \"integer 0–10\")", full, cells[1])
				}
				var ok, refused []string
				if m[1] != "" {
					lo, _ := strconv.Atoi(m[1])
					ok, refused = []string{m[1]}, []string{strconv.Itoa(lo - 1)}
				} else {
					lo, _ := strconv.Atoi(m[2])
					hi, _ := strconv.Atoi(m[3])
					ok, refused = []string{m[2], m[3]}, []string{strconv.Itoa(lo - 1), strconv.Itoa(hi + 1)}
				}
				checked++
				for _, v := range ok {
					if err := load(table, name+" = "+v); err != nil {
						t.Errorf("CONFIG.md gives %s the type %q, yet %s = %s does not load: %v", full, cells[1], name, v, err)
					}
				}
				for _, v := range refused {
					if err := load(table, name+" = "+v); err == nil {
						t.Errorf("CONFIG.md gives %s the type %q, yet %s = %s loads", full, cells[1], name, v)
					}
				}
			})
		}
	}
	if checked < 10 {
		t.Errorf("checked %d integer keys; CONFIG.md documents more than 10", checked)
	}
}

// docExampleBase is the config TestConfigDocExamplesLoad writes each example into: CONFIG.md's
// targets and routes, a managed target (router) in a group (gpu), a route named general (the
// [auto] default's example) and an intent, so that an example that names any of them has it.
const docExampleBase = `
[[keys]]
name   = "laptop"
sha256 = "` + hashTest + `"

[targets.saif]
adapter = "saif"
url     = "http://127.0.0.1:8443"

[targets.deepseek-r1]
adapter = "openai"
url     = "http://127.0.0.1:8001/v1"

[targets.openrouter]
adapter = "openai"
url     = "http://127.0.0.1:8002/v1"
class   = "public"

[targets.router]
adapter = "openai"
url     = "http://127.0.0.1:{port}/v1"
command = ["llama-server", "--port", "{port}"]
group   = "gpu"

[groups.gpu]
slots = 3

[cooldown]

[routes.saif]
targets = ["saif", "deepseek-r1", "openrouter"]

[routes.deepseek-r1]
targets = ["deepseek-r1"]

[routes.averroes-q]
targets = ["deepseek-r1"]

[routes.general]
targets = ["router"]

[auto]

[[auto.intents]]
name  = "x"
route = "saif"
terms = ["a"]
`

// TestConfigDocExamplesLoad holds the Example column of CONFIG.md's key tables to the loader:
// each example (every code span of the cell that is a TOML value) written as its key's value, in
// a config that has what the example names, loads. An example a user copies and gets an error
// for fails here.
func TestConfigDocExamplesLoad(t *testing.T) {
	raw, err := os.ReadFile("../CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OPENROUTER_API_KEY": "sk-test"}
	// The table of the base config each table's key is written into.
	in := map[string][]string{
		"":             nil,
		"keys":         {"keys", "0"},
		"cooldown":     {"cooldown"},
		"targets.NAME": {"targets", "deepseek-r1"},
		"routes.NAME":  {"routes", "saif"},
		"groups.NAME":  {"groups", "gpu"},
		"auto":         {"auto"},
		"auto.intents": {"auto", "intents", "0"},
	}
	span := regexp.MustCompile("`([^`]+)`")
	checked := 0
	for table, where := range docTables {
		tables, _ := docKeyTables(string(raw), where.section)
		if where.table >= len(tables) {
			continue // TestConfigDocListsEveryKey says so
		}
		for _, cells := range tables[where.table] {
			if len(cells) < 4 {
				continue // TestConfigDocListsEveryKey says so
			}
			name := strings.Trim(strings.Trim(cells[0], "`"), "[]")
			if i := strings.LastIndexByte(name, '.'); i >= 0 {
				name = name[i+1:]
			}
			examples := []string{}
			for _, m := range span.FindAllStringSubmatch(cells[3], -1) {
				examples = append(examples, m[1])
			}
			if len(examples) == 0 {
				examples = append(examples, docValue(cells[3]))
			}
			for _, ex := range examples {
				ex = strings.ReplaceAll(ex, `\|`, "|") // a table cell's escaped bar, as Markdown shows it
				var v map[string]any
				if _, err := toml.Decode("v = "+ex, &v); err != nil {
					if name == "intents" {
						continue // "see below": the blocks, which TestDocTOMLBlocksLoad loads
					}
					t.Errorf("CONFIG.md's example for %s, %s, is not a TOML value", strings.TrimPrefix(table+"."+name, "."), ex)
					continue
				}
				if table == "" && (name == "tls_cert_file" || name == "tls_key_file") {
					// The examples name a user's files, read as a pair at load; TestTLSFilesLoad
					// loads such a pair.
					continue
				}
				path := in[table]
				if table == "targets.NAME" {
					switch {
					case name == "specialists":
						path = []string{"targets", "saif"}
					case name == "idle_stop" || name == "load_timeout" || name == "group" || name == "command" ||
						strings.Contains(ex, "{port}"):
						path = []string{"targets", "router"}
					}
				}
				checked++
				src, err := docWithKey(docExampleBase, path, name, v["v"])
				if err == nil {
					_, err = Parse([]byte(src), "example.toml", func(k string) string { return env[k] })
				}
				if err != nil {
					t.Errorf("%s = %s, CONFIG.md's example for %s, does not load:\n%v", name, ex, strings.TrimPrefix(table+"."+name, "."), err)
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked %d examples; CONFIG.md gives more than 50", checked)
	}
}

// docWithKey is base with key set to v in the table at path (an index is an element of an
// array of tables), written back out as TOML.
func docWithKey(base string, path []string, key string, v any) (string, error) {
	var doc map[string]any
	if _, err := toml.Decode(base, &doc); err != nil {
		return "", err
	}
	table := doc
	for i := 0; i < len(path); i++ {
		switch next := table[path[i]].(type) {
		case map[string]any:
			table = next
		case []map[string]any:
			i++ // the next element of path is the index
			n, err := strconv.Atoi(path[i])
			if err != nil || n >= len(next) {
				return "", fmt.Errorf("the base config has no table %v", path)
			}
			table = next[n]
		default:
			return "", fmt.Errorf("the base config has no table %v", path)
		}
	}
	table[key] = v
	var b strings.Builder
	if err := toml.NewEncoder(&b).Encode(doc); err != nil {
		return "", err
	}
	return b.String(), nil
}

// TestConfigDocCredentialFlagsRefused holds CONFIG.md's list of the credential flags a command
// may not carry to the loader: a command with each (its value apart, and after "=", in upper
// case too) does not load, and the message does not repeat the value.
func TestConfigDocCredentialFlagsRefused(t *testing.T) {
	raw, err := os.ReadFile("../CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sentence, ok := strings.Cut(string(raw), "value of a credential flag\n")
	if !ok {
		t.Fatal("CONFIG.md no longer lists the credential flags a command may not carry")
	}
	sentence, _, _ = strings.Cut(sentence, "in any case")
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile("`(--[a-z_-]+)[ =`]").FindAllStringSubmatch(sentence, -1) {
		flags[m[1]] = true
	}
	if len(flags) < 8 {
		t.Fatalf("read %d flags from CONFIG.md's list: %v", len(flags), flags)
	}
	const secret = "s3cr3t-v4lue"
	for flag := range flags {
		for _, args := range [][]string{{flag, secret}, {flag + "=" + secret}, {strings.ToUpper(flag), secret}} {
			quoted := make([]string, len(args))
			for i, a := range args {
				quoted[i] = strconv.Quote(a)
			}
			src := "[targets.a]\nadapter = \"openai\"\nurl = \"http://127.0.0.1:{port}/v1\"\n" +
				"command = [\"llama-server\", " + strings.Join(quoted, ", ") + ", \"--port\", \"{port}\"]\n" +
				"[routes.r]\ntargets = [\"a\"]\n"
			_, err := Parse([]byte(src), "c.toml", nil)
			switch {
			case err == nil:
				t.Errorf("command with %v loads; CONFIG.md says it is refused", args)
			case strings.Contains(err.Error(), secret):
				t.Errorf("command with %v: the message repeats the value: %v", args, err)
			}
		}
	}
}

// TestConfigDocDurationBounds holds the duration keys' rows of CONFIG.md to the loader: a
// negative duration is refused; "0s" is refused where the row says the key "Must be longer than
// `0s`" (or at least base, itself longer), and where it does not, loads and the row says what
// `"0s"` means.
func TestConfigDocDurationBounds(t *testing.T) {
	raw, err := os.ReadFile("../CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	load := func(table, name, line string) error {
		base := docDefaultBases[table]
		if table == "targets.NAME" && (name == "idle_stop" || name == "load_timeout") {
			base = docManagedBase
		}
		_, err := Parse([]byte(strings.Replace(base, "%s", line, 1)), "d.toml", func(string) string { return "" })
		return err
	}
	checked := 0
	for table, where := range docTables {
		tables, _ := docKeyTables(string(raw), where.section)
		if where.table >= len(tables) {
			continue // TestConfigDocListsEveryKey says so
		}
		for _, cells := range tables[where.table] {
			if len(cells) < 5 || cells[1] != "duration" {
				continue
			}
			name := strings.Trim(cells[0], "`")
			full := strings.TrimPrefix(table+"."+name, ".")
			t.Run(full, func(t *testing.T) {
				checked++
				if err := load(table, name, name+` = "-1s"`); err == nil {
					t.Errorf("%s = \"-1s\" loads", name)
				}
				// "At least `base`" (cooldown.max) is longer than 0s too: base must be.
				positive := strings.Contains(cells[4], "Must be longer than `0s`") || strings.Contains(cells[4], "At least `base`")
				switch err := load(table, name, name+` = "0s"`); {
				case positive && err == nil:
					t.Errorf("CONFIG.md says %s must be longer than 0s, yet %s = \"0s\" loads", full, name)
				case !positive && err != nil:
					t.Errorf("%s = \"0s\" does not load, and CONFIG.md's row does not say \"Must be longer than `0s`\": %v", name, err)
				case !positive && !strings.Contains(cells[2]+cells[4], "`\"0s\"`"):
					t.Errorf("%s = \"0s\" loads, and CONFIG.md's row does not say what `\"0s\"` means", name)
				}
			})
		}
	}
	if checked < 9 {
		t.Errorf("checked %d duration keys; CONFIG.md documents 9", checked)
	}
}

// TestConfigDocEnums holds the values a string key's Type column lists (`ordered` \| `weighted`
// …) to the loader: each loads, and they are the values the loader's message for an unknown one
// asks for, no more and no fewer.
func TestConfigDocEnums(t *testing.T) {
	raw, err := os.ReadFile("../CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	span := regexp.MustCompile("`([^`]+)`")
	want := regexp.MustCompile(`\(want ([a-z, -]+?) or ([a-z-]+)[;)]`)
	checked := 0
	for table, where := range docTables {
		tables, _ := docKeyTables(string(raw), where.section)
		if where.table >= len(tables) {
			continue // TestConfigDocListsEveryKey says so
		}
		for _, cells := range tables[where.table] {
			if len(cells) < 2 || !strings.Contains(cells[1], "` \\| `") {
				continue
			}
			name := strings.Trim(cells[0], "`")
			full := strings.TrimPrefix(table+"."+name, ".")
			t.Run(full, func(t *testing.T) {
				checked++
				var documented []string
				for _, m := range span.FindAllStringSubmatch(cells[1], -1) {
					documented = append(documented, m[1])
				}
				base := docDefaultBases[table]
				load := func(v string) error {
					src := strings.Replace(base, "%s", name+" = "+strconv.Quote(v), 1)
					if name == "adapter" {
						src = strings.Replace(strings.Replace(base, "%s", "", 1), `adapter = "openai"`, "adapter = "+strconv.Quote(v), 1)
						if v != "openai" {
							src = strings.Replace(src, "/v1\"", "\"", 1) // the url as that adapter's is written
						}
					}
					_, err := Parse([]byte(src), "e.toml", func(string) string { return "" })
					return err
				}
				for _, v := range documented {
					if err := load(v); err != nil {
						t.Errorf("CONFIG.md lists %s = %q, which does not load: %v", name, v, err)
					}
				}
				err := load("no-such-value")
				if err == nil {
					t.Fatalf("%s = \"no-such-value\" loads", name)
				}
				m := want.FindStringSubmatch(err.Error())
				if m == nil {
					t.Fatalf("the loader's message names no values: %v", err)
				}
				asked := append(strings.Split(m[1], ", "), m[2])
				slices.Sort(asked)
				slices.Sort(documented)
				if !slices.Equal(asked, documented) {
					t.Errorf("CONFIG.md gives %s the values %v; the loader asks for %v", full, documented, asked)
				}
			})
		}
	}
	if checked < 4 {
		t.Errorf("checked %d keys; CONFIG.md lists the values of 4 (adapter, class, reasoning, policy)", checked)
	}
}

// TestConfigDocFailureClasses holds CONFIG.md's table of failure classes to the loader: a class
// that falls through by default is one fallback_on takes, and is in the list the loader's message
// for an unknown class asks for; one that never does is refused in fallback_on. The table names
// every class there is.
func TestConfigDocFailureClasses(t *testing.T) {
	raw, err := os.ReadFile("../CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## Failure classes and `fallback_on`\n")
	if !ok {
		t.Fatal("CONFIG.md has no section on failure classes")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| .* \\| (yes|never)[^|]*\\|$")
	load := func(classes string) error {
		_, err := Parse([]byte(minimal+"fallback_on = ["+classes+"]\n"), "f.toml", nil)
		return err
	}
	var falls []string
	rows := row.FindAllStringSubmatch(section, -1)
	for _, m := range rows {
		err := load(strconv.Quote(m[1]))
		switch {
		case m[2] == "yes" && err != nil:
			t.Errorf("CONFIG.md says %s falls through by default, yet fallback_on = [%q] does not load: %v", m[1], m[1], err)
		case m[2] == "never" && err == nil:
			t.Errorf("CONFIG.md says %s never falls through, yet fallback_on = [%q] loads", m[1], m[1])
		}
		if m[2] == "yes" {
			falls = append(falls, m[1])
		}
	}
	if len(rows) < 9 {
		t.Fatalf("read %d classes from CONFIG.md's table; there are 9", len(rows))
	}
	err = load(`"no_such_class"`)
	m := regexp.MustCompile(`\(want ([a-z_, ]+?) or ([a-z_]+)\)`).FindStringSubmatch(fmt.Sprint(err))
	if m == nil {
		t.Fatalf("the loader's message for an unknown class names no classes: %v", err)
	}
	asked := append(strings.Split(m[1], ", "), m[2])
	slices.Sort(asked)
	slices.Sort(falls)
	if !slices.Equal(asked, falls) {
		t.Errorf("CONFIG.md's table has %v fall through by default; the loader asks for %v", falls, asked)
	}
}
