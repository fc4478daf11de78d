package litellm_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/config/litellm"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// targetView and routeView are what a converted file compiles to, as the tests compare it.
type targetView struct {
	Name, Adapter, URL, Model, Class string
	ContextWindow                    int
	Timeout, IdleTimeout             time.Duration
	MaxRetries                       int
	Keyed                            bool // an api_key_env, set by the test
}

type routeView struct {
	Name    string
	Targets []string
	Guards  map[string][]string // target → the classes that open it
}

// load converts the testdata file and loads the TOML as check-config does, every variable the
// result names set.
func load(t *testing.T, name string) (*litellm.Result, *config.Config) {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	res, err := litellm.Convert(data, name)
	if err != nil {
		t.Fatalf("Convert: %v", err)
	}
	env := map[string]string{}
	for _, e := range res.Env {
		env[e] = "value-of-" + e
	}
	cfg, err := config.Parse(res.TOML, name+".toml", func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("the converted file does not load:\n%v\n%s", err, res.TOML)
	}
	return res, cfg
}

func views(cfg *config.Config) ([]targetView, []routeView) {
	var ts []targetView
	for _, t := range cfg.Targets {
		ts = append(ts, targetView{Name: t.Name, Adapter: t.Adapter.String(), URL: t.URL, Model: t.Model,
			Class: t.Privacy.String(), ContextWindow: t.ContextWindow, Timeout: t.Timeout,
			IdleTimeout: t.IdleTimeout, MaxRetries: t.MaxRetries, Keyed: t.APIKey != ""})
	}
	var rs []routeView
	for _, r := range cfg.Routes {
		v := routeView{Name: r.Name}
		for i, t := range r.Targets {
			v.Targets = append(v.Targets, t.Name)
			if g := r.Guard[i]; g != 0 {
				if v.Guards == nil {
					v.Guards = map[string][]string{}
				}
				for _, c := range g.Classes() {
					v.Guards[t.Name] = append(v.Guards[t.Name], c.String())
				}
			}
		}
		rs = append(rs, v)
	}
	return ts, rs
}

// TestImportLoads: each LiteLLM config converts into a file that loads as check-config loads it,
// and compiles to the targets and routes CONFIG.md's LiteLLM table says: entries sharing a
// model_name are one route's targets, fallbacks extend its chain, context_window_fallbacks are
// guarded to open on overflow only, keys come from the environment, and what cannot be spoken to
// is left out.
func TestImportLoads(t *testing.T) {
	const d = 120 * time.Second
	tests := []struct {
		file    string
		targets []targetView
		routes  []routeView
		cool    config.Cooldown
	}{{
		file: "homelab.yaml",
		targets: []targetView{
			{Name: "embed", Adapter: "ollama", URL: "http://localhost:11434", Model: "nomic-embed-text", Class: "private", Timeout: d, IdleTimeout: d, MaxRetries: 2},
			{Name: "gpt-4o-mini", Adapter: "openai", URL: "https://openrouter.ai/api/v1", Model: "openai/gpt-4o-mini", Class: "public", Timeout: d, IdleTimeout: d, MaxRetries: 2, Keyed: true},
			{Name: "llama3.1-1", Adapter: "ollama", URL: "http://127.0.0.1:11434", Model: "llama3.1:8b", Class: "private", ContextWindow: 8192, Timeout: d, IdleTimeout: d, MaxRetries: 2},
			{Name: "llama3.1-2", Adapter: "ollama", URL: "http://gpu-box.lan:11434", Model: "llama3.1:8b", Class: "private", ContextWindow: 8192, Timeout: d, IdleTimeout: d, MaxRetries: 2},
			{Name: "qwen-coder", Adapter: "openai", URL: "http://192.168.1.20:8080/v1", Model: "qwen2.5-coder-7b", Class: "private", ContextWindow: 32768, Timeout: 300 * time.Second, IdleTimeout: 60 * time.Second, MaxRetries: 1},
		},
		routes: []routeView{
			{Name: "embed", Targets: []string{"embed"}},
			{Name: "gpt-4o-mini", Targets: []string{"gpt-4o-mini"}},
			{Name: "llama3.1", Targets: []string{"llama3.1-1", "llama3.1-2", "gpt-4o-mini"},
				Guards: map[string][]string{"gpt-4o-mini": {"connection", "timeout", "server_error", "rate_limit", "endpoint", "loading"}}},
			{Name: "qwen-coder", Targets: []string{"qwen-coder", "gpt-4o-mini"}, Guards: map[string][]string{"gpt-4o-mini": {"overflow"}}},
		},
		cool: config.Cooldown{Failures: 3, Base: 60 * time.Second, Max: config.DefaultCooldownMax},
	}, {
		file: "docs.yaml",
		targets: []targetView{
			{Name: "llama3", Adapter: "ollama", URL: "http://localhost:11434", Model: "llama3", Class: "private", Timeout: d, IdleTimeout: d},
			{Name: "vllm-models", Adapter: "openai", URL: "http://0.0.0.0:4000/v1", Model: "facebook/opt-125m", Class: "private", Timeout: d, IdleTimeout: d, Keyed: true},
		},
		routes: []routeView{
			{Name: "llama3", Targets: []string{"llama3"}},
			{Name: "vllm-models", Targets: []string{"vllm-models", "llama3"}},
		},
		cool: config.Cooldown{Failures: config.DefaultFailures, Base: config.DefaultCooldownBase, Max: config.DefaultCooldownMax},
	}, {
		file: "hosted.yaml",
		targets: []targetView{
			{Name: "deepseek-chat", Adapter: "openai", URL: "https://api.deepseek.com/v1", Model: "deepseek-chat", Class: "public", Timeout: d, IdleTimeout: d, MaxRetries: 10, Keyed: true},
			{Name: "fast-1", Adapter: "openai", URL: "https://api.groq.com/openai/v1", Model: "llama-3.3-70b-versatile", Class: "public", Timeout: d, IdleTimeout: d, Keyed: true},
			{Name: "fast-2", Adapter: "openai", URL: "https://api.together.ai/v1", Model: "meta-llama/Llama-3.3-70B-Instruct-Turbo", Class: "public", Timeout: d, IdleTimeout: d, Keyed: true},
			{Name: "fast-3", Adapter: "openai", URL: "https://api.fireworks.ai/inference/v1", Model: "accounts/fireworks/models/llama-v3p3-70b-instruct", Class: "public", Timeout: d, IdleTimeout: d, Keyed: true},
			{Name: "grok", Adapter: "openai", URL: "https://api.x.ai/v1", Model: "grok-4", Class: "public", Timeout: d, IdleTimeout: d, Keyed: true},
			{Name: "mistral-large", Adapter: "openai", URL: "https://api.mistral.ai/v1", Model: "mistral-large-latest", Class: "public", Timeout: d, IdleTimeout: d, Keyed: true},
			{Name: "my-model", Adapter: "openai", URL: "https://api.openai.com/v1", Model: "gpt-4.1-mini", Class: "public", Timeout: d, IdleTimeout: d, Keyed: true},
			{Name: "team-vllm", Adapter: "openai", URL: "http://[fd00::20]:8000/v1", Model: "Qwen/Qwen3-32B", Class: "private", Timeout: d, IdleTimeout: d},
		},
		routes: []routeView{
			{Name: "deepseek-chat", Targets: []string{"deepseek-chat"}},
			{Name: "fast", Targets: []string{"fast-1", "fast-2", "fast-3", "deepseek-chat"}},
			{Name: "grok", Targets: []string{"grok"}},
			{Name: "mistral-large", Targets: []string{"mistral-large"}},
			{Name: "my-model", Targets: []string{"my-model"}},
			{Name: "team-vllm", Targets: []string{"team-vllm"}},
		},
		cool: config.Cooldown{Failures: config.DefaultFailures, Base: config.DefaultCooldownBase, Max: config.DefaultCooldownMax},
	}}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, cfg := load(t, tt.file)
			ts, rs := views(cfg)
			if diff := cmp.Diff(tt.targets, ts); diff != "" {
				t.Errorf("targets (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.routes, rs); diff != "" {
				t.Errorf("routes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.cool, cfg.Cooldown); diff != "" {
				t.Errorf("cooldown (-want +got):\n%s", diff)
			}
			if len(cfg.Keys) != 0 || !cfg.Open() {
				t.Error("the converted file has keys: LiteLLM's are not carried")
			}
			if w := cfg.Warnings(); len(w) != 0 {
				t.Errorf("check-config would warn of the converted file: %q", w)
			}
		})
	}
}

// TestImportGolden pins the whole file written for the homelab, comments included: what each
// target came from, why it is private or public, and what was not carried.
func TestImportGolden(t *testing.T) {
	res, _ := load(t, "homelab.yaml")
	const golden = "testdata/homelab.toml.golden"
	if *update {
		if err := os.WriteFile(golden, res.TOML, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./config/litellm -run TestImportGolden -update)", err)
	}
	if diff := cmp.Diff(string(want), string(res.TOML)); diff != "" {
		t.Errorf("converted homelab.yaml (-%s +got):\n%s", golden, diff)
	}
}

// TestImportWarnsWhatItLeavesOut: each deployment left out, and each key written in the YAML,
// is a warning naming it, and a comment in the file saying why.
func TestImportWarnsWhatItLeavesOut(t *testing.T) {
	res, _ := load(t, "hosted.yaml")
	warnings := strings.Join(res.Warnings, "\n")
	for _, want := range []string{
		`"anthropic/claude-sonnet-4-5") left out: LiteLLM's anthropic provider speaks an API of its own`,
		`"gemini/gemini-2.5-flash") left out`,
		`"vertex_ai/gemini-2.5-pro") left out`,
		`"gpt-4.1") left out: its model has no provider prefix`,
		`"openai/*") left out: LiteLLM's wildcard routing has no equivalent here`,
		"target fast-1: the api_key written in the YAML (entry at line 15) was not copied: export it as FAST_1_API_KEY",
		"target fast-2: the api_key written in the YAML (entry at line 20) was not copied: export it as FAST_2_API_KEY",
		"target team-vllm: the user and password in api_base (entry at line 39) were not copied",
		`fallbacks of "fast": no model_name "no-such-model"`,
		`route "my model" is named "my-model"`,
		"not carried (no equivalent here; listed at the top of the file): general_settings: master_key, database_url",
	} {
		if !strings.Contains(warnings, want) {
			t.Errorf("no warning holds %q; warnings:\n%s", want, warnings)
		}
	}
	toml := string(res.TOML)
	for _, want := range []string{
		"# Left out: model_list entry at line 3 (model_name \"claude-sonnet\"",
		"# api_key was written in the YAML: not copied",
		"#   environment_variables: REDIS_PASSWORD (names only",
		"gateway keygen NAME",
		"# Before check-config and serve, export: DEEPSEEK_API_KEY, FAST_1_API_KEY, FAST_2_API_KEY,",
	} {
		if !strings.Contains(toml, want) {
			t.Errorf("the file does not hold %q:\n%s", want, toml)
		}
	}
}

// TestImportKeepsSecretsOut: no value that could be a secret (a literal api_key, a password in
// api_base, master_key, database_url, environment_variables' values) reaches the file or the
// warnings, nor an error about a file that holds one where a number belongs.
func TestImportKeepsSecretsOut(t *testing.T) {
	res, _ := load(t, "hosted.yaml")
	all := string(res.TOML) + strings.Join(res.Warnings, "\n") + strings.Join(res.Env, "\n")
	if strings.Contains(all, "SENTINEL") {
		t.Errorf("a secret of hosted.yaml was carried:\n%s", all)
	}
	bad := "model_list:\n  - model_name: x\n    litellm_params:\n      model: ollama/x\n      rpm: SENTINEL-rpm\n"
	_, err := litellm.Convert([]byte(bad), "bad.yaml")
	if err == nil || strings.Contains(err.Error(), "SENTINEL") || !strings.Contains(err.Error(), "line 5") {
		t.Errorf("err = %v; want the line of the bad value, without the value", err)
	}
}

// TestImportErrors: a file that cannot be converted says why, as an *Error.
func TestImportErrors(t *testing.T) {
	for _, tt := range []struct{ name, yaml, want string }{
		{"empty", "", "empty: no model_list"},
		{"not yaml", "model_list: [\n", "not YAML"},
		{"a list", "- a\n- b\n", "top level is not a mapping"},
		{"no model_list", "general_settings:\n  master_key: sk-1\n", "no model_list"},
		{"model_list not a list", "model_list: 3\n", "model_list"},
		{"nothing convertible", "model_list:\n  - model_name: c\n    litellm_params:\n      model: anthropic/claude\n",
			`nothing convertible: no deployment could become a target (model_name "c": LiteLLM's anthropic provider`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := litellm.Convert([]byte(tt.yaml), "c.yaml")
			var e *litellm.Error
			if !errors.As(err, &e) || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "c.yaml: ") || res != nil {
				t.Errorf("Convert = %v, %v; want an *Error holding %q", res, err, tt.want)
			}
		})
	}
}

// TestImportDocExample keeps CONFIG.md's example of `gateway import litellm` true: the YAML it
// shows (testdata/doc.yaml) and, as it is, the file Convert writes for it.
func TestImportDocExample(t *testing.T) {
	src, err := os.ReadFile("testdata/doc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, err := litellm.Convert(src, "config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```yaml\n"+string(src)+"```\n\nbecomes") {
		t.Error("CONFIG.md does not show config/litellm/testdata/doc.yaml as it is")
	}
	if !strings.Contains(string(doc), "```toml\n"+string(res.TOML)+"```\n") {
		t.Errorf("CONFIG.md does not show what gateway import litellm writes for doc.yaml; it writes:\n%s", res.TOML)
	}
}

// TestImportAnchors: YAML's anchors, aliases and merge keys, with which a LiteLLM config shares
// litellm_params between entries, are read as LiteLLM reads them, and a merged key that is not
// carried is reported like any other.
func TestImportAnchors(t *testing.T) {
	const src = `x-ollama: &ollama
  model: ollama/llama3.1:8b
  api_base: http://127.0.0.1:11434
  keep_alive: 5m
model_list:
  - model_name: chat
    litellm_params:
      <<: *ollama
      num_ctx: 4096
  - &coder
    model_name: coder
    litellm_params: {model: ollama/qwen2.5-coder}
router_settings: &router
  allowed_fails: 1
`
	res, err := litellm.Convert([]byte(src), "anchors.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(res.TOML, "anchors.toml", nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, res.TOML)
	}
	ts, _ := views(cfg)
	want := []targetView{
		{Name: "chat", Adapter: "ollama", URL: "http://127.0.0.1:11434", Model: "llama3.1:8b", Class: "private", ContextWindow: 4096, Timeout: config.DefaultTimeout, IdleTimeout: config.DefaultIdleTimeout},
		{Name: "coder", Adapter: "ollama", URL: "http://localhost:11434", Model: "qwen2.5-coder", Class: "private", Timeout: config.DefaultTimeout, IdleTimeout: config.DefaultIdleTimeout},
	}
	if diff := cmp.Diff(want, ts); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	if cfg.Cooldown.Failures != 2 {
		t.Errorf("cooldown failures = %d, want 2 (allowed_fails 1, through an anchored mapping)", cfg.Cooldown.Failures)
	}
	for _, want := range []string{"# not carried: keep_alive\n", "#   the top level: x-ollama\n"} {
		if !strings.Contains(string(res.TOML), want) {
			t.Errorf("the file does not hold %q:\n%s", want, res.TOML)
		}
	}
}

// TestImportRoutingStrategy: LiteLLM spreads a model_name's deployments by its routing_strategy
// (simple-shuffle by default, weighted by each deployment's weight). Where the route is those
// deployments alone, the converted route's policy does the same; where fallbacks follow them, the
// route stays ordered and says why (a policy picks among every target a failure has opened, so it
// could pick a fallback before the group's other deployment).
func TestImportRoutingStrategy(t *testing.T) {
	const deps = `model_list:
  - model_name: llama
    litellm_params: {model: ollama/llama3.1:8b, api_base: "http://10.0.0.1:11434", weight: 3}
  - model_name: llama
    litellm_params: {model: ollama/llama3.1:8b, api_base: "http://10.0.0.2:11434"}
  - model_name: tail
    litellm_params: {model: openrouter/openai/gpt-4o-mini, api_key: os.environ/OR_KEY}
`
	for _, tc := range []struct {
		name, router string
		policy       string
		note         string
	}{
		{"default shuffle", "", "weighted", `routing_strategy simple-shuffle`},
		{"least-busy", "router_settings:\n  routing_strategy: least-busy\n", "least-busy", `routing_strategy least-busy`},
		{"latency", "router_settings:\n  routing_strategy: latency-based-routing\n", "latency", `routing_strategy latency-based-routing`},
		{"usage has no equivalent", "router_settings:\n  routing_strategy: usage-based-routing-v2\n", "weighted", `no equivalent of usage-based-routing-v2`},
		{"fallbacks keep the order", "router_settings:\n  routing_strategy: least-busy\n  fallbacks: [{llama: [tail]}]\n", "ordered", `tried in order here`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := litellm.Convert([]byte(deps+tc.router), "x.yaml")
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse(res.TOML, "x.toml", func(k string) string { return "value-of-" + k })
			if err != nil {
				t.Fatalf("does not load: %v\n%s", err, res.TOML)
			}
			r, ok := cfg.Route("llama")
			if !ok {
				t.Fatalf("no route llama:\n%s", res.TOML)
			}
			if r.Policy.String() != tc.policy {
				t.Errorf("policy %s, want %s:\n%s", r.Policy, tc.policy, res.TOML)
			}
			if !strings.Contains(string(res.TOML), tc.note) {
				t.Errorf("no note %q:\n%s", tc.note, res.TOML)
			}
			if strings.Contains(string(res.TOML), "routing_strategy\n") || strings.Contains(string(res.TOML), "router_settings: routing_strategy") {
				t.Errorf("routing_strategy still listed as not carried:\n%s", res.TOML)
			}
			w, ok := cfg.Target("llama-1")
			if !ok || w.Weight != 3 {
				t.Errorf("llama-1's weight: %+v, want 3 (litellm_params.weight)", w)
			}
		})
	}
}

// TestImportClassAgreesWithConfig: the class the import writes for a host is the one config's own
// check takes it for (the warning about a target without class whose url looks like the
// internet's): a Tailscale address or name, or a .home or .internal name, is the user's own
// network, private; a name on the internet is public.
func TestImportClassAgreesWithConfig(t *testing.T) {
	for _, tc := range []struct{ base, class string }{
		{"http://100.101.102.103:11434", "private"}, // Tailscale's (and carrier-grade NAT's) 100.64.0.0/10
		{"http://gpu.tail1234.ts.net:11434", "private"},
		{"http://nas.home:11434", "private"},
		{"http://box.home.arpa:11434", "private"},
		{"http://llm.internal:11434", "private"},
		{"http://192.168.1.5:11434", "private"},
		{"http://ollama.example.com:11434", "public"},
		{"http://8.8.8.8:11434", "public"},
	} {
		yml := "model_list:\n  - model_name: m\n    litellm_params: {model: ollama/llama3.1:8b, api_base: \"" + tc.base + "\"}\n"
		res, err := litellm.Convert([]byte(yml), "x.yaml")
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Parse(res.TOML, "x.toml", func(string) string { return "" })
		if err != nil {
			t.Fatalf("%s: does not load: %v", tc.base, err)
		}
		if got := cfg.Targets[0].Privacy.String(); got != tc.class {
			t.Errorf("%s: class %s, want %s:\n%s", tc.base, got, tc.class, res.TOML)
		}
	}
}

// TestImportKeyInAPIBase: a key some providers and proxies take in api_base's path
// (/key/VALUE, /sk-…/v1, a long random segment) is never copied: the deployment is left out, with
// a warning that says where the key goes here and does not repeat it; one in the query is
// dropped from the url. A path of an API's words (a reverse proxy's /ollama, /openai/v1) is kept.
func TestImportKeyInAPIBase(t *testing.T) {
	const src = `model_list:
  - model_name: by-word
    litellm_params: {model: openai/gpt-4o, api_base: "https://proxy.example.com/key/SENTINEL-7f3a/v1"}
  - model_name: by-prefix
    litellm_params: {model: openai/gpt-4o, api_base: "https://proxy.example.com/sk-SENTINEL7f3a/v1"}
  - model_name: by-look
    litellm_params: {model: hosted_vllm/qwen, api_base: "https://proxy.example.com/u/Zq8xSENTINEL7f3aR2pLk9vW4mTn/v1"}
  - model_name: in-query
    litellm_params: {model: openai/gpt-4o, api_base: "https://proxy.example.com/v1?key=SENTINEL-7f3a", api_key: os.environ/PROXY_KEY}
  - model_name: by-uuid
    litellm_params: {model: openai/gpt-4o, api_base: "https://proxy.example.com/v1/0f8fad5b-d9cb-469f-a165-70867728950e"}
  - model_name: words
    litellm_params: {model: ollama/llama3.1:8b, api_base: "https://nas.home/ollama/"}
  - model_name: words-2
    litellm_params: {model: openai/qwen2.5-coder-7b, api_base: "http://10.0.0.5/llm/qwen2.5-coder-7b-instruct/v1"}
`
	res, err := litellm.Convert([]byte(src), "k.yaml")
	if err != nil {
		t.Fatal(err)
	}
	all := string(res.TOML) + strings.Join(res.Warnings, "\n")
	if strings.Contains(all, "SENTINEL") || strings.Contains(all, "70867728950e") {
		t.Errorf("a key in api_base was carried:\n%s", all)
	}
	cfg, err := config.Parse(res.TOML, "k.toml", func(string) string { return "x" })
	if err != nil {
		t.Fatalf("does not load: %v\n%s", err, res.TOML)
	}
	var got []string
	for _, tg := range cfg.Targets {
		got = append(got, tg.Name+" "+tg.URL)
	}
	want := []string{"in-query https://proxy.example.com/v1", "words https://nas.home/ollama", "words-2 http://10.0.0.5/llm/qwen2.5-coder-7b-instruct/v1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	warnings := strings.Join(res.Warnings, "\n")
	for _, want := range []string{
		`(model_name "by-word", model "openai/gpt-4o") left out: the 2nd segment of its api_base's path looks like a key`,
		`(model_name "by-prefix", model "openai/gpt-4o") left out: the 1st segment`,
		`(model_name "by-look", model "hosted_vllm/qwen") left out: the 2nd segment`,
		`(model_name "by-uuid", model "openai/gpt-4o") left out: the 2nd segment`,
		"Authorization: Bearer, from the variable api_key_env names",
		"target in-query: the query of api_base (entry at line 8) was not copied: if it held the key, export it",
	} {
		if !strings.Contains(warnings, want) {
			t.Errorf("no warning holds %q; warnings:\n%s", want, warnings)
		}
	}
}

// TestImportRateLimitsListed: a deployment's rpm and tpm, which have no equivalent on a target
// here, are listed in the file's leading "Not carried" comment and in the warnings, as CONFIG.md
// says, not only beside the target.
func TestImportRateLimitsListed(t *testing.T) {
	const src = `model_list:
  - model_name: a
    litellm_params: {model: ollama/llama3.1:8b, rpm: 20, tpm: 50000}
  - model_name: b
    rpm: 6
    litellm_params: {model: ollama/qwen3}
`
	res, err := litellm.Convert([]byte(src), "r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	toml := string(res.TOML)
	head, _, _ := strings.Cut(toml, "\n[")
	const want = "#   the deployments' rpm and tpm (a limit here is a client key's, rpm and tpm in [[keys]]; a target\n#     has none): a rpm = 20, tpm = 50000; b rpm = 6\n"
	if !strings.Contains(head, "# Not carried (no equivalent here):\n"+want) {
		t.Errorf("the leading comment does not list the limits as %q:\n%s", want, toml)
	}
	if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, "a rpm = 20, tpm = 50000; b rpm = 6") {
		t.Errorf("no warning lists the limits:\n%s", w)
	}
}

// TestImportNamesKeepTheirOwn: a model_name that is a name here as it is keeps it, route and
// target, wherever it comes in the file: a model_name cleaned into the same name ("a b" is "a-b"),
// or "auto" renamed "litellm-auto", takes another, so that a client sending "a-b" still reaches
// the deployment LiteLLM gave it.
func TestImportNamesKeepTheirOwn(t *testing.T) {
	const src = `model_list:
  - model_name: "a b"
    litellm_params: {model: ollama/spaced}
  - model_name: auto
    litellm_params: {model: ollama/auto}
  - model_name: a-b
    litellm_params: {model: ollama/dashed}
  - model_name: litellm-auto
    litellm_params: {model: ollama/mine}
`
	res, err := litellm.Convert([]byte(src), "n.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(res.TOML, "n.toml", nil)
	if err != nil {
		t.Fatalf("does not load: %v\n%s", err, res.TOML)
	}
	got := map[string]string{}
	for _, r := range cfg.Routes {
		got[r.Name] = r.Targets[0].Name + " " + r.Targets[0].Model
	}
	want := map[string]string{
		"a-b-2":          "a-b-2 spaced",
		"litellm-auto-2": "auto auto",
		"a-b":            "a-b dashed",
		"litellm-auto":   "litellm-auto mine",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("route → first target, model (-want +got):\n%s", diff)
	}
	w := strings.Join(res.Warnings, "\n")
	if !strings.Contains(w, `route "a b" is named "a-b-2": a name here has letters, digits and . _ - : / @ + only, and "a-b" is another route's`) {
		t.Errorf("no warning names the renamed route:\n%s", w)
	}
}

// TestImportFallbacksFollowed: LiteLLM follows a fallback's own fallbacks when it fails in turn,
// depth first, up to router_settings.max_fallbacks (5); a model_name without fallbacks of its
// own takes the "*" entry's or default_fallbacks (a context_window_fallbacks "*" entry, which
// LiteLLM does not read, is warned of: y stays alone); content_policy_fallbacks, which have no
// equivalent, are listed as not carried with why.
func TestImportFallbacksFollowed(t *testing.T) {
	var deps strings.Builder
	deps.WriteString("model_list:\n")
	for _, n := range []string{"a", "b", "c", "d", "e", "x", "y", "tail"} {
		deps.WriteString("  - model_name: " + n + "\n    litellm_params: {model: ollama/" + n + "}\n")
	}
	const settings = `router_settings:
  fallbacks: [{a: [b, c]}, {b: [d]}, {y: []}]
  context_window_fallbacks: [{c: [e]}, {"*": [tail]}]
  content_policy_fallbacks: [{a: [b]}]
litellm_settings:
  default_fallbacks: [tail]
`
	for _, tc := range []struct {
		name, extra string
		routes      map[string][]string
	}{{
		name: "default depth",
		routes: map[string][]string{
			"a": {"a", "b", "d", "tail", "c"}, "b": {"b", "d", "tail"}, "c": {"c", "tail", "e"}, "d": {"d", "tail"},
			"e": {"e", "tail"}, "x": {"x", "tail"}, "y": {"y"}, "tail": {"tail"},
		},
	}, {
		name:  "max_fallbacks 1",
		extra: "  max_fallbacks: 1\n",
		routes: map[string][]string{
			"a": {"a", "b", "c"}, "b": {"b", "d"}, "c": {"c", "tail", "e"}, "d": {"d", "tail"},
			"e": {"e", "tail"}, "x": {"x", "tail"}, "y": {"y"}, "tail": {"tail"},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			src := deps.String() + strings.Replace(settings, "litellm_settings:", strings.TrimSuffix(tc.extra, "\n")+"\nlitellm_settings:", 1)
			if tc.extra == "" {
				src = deps.String() + settings
			}
			res, err := litellm.Convert([]byte(src), "f.yaml")
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse(res.TOML, "f.toml", nil)
			if err != nil {
				t.Fatalf("does not load: %v\n%s", err, res.TOML)
			}
			got := map[string][]string{}
			for _, r := range cfg.Routes {
				for _, tg := range r.Targets {
					got[r.Name] = append(got[r.Name], tg.Name)
				}
			}
			if diff := cmp.Diff(tc.routes, got); diff != "" {
				t.Errorf("routes (-want +got):\n%s\n%s", diff, res.TOML)
			}
			toml := string(res.TOML)
			for _, want := range []string{
				"#   router_settings: content_policy_fallbacks (a provider's refusal on its content policy is a 4xx,",
				"context_window_fallbacks (entered on overflow only): then \"e\"; the fallbacks of \"e\", which",
			} {
				if !strings.Contains(toml, want) {
					t.Errorf("the file does not hold %q:\n%s", want, toml)
				}
			}
			if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, `context_window_fallbacks: LiteLLM reads no "*" entry here`) {
				t.Errorf("no warning that a \"*\" context_window_fallbacks entry is not carried:\n%s", w)
			}
			if strings.Contains(toml, "settings: default_fallbacks") {
				t.Errorf("default_fallbacks still listed as not carried:\n%s", toml)
			}
		})
	}
}

// TestImportMergeBomb: merge keys that merge the one before ten times, ten deep, in the sections
// read for their keys' names only, are read once each, not 10^10 times: the import of this small
// file ends, and lists the keys by name. (A section decoded for its values meets yaml's own
// bound: "document contains excessive aliasing".)
func TestImportMergeBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("x-0: &a0 {keep_alive: 5m}\n")
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&b, "x-%d: &a%d {<<: [%s]}\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 10), ", "))
	}
	b.WriteString("model_list:\n  - model_name: m\n    litellm_params: {model: ollama/m}\ngeneral_settings:\n  <<: *a10\nenvironment_variables:\n  <<: *a10\n")
	res, err := litellm.Convert([]byte(b.String()), "bomb.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"#   general_settings: keep_alive\n", "#   environment_variables: keep_alive (names only"} {
		if !strings.Contains(string(res.TOML), want) {
			t.Errorf("the file does not hold %q:\n%s", want, res.TOML)
		}
	}
}

// TestImportEnvRefsInParams: LiteLLM reads any litellm_params value written os.environ/NAME from
// the environment as it starts, not only api_key. A timeout, rpm or num_ctx so written is not
// carried, said beside the target and in a warning, instead of failing the whole file as a value
// that is no number; a model so written leaves its deployment out, saying why.
func TestImportEnvRefsInParams(t *testing.T) {
	const src = `model_list:
  - model_name: m
    litellm_params:
      model: ollama/llama3.1:8b
      timeout: os.environ/LLM_TIMEOUT
      rpm: os.environ/LLM_RPM
      num_ctx: os.environ/LLM_CTX
  - model_name: n
    litellm_params: {model: os.environ/MODEL_N}
`
	res, err := litellm.Convert([]byte(src), "e.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(res.TOML, "e.toml", nil)
	if err != nil {
		t.Fatalf("does not load: %v\n%s", err, res.TOML)
	}
	ts, _ := views(cfg)
	want := []targetView{{Name: "m", Adapter: "ollama", URL: "http://localhost:11434", Model: "llama3.1:8b", Class: "private",
		Timeout: config.DefaultTimeout, IdleTimeout: config.DefaultIdleTimeout}}
	if diff := cmp.Diff(want, ts); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	w := strings.Join(res.Warnings, "\n")
	for _, want := range []string{
		"target m: litellm_params.timeout is read from the environment (LLM_TIMEOUT) in LiteLLM: not carried",
		"target m: litellm_params.num_ctx is read from the environment (LLM_CTX)",
		`(model_name "n", model "os.environ/MODEL_N") left out: its model is read from the environment (MODEL_N)`,
	} {
		if !strings.Contains(w, want) {
			t.Errorf("no warning holds %q:\n%s", want, w)
		}
	}
	if !strings.Contains(string(res.TOML), "# not carried: timeout = os.environ/LLM_TIMEOUT (LiteLLM read it") {
		t.Errorf("no note beside the target:\n%s", res.TOML)
	}
}

// TestImportEnvRefsInMergedParams is TestImportEnvRefsInParams with the values read from the
// environment brought into litellm_params by a merge key (<<: *defaults), as a file that shares
// its deployments' settings writes them: they are not carried either, and the file converts.
func TestImportEnvRefsInMergedParams(t *testing.T) {
	const src = `x-defaults: &defaults
  timeout: os.environ/LLM_TIMEOUT
  rpm: os.environ/LLM_RPM
  api_base: http://gpu:11434
model_list:
  - model_name: m
    litellm_params:
      <<: *defaults
      model: ollama/llama3.1:8b
  - model_name: n
    litellm_params:
      <<: [*defaults]
      model: ollama/qwen3:8b
      timeout: 30
`
	res, err := litellm.Convert([]byte(src), "e.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(res.TOML, "e.toml", nil)
	if err != nil {
		t.Fatalf("does not load: %v\n%s", err, res.TOML)
	}
	ts, _ := views(cfg)
	want := []targetView{
		{Name: "m", Adapter: "ollama", URL: "http://gpu:11434", Model: "llama3.1:8b", Class: "private",
			Timeout: config.DefaultTimeout, IdleTimeout: config.DefaultIdleTimeout},
		{Name: "n", Adapter: "ollama", URL: "http://gpu:11434", Model: "qwen3:8b", Class: "private",
			Timeout: 30 * time.Second, IdleTimeout: 30 * time.Second},
	}
	if diff := cmp.Diff(want, ts); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	w := strings.Join(res.Warnings, "\n")
	for _, want := range []string{
		"target m: litellm_params.timeout is read from the environment (LLM_TIMEOUT) in LiteLLM: not carried",
		"target m: litellm_params.rpm is read from the environment (LLM_RPM)",
		"target n: litellm_params.rpm is read from the environment (LLM_RPM)",
	} {
		if !strings.Contains(w, want) {
			t.Errorf("no warning holds %q:\n%s", want, w)
		}
	}
	if strings.Contains(w, "target n: litellm_params.timeout") {
		t.Errorf("n's own timeout is said to be read from the environment:\n%s", w)
	}
}

// BenchmarkConvertOneCleanedName converts 20,000 model_names that each clean to "---" (one
// Chinese character each), with a key written for each: every target, route and key variable
// takes the next suffix of one base.
func BenchmarkConvertOneCleanedName(b *testing.B) {
	var src strings.Builder
	src.WriteString("model_list:\n")
	for i := range 20000 {
		fmt.Fprintf(&src, "  - model_name: %q\n    litellm_params: {model: openai/m, api_base: \"http://10.0.0.1/v1\", api_key: k}\n", string(rune(0x4e00+i)))
	}
	data := []byte(src.String())
	for b.Loop() {
		if _, err := litellm.Convert(data, "b.yaml"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestImportModelGroupAlias: router_settings.model_group_alias, the names a homelab gives its
// local models for clients that send "gpt-4", becomes a route of that name whose own targets are
// the deployments of the model_name it stands for (its fallbacks are the alias's own:
// TestImportAliasFallbacksAreItsOwn); an alias that cannot be carried is warned of, not dropped
// without a word.
func TestImportModelGroupAlias(t *testing.T) {
	const src = `model_list:
  - model_name: llama
    litellm_params: {model: ollama/llama3.1:8b}
  - model_name: tail
    litellm_params: {model: openrouter/openai/gpt-4o-mini, api_key: os.environ/OR_KEY}
router_settings:
  fallbacks: [{llama: [tail]}]
  model_group_alias:
    gpt-4: llama
    gpt-4o: {model: llama, hidden: true}
    tail: llama
    "gpt 5": llama
    o1: no-such
`
	res, err := litellm.Convert([]byte(src), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(res.TOML, "a.toml", func(string) string { return "x" })
	if err != nil {
		t.Fatalf("does not load: %v\n%s", err, res.TOML)
	}
	_, rs := views(cfg)
	want := []routeView{
		{Name: "gpt-4", Targets: []string{"llama"}}, // llama's fallbacks are not the alias's
		{Name: "gpt-4o", Targets: []string{"llama"}},
		{Name: "llama", Targets: []string{"llama", "tail"}},
		{Name: "tail", Targets: []string{"tail"}},
	}
	if diff := cmp.Diff(want, rs); diff != "" {
		t.Errorf("routes (-want +got):\n%s\n%s", diff, res.TOML)
	}
	w := strings.Join(res.Warnings, "\n")
	for _, want := range []string{
		`model_group_alias "tail": a model_name or route has that name already: not carried`,
		`model_group_alias "gpt 5": not a name here`,
		`model_group_alias "o1": model_name "no-such" has no route here: not carried`,
	} {
		if !strings.Contains(w, want) {
			t.Errorf("no warning holds %q:\n%s", want, w)
		}
	}
	if strings.Contains(string(res.TOML), "router_settings: model_group_alias") {
		t.Errorf("model_group_alias still listed as not carried:\n%s", res.TOML)
	}
}

// TestImportFallbackEntriesAsLiteLLMReadsThem: LiteLLM's fallback lists are read as its Router
// reads them, not merged. Of router_settings' and litellm_settings' list of one kind the Router
// takes router_settings' (its argument) and litellm_settings' (litellm.fallbacks, its default)
// only when router_settings has none; of a list, a model_name's first entry (its
// get_fallback_model_group and _get_fallback_model_group_from_fallbacks stop at the first match),
// only an entry's first key, and the last "*" entry, after which it appends default_fallbacks as
// one more. Each entry it would not read is warned of, by its line.
func TestImportFallbackEntriesAsLiteLLMReadsThem(t *testing.T) {
	var deps strings.Builder
	deps.WriteString("model_list:\n")
	for _, n := range []string{"a", "b", "c", "x"} {
		deps.WriteString("  - model_name: " + n + "\n    litellm_params: {model: ollama/" + n + "}\n")
	}
	for _, tc := range []struct {
		name, settings string
		routes         map[string][]string
		warnings       []string
	}{{
		name: "two entries for one name",
		settings: `router_settings:
  fallbacks:
    - {a: [b]}
    - {a: [c]}
`,
		routes:   map[string][]string{"a": {"a", "b"}, "b": {"b"}, "c": {"c"}, "x": {"x"}},
		warnings: []string{`router_settings.fallbacks: the entry for "a" at line 13 is not carried: LiteLLM takes a model_name's first entry (line 12)`},
	}, {
		name: "context_window_fallbacks, two entries for one name",
		settings: `router_settings:
  context_window_fallbacks: [{a: [b]}, {a: [c]}]
`,
		routes:   map[string][]string{"a": {"a", "b"}, "b": {"b"}, "c": {"c"}, "x": {"x"}},
		warnings: []string{`router_settings.context_window_fallbacks: the entry for "a" at line 11 is not carried: LiteLLM takes a model_name's first entry (line 11)`},
	}, {
		name: "an entry's keys after its first",
		settings: `router_settings:
  fallbacks:
    - {a: [b], x: [c]}
`,
		routes: map[string][]string{"a": {"a", "b"}, "b": {"b"}, "c": {"c"}, "x": {"x"}},
		warnings: []string{`router_settings.fallbacks: the entry at line 12 has 2 keys, and LiteLLM's Router refuses to start with it ` +
			`(one key an entry, its validate_fallbacks): only its first, "a", is carried`},
	}, {
		name: "no key",
		settings: `router_settings:
  fallbacks: [{}, {a: [b]}]
  context_window_fallbacks: [{}]
`,
		routes: map[string][]string{"a": {"a", "b"}, "b": {"b"}, "c": {"c"}, "x": {"x"}},
		warnings: []string{
			`router_settings.fallbacks: the entry at line 11 has 0 keys, and LiteLLM's Router refuses to start with it (one key an entry, its validate_fallbacks)`,
			`router_settings.context_window_fallbacks: the entry at line 12 has no key: not carried`,
		},
	}, {
		// context_window_fallbacks, which the Router does not validate, it reads by an entry's
		// first key alone.
		name: "context_window_fallbacks, an entry's keys after its first",
		settings: `router_settings:
  context_window_fallbacks:
    - {a: [b], x: [c]}
`,
		routes:   map[string][]string{"a": {"a", "b"}, "b": {"b"}, "c": {"c"}, "x": {"x"}},
		warnings: []string{`router_settings.context_window_fallbacks: "x" in the entry at line 12 is not carried: LiteLLM reads an entry's first key only, "a"`},
	}, {
		// PyYAML, which LiteLLM reads its file with, puts the keys a merge brings in before the
		// entry's own: the first key is the merged one.
		name: "an entry's first key, brought in by a merge key",
		settings: `x-fb: &fb {b: [c]}
router_settings:
  fallbacks:
    - {<<: *fb, a: [b]}
`,
		routes: map[string][]string{"a": {"a"}, "b": {"b", "c"}, "c": {"c"}, "x": {"x"}},
		warnings: []string{`router_settings.fallbacks: the entry at line 13 has 2 keys, and LiteLLM's Router refuses to start with it ` +
			`(one key an entry, its validate_fallbacks): only its first, "b", is carried`},
	}, {
		name: "a \"*\" entry without a specific one",
		settings: `router_settings:
  fallbacks: [{"*": [c]}]
`,
		routes: map[string][]string{"a": {"a", "c"}, "b": {"b", "c"}, "c": {"c"}, "x": {"x", "c"}},
	}, {
		name: "a \"*\" entry with a specific one",
		settings: `router_settings:
  fallbacks: [{"*": [c]}, {a: [b]}]
`,
		routes: map[string][]string{"a": {"a", "b", "c"}, "b": {"b", "c"}, "c": {"c"}, "x": {"x", "c"}},
	}, {
		name: "two \"*\" entries",
		settings: `router_settings:
  fallbacks:
    - {"*": [b]}
    - {"*": [c]}
`,
		routes:   map[string][]string{"a": {"a", "c"}, "b": {"b", "c"}, "c": {"c"}, "x": {"x", "c"}},
		warnings: []string{`router_settings.fallbacks: the "*" entry at line 12 is not carried: LiteLLM takes the last "*" entry (line 13)`},
	}, {
		name: "a \"*\" entry and default_fallbacks",
		settings: `router_settings:
  fallbacks: [{"*": [b]}]
  default_fallbacks: [c]
`,
		routes:   map[string][]string{"a": {"a", "c"}, "b": {"b", "c"}, "c": {"c"}, "x": {"x", "c"}},
		warnings: []string{`router_settings.fallbacks: the "*" entry at line 11 is not carried: LiteLLM appends router_settings.default_fallbacks after it as a "*" entry, and takes the last`},
	}, {
		name: "both sections",
		settings: `router_settings:
  fallbacks: [{a: [b]}]
  context_window_fallbacks: [{b: [c]}]
  default_fallbacks: [x]
litellm_settings:
  fallbacks: [{a: [c]}, {x: [c]}]
  context_window_fallbacks: [{a: [c]}]
  default_fallbacks: [b]
`,
		routes: map[string][]string{"a": {"a", "b", "x"}, "b": {"b", "x", "c"}, "c": {"c", "x"}, "x": {"x"}},
		warnings: []string{
			"litellm_settings.fallbacks is not carried: router_settings.fallbacks is written, and LiteLLM's Router takes it alone (litellm_settings' is its default, read only when router_settings has none)",
			"litellm_settings.context_window_fallbacks is not carried: router_settings.context_window_fallbacks is written",
			"litellm_settings.default_fallbacks is not carried: router_settings.default_fallbacks is written",
		},
	}, {
		name: "litellm_settings alone",
		settings: `router_settings:
  fallbacks: []
litellm_settings:
  fallbacks: [{a: [c]}]
`,
		routes: map[string][]string{"a": {"a", "c"}, "b": {"b"}, "c": {"c"}, "x": {"x"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := litellm.Convert([]byte(deps.String()+tc.settings), "f.yaml")
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse(res.TOML, "f.toml", nil)
			if err != nil {
				t.Fatalf("does not load: %v\n%s", err, res.TOML)
			}
			got := map[string][]string{}
			for _, r := range cfg.Routes {
				for _, tg := range r.Targets {
					got[r.Name] = append(got[r.Name], tg.Name)
				}
			}
			if diff := cmp.Diff(tc.routes, got); diff != "" {
				t.Errorf("routes (-want +got):\n%s\n%s", diff, res.TOML)
			}
			w := strings.Join(res.Warnings, "\n")
			for _, want := range tc.warnings {
				if !strings.Contains(w, want) {
					t.Errorf("no warning holds %q; warnings:\n%s", want, w)
				}
			}
		})
	}
}

// TestImportMaxFallbacksEitherSection: LiteLLM's Router takes max_fallbacks from router_settings,
// or when it has none from litellm_settings (litellm.max_fallbacks), else 5: the depth to which
// a fallback's own fallbacks are followed.
func TestImportMaxFallbacksEitherSection(t *testing.T) {
	const deps = `model_list:
  - model_name: a
    litellm_params: {model: ollama/a}
  - model_name: b
    litellm_params: {model: ollama/b}
  - model_name: c
    litellm_params: {model: ollama/c}
router_settings:
  fallbacks: [{a: [b]}, {b: [c]}]
`
	for _, tc := range []struct {
		name, settings string
		a              []string
		warning        string
	}{
		{name: "neither", a: []string{"a", "b", "c"}},
		{name: "litellm_settings", settings: "litellm_settings:\n  max_fallbacks: 1\n", a: []string{"a", "b"}},
		{name: "both", settings: "  max_fallbacks: 2\nlitellm_settings:\n  max_fallbacks: 1\n", a: []string{"a", "b", "c"},
			warning: "litellm_settings.max_fallbacks is not carried: router_settings.max_fallbacks is written"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := litellm.Convert([]byte(deps+tc.settings), "m.yaml")
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse(res.TOML, "m.toml", nil)
			if err != nil {
				t.Fatalf("does not load: %v\n%s", err, res.TOML)
			}
			_, rs := views(cfg)
			if diff := cmp.Diff(tc.a, rs[0].Targets); rs[0].Name != "a" || diff != "" {
				t.Errorf("route %s (-want +got):\n%s\n%s", rs[0].Name, diff, res.TOML)
			}
			w := strings.Join(res.Warnings, "\n")
			if tc.warning != "" && !strings.Contains(w, tc.warning) {
				t.Errorf("no warning holds %q:\n%s", tc.warning, w)
			}
			if strings.Contains(string(res.TOML), "litellm_settings: max_fallbacks") {
				t.Errorf("max_fallbacks listed as not carried:\n%s", res.TOML)
			}
		})
	}
}

// TestImportOverflowGoesToContextWindowFallbacksAlone: once context_window_fallbacks are set
// (either section, an empty list of litellm_settings' too: litellm.context_window_fallbacks is
// then not None), LiteLLM's Router sends an overflow to a model_name's context_window_fallbacks
// alone, and with no entry for it answers the overflow as it is: its fallbacks are for the other
// failures (async_function_with_fallbacks_common_utils). Without them an overflow goes to the
// fallbacks like any failure. So the fallbacks' targets are guarded to open on every class but
// overflow, and only when context_window_fallbacks are set.
func TestImportOverflowGoesToContextWindowFallbacksAlone(t *testing.T) {
	notOverflow := []string{"connection", "timeout", "server_error", "rate_limit", "endpoint", "loading"}
	var deps strings.Builder
	deps.WriteString("model_list:\n")
	for _, n := range []string{"a", "b", "c", "d", "x"} {
		deps.WriteString("  - model_name: " + n + "\n    litellm_params: {model: ollama/" + n + "}\n")
	}
	for _, tc := range []struct {
		name, settings string
		a              routeView
		note           string // a comment the route holds
	}{{
		name:     "no context_window_fallbacks: an overflow goes to the fallbacks",
		settings: "router_settings:\n  fallbacks: [{a: [b]}]\n",
		a:        routeView{Name: "a", Targets: []string{"a", "b"}},
	}, {
		name:     "an empty router_settings list is none",
		settings: "router_settings:\n  fallbacks: [{a: [b]}]\n  context_window_fallbacks: []\n",
		a:        routeView{Name: "a", Targets: []string{"a", "b"}},
	}, {
		name:     "an entry of its own",
		settings: "router_settings:\n  fallbacks: [{a: [b, d]}]\n  context_window_fallbacks: [{a: [c]}]\n",
		a: routeView{Name: "a", Targets: []string{"a", "b", "d", "c"},
			Guards: map[string][]string{"b": notOverflow, "d": notOverflow, "c": {"overflow"}}},
	}, {
		name:     "another model_name's entry only: an overflow is answered as it is",
		settings: "router_settings:\n  fallbacks: [{a: [b]}]\n  context_window_fallbacks: [{x: [c]}]\n",
		a:        routeView{Name: "a", Targets: []string{"a", "b"}, Guards: map[string][]string{"b": notOverflow}},
	}, {
		name:     "a fallback's own fallbacks, and the \"*\" entry's",
		settings: "router_settings:\n  fallbacks: [{a: [b]}, {b: [d]}, {\"*\": [x]}]\n  context_window_fallbacks: [{x: [c]}]\n",
		a: routeView{Name: "a", Targets: []string{"a", "b", "d", "x"},
			Guards: map[string][]string{"b": notOverflow, "d": notOverflow, "x": notOverflow}},
	}, {
		name:     "an empty litellm_settings list is set",
		settings: "router_settings:\n  fallbacks: [{a: [b]}]\nlitellm_settings:\n  context_window_fallbacks: []\n",
		a:        routeView{Name: "a", Targets: []string{"a", "b"}, Guards: map[string][]string{"b": notOverflow}},
	}, {
		name:     "in both lists: entered on any failure",
		settings: "router_settings:\n  fallbacks: [{a: [b]}]\n  context_window_fallbacks: [{a: [b, c]}]\n",
		a:        routeView{Name: "a", Targets: []string{"a", "b", "c"}, Guards: map[string][]string{"c": {"overflow"}}},
		note:     `# context_window_fallbacks too: "b", entered in its place among the fallbacks on any failure`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := litellm.Convert([]byte(deps.String()+tc.settings), "o.yaml")
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse(res.TOML, "o.toml", nil)
			if err != nil {
				t.Fatalf("does not load: %v\n%s", err, res.TOML)
			}
			_, rs := views(cfg)
			if diff := cmp.Diff(tc.a, rs[0]); diff != "" {
				t.Errorf("route a (-want +got):\n%s\n%s", diff, res.TOML)
			}
			if !strings.Contains(string(res.TOML), tc.note) {
				t.Errorf("route a does not say %q:\n%s", tc.note, res.TOML)
			}
		})
	}
}

// TestImportAliasFallbacksAreItsOwn: LiteLLM's Router looks a request's fallbacks up by the name
// the client sent (kwargs["model"]); a model_group_alias is resolved to its model_name only when a
// deployment is picked (_common_checks_available_deployment). So an alias's fallbacks and
// context_window_fallbacks are the entries keyed by the alias, else the "*" entry's, never those of
// the model_name it stands for; and an alias named as a fallback is tried as its model_name, its
// own fallbacks followed.
func TestImportAliasFallbacksAreItsOwn(t *testing.T) {
	notOverflow := []string{"connection", "timeout", "server_error", "rate_limit", "endpoint", "loading"}
	var deps strings.Builder
	deps.WriteString("model_list:\n")
	for _, n := range []string{"llama", "tail", "big", "other", "x"} {
		deps.WriteString("  - model_name: " + n + "\n    litellm_params: {model: ollama/" + n + "}\n")
	}
	for _, tc := range []struct {
		name, settings string
		routes         []routeView
	}{{
		name: "entries keyed by the alias",
		settings: `router_settings:
  fallbacks: [{llama: [tail]}, {gpt-4: [other]}, {x: [gpt-4o]}, {gpt-4o: [big]}]
  context_window_fallbacks: [{gpt-4: [big]}]
  model_group_alias: {gpt-4: llama, gpt-4o: llama}
`,
		routes: []routeView{
			{Name: "big", Targets: []string{"big"}},
			{Name: "gpt-4", Targets: []string{"llama", "other", "big"}, Guards: map[string][]string{"other": notOverflow, "big": {"overflow"}}},
			{Name: "gpt-4o", Targets: []string{"llama", "big"}, Guards: map[string][]string{"big": notOverflow}},
			{Name: "llama", Targets: []string{"llama", "tail"}, Guards: map[string][]string{"tail": notOverflow}},
			{Name: "other", Targets: []string{"other"}},
			{Name: "tail", Targets: []string{"tail"}},
			{Name: "x", Targets: []string{"x", "llama", "big"}, Guards: map[string][]string{"llama": notOverflow, "big": notOverflow}},
		},
	}, {
		name: "no entry of its own: the \"*\" entry's, not its model_name's",
		settings: `router_settings:
  fallbacks: [{llama: [tail]}, {"*": [other]}]
  model_group_alias: {gpt-4: llama}
`,
		routes: []routeView{
			{Name: "big", Targets: []string{"big", "other"}},
			{Name: "gpt-4", Targets: []string{"llama", "other"}},
			{Name: "llama", Targets: []string{"llama", "tail", "other"}},
			{Name: "other", Targets: []string{"other"}},
			{Name: "tail", Targets: []string{"tail", "other"}},
			{Name: "x", Targets: []string{"x", "other"}},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := litellm.Convert([]byte(deps.String()+tc.settings), "al.yaml")
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse(res.TOML, "al.toml", nil)
			if err != nil {
				t.Fatalf("does not load: %v\n%s", err, res.TOML)
			}
			_, rs := views(cfg)
			if diff := cmp.Diff(tc.routes, rs); diff != "" {
				t.Errorf("routes (-want +got):\n%s\n%s", diff, res.TOML)
			}
			if w := strings.Join(res.Warnings, "\n"); strings.Contains(w, "gpt-4") {
				t.Errorf("a warning names an alias, which LiteLLM reads:\n%s", w)
			}
		})
	}
}

// TestImportFallbackKeyStrippedOfProvider: LiteLLM's get_fallback_model_group matches a
// fallbacks entry to a model_name by its exact name first, then by the name with its provider
// prefix taken off ("openai/gpt-4o" takes the entry of "gpt-4o": _check_stripped_model_group, the
// last such entry), then the "*" entry. A prefix that is none of LiteLLM's providers matches
// nothing; one this importer does not know for one is warned of, by line, and not carried.
// context_window_fallbacks match the exact name alone.
func TestImportFallbackKeyStrippedOfProvider(t *testing.T) {
	var deps strings.Builder
	deps.WriteString("model_list:\n")
	for _, n := range []string{"openai/gpt-4o", "tail", "other", "x", "myorg/llama", "ollama/ollama/qwen"} {
		deps.WriteString("  - model_name: " + n + "\n    litellm_params: {model: ollama/m}\n")
	}
	for _, tc := range []struct {
		name, settings string
		routes         map[string][]string
		warnings       []string
		notWarned      []string
	}{{
		name:      "the entry of the name without its provider",
		settings:  "router_settings:\n  fallbacks: [{gpt-4o: [tail]}, {qwen: [x]}]\n",
		routes:    map[string][]string{"openai/gpt-4o": {"openai/gpt-4o", "tail"}, "ollama/ollama/qwen": {"ollama/ollama/qwen", "x"}},
		notWarned: []string{`no model_name "gpt-4o"`, `no model_name "qwen"`},
	}, {
		name:     "its own entry first",
		settings: "router_settings:\n  fallbacks: [{gpt-4o: [tail]}, {openai/gpt-4o: [other]}]\n",
		routes:   map[string][]string{"openai/gpt-4o": {"openai/gpt-4o", "other"}},
		warnings: []string{`fallbacks: no model_name "gpt-4o": its fallbacks are not carried`},
	}, {
		name:     "before the \"*\" entry",
		settings: "router_settings:\n  fallbacks: [{\"*\": [x]}, {gpt-4o: [tail]}]\n",
		routes:   map[string][]string{"openai/gpt-4o": {"openai/gpt-4o", "tail", "x"}},
	}, {
		name:     "the last of several",
		settings: "router_settings:\n  fallbacks: [{gpt-4o: [tail]}, {gpt-4o: [other]}]\n",
		routes:   map[string][]string{"openai/gpt-4o": {"openai/gpt-4o", "other"}},
	}, {
		name:     "a prefix not known for a provider",
		settings: "router_settings:\n  fallbacks: [{llama: [tail]}]\n",
		routes:   map[string][]string{"myorg/llama": {"myorg/llama"}},
		warnings: []string{`router_settings.fallbacks: the entry for "llama" at line 15 is not carried: LiteLLM applies it to model_name "myorg/llama" ` +
			`if "myorg" is one of its providers (its provider_list), which this importer does not know`},
	}, {
		name:     "context_window_fallbacks: the exact name alone",
		settings: "router_settings:\n  context_window_fallbacks: [{gpt-4o: [tail]}]\n",
		routes:   map[string][]string{"openai/gpt-4o": {"openai/gpt-4o"}},
		warnings: []string{`context_window_fallbacks: no model_name "gpt-4o": its fallbacks are not carried`},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := litellm.Convert([]byte(deps.String()+tc.settings), "p.yaml")
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse(res.TOML, "p.toml", nil)
			if err != nil {
				t.Fatalf("does not load: %v\n%s", err, res.TOML)
			}
			got := map[string][]string{}
			for _, r := range cfg.Routes {
				if _, ok := tc.routes[r.Name]; ok {
					for _, tg := range r.Targets {
						got[r.Name] = append(got[r.Name], tg.Name)
					}
				}
			}
			if diff := cmp.Diff(tc.routes, got); diff != "" {
				t.Errorf("routes (-want +got):\n%s\n%s", diff, res.TOML)
			}
			w := strings.Join(res.Warnings, "\n")
			for _, want := range tc.warnings {
				if !strings.Contains(w, want) {
					t.Errorf("no warning holds %q; warnings:\n%s", want, w)
				}
			}
			for _, not := range tc.notWarned {
				if strings.Contains(w, not) {
					t.Errorf("a warning holds %q, though LiteLLM carries that entry:\n%s", not, w)
				}
			}
		})
	}
}

// TestImportSaysWhereGuardsPartFromLiteLLM: where a route's guards make it give up where LiteLLM
// goes on (server's TestImportedGuardsCannotTellWhichTargetOverflowed runs each), the route's
// comment says so: a guard opens when every failure so far is of its classes, whichever target
// failed, and a target passed over for its context_window counts as an overflow before any. Of a
// model_name's context_window_fallbacks, one that fails otherwise shuts those after it; a
// fallback whose context_window the prompt exceeds shuts every fallback guarded to open on other
// failures, where LiteLLM skips it alone. (This test failed first: neither was said.)
func TestImportSaysWhereGuardsPartFromLiteLLM(t *testing.T) {
	const shutByWindow = `a prompt longer than the context_window of "b" passes it over before any target is asked, ` +
		`which counts as an overflow here: then the fallbacks guarded to open on other failures stay shut, where LiteLLM skips that one alone`
	const shutByOther = `; one that fails otherwise shuts those after it here, where LiteLLM goes on to the next`
	for _, tc := range []struct {
		name, settings string
		window         string // the model_name whose deployment has a window
		says, not      []string
	}{{
		name:     "context_window_fallbacks of two",
		settings: "  fallbacks: [{a: [b]}]\n  context_window_fallbacks: [{a: [x, y]}]\n",
		says:     []string{`context_window_fallbacks (entered on overflow only): then "x", "y"` + shutByOther},
		not:      []string{"context_window of"},
	}, {
		name:     "context_window_fallbacks of one",
		settings: "  fallbacks: [{a: [b]}]\n  context_window_fallbacks: [{a: [x]}]\n",
		not:      []string{shutByOther, "context_window of"},
	}, {
		name:     "a fallback with a window",
		settings: "  fallbacks: [{a: [c, b]}]\n  context_window_fallbacks: [{a: [x]}]\n",
		window:   "b",
		says:     []string{shutByWindow},
	}, {
		name:     "a fallback with a window, no context_window_fallbacks: nothing is guarded",
		settings: "  fallbacks: [{a: [c, b]}]\n",
		window:   "b",
		not:      []string{"context_window of"},
	}, {
		name:     "its own deployment with a window: an overflow of the model_name, as in LiteLLM",
		settings: "  fallbacks: [{a: [c, b]}]\n  context_window_fallbacks: [{a: [x]}]\n",
		window:   "a",
		not:      []string{"context_window of"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var yaml strings.Builder
			yaml.WriteString("model_list:\n")
			for _, n := range []string{"a", "b", "c", "x", "y"} {
				yaml.WriteString("  - model_name: " + n + "\n    litellm_params: {model: ollama/" + n + "}\n")
				if n == tc.window {
					yaml.WriteString("    model_info: {max_input_tokens: 64}\n")
				}
			}
			res, err := litellm.Convert([]byte(yaml.String()+"router_settings:\n"+tc.settings), "w.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := config.Parse(res.TOML, "w.toml", nil); err != nil {
				t.Fatalf("does not load: %v\n%s", err, res.TOML)
			}
			route := string(res.TOML[strings.Index(string(res.TOML), `[routes."a"]`):])
			route = route[:strings.Index(route, "\ntargets")]
			// The comments as one line: a note is wrapped where a space was.
			var said []string
			for _, l := range strings.Split(route, "\n") {
				if c, ok := strings.CutPrefix(l, "# "); ok {
					said = append(said, c)
				}
			}
			route = strings.Join(said, " ")
			for _, s := range tc.says {
				if !strings.Contains(route, s) {
					t.Errorf("route a does not say %q:\n%s", s, route)
				}
			}
			for _, s := range tc.not {
				if strings.Contains(route, s) {
					t.Errorf("route a says %q:\n%s", s, route)
				}
			}
		})
	}
}

// TestImportFallbackNamedByLiteLLMModel: LiteLLM's Router tries a fallback by the name the list
// gives (run_async_fallback sets it as the request's model), and picks a deployment for a name that
// is no model_name, no alias and no wildcard's among the deployments whose litellm_params.model it
// is, of whatever model_name (_common_checks_available_deployment, _get_deployment_by_litellm_model).
// So a fallback may name a deployment by its model ("ollama/qwen"): the chain takes those
// deployments' targets, and follows the fallbacks of that name, as the Router looks them up by it.
// A model_name of that name comes first; a wildcard model_name that matches it takes it (its
// deployments are left out here), which is warned of. (This test failed first: every such name was
// warned of as "no model_name" and left out.)
func TestImportFallbackNamedByLiteLLMModel(t *testing.T) {
	const deps = `model_list:
  - model_name: fast
    litellm_params: {model: ollama/llama3}
  - model_name: local
    litellm_params: {model: ollama/qwen}
  - model_name: local2
    litellm_params: {model: ollama/qwen, api_base: "http://10.0.0.2:11434"}
  - model_name: big
    litellm_params: {model: ollama/big}
  - model_name: tail
    litellm_params: {model: ollama/tail}
`
	for _, tc := range []struct {
		name, deps, settings string
		routes               map[string]routeView
		warnings             []string
		notWarned            []string
	}{{
		name:      "the deployments of that model, of every model_name",
		settings:  "router_settings:\n  fallbacks: [{fast: [ollama/qwen]}]\n",
		routes:    map[string]routeView{"fast": {Name: "fast", Targets: []string{"fast", "local", "local2"}}},
		notWarned: []string{`"ollama/qwen"`},
	}, {
		name:     "their fallbacks, looked up by that name",
		settings: "router_settings:\n  fallbacks: [{fast: [ollama/qwen]}, {ollama/qwen: [big]}, {\"*\": [tail]}]\n",
		routes: map[string]routeView{
			"fast":  {Name: "fast", Targets: []string{"fast", "local", "local2", "big", "tail"}},
			"local": {Name: "local", Targets: []string{"local", "tail"}},
		},
		notWarned: []string{`"ollama/qwen"`},
	}, {
		name:     "the entry of that name without its provider",
		settings: "router_settings:\n  fallbacks: [{fast: [ollama/qwen]}, {qwen: [big]}]\n",
		routes:   map[string]routeView{"fast": {Name: "fast", Targets: []string{"fast", "local", "local2", "big"}}},
	}, {
		name:     "context_window_fallbacks",
		settings: "router_settings:\n  context_window_fallbacks: [{fast: [ollama/big]}]\n",
		routes: map[string]routeView{"fast": {Name: "fast", Targets: []string{"fast", "big"},
			Guards: map[string][]string{"big": {"overflow"}}}},
	}, {
		name:     "a model_name of that name comes first",
		deps:     deps + "  - model_name: ollama/qwen\n    litellm_params: {model: ollama/other}\n",
		settings: "router_settings:\n  fallbacks: [{fast: [ollama/qwen]}]\n",
		routes:   map[string]routeView{"fast": {Name: "fast", Targets: []string{"fast", "ollama/qwen"}}},
	}, {
		name:     "a wildcard model_name takes it",
		deps:     deps + "  - model_name: \"ollama/*\"\n    litellm_params: {model: \"ollama/*\"}\n",
		settings: "router_settings:\n  fallbacks: [{fast: [ollama/qwen, big]}]\n",
		routes:   map[string]routeView{"fast": {Name: "fast", Targets: []string{"fast", "big"}}},
		warnings: []string{`fallbacks of "fast": LiteLLM sends "ollama/qwen" to the wildcard model_name "ollama/*", whose deployments are left out here: left out of its chain`},
	}, {
		name:     "a model no deployment has",
		settings: "router_settings:\n  fallbacks: [{fast: [ollama/none]}]\n",
		routes:   map[string]routeView{"fast": {Name: "fast", Targets: []string{"fast"}}},
		warnings: []string{`fallbacks of "fast": no model_name "ollama/none"`},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.deps
			if d == "" {
				d = deps
			}
			res, err := litellm.Convert([]byte(d+tc.settings), "m.yaml")
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse(res.TOML, "m.toml", nil)
			if err != nil {
				t.Fatalf("does not load: %v\n%s", err, res.TOML)
			}
			_, rs := views(cfg)
			got := map[string]routeView{}
			for _, r := range rs {
				if _, ok := tc.routes[r.Name]; ok {
					got[r.Name] = r
				}
			}
			if diff := cmp.Diff(tc.routes, got); diff != "" {
				t.Errorf("routes (-want +got):\n%s\n%s", diff, res.TOML)
			}
			w := strings.Join(res.Warnings, "\n")
			for _, want := range tc.warnings {
				if !strings.Contains(w, want) {
					t.Errorf("no warning holds %q; warnings:\n%s", want, w)
				}
			}
			for _, not := range tc.notWarned {
				if strings.Contains(w, not) {
					t.Errorf("a warning holds %q:\n%s", not, w)
				}
			}
		})
	}
}
