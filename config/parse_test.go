package config

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/lifecycle"
)

// env is a fake environment for api_key_env.
func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// minimal is the smallest valid config; error cases below add to it, so its lines are counted:
// the first line after it is line 7.
const minimal = `[targets.a]
adapter = "openai"
url = "http://127.0.0.1:1/v1"

[routes.r]
targets = ["a"]
`

const hashTest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" // sha256("test")

var ignoreStats = cmpopts.IgnoreFields(core.Target{}, "Stats")

// TestParseScrapeOnlyKey: routes = [] is a key that may use no route (for scraping /metrics),
// not the same as leaving routes out (every route).
func TestParseScrapeOnlyKey(t *testing.T) {
	cfg, err := Parse([]byte(minimal+"[[keys]]\nname = \"prom\"\nsha256 = \""+hashTest+"\"\nroutes = []\n"), "k.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	k := cfg.Keys[0]
	if k.Routes == nil || len(k.Routes) != 0 || k.Allows("r") {
		t.Errorf("routes = [] compiled to %v (allows r: %v), want an empty allowlist", k.Routes, k.Allows("r"))
	}
}

func TestParseMetricsOff(t *testing.T) {
	cfg, err := Parse([]byte("metrics = false\n"+minimal), "m.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Metrics {
		t.Error("metrics = false left Metrics on")
	}
}

// TestParseMaxConnections: max_connections is a count of connections, 4096 when left out, 0 for
// no cap, and never negative.
func TestParseMaxConnections(t *testing.T) {
	for _, tc := range []struct {
		line string
		want int
	}{{"", DefaultMaxConnections}, {"max_connections = 0\n", 0}, {"max_connections = 64\n", 64}} {
		cfg, err := Parse([]byte(tc.line+minimal), "c.toml", nil)
		if err != nil {
			t.Fatalf("%q: %v", tc.line, err)
		}
		if cfg.MaxConnections != tc.want {
			t.Errorf("%q: MaxConnections = %d, want %d", tc.line, cfg.MaxConnections, tc.want)
		}
	}
	_, err := Parse([]byte("max_connections = -1\n"+minimal), "c.toml", nil)
	if err == nil || !strings.Contains(err.Error(), "c.toml:1: max_connections: must be 0 (no cap) or more, got -1") {
		t.Errorf("max_connections = -1: %v", err)
	}
	if DefaultMaxConnections < 1000+16 {
		t.Errorf("DefaultMaxConnections = %d would hold back the bench's 1,000 streams", DefaultMaxConnections)
	}
}

func TestParseDefaults(t *testing.T) {
	cfg, err := Parse([]byte(minimal), "min.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	a := &core.Target{Name: "a", Index: 0, Adapter: core.AdapterOpenAI, URL: "http://127.0.0.1:1/v1",
		Model: "a", Privacy: core.Private, Tools: true, Vision: true, Timeout: 120 * time.Second, IdleTimeout: 120 * time.Second, Weight: 1,
		WindowCountsMaxTokens: true, StreamUsage: true, HealthURL: "http://127.0.0.1:1/v1/models", HealthInterval: 30 * time.Second,
		HealthTimeout: 5 * time.Second, DegradedAfter: 2500 * time.Millisecond}
	want := &Config{
		Source:       "min.toml",
		Listen:       "127.0.0.1:8000",
		MaxBodyBytes: 10 << 20,
		// max_connections left out: the default cap (CONFIG.md; TestParseMaxConnections).
		MaxConnections: 4096,
		Keys:           []Key{},
		Targets:        []*core.Target{a},
		Routes: []*Route{{Name: "r", Targets: []*core.Target{a}, Policy: core.PolicyOrdered,
			FallbackOn: core.DefaultFallbackOn, Guard: []core.ClassSet{0}}},
		Cooldown: Cooldown{Failures: 3, Base: 30 * time.Second, Max: 300 * time.Second},
		Metrics:  true,
	}
	if diff := cmp.Diff(want, cfg, ignoreStats, cmpopts.EquateEmpty(), cmpopts.IgnoreUnexported(Config{})); diff != "" {
		t.Errorf("Parse(minimal) mismatch (-want +got):\n%s", diff)
	}
	if cfg.Targets[0].Stats == nil {
		t.Error("Stats is nil")
	}
	if cfg.Routes[0].Targets[0] != cfg.Targets[0] {
		t.Error("a route's target is not the shared *core.Target")
	}
	if !cfg.Open() {
		t.Error("Open() = false with no keys")
	}
}

// TestWindowCountsMaxTokens: by default only an openai target counts max_tokens against its
// context window (the OpenAI API refuses such a request; Ollama makes room itself, and SAIF's
// protocol does not say); the key overrides it either way.
func TestWindowCountsMaxTokens(t *testing.T) {
	cfg, err := Parse([]byte(`
[targets.oa]
adapter = "openai"
url = "http://127.0.0.1:1/v1"
[targets.ol]
adapter = "ollama"
url = "http://127.0.0.1:2"
[targets.sa]
adapter = "saif"
url = "http://127.0.0.1:3"
[targets.oa-off]
adapter = "openai"
url = "http://127.0.0.1:4/v1"
window_counts_max_tokens = false
[targets.ol-on]
adapter = "ollama"
url = "http://127.0.0.1:5"
window_counts_max_tokens = true
[routes.r]
targets = ["oa", "ol", "sa", "oa-off", "ol-on"]
`), "w.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, tg := range cfg.Targets {
		got[tg.Name] = tg.WindowCountsMaxTokens
	}
	want := map[string]bool{"oa": true, "ol": false, "sa": false, "oa-off": false, "ol-on": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("WindowCountsMaxTokens (-want +got):\n%s", diff)
	}
}

// view is what TestParseGood compares: the compiled shape, by name.
type view struct {
	Listen  string
	Targets map[string]targetView
	Routes  map[string]routeView
	Keys    map[string]keyView
}

type targetView struct {
	Index                      int
	Adapter, URL, Model, Class string
	Timeout                    time.Duration
	Tools, Vision              bool
	Weight, Retries            int
	APIKey                     string
	Reasoning                  core.Reasoning
	Specialists                []string
}

type routeView struct {
	Targets    []string
	Strict     bool
	Policy     string
	FallbackOn []string
	Guard      []string
}

type keyView struct {
	Routes []string
	Strict bool
}

func classNames(s core.ClassSet) []string {
	var out []string
	for _, c := range s.Classes() {
		out = append(out, c.String())
	}
	return out
}

func viewOf(c *Config) view {
	v := view{Listen: c.Listen, Targets: map[string]targetView{}, Routes: map[string]routeView{},
		Keys: map[string]keyView{}}
	for _, t := range c.Targets {
		v.Targets[t.Name] = targetView{t.Index, t.Adapter.String(), t.URL, t.Model, t.Privacy.String(),
			t.Timeout, t.Tools, t.Vision, t.Weight, t.MaxRetries, string(t.APIKey), t.Reasoning, t.Specialists}
	}
	for _, r := range c.Routes {
		rv := routeView{Strict: r.Strict, Policy: r.Policy.String(), FallbackOn: classNames(r.FallbackOn)}
		for i, t := range r.Targets {
			rv.Targets = append(rv.Targets, t.Name)
			rv.Guard = append(rv.Guard, strings.Join(classNames(r.Guard[i]), "+"))
		}
		v.Routes[r.Name] = rv
	}
	for _, k := range c.Keys {
		kv := keyView{Strict: k.Strict}
		for n := range k.Routes {
			kv.Routes = append(kv.Routes, n)
		}
		slices.Sort(kv.Routes)
		v.Keys[k.Name] = kv
	}
	return v
}

func TestParseGood(t *testing.T) {
	def := func(tv targetView) targetView {
		tv.Class, tv.Timeout, tv.Tools, tv.Vision, tv.Weight = "private", 120*time.Second, true, true, 1
		if tv.Model == "" {
			tv.Model = "a"
		}
		return tv
	}
	a := def(targetView{Adapter: "openai", URL: "http://127.0.0.1:1/v1"})
	r := routeView{Targets: []string{"a"}, Policy: "ordered", FallbackOn: classNames(core.DefaultFallbackOn),
		Guard: []string{""}}
	tests := []struct {
		name string
		toml string
		env  func(string) string
		want view
	}{
		{
			name: "open gateway on localhost",
			toml: "listen = \"localhost:9000\"\n" + minimal,
			want: view{Listen: "localhost:9000", Targets: map[string]targetView{"a": a},
				Routes: map[string]routeView{"r": r}},
		},
		{
			name: "open gateway on IPv6 loopback",
			toml: "listen = \"[::1]:9000\"\n" + minimal,
			want: view{Listen: "[::1]:9000", Targets: map[string]targetView{"a": a},
				Routes: map[string]routeView{"r": r}},
		},
		{
			name: "keys allow a public listen; auto is a known route name",
			toml: "listen = \"0.0.0.0:80\"\n" + minimal + `
[[keys]]
name = "k"
sha256 = "` + strings.ToUpper(hashTest) + `"
routes = ["r", "auto"]
strict = true
`,
			want: view{Listen: "0.0.0.0:80", Targets: map[string]targetView{"a": a},
				Routes: map[string]routeView{"r": r},
				Keys:   map[string]keyView{"k": {Routes: []string{"auto", "r"}, Strict: true}}},
		},
		{
			name: "dotted keys and inline array of keys",
			toml: `keys = [{name = "k", sha256 = "` + hashTest + `"}]
targets.a.adapter = "openai"
targets.a.url = "http://127.0.0.1:1/v1"
routes.r.targets = ["a"]
`,
			want: view{Listen: DefaultListen, Targets: map[string]targetView{"a": a},
				Routes: map[string]routeView{"r": r}, Keys: map[string]keyView{"k": {}}},
		},
		{
			name: "saif defaults, env key, guard, empty fallback_on, sorted targets",
			toml: `[targets.z]
adapter = "saif"
url = "https://saif.example/v1/"
[targets.a]
adapter = "openai"
url = "http://127.0.0.1:1/v1"
class = "public"
api_key_env = "UP_KEY"
timeout = "0s"
max_retries = 3
weight = 5
reasoning = "think-tags"
tools = false
[routes.r]
targets = ["z", "a"]
policy = "latency"
fallback_on = []
guard = { a = ["overflow", "rate_limit"] }
`,
			env: env("UP_KEY", "sk-secret"),
			want: view{Listen: DefaultListen,
				Targets: map[string]targetView{
					"a": {Index: 0, Adapter: "openai", URL: "http://127.0.0.1:1/v1", Model: "a", Class: "public",
						Vision: true, Weight: 5, Retries: 3, APIKey: "sk-secret", Reasoning: core.ReasoningThinkTags},
					"z": {Index: 1, Adapter: "saif", URL: "https://saif.example/v1", Model: "z", Class: "private",
						Timeout: 120 * time.Second, Weight: 1, // saif: no tools, no images
						Specialists: DefaultSpecialists()},
				},
				Routes: map[string]routeView{"r": {Targets: []string{"z", "a"}, Policy: "latency",
					Guard: []string{"", "rate_limit+overflow"}}},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tc.toml), "good.toml", tc.env)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tc.want, viewOf(cfg), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
			for i, tg := range cfg.Targets {
				if tg.Index != i || tg.Stats == nil {
					t.Errorf("Targets[%d] = %s: Index %d, Stats %v", i, tg.Name, tg.Index, tg.Stats)
				}
			}
		})
	}
}

// TestParseHealthAndLifecycle compiles the health and lifecycle keys, defaults and given.
func TestParseHealthAndLifecycle(t *testing.T) {
	type health struct {
		URL                         string
		Every, Timeout, DegradedAft time.Duration
	}
	cases := []struct {
		name   string
		toml   string
		health map[string]health
		lc     Lifecycle
	}{
		{
			name: "each adapter's default health path",
			toml: `[targets.o]
adapter = "openai"
url = "http://127.0.0.1:1/v1"
[targets.l]
adapter = "ollama"
url = "http://127.0.0.1:11434/"
[targets.s]
adapter = "saif"
url = "http://127.0.0.1:8443/v1"
[targets.s2]
adapter = "saif"
url = "http://127.0.0.1:8443"
[routes.r]
targets = ["o"]
`,
			health: map[string]health{
				"o":  {"http://127.0.0.1:1/v1/models", 30 * time.Second, 5 * time.Second, 2500 * time.Millisecond},
				"l":  {"http://127.0.0.1:11434/api/tags", 30 * time.Second, 5 * time.Second, 2500 * time.Millisecond},
				"s":  {"http://127.0.0.1:8443/v1/health", 30 * time.Second, 5 * time.Second, 2500 * time.Millisecond},
				"s2": {"http://127.0.0.1:8443/v1/health", 30 * time.Second, 5 * time.Second, 2500 * time.Millisecond},
			},
		},
		{
			name: "given health keys; a managed group with {port} everywhere",
			toml: `state_file = "/var/lib/hayula/lru.json"
wait_healthy = true
[targets.m]
adapter = "openai"
url = "http://127.0.0.1:{port}/v1"
command = ["llama-server", "-m", "m.gguf", "--port", "{port}"]
group = "gpu"
idle_stop = "15m"
load_timeout = "90s"
health_path = "http://127.0.0.1:{port}/health"
health_interval = "0s"
[targets.p]
adapter = "openai"
url = "http://127.0.0.1:{port}/v1"
command = ["llama-server", "--port", "{port}"]
group = "gpu"
health_path = "/models?ready=1"
health_timeout = "1s"
degraded_after = "0s"
[targets.solo]
adapter = "ollama"
url = "http://127.0.0.1:11434"
command = ["ollama", "serve"]
[groups.gpu]
slots = 2
pinned = ["p"]
[routes.r]
targets = ["m", "p", "solo"]
`,
			health: map[string]health{
				"m":    {"http://127.0.0.1:{port}/health", 0, 5 * time.Second, 2500 * time.Millisecond},
				"p":    {"http://127.0.0.1:{port}/v1/models?ready=1", 30 * time.Second, time.Second, 0},
				"solo": {"http://127.0.0.1:11434/api/tags", 30 * time.Second, 5 * time.Second, 2500 * time.Millisecond},
			},
			lc: Lifecycle{
				Specs: []lifecycle.Spec{
					{Name: "m", Command: []string{"llama-server", "-m", "m.gguf", "--port", "{port}"},
						URL: "http://127.0.0.1:{port}/v1", HealthURL: "http://127.0.0.1:{port}/health",
						IdleStop: 15 * time.Minute, Group: "gpu", LoadTimeout: 90 * time.Second},
					{Name: "p", Command: []string{"llama-server", "--port", "{port}"},
						URL: "http://127.0.0.1:{port}/v1", HealthURL: "http://127.0.0.1:{port}/v1/models?ready=1",
						Group: "gpu", LoadTimeout: 2 * time.Minute},
					{Name: "solo", Command: []string{"ollama", "serve"}, URL: "http://127.0.0.1:11434",
						HealthURL: "http://127.0.0.1:11434/api/tags", LoadTimeout: 2 * time.Minute},
				},
				Groups:      []lifecycle.GroupSpec{{Name: "gpu", Slots: 2, Pinned: []string{"p"}}},
				StateFile:   "/var/lib/hayula/lru.json",
				WaitHealthy: true,
			},
		},
		{
			name: "a relative state_file is the config's neighbour",
			toml: "state_file = \"lru.json\"\n" + minimal,
			health: map[string]health{
				"a": {"http://127.0.0.1:1/v1/models", 30 * time.Second, 5 * time.Second, 2500 * time.Millisecond},
			},
			lc: Lifecycle{StateFile: "/etc/hayula/lru.json"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tc.toml), "/etc/hayula/gateway.toml", nil)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got := map[string]health{}
			for _, tg := range cfg.Targets {
				got[tg.Name] = health{tg.HealthURL, tg.HealthInterval, tg.HealthTimeout, tg.DegradedAfter}
			}
			if diff := cmp.Diff(tc.health, got); diff != "" {
				t.Errorf("health (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.lc, cfg.Lifecycle, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Lifecycle (-want +got):\n%s", diff)
			}
			if _, err := lifecycle.New(cfg.Lifecycle.Specs, cfg.Lifecycle.Groups, lifecycle.Options{}); err != nil {
				t.Errorf("lifecycle.New refuses what config accepted: %v", err)
			}
			for _, s := range cfg.Lifecycle.Specs {
				if !cfg.Lifecycle.Managed(s.Name) {
					t.Errorf("Managed(%s) = false", s.Name)
				}
			}
			if cfg.Lifecycle.Managed("nope") {
				t.Error("Managed(nope) = true")
			}
		})
	}
}

// wantErr is one expected problem: its line and a part of its message.
type wantErr struct {
	line int
	msg  string
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		toml string
		env  func(string) string
		want []wantErr
	}{
		{"syntax error", "listen = \n" + minimal, nil, []wantErr{{1, "expected value"}}},
		{"type mismatch", minimal + "[targets.b]\nweight = \"two\"\n", nil,
			[]wantErr{{8, "targets.b.weight: want an integer, got a string (a number is written without quotes)"}}},
		{"type mismatch in second [[keys]]", minimal + `[[keys]]
name = "a"
sha256 = "` + hashTest + `"
strict = false
[[keys]]
name = "b"
strict = "yes"
[[keys]]
name = "c"
strict = false
`, nil, []wantErr{{13, "keys[1].strict: want a boolean, got a string"}}},
		// As in [[keys]], the library's line for a key of an [[auto.intents]] block is that of the
		// key in the last block that has it: the first block's mistake was said at the second's
		// line, as auto.intents.min_score, and its hint read that line's right value.
		{"type mismatch in the first [[auto.intents]]", minimal + `[auto]
default = "r"
specialist_route = "r"
[[auto.intents]]
name = "x"
route = "r"
terms = ["a"]
min_score = "3"
[[auto.intents]]
name = "y"
route = "r"
terms = ["b"]
min_score = 3
`, nil, []wantErr{{14, `auto.intents[0].min_score: want an integer, got a string (a number is written without quotes: min_score = 3, not min_score = "3")`}}},
		{"type mismatch in an array of the second [[auto.intents]]", minimal + `[auto]
default = "r"
specialist_route = "r"
[[auto.intents]]
name = "x"
route = "r"
terms = ["a"]
any = true
[[auto.intents]]
name = "y"
route = "r"
terms = [1]
any = true
`, nil, []wantErr{{18, `auto.intents[1].terms`}}},
		{"unknown top-level key", "lissten = \"127.0.0.1:1\"\n" + minimal, nil,
			[]wantErr{{1, `unknown key lissten (did you mean "listen"?)`}}},
		{"unknown target key", minimal + "[targets.b]\nadapter = \"openai\"\nurl = \"http://x\"\nurll = \"y\"\n", nil,
			[]wantErr{{10, `unknown key targets.b.urll (did you mean "url"?)`}}},
		{"unknown key in the second [[keys]] only", minimal + `[[keys]]
name = "a"
sha256 = "` + hashTest + `"
[[keys]]
name = "b"
sha256 = "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9"
rutes = ["r"]
`, nil, []wantErr{{13, `unknown key keys[1].rutes (did you mean "routes"?)`}}},
		{"unknown table reported once", minimal + "[telemetry]\nport = 9\n[telemetry.sub]\nx = 1\n", nil,
			[]wantErr{{7, "unknown key telemetry"}}},
		{"a value where a table belongs", "targets = 5\n[routes.s]\ntargets = [\"a\"]\nguard = 3\n", nil,
			[]wantErr{{1, "targets: want a table, got integer"}, {3, `routes.s.targets[0]: no target named "a"`},
				{4, "routes.s.guard: want a table, got integer"}}},
		{"negative key caps", minimal + "[[keys]]\nname = \"k\"\nsha256 = \"" + hashTest + "\"\nrpm = -1\nmax_concurrent = -2\ntpm = -3\n", nil,
			[]wantErr{{10, "keys[0].rpm: must be 0 (no limit) or more, got -1"}, {11, "keys[0].max_concurrent: must be 0 (no limit) or more, got -2"},
				{12, "keys[0].tpm: must be 0 (no limit) or more, got -3"}}},
		{"keys are case-sensitive", minimal + "[targets.b]\nADAPTER = \"openai\"\nurl = \"http://x\"\n", nil,
			[]wantErr{{8, `unknown key targets.b.ADAPTER (did you mean "adapter"?)`}}},
		// The decoder matches a table's name case-insensitively too: [Targets.b] and [[Keys]] loaded
		// as targets and keys, and beside their lower-case spelling one replaced the other, whose
		// keys were then reported unknown under their own right names (TestParseErrors cases below
		// failed before unknown looked at every name of a path, not only its last).
		{"table names are case-sensitive", minimal + "[Targets.b]\nadapter = \"openai\"\nurl = \"http://x\"\n", nil,
			[]wantErr{{7, `unknown key Targets (did you mean "targets"?)`}}},
		{"[[Keys]] is no [[keys]]", minimal + "[[Keys]]\nname = \"k\"\nsha256 = \"" + hashTest + "\"\n", nil,
			[]wantErr{{7, `unknown key Keys (did you mean "keys"?)`}}},
		{"[[Keys]] beside [[keys]]", minimal + "[[keys]]\nname = \"k\"\nsha256 = \"" + hashTest + "\"\n" +
			"[[Keys]]\nname = \"k2\"\nsha256 = \"" + hashTest[:63] + "0\"\n", nil,
			[]wantErr{{10, `unknown key Keys (did you mean "keys"?)`}}},
		{"[[auto.Intents]]", minimal + "[auto]\ndefault = \"r\"\nspecialist_route = \"r\"\n[[auto.Intents]]\nname = \"x\"\nroute = \"r\"\nterms = [\"a\"]\n", nil,
			[]wantErr{{10, `unknown key auto.Intents (did you mean "intents"?)`}}},
		// What the misspelt table holds is not checked as well: it would be said without a line.
		{"[Cooldown]", minimal + "[Cooldown]\nfailures = 0\n", nil,
			[]wantErr{{7, `unknown key Cooldown (did you mean "cooldown"?)`}}},
		// Guard = {} is a misspelt key, not a route name with an unquoted dot.
		{"a table-valued key in the wrong case", minimal + "[routes.s]\ntargets = [\"a\"]\nGuard = {}\n", nil,
			[]wantErr{{9, `unknown key routes.s.Guard (did you mean "guard"?)`}}},
		{"inline upstream secret", minimal + "[targets.b]\nadapter = \"openai\"\nurl = \"http://x\"\napi_key = \"sk-1\"\n", nil,
			[]wantErr{{10, "targets.b.api_key: secrets are refused in the config: put the upstream key in an environment variable and name that variable with api_key_env"}}},
		{"inline client key", minimal + "[[keys]]\nname = \"k\"\ntoken = \"hk-1\"\n", nil,
			[]wantErr{{7, "keys[0].sha256: missing"}, {9, "keys[0].token: the API key itself never goes in the config: store its hash as sha256"}}},
		{"secret named secret", "secret = \"x\"\n" + minimal, nil, []wantErr{{1, "secret: secrets are refused"}}},
		{"duration not a string", minimal + "[cooldown]\nmax = 300\n", nil,
			[]wantErr{{8, `cooldown.max: want a string, got an integer (a duration is a string with its unit: max = "300s" for 300 seconds, not max = 300)`}}},
		{"bad duration", minimal + "[targets.b]\nadapter = \"openai\"\nurl = \"http://x\"\ntimeout = \"soon\"\n", nil,
			[]wantErr{{10, `targets.b.timeout: "soon" is not a duration`}}},
		{"bad idle_timeout", minimal + "[targets.b]\nadapter = \"openai\"\nurl = \"http://x\"\nidle_timeout = \"soon\"\n", nil,
			[]wantErr{{10, `targets.b.idle_timeout: "soon" is not a duration`}}},
		{"negative idle_timeout", minimal + "[targets.b]\nadapter = \"openai\"\nurl = \"http://x\"\nidle_timeout = \"-5s\"\n", nil,
			[]wantErr{{10, `targets.b.idle_timeout: "-5s" is negative`}}},
		{"idle_timeout not a string", minimal + "[targets.b]\nadapter = \"openai\"\nurl = \"http://x\"\nidle_timeout = 60\n", nil,
			[]wantErr{{10, `targets.b.idle_timeout: want a string, got an integer (a duration is a string with its unit: idle_timeout = "60s" for 60 seconds, not idle_timeout = 60)`}}},
		{"negative duration", minimal + "[cooldown]\nbase = \"-1s\"\n", nil,
			[]wantErr{{8, `cooldown.base: "-1s" is negative`}}},
		{"cooldown max below base", minimal + "[cooldown]\nfailures = 0\nbase = \"1m\"\nmax = \"10s\"\n", nil,
			[]wantErr{{8, "cooldown.failures: must be at least 1"}, {10, "cooldown.max: 10s is shorter than cooldown.base 1m0s"}}},
		{"unknown adapter and class and reasoning", minimal + `[targets.b]
adapter = "grpc"
url = "http://x"
class = "secret-ish"
reasoning = "hide"
`, nil, []wantErr{{8, `unknown adapter "grpc"`}, {10, `unknown class "secret-ish"`}, {11, `unknown reasoning "hide"`}}},
		{"missing adapter and url", minimal + "[targets.b]\nmodel = \"m\"\n", nil,
			[]wantErr{{7, "targets.b.adapter: missing"}, {7, "targets.b.url: missing"}}},
		{"url not absolute", minimal + "[targets.b]\nadapter = \"openai\"\nurl = \"127.0.0.1:8000/v1\"\n", nil,
			[]wantErr{{9, `targets.b.url: "127.0.0.1:8000/v1" is not an absolute http or https URL`}}},
		{"url not http", minimal + "[targets.b]\nadapter = \"openai\"\nurl = \"ftp://host/v1\"\n", nil,
			[]wantErr{{9, "is not an absolute http or https URL"}}},
		{"url with credentials", minimal + "[targets.b]\nadapter = \"openai\"\nurl = \"https://u:pw@host/v1\"\n", nil,
			[]wantErr{{9, "targets.b.url: credentials in the URL are refused"}}},
		{"numbers out of range", "max_body_bytes = 0\n" + minimal + `[targets.b]
adapter = "openai"
url = "http://x"
weight = 0
max_retries = 11
context_window = -1
`, nil, []wantErr{{1, "max_body_bytes: must be positive"}, {11, "weight: must be at least 1"},
			{12, "max_retries: must be from 0 to 10"}, {13, "context_window: must not be negative"}}},
		{"specialists need adapter saif", minimal + "[targets.b]\nadapter = \"openai\"\nurl = \"http://x\"\nspecialists = [\"x\"]\n", nil,
			[]wantErr{{10, `targets.b.specialists: only a target with adapter = "saif" has specialists`}}},
		{"api_key_env unset", minimal + "[targets.b]\nadapter = \"openai\"\nurl = \"http://x\"\napi_key_env = \"NOPE\"\n",
			env("OTHER", "x"), []wantErr{{10, "targets.b.api_key_env: environment variable NOPE is unset or empty"}}},
		{"api_key_env holding the key itself", minimal + "[targets.b]\nadapter = \"openai\"\nurl = \"http://x\"\napi_key_env = \"sk-or-v1-abc\"\n",
			nil, []wantErr{{10, "must name an environment variable"}}},
		{"route naming a missing target, listed over lines", minimal + `[routes.s]
targets = [
  "a",
  "b",
]
`, nil, []wantErr{{10, `routes.s.targets[1]: no target named "b"`}}},
		{"duplicate target in a route", minimal + "[routes.s]\ntargets = [\"a\", \"a\"]\n", nil,
			[]wantErr{{8, `routes.s.targets[1]: target "a" is listed twice`}}},
		{"empty route", minimal + "[routes.s]\ntargets = []\n", nil,
			[]wantErr{{8, "routes.s.targets: the route has no targets"}}},
		{"route without targets key", minimal + "[routes.s]\npolicy = \"ordered\"\n", nil,
			[]wantErr{{7, "routes.s.targets: the route has no targets"}}},
		{"unknown policy", minimal + "[routes.s]\ntargets = [\"a\"]\npolicy = \"random\"\n", nil,
			[]wantErr{{9, `routes.s.policy: unknown policy "random"`}}},
		{"bad fallback classes", minimal + `[routes.s]
targets = ["a"]
fallback_on = [
  "timeout",
  "5xx",
  "request",
  "client_gone",
]
`, nil, []wantErr{{11, `routes.s.fallback_on[1]: unknown failure class "5xx"`},
			{12, `routes.s.fallback_on[2]: "request" failures are the client's own`},
			{13, `routes.s.fallback_on[3]: "client_gone" means nobody is left`}}},
		{"guard problems", minimal + `[targets.b]
adapter = "openai"
url = "http://x"
[routes.s]
targets = ["a", "b"]
guard = { a = ["overflow"], c = ["overflow"] }
[routes.t]
targets = ["a", "b"]
guard = { b = [] }
[routes.u]
targets = ["a", "b"]
guard = { b = ["overheat"] }
`, nil, []wantErr{{12, `routes.s.guard.a: "a" is the route's first target`},
			{12, `routes.s.guard.c: "c" is not a target of this route`},
			{15, `routes.t.guard.b: empty`},
			{18, `routes.u.guard.b[0]: unknown failure class "overheat"`}}},
		{"route named auto", minimal + "[routes.auto]\ntargets = [\"a\"]\n", nil,
			[]wantErr{{7, `routes.auto: the route name "auto" is reserved`}}},
		{"bad names", minimal + "[targets.\"a b\"]\nadapter = \"openai\"\nurl = \"http://x\"\n[routes.\"x,y\"]\ntargets = [\"a\"]\n", nil,
			[]wantErr{{7, `targets."a b": bad target name`}, {10, `routes."x,y": bad route name`}}},
		// An [auto] rule's problem at its key's line, not at the [auto] header.
		{"auto rule at its line", minimal + "[routes.saif]\ntargets = [\"a\"]\n[auto]\ndefault = \"saif\"\n" +
			"[[auto.intents]]\nname = \"security\"\nroute = \"saif\"\n[[auto.intents]]\nname = \"x\"\nroute = \"saif\"\n" +
			"terms = [\"a\",\n  \"b^0\"]\n", nil,
			[]wantErr{{18, `auto: intents[1].terms[1]: weight in "b^0" must be ^1 to ^9`}}},
		{"auto rule's number at its line", minimal + "[routes.saif]\ntargets = [\"a\"]\n[auto]\ndefault = \"saif\"\n" +
			"[[auto.intents]]\nname = \"x\"\nroute = \"saif\"\nterms = [\"a\"]\nmin_score = -1\n", nil,
			[]wantErr{{15, `auto: intents[0].min_score: negative`}}},
		// Every problem in the [auto] rules, each at its line, as for the rest of the file.
		{"auto rules' problems all at once", minimal + "[routes.saif]\ntargets = [\"a\"]\n[auto]\ndefault = \"saif\"\n" +
			"[[auto.intents]]\nname = \"x\"\nroute = \"saif\"\nterms = [\"a^0\", \"b\", \"c^10\"]\nmin_score = -1\n" +
			"languages = [\"klingon\"]\n[[auto.intents]]\nname = \"x\"\nroute = \"saif\"\nterms = [\"d\"]\n", nil,
			[]wantErr{{14, `auto: intents[0].terms[0]: weight in "a^0" must be ^1 to ^9`},
				{14, `auto: intents[0].terms[2]: weight in "c^10" must be ^1 to ^9`},
				{15, `auto: intents[0].min_score: negative`},
				{16, `auto: intents[0].languages[0]: unknown language "klingon" (want english, arabic or mixed)`},
				{18, `auto: intents[1].name: duplicate intent "x"`}}},
		// CONFIG.md: 1–128 characters.
		{"a name of 129 characters", minimal + "[targets." + strings.Repeat("n", 129) + "]\nadapter = \"openai\"\nurl = \"http://x\"\n", nil,
			[]wantErr{{7, "targets." + strings.Repeat("n", 129) + ": bad target name"}}},
		{"key problems", minimal + `[[keys]]
name = "k"
sha256 = "abc"
[[keys]]
name = "k"
sha256 = "hk-abcdef"
routes = ["r", "auto", "nope"]
[[keys]]
name = "j"
sha256 = "` + hashTest + `"
routes = []
[[keys]]
name = "i"
sha256 = "` + hashTest + `"
[[keys]]
sha256 = "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9"
`, nil, []wantErr{{9, "keys[0].sha256: want 64 hex digits (gateway keygen prints them), got 3 characters"},
			{11, `keys[1].name: duplicate key name "k" (also keys[0])`},
			{12, "keys[1].sha256: holds a key, not its hash"},
			{13, `keys[1].routes[2]: no route named "nope"`},
			{20, "keys[3].sha256: the same hash as keys[2]"},
			{21, "keys[4].name: missing"}}},
		{"open gateway on a public address", "listen = \"0.0.0.0:8000\"\n" + minimal, nil,
			[]wantErr{{1, "listen: no [[keys]] configured, so the gateway would be open to anyone who can reach \"0.0.0.0:8000\": an open gateway may only listen on loopback"}}},
		{"open gateway on all interfaces", "listen = \":8000\"\n" + minimal, nil,
			[]wantErr{{1, "an open gateway may only listen on loopback"}}},
		{"bad listen", "listen = \"localhost\"\n" + minimal, nil,
			[]wantErr{{1, `listen: "localhost" is not host:port`}, {1, "open gateway may only listen on loopback"}}},
		{"zero routes", "[targets.a]\nadapter = \"openai\"\nurl = \"http://x\"\n", nil,
			[]wantErr{{0, "no routes"}}},
		{"health keys", minimal + `[targets.b]
adapter = "openai"
url = "http://x/v1"
health_path = ""
health_interval = "often"
health_timeout = "0s"
degraded_after = "-1s"
`, nil, []wantErr{{10, "targets.b.health_path: empty; leave it out for the adapter's default"},
			{11, `targets.b.health_interval: "often" is not a duration`},
			{12, "targets.b.health_timeout: must be longer than 0s"},
			{13, `targets.b.degraded_after: "-1s" is negative`}}},
		{"a health duration that is not a string", minimal + "[targets.b]\nadapter = \"openai\"\nurl = \"http://x\"\ndegraded_after = 10\n", nil,
			[]wantErr{{10, `targets.b.degraded_after: want a string, got an integer (a duration is a string`}}},
		{"health keys, after decoding", minimal + `[targets.b]
adapter = "openai"
url = "http://x/v1"
health_path = "models"
[targets.c]
adapter = "openai"
url = "http://x/v1"
health_path = "http://u:p@x/health"
`, nil, []wantErr{{10, `targets.b.health_path: "models" is neither a path starting with / (joined to the url) nor an absolute http or https URL`},
			{14, "targets.c.health_path: credentials in the URL are refused"}}},
		{"lifecycle keys without a command", minimal + `[targets.b]
adapter = "openai"
url = "http://127.0.0.1:{port}/v1"
idle_stop = "1m"
group = "g"
load_timeout = "1m"
health_path = "http://127.0.0.1:{port}/health"
`, nil, []wantErr{{9, "targets.b.url: {port} is the port the gateway picks for a process it starts; this target has no command"},
			{10, "targets.b.idle_stop: only a target with a command has idle_stop"},
			{11, "targets.b.group: only a target with a command has a group"},
			{12, "targets.b.load_timeout: only a target with a command has load_timeout"},
			{13, "targets.b.health_path: {port} is the port the gateway picks"}}},
		{"command problems", minimal + `[targets.b]
adapter = "openai"
url = "http://127.0.0.1:8001/v1"
command = []
[targets.c]
adapter = "openai"
url = "http://127.0.0.1:8002/v1"
command = ["", "--port", "8002"]
group = "nope"
load_timeout = "0s"
idle_stop = "soon"
health_path = "http://127.0.0.1:{port}/health"
`, nil, []wantErr{{10, "targets.b.command: empty: give the program and its arguments"},
			{14, "targets.c.command[0]: empty program name"},
			{15, `targets.c.group: no group named "nope": add a [groups.nope] table`},
			{16, "targets.c.load_timeout: must be longer than 0s"},
			{17, `targets.c.idle_stop: "soon" is not a duration`},
			{18, "targets.c.health_path: uses {port} but url does not"}}},
		{"group problems", "state_file = \"\"\n" + minimal + `[targets.m1]
adapter = "openai"
url = "http://127.0.0.1:{port}/v1"
command = ["srv", "{port}"]
group = "g"
idle_stop = "5m"
[targets.m2]
adapter = "openai"
url = "http://127.0.0.1:{port}/v1"
command = ["srv", "{port}"]
group = "g"
[targets.m3]
adapter = "openai"
url = "http://127.0.0.1:{port}/v1"
command = ["srv", "{port}"]
group = "h"
[groups.g]
slots = 1
pinned = ["m1", "m2", "m1", "a", "ghost"]
[groups.h]
slots = 0
[groups.i]
slots = 1
[groups."x y"]
slots = 1
[groups.j]
pinned = ["m3"]
`, nil, []wantErr{{1, "state_file: empty"},
			{26, `groups.g.pinned[0]: "m1" has idle_stop, but a pinned member is never stopped`},
			{26, `groups.g.pinned[2]: "m1" is pinned twice`},
			{26, `groups.g.pinned[3]: "a" is not a member of this group`},
			{26, `groups.g.pinned[4]: no target named "ghost"`},
			{26, `groups.g.pinned: 4 pinned members do not fit in 1 slots`},
			{28, "groups.h.slots: must be at least 1, got 0"},
			{29, `groups.i: no target is in this group`},
			{31, `groups."x y": bad group name`},
			{31, `groups."x y": no target is in this group`},
			{33, "groups.j: no target is in this group"},
			{33, "groups.j.slots: missing"},
			{34, `groups.j.pinned[0]: "m3" is not a member of this group`}}},
		{"every slot pinned leaves the others out", minimal + `[targets.m1]
adapter = "openai"
url = "http://127.0.0.1:{port}/v1"
command = ["srv", "{port}"]
group = "g"
[targets.m2]
adapter = "openai"
url = "http://127.0.0.1:{port}/v1"
command = ["srv", "{port}"]
group = "g"
[groups.g]
slots = 1
pinned = ["m1"]
`, nil, []wantErr{{19, "groups.g.pinned: every slot is pinned, so the group's other members (m2) could never start"}}},
		{"unknown group key", minimal + "[groups.g]\nslot = 1\n", nil,
			[]wantErr{{7, "groups.g: no target is in this group"},
				{8, `unknown key groups.g.slot (did you mean "slots"?)`}}},
		{"several problems, in line order", `listen = "10.0.0.1:80"
[targets.a]
adapter = "openai"
url = "http://x"
timeout = "1 minute"
[routes.r]
targets = ["a", "b"]
`, nil, []wantErr{{1, "only listen on loopback"}, {5, "not a duration"}, {7, `no target named "b"`}}},
		// Configs that decode cleanly but could never serve what they promise.
		{"url with {port} and a command without it", minimal + `[targets.m]
adapter = "openai"
url = "http://127.0.0.1:{port}/v1"
command = ["llama-server", "--port", "8080"]
`, nil, []wantErr{{9, "targets.m.url: uses {port} but command does not"}}},
		// The mirror: the process is told a port nobody calls, and the gateway calls one nothing
		// it started listens on (it loaded before TestParseErrors had this case).
		{"a command with {port} and a url without it", minimal + `[targets.m]
adapter = "openai"
url = "http://127.0.0.1:8080/v1"
command = ["llama-server", "--port", "{port}"]
`, nil, []wantErr{{9, "targets.m.url: has no {port}, but command does"}}},
		{"a strict route of public targets only", `[targets.cloud]
adapter = "openai"
url = "http://127.0.0.1:1/v1"
class = "public"

[routes.r]
targets = ["cloud"]
strict = true
`, nil, []wantErr{{8, "routes.r.strict: every target of this strict route is public"}}},
		{"a strict key whose every route has only public targets", `[targets.cloud]
adapter = "openai"
url = "http://127.0.0.1:1/v1"
class = "public"

[routes.r]
targets = ["cloud"]

[[keys]]
name = "k"
sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
strict = true
`, nil, []wantErr{{12, "keys[0].strict: every route this strict key may use has only public targets"}}},
		{"a strict key limited to a route of public targets only", `[targets.cloud]
adapter = "openai"
url = "http://127.0.0.1:1/v1"
class = "public"

[targets.home]
adapter = "openai"
url = "http://127.0.0.1:2/v1"

[routes.r]
targets = ["cloud"]

[routes.h]
targets = ["home"]

[[keys]]
name = "k"
sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
strict = true
routes = ["r"]
`, nil, []wantErr{{19, "keys[0].strict: every route this strict key may use has only public targets"}}},
		{"a saif target declared with tools or images", minimal + `[targets.s]
adapter = "saif"
url = "http://127.0.0.1:2"
tools = true
vision = true
`, nil, []wantErr{{10, "targets.s.tools: the saif protocol carries no tools"}, {11, "targets.s.vision: the saif protocol carries no images"}}},
		{"stream_usage on a target that reports usage always", minimal + `[targets.o]
adapter = "ollama"
url = "http://127.0.0.1:2"
stream_usage = false
`, nil, []wantErr{{10, "targets.o.stream_usage: only an openai target is asked for a stream's usage"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tc.toml), "bad.toml", tc.env)
			if err == nil {
				t.Fatalf("Parse succeeded, want errors; summary:\n%s", cfg.Summary())
			}
			if cfg != nil {
				t.Error("Parse returned a config with its error")
			}
			got := Errors(err)
			var gotLines, wantLines []int
			for _, e := range got {
				gotLines = append(gotLines, e.Line)
				if e.File != "bad.toml" {
					t.Errorf("File = %q, want bad.toml", e.File)
				}
			}
			for _, w := range tc.want {
				wantLines = append(wantLines, w.line)
			}
			if diff := cmp.Diff(wantLines, gotLines); diff != "" {
				t.Fatalf("error lines mismatch (-want +got):\n%s\nerrors:\n%v", diff, err)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i].Msg, w.msg) {
					t.Errorf("error %d = %q, want it to contain %q", i, got[i].Msg, w.msg)
				}
			}
		})
	}
}

func TestErrorsNeverEchoSecrets(t *testing.T) {
	const secret = "sk-or-v1-0123456789"
	for _, doc := range []string{
		minimal + "[targets.b]\nadapter = \"openai\"\nurl = \"http://x\"\napi_key_env = \"" + secret + "\"\n",
		minimal + "[targets.b]\nadapter = \"openai\"\nurl = \"https://user:" + secret + "@host/v1\"\n",
		// A key pasted into the url's query, as some hosted APIs take it (?key=, ?api_key=).
		minimal + "[targets.b]\nadapter = \"openai\"\nurl = \"https://host/v1?key=" + secret + "\"\n",
		minimal + "[targets.b]\nadapter = \"openai\"\nurl = \"https://host/v1?x=1&api_key=" + secret + "\"\n",
		minimal + "[targets.b]\nadapter = \"openai\"\nurl = \"https://host/v1#access_token=" + secret + "\"\n",
		minimal + "[targets.b]\nadapter = \"openai\"\nurl = \"https://host/v1\"\nhealth_path = \"/h?token=" + secret + "\"\n",
		// A key written without quotes: the TOML library's syntax error quotes what it found.
		minimal + "[targets.b]\nadapter = \"openai\"\nurl = \"https://host/v1\"\ntoken = skorvSECRETabc123\n",
		minimal + "[targets.b]\nadapter = \"openai\"\nurl = \"https://host/v1\"\napi_key_env = skorvSECRETabc123\n",
		minimal + "[targets.b]\nadapter = \"openai\"\nurl = \"https://host/v1\"\napi_key = skorvSECRETabc123\n",
	} {
		_, err := Parse([]byte(doc), "s.toml", nil)
		if err == nil || strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "skorvSECRET") {
			t.Errorf("Parse error = %v: want an error that does not contain the secret", err)
		}
	}
}

func TestErrorString(t *testing.T) {
	tests := []struct {
		err  Error
		want string
	}{
		{Error{File: "g.toml", Line: 3, Msg: "bad"}, "g.toml:3: bad"},
		{Error{File: "g.toml", Msg: "bad"}, "g.toml: bad"},
		{Error{Line: 3, Msg: "bad"}, ":3: bad"},
		{Error{Msg: "bad"}, "bad"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	cfg, err := Load("testdata/full.toml", env("OPENROUTER_API_KEY", "sk-x"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Source != "testdata/full.toml" {
		t.Errorf("Source = %q", cfg.Source)
	}
	_, err = Load("testdata/missing.toml", nil)
	var ce *Error
	if !errors.As(err, &ce) || ce.File != "testdata/missing.toml" || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(missing) = %v: want a *Error for the file wrapping fs.ErrNotExist", err)
	}
}

func TestLookups(t *testing.T) {
	cfg, err := Load("testdata/full.toml", env("OPENROUTER_API_KEY", "sk-x"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		route, targ bool
	}{
		{"saif", true, true},
		{"private", true, false},
		{"spare", false, true},
		{"auto", false, false},
		{"", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := cfg.Route(tc.name)
			if ok != tc.route || (ok && r.Name != tc.name) {
				t.Errorf("Route(%q) = %v, %v; want found %v", tc.name, r, ok, tc.route)
			}
			tg, ok := cfg.Target(tc.name)
			if ok != tc.targ || (ok && tg.Name != tc.name) {
				t.Errorf("Target(%q) = %v, %v; want found %v", tc.name, tg, ok, tc.targ)
			}
		})
	}
}

func TestSetListen(t *testing.T) {
	open, err := Parse([]byte(minimal), "open.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	keyed, err := Parse([]byte(minimal+KeyTOML("k", hashTest)), "keyed.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cfg     *Config
		addr    string
		wantErr string // "" = accepted
	}{
		{"open on loopback", open, "127.0.0.1:9000", ""},
		{"open on localhost", open, "localhost:0", ""},
		{"open on all interfaces", open, ":9000", "an open gateway may only listen on loopback"},
		{"open on a LAN address", open, "192.168.1.2:9000", "an open gateway may only listen on loopback"},
		{"keyed on all interfaces", keyed, "0.0.0.0:9000", ""},
		{"not host:port", keyed, "9000", "is not host:port"},
		{"service name", keyed, "127.0.0.1:http", "is not a number from 0 to 65535"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.cfg.Listen
			err := tc.cfg.SetListen(tc.addr)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("SetListen(%q) = %v", tc.addr, err)
			case tc.wantErr == "" && tc.cfg.Listen != tc.addr:
				t.Errorf("Listen = %q after SetListen(%q)", tc.cfg.Listen, tc.addr)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("SetListen(%q) = %v, want an error containing %q", tc.addr, err, tc.wantErr)
			case tc.wantErr != "" && tc.cfg.Listen != before:
				t.Errorf("a refused SetListen changed Listen to %q", tc.cfg.Listen)
			}
		})
	}
}

// idle_timeout is each target's IdleTimeout: DefaultIdleTimeout when absent, 0 for "0s".
func TestIdleTimeouts(t *testing.T) {
	cfg, err := Parse([]byte(`[targets.c]
adapter = "openai"
url = "http://127.0.0.1:1/v1"
idle_timeout = "5s"
[targets.a]
adapter = "openai"
url = "http://127.0.0.1:2/v1"
[targets.b]
adapter = "ollama"
url = "https://b.example"
idle_timeout = "0s"
[routes.r]
targets = ["a", "b", "c"]
`), "idle.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]time.Duration{}
	for _, tg := range cfg.Targets {
		got[tg.Name] = tg.IdleTimeout
	}
	want := map[string]time.Duration{"a": DefaultIdleTimeout, "b": 0, "c": 5 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("idle timeouts by target (-want +got):\n%s", diff)
	}
}

// A process the gateway starts does not get the variables other targets' keys come from; its own
// target's stays, for a server that reads the key it requires from the environment.
func TestManagedProcessesWithholdOtherKeys(t *testing.T) {
	const toml = `[targets.local]
adapter = "openai"
url = "http://127.0.0.1:{port}/v1"
command = ["llama-server", "--port", "{port}"]
api_key_env = "LLAMA_API_KEY"
[targets.local2]
adapter = "openai"
url = "http://127.0.0.1:{port}/v1"
command = ["vllm", "serve", "--port", "{port}"]
[targets.cloud]
adapter = "openai"
url = "https://openrouter.ai/api/v1"
class = "public"
api_key_env = "OPENROUTER_API_KEY"
[targets.cloud2]
adapter = "openai"
url = "https://api.example.com/v1"
class = "public"
api_key_env = "OPENROUTER_API_KEY"
[routes.r]
targets = ["local", "local2", "cloud", "cloud2"]
`
	env := map[string]string{"LLAMA_API_KEY": "k1", "OPENROUTER_API_KEY": "k2"}
	cfg, err := Parse([]byte(toml), "/etc/hayula/gateway.toml", func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	got := map[string][]string{}
	for _, s := range cfg.Lifecycle.Specs {
		got[s.Name] = s.Withhold
	}
	want := map[string][]string{
		"local":  {"OPENROUTER_API_KEY"},
		"local2": {"LLAMA_API_KEY", "OPENROUTER_API_KEY"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Withhold (-want +got):\n%s", diff)
	}
}

// TestParseNameOf128: the longest name CONFIG.md allows loads, and routes and keys can name it.
func TestParseNameOf128(t *testing.T) {
	n := strings.Repeat("n", 128)
	cfg, err := Parse([]byte("[targets."+n+"]\nadapter = \"openai\"\nurl = \"http://127.0.0.1:1/v1\"\n[routes."+n+"]\ntargets = [\""+n+"\"]\n"), "n.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.Target(n); !ok {
		t.Fatal("the target is not there")
	}
}
