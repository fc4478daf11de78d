// Package litellm converts a LiteLLM proxy config.yaml into this gateway's TOML configuration:
// `gateway import litellm`. CONFIG.md's "A homelab, coming from LiteLLM" table is what maps to
// what. Nothing secret is carried: a key written in the YAML becomes an api_key_env the user
// exports, and the values of general_settings and environment_variables are never read.
package litellm

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Result is a converted configuration.
type Result struct {
	// TOML is the gateway's configuration, with comments saying where each part came from and
	// what was left out.
	TOML []byte
	// Warnings are what the user must act on, one line each: deployments left out, keys to
	// export, settings not carried.
	Warnings []string
	// Env are the variables TOML's api_key_env keys name, sorted: each must be set before
	// check-config and serve.
	Env []string
}

// Error is a config.yaml that cannot be converted: unreadable, not LiteLLM's, or with nothing a
// target can be made of.
type Error struct {
	// File is the config.yaml's name, for the message.
	File string
	// Msg says what is wrong; it never quotes a value of the file.
	Msg string
}

func (e *Error) Error() string { return e.File + ": " + e.Msg }

// maxRetries is the gateway's cap on a target's max_retries.
const maxRetries = 10

// Convert converts data, a LiteLLM config.yaml read from file (a name for messages and the
// leading comment), into the gateway's TOML. Every error is an *Error.
func Convert(data []byte, file string) (*Result, error) {
	fail := func(format string, a ...any) error { return &Error{File: file, Msg: fmt.Sprintf(format, a...)} }
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fail("not YAML LiteLLM could read: %s", quietYAMLError(err))
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, fail("empty: no model_list to convert")
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fail("line %d: not a LiteLLM config.yaml: its top level is not a mapping (model_list:, router_settings:, …)", root.Line)
	}
	var f fileYAML
	if err := decode(root, &f, "the top level"); err != nil {
		return nil, fail("%v", err)
	}
	c := &converter{file: file, names: map[string]bool{}, routeNames: map[string]bool{}, envs: map[string]bool{}, next: map[string]int{}}
	c.notCarried("the top level", unknownKeys(root, fileYAML{}))
	list := resolve(&f.ModelList)
	switch {
	case list.Kind == 0 || list.Tag == "!!null" || list.Kind == yaml.SequenceNode && len(list.Content) == 0:
		return nil, fail("no model_list: nothing to convert (LiteLLM's models are the entries of model_list, each a model_name and its litellm_params)")
	case list.Kind != yaml.SequenceNode:
		return nil, fail("line %d: model_list is not a list of models (- model_name: …)", list.Line)
	}
	var router routerYAML
	var settings settingsYAML
	if err := errors.Join(decode(&f.RouterSettings, &router, "router_settings"),
		decode(&f.LiteLLMSettings, &settings, "litellm_settings")); err != nil {
		return nil, fail("%v", err)
	}
	c.notCarried("router_settings", unknownKeys(&f.RouterSettings, routerYAML{}))
	c.notCarried("litellm_settings", unknownKeys(&f.LiteLLMSettings, settingsYAML{}))
	for _, cp := range []struct {
		section string
		n       *yaml.Node
	}{{"router_settings", &router.ContentPolicyFallbacks}, {"litellm_settings", &settings.ContentPolicyFallbacks}} {
		if n := resolve(cp.n); n.Kind != 0 && n.Tag != "!!null" {
			c.notCarried(cp.section, []string{"content_policy_fallbacks (a provider's refusal on its content policy is a 4xx, " +
				"the request's own failure here, class request, which ends the chain: no target is tried after it)"})
		}
	}
	c.general = keys(&f.GeneralSettings)
	c.notCarried("general_settings", c.general)
	c.envNames = keys(&f.EnvironmentVariables)

	deps := make([]*deploymentYAML, 0, len(list.Content))
	for i, n := range list.Content {
		n = resolve(n)
		d := &deploymentYAML{line: n.Line}
		where := fmt.Sprintf("model_list entry %d (line %d)", i+1, n.Line)
		if err := decode(n, d, where); err != nil {
			return nil, fail("%v", err)
		}
		params := withoutEnvRefs(&d.Params, &d.fromEnv)
		if err := errors.Join(decode(params, &d.params, where+": litellm_params"),
			decode(&d.ModelInfo, &d.info, where+": model_info")); err != nil {
			return nil, fail("%v", err)
		}
		d.unknownParams = unknownKeys(&d.Params, paramsYAML{})
		for _, k := range unknownKeys(&d.ModelInfo, infoYAML{}) {
			d.unknownParams = append(d.unknownParams, "model_info."+k)
		}
		d.unknownParams = append(d.unknownParams, unknownKeys(n, deploymentYAML{})...)
		deps = append(deps, d)
	}
	c.defaults(&router, &settings)
	c.deployments(deps)
	if len(c.limits) > 0 {
		c.skipped = append(c.skipped, "the deployments' rpm and tpm (a limit here is a client key's, rpm and tpm in [[keys]]; a target has none): "+strings.Join(c.limits, "; "))
	}
	c.routes(&router, &settings)
	if len(c.routeList) == 0 {
		return nil, fail("nothing convertible: %s", c.noneWhy())
	}
	return c.result(&router), nil
}

// converter holds one conversion's state.
type converter struct {
	file string
	// names are the target names taken, routeNames the route names: each unique in its kind.
	names, routeNames map[string]bool
	// next is where suffixed's last search of each key left off.
	next map[string]int
	// reserved are the target names of deployments whose model_name is a name here as it is:
	// a model_name that had to be cleaned does not take one of them (TestImportNamesKeepTheirOwn).
	reserved map[string]bool
	// envs are the variables api_key_env names.
	envs map[string]bool
	// general and envNames are the keys of general_settings and environment_variables.
	general, envNames []string
	// skipped lists what was not carried, "section: key, key" each.
	skipped []string
	// warnings are Result.Warnings.
	warnings []string
	// groups are the deployments by model_name, in the order the names first appear.
	groups []*group
	byName map[string]*group
	// byModel are the targets by their deployment's litellm_params.model, in file order: LiteLLM
	// picks among them for a name that is no model_name, alias or wildcard's.
	byModel map[string][]*target
	// models are the litellm_params.model of every deployment, those left out too.
	models map[string]bool
	// wildcards are the model_names with a "*", in file order: LiteLLM's wildcard routes,
	// left out here.
	wildcards []wildcard
	// modelRefs are the names the fallback lists give that LiteLLM resolves by litellm_params.model
	// (modelTargets), sorted: the Router looks their own fallbacks up by them.
	modelRefs []string
	// aliasOf are the names of router_settings.model_group_alias carried, each the model_name
	// it stands for.
	aliasOf   map[string]string
	routeList []*route
	// leftOut are the comments of deployments that could not become targets.
	leftOut []string
	// limits are the targets' rpm and tpm, "NAME rpm = 20" each: a target here has no limit.
	limits []string

	// The defaults the settings give every target.
	timeout     *seconds
	timeoutFrom string
	retries     *int
	retriesFrom string
}

// group is the deployments of one model_name: one route's own targets.
type group struct {
	modelName string
	targets   []*target // convertible ones, in file order
	line      int
	why       string // set when no deployment of it converts
	route     *route // its route, once made
}

type target struct {
	name, modelName, litellmModel     string
	line                              int
	adapter, url, model, class, whyIs string
	apiKeyEnv                         string
	notes                             []string // comment lines above the target
	contextWindow                     int
	timeout, idleTimeout              *seconds
	maxRetries                        *int
	weight                            int // 0: not written
}

type route struct {
	name    string
	policy  string // "": not written (ordered)
	targets []*target
	guard   map[*target]guard // the failures that open each target: none for most
	notes   []string
}

// guard is which failures open a target of a route's chain, as LiteLLM chose between its lists
// by the failure: any (its own deployments, and fallbacks while context_window_fallbacks are
// unset), overflow only (context_window_fallbacks), or any but overflow (fallbacks once
// context_window_fallbacks are set: LiteLLM then sends an overflow to those alone).
type guard uint8

const (
	openOnAny guard = iota
	openOnOverflow
	openOnOther
)

// notOverflow are the classes that move a chain on, overflow aside: CONFIG.md's failure classes
// that fall through by default.
var notOverflow = []string{"connection", "timeout", "server_error", "rate_limit", "endpoint", "loading"}

func (c *converter) notCarried(section string, ks []string) {
	if len(ks) > 0 {
		c.skipped = append(c.skipped, section+": "+strings.Join(ks, ", "))
	}
}

func (c *converter) warnf(format string, a ...any) {
	c.warnings = append(c.warnings, fmt.Sprintf(format, a...))
}

// defaults reads the settings that apply to every deployment: retries and the timeout.
func (c *converter) defaults(r *routerYAML, s *settingsYAML) {
	switch {
	case r.NumRetries != nil:
		c.retries, c.retriesFrom = r.NumRetries, "router_settings.num_retries"
	case s.NumRetries != nil:
		c.retries, c.retriesFrom = s.NumRetries, "litellm_settings.num_retries"
	}
	switch {
	case r.Timeout != nil:
		c.timeout, c.timeoutFrom = r.Timeout, "router_settings.timeout"
	case s.RequestTimeout != nil:
		c.timeout, c.timeoutFrom = s.RequestTimeout, "litellm_settings.request_timeout"
	}
}

// deployments makes a target of each convertible deployment, grouped by model_name.
func (c *converter) deployments(deps []*deploymentYAML) {
	c.byName = map[string]*group{}
	c.byModel, c.models = map[string][]*target{}, map[string]bool{}
	count := map[string]int{}
	for _, d := range deps {
		count[d.ModelName]++
	}
	c.reserved = map[string]bool{}
	seen := map[string]int{}
	for _, d := range deps {
		if d.ModelName != "" && cleanName(d.ModelName) == d.ModelName {
			seen[d.ModelName]++
			c.reserved[targetBase(d.ModelName, seen[d.ModelName], count[d.ModelName])] = true
		}
	}
	clear(seen)
	for _, d := range deps {
		if d.ModelName == "" {
			c.leaveOut(d, "", "it has no model_name, the name clients send")
			continue
		}
		c.models[d.params.Model] = true
		g := c.byName[d.ModelName]
		if g == nil {
			g = &group{modelName: d.ModelName, line: d.line}
			c.byName[d.ModelName] = g
			c.groups = append(c.groups, g)
			if strings.Contains(d.ModelName, "*") {
				// LiteLLM's PatternMatchRouter: the model_name quoted, each "*" any run,
				// matched from the name's start (re.match).
				re := regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(d.ModelName), `\*`, "(.*)"))
				c.wildcards = append(c.wildcards, wildcard{d.ModelName, re})
			}
		}
		seen[d.ModelName]++
		base := targetBase(d.ModelName, seen[d.ModelName], count[d.ModelName])
		if strings.Contains(d.ModelName, "*") {
			g.why = "LiteLLM's wildcard routing has no equivalent here: give each model a model_name of its own"
			c.leaveOut(d, base, g.why)
			continue
		}
		t, why := c.target(d, base)
		if why != "" {
			if g.why == "" {
				g.why = why
			}
			c.leaveOut(d, base, why)
			continue
		}
		g.targets = append(g.targets, t)
		c.byModel[t.litellmModel] = append(c.byModel[t.litellmModel], t)
	}
}

// targetBase is the name the nth of count deployments of modelName is given, before unique.
func targetBase(modelName string, n, count int) string {
	base := cleanName(modelName)
	if count > 1 {
		base += "-" + strconv.Itoa(n)
	}
	return base
}

// leaveOut records a deployment that becomes no target: a comment in the file and a warning.
func (c *converter) leaveOut(d *deploymentYAML, name, why string) {
	what := fmt.Sprintf("model_list entry at line %d", d.line)
	if d.ModelName != "" {
		what += fmt.Sprintf(" (model_name %q, model %q)", d.ModelName, d.params.Model)
	}
	c.leftOut = append(c.leftOut, fmt.Sprintf("Left out: %s: %s.", what, why))
	c.warnf("%s left out: %s", what, why)
}

// target converts one deployment; a non-empty string says why it cannot be.
func (c *converter) target(d *deploymentYAML, base string) (*target, string) {
	p := &d.params
	t := &target{name: c.unique(base, cleanName(d.ModelName) == d.ModelName), modelName: d.ModelName, litellmModel: p.Model, line: d.line}
	provName, model, ok := strings.Cut(p.Model, "/")
	switch {
	case p.Model == "":
		return nil, "its litellm_params has no model"
	case provName == "os.environ":
		return nil, fmt.Sprintf("its model is read from the environment (%s): write the model itself, with its provider prefix", model)
	}
	if !ok || model == "" {
		return nil, "its model has no provider prefix (LiteLLM guesses one from the name); write openai/NAME with api_base if its server speaks OpenAI's API"
	}
	prov, why := providerFor(provName)
	if why != "" {
		return nil, why
	}
	t.adapter, t.model = prov.adapter, model
	if prov.adapter == "ollama" && (strings.HasPrefix(model, "ollama/") || strings.HasPrefix(model, "ollama_chat/")) {
		// The config takes such a model for a provider prefix copied from LiteLLM and refuses it.
		return nil, "its Ollama model " + strconv.Quote(model) + " starts with a provider prefix again, which the gateway refuses as one copied from LiteLLM"
	}
	if strings.HasPrefix(p.APIBase, "os.environ/") {
		return nil, fmt.Sprintf("its api_base is read from the environment (%s): write the URL itself as the target's url", strings.TrimPrefix(p.APIBase, "os.environ/"))
	}
	raw := p.APIBase
	if raw == "" {
		if prov.url == "" {
			return nil, "LiteLLM's " + provName + " provider needs an api_base, and this one has none"
		}
		raw = prov.url
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, "its api_base is not an http:// or https:// URL"
	}
	if u.User != nil {
		u.User = nil
		t.notes = append(t.notes, "api_base held a user and password: not copied (secrets come only from the environment)")
		c.warnf("target %s: the user and password in api_base (entry at line %d) were not copied", t.name, d.line)
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" { // "http://h/v1?" too, whose query is empty
		u.RawQuery, u.ForceQuery, u.Fragment = "", false, ""
		t.notes = append(t.notes, "api_base's query was not copied: a url here has none, and a key some providers take there (?key=) comes only from the environment (api_key_env)")
		c.warnf("target %s: the query of api_base (entry at line %d) was not copied: if it held the key, export it and name it in the target's api_key_env", t.name, d.line)
	}
	if i := keyInPath(u.Path); i > 0 {
		// A url is written in the file as it is, and the gateway sends a key only as a Bearer
		// header from api_key_env: a target without the segment would call another URL.
		return nil, fmt.Sprintf("the %s segment of its api_base's path looks like a key, which is never copied; "+
			"the gateway sends a key only as Authorization: Bearer, from the variable api_key_env names. "+
			"If the server takes it so, write the target by hand with that variable; if the segment is no secret (an account id), "+
			"write the target by hand with its url", ordinal(i))
	}
	u.Path = strings.TrimRight(u.Path, "/")
	switch {
	case prov.adapter == "ollama" && (strings.HasSuffix(u.Path, "/v1") || strings.HasSuffix(u.Path, "/api")):
		// Ollama's OpenAI-compatible /v1 is not what the ollama adapter calls: it adds /api/chat
		// to Ollama's root.
		u.Path = u.Path[:len(u.Path)-len(u.Path[strings.LastIndexByte(u.Path, '/'):])]
	case provName == "hosted_vllm" && !strings.HasSuffix(u.Path, "/v1"):
		u.Path += "/v1" // vLLM serves OpenAI's API under /v1, as LiteLLM calls it
	}
	u.RawPath = ""
	t.url = u.String()
	t.class, t.whyIs = privacy(u.Hostname())

	switch key := p.APIKey; {
	case strings.HasPrefix(key, "os.environ/"):
		name := strings.TrimPrefix(key, "os.environ/")
		if !envName(name) {
			return nil, "its api_key names an environment variable that is no variable name"
		}
		t.apiKeyEnv = name
	case key != "":
		t.apiKeyEnv = c.keyVar(t.name)
		t.notes = append(t.notes, fmt.Sprintf("api_key was written in the YAML: not copied (secrets come only from the environment); export it as %s, or delete api_key_env if the server checks no key", t.apiKeyEnv))
		c.warnf("target %s: the api_key written in the YAML (entry at line %d) was not copied: export it as %s", t.name, d.line, t.apiKeyEnv)
	case prov.keyEnv != "" && p.APIBase == "" || prov.keyEnv != "" && provName != "openai":
		t.apiKeyEnv = prov.keyEnv
		t.notes = append(t.notes, "no api_key: LiteLLM reads "+prov.keyEnv+" for "+provName)
	}
	if t.apiKeyEnv != "" {
		c.envs[t.apiKeyEnv] = true
	}

	switch {
	case p.NumCtx != nil && *p.NumCtx > 0:
		t.contextWindow = *p.NumCtx
	case d.info.MaxInputTokens != nil && *d.info.MaxInputTokens > 0:
		t.contextWindow = *d.info.MaxInputTokens
	}
	t.timeout = firstSeconds(p.Timeout, c.timeout)
	t.idleTimeout = firstSeconds(p.StreamTimeout, t.timeout)
	for _, s := range []*seconds{t.timeout, t.idleTimeout} {
		if s != nil && *s <= 0 {
			t.timeout, t.idleTimeout = nil, nil
			t.notes = append(t.notes, "a timeout of 0 or less is not carried: the defaults (120s) hold")
			break
		}
	}
	retries := c.retries
	switch {
	case p.NumRetries != nil:
		retries = p.NumRetries
	case p.MaxRetries != nil:
		retries = p.MaxRetries
	}
	if retries != nil {
		n := min(max(*retries, 0), maxRetries)
		if n != *retries {
			t.notes = append(t.notes, fmt.Sprintf("LiteLLM's %d retries are %d here, the most a target may have", *retries, n))
		}
		t.maxRetries = &n
	}
	if p.Weight != nil {
		if *p.Weight >= 1 {
			t.weight = *p.Weight // its share under policy weighted (spread)
		} else {
			t.notes = append(t.notes, fmt.Sprintf("not carried: weight = %d (a weight here is 1 or more)", *p.Weight))
		}
	}
	var limits []string
	for _, l := range []struct {
		name string
		v    *int
	}{{"rpm", p.RPM}, {"tpm", p.TPM}, {"rpm", d.RPM}, {"tpm", d.TPM}} {
		if l.v != nil {
			limits = append(limits, fmt.Sprintf("%s = %d", l.name, *l.v))
		}
	}
	if len(limits) > 0 {
		t.notes = append(t.notes, "not carried: "+strings.Join(limits, ", ")+" (limits here are a key's: rpm and tpm in [[keys]])")
		c.limits = append(c.limits, t.name+" "+strings.Join(limits, ", "))
	}
	for _, e := range d.fromEnv {
		t.notes = append(t.notes, fmt.Sprintf("not carried: %s = os.environ/%s (LiteLLM read it from the environment as it started: write the value here)", e.key, e.env))
		c.warnf("target %s: litellm_params.%s is read from the environment (%s) in LiteLLM: not carried; write its value in the target", t.name, e.key, e.env)
	}
	if len(d.unknownParams) > 0 {
		t.notes = append(t.notes, "not carried: "+strings.Join(d.unknownParams, ", "))
	}
	return t, ""
}

func firstSeconds(a, b *seconds) *seconds {
	if a != nil {
		return a
	}
	return b
}

// unique returns name, or name with a suffix when another target has it or, unless own (the
// deployment's model_name is a name here as it is), is to have it.
func (c *converter) unique(name string, own bool) string {
	n := c.suffixed("target "+strconv.FormatBool(own)+" "+name, func(i int) string {
		if i == 1 {
			return name
		}
		return name + "-" + strconv.Itoa(i)
	},
		func(n string) bool { return c.names[n] || !own && c.reserved[n] })
	c.names[n] = true
	return n
}

// suffixed returns name(1) when taken does not hold it, else name(i) for the least i from 2 up
// that it does not hold, for a taken that only ever grows. It starts where the last search of key
// left off: 20,000 model_names that all clean to "---" took 2·10^8 steps counting each up from 2
// (BenchmarkConvertOneCleanedName).
func (c *converter) suffixed(key string, name func(i int) string, taken func(string) bool) string {
	if n := name(1); !taken(n) {
		return n
	}
	i := max(c.next[key], 2)
	for taken(name(i)) {
		i++
	}
	c.next[key] = i + 1
	return name(i)
}

// keyVar names the variable a key written in the YAML is to be exported as.
func (c *converter) keyVar(target string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(target) {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else if s := b.String(); s != "" && !strings.HasSuffix(s, "_") {
			b.WriteByte('_')
		}
	}
	base := strings.TrimSuffix(b.String(), "_")
	if base == "" || base[0] >= '0' && base[0] <= '9' {
		base = "KEY_" + base
	}
	return c.suffixed("env "+base, func(i int) string {
		if i == 1 {
			return base + "_API_KEY"
		}
		return base + "_" + strconv.Itoa(i) + "_API_KEY"
	}, func(n string) bool { return c.envs[n] })
}

// keyPrefixes begin the keys providers hand out (OpenAI's and LiteLLM's sk-, Groq's gsk_, xAI's
// xai-, Hugging Face's hf_, NVIDIA's nvapi-, Google's AIza) and the key- some proxies use.
var keyPrefixes = []string{"sk-", "sk_", "key-", "key_", "gsk_", "xai-", "hf_", "nvapi-", "aiza"}

// keyWords name a path segment whose next segment is a key: /key/VALUE.
var keyWords = []string{"key", "apikey", "api_key", "api-key", "token", "secret", "password"}

// keyInPath returns the 1-based index of the first segment of path that looks like a key, 0 when
// none does: one that starts as keys do, follows a segment named like one, is a UUID, or holds a
// run of 20 letters and digits or more, both, as varied as a random string is (3.5 bits a
// character or more), which the words, versions and model names of an API's path never are
// ("qwen2.5-coder-7b-instruct" is runs of 4 or fewer). An account id of 32 hex digits looks so too:
// leaving a target out is the side to err on (TestImportKeyInAPIBase).
func keyInPath(path string) int {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i, s := range segs {
		low := strings.ToLower(s)
		switch {
		case s == "":
		case slices.ContainsFunc(keyPrefixes, func(p string) bool { return strings.HasPrefix(low, p) && len(low) > len(p) }),
			i > 0 && slices.Contains(keyWords, strings.ToLower(segs[i-1])),
			uuid(low),
			slices.ContainsFunc(strings.FieldsFunc(s, func(r rune) bool { return !isAlnum(r) }), random):
			return i + 1
		}
	}
	return 0
}

func isAlnum(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// uuid reports whether s, in lower case, is a UUID: 8-4-4-4-12 hex digits.
func uuid(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if s[i] != '-' {
				return false
			}
		} else if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return true
}

// random reports whether run, letters and digits, looks like a random string: 20 of them or more,
// both kinds, with a Shannon entropy of 3.5 bits a character or more.
func random(run string) bool {
	if len(run) < 20 || !strings.ContainsAny(run, "0123456789") || !strings.ContainsFunc(run, func(r rune) bool { return r > '9' }) {
		return false
	}
	var count [256]int
	for i := 0; i < len(run); i++ {
		count[run[i]]++
	}
	bits := 0.0
	for _, n := range count {
		if n > 0 {
			p := float64(n) / float64(len(run))
			bits -= p * math.Log2(p)
		}
	}
	return bits >= 3.5
}

// ordinal is n as "1st", "2nd", "3rd", "4th".
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}

// envName reports whether s is an environment variable name as shells take it.
func envName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if b := s[i]; b != '_' && !(b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z' || b >= '0' && b <= '9') {
			return false
		}
	}
	return true
}

// cleanName turns a model_name into a name the gateway takes: letters, digits and . _ - : / @ +,
// the others replaced by "-", at most 128 bytes.
func cleanName(s string) string {
	b := []byte(s)
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || strings.IndexByte("._-:/@+", ch) >= 0) {
			b[i] = '-'
		}
	}
	if len(b) > 120 {
		b = b[:120] // room for a suffix
	}
	if len(b) == 0 {
		return "model"
	}
	return string(b)
}

// routes makes a route of each model_name with targets (modelRoutes), and of each name of
// router_settings.model_group_alias (aliases), and sets each one's chain: its own targets, then
// those its fallbacks add (chainOf), by the fallback settings as LiteLLM's Router reads them
// (chainRules).
func (c *converter) routes(r *routerYAML, s *settingsYAML) {
	all := c.modelRoutes()
	for _, a := range c.aliases(r.ModelGroupAlias) {
		all = append(all, named{a.name, c.byName[a.model].targets, a.rt})
	}
	rules := c.chainRules(r, s)
	for _, n := range all {
		c.chainOf(n, rules, r.RoutingStrategy)
	}
}

// named is a name clients send, as LiteLLM's Router knows it, and the route made of it.
type named struct {
	name string    // the name LiteLLM's Router looks its fallbacks up by
	own  []*target // the deployments it picks among
	rt   *route
}

// modelRoutes makes a route, its targets not yet set, of each model_name with targets, in file
// order, and names it. A model_name that is a name here as it is keeps it, as clients send it to
// LiteLLM: one that had to be cleaned, or renamed from "auto", takes another if it comes out the
// same, with a note and a warning (TestImportNamesKeepTheirOwn).
func (c *converter) modelRoutes() []named {
	reserved := map[string]bool{}
	for _, g := range c.groups {
		if len(g.targets) > 0 && g.modelName != "auto" && cleanName(g.modelName) == g.modelName {
			reserved[g.modelName] = true
		}
	}
	var all []named
	for _, g := range c.groups {
		if len(g.targets) == 0 {
			continue // its deployments' warnings said why
		}
		rt := c.routeOf(g, reserved)
		g.route = rt
		all = append(all, named{g.modelName, g.targets, rt})
	}
	return all
}

// routeOf makes g's route and takes its name: g's model_name cleaned (cleanName), "litellm-auto"
// for "auto", with a suffix when another route has it or, not being g's own, reserved holds it.
func (c *converter) routeOf(g *group, reserved map[string]bool) *route {
	name := cleanName(g.modelName)
	if name == "auto" {
		name = "litellm-auto"
	}
	rt := &route{guard: map[*target]guard{}}
	rt.name = c.suffixed("route "+name, func(i int) string {
		if i == 1 {
			return name
		}
		return name + "-" + strconv.Itoa(i) // two model_names that clean to one name
	}, func(n string) bool { return c.routeNames[n] || n != g.modelName && reserved[n] })
	switch {
	case g.modelName == "auto":
		rt.notes = append(rt.notes, fmt.Sprintf(`model_name "auto" is this gateway's automatic router (model "auto", [auto]): clients send %q for this route`, rt.name))
		c.warnf(`route "auto" is renamed %q: model "auto" is this gateway's automatic router`, rt.name)
	case rt.name != g.modelName:
		taken := ""
		if rt.name != name {
			taken = fmt.Sprintf(", and %q is another route's", name)
		}
		rt.notes = append(rt.notes, fmt.Sprintf("model_name %q has characters a name here may not%s: clients send %q", g.modelName, taken, rt.name))
		c.warnf("route %q is named %q: a name here has letters, digits and . _ - : / @ + only%s", g.modelName, rt.name, taken)
	}
	c.routeNames[rt.name] = true
	return rt
}

// chainRules are what extends every route's chain past its own targets: LiteLLM's fallback lists
// as its Router reads them, the guard the fallbacks' targets get, and how deep they are followed.
type chainRules struct {
	fallbacks, windowFallbacks *fallbackTable
	// fallbackGuard is the guard of the fallbacks' targets: openOnAny, or openOnOther once
	// context_window_fallbacks are set.
	fallbackGuard guard
	// depth is LiteLLM's max_fallbacks: how many names a chain's fallbacks, followed in turn,
	// may try.
	depth int
}

// chainRules reads the fallback settings of r and s, each list from the section LiteLLM's Router
// takes it from (fromSection), warning of what it does not carry.
func (c *converter) chainRules(r *routerYAML, s *settingsYAML) *chainRules {
	c.modelRefs = c.refsByModel(r, s)
	rules := &chainRules{fallbackGuard: openOnAny}
	defaults, defaultsFrom := fromSection(c, "default_fallbacks", r.DefaultFallbacks, s.DefaultFallbacks)
	l, from := fromSection(c, "fallbacks", r.Fallbacks, s.Fallbacks)
	rules.fallbacks = c.fallbackMap("fallbacks", from, l, true, true, defaults, defaultsFrom+".default_fallbacks")
	l, from = fromSection(c, "context_window_fallbacks", r.ContextWindowFallbacks, s.ContextWindowFallbacks)
	rules.windowFallbacks = c.fallbackMap("context_window_fallbacks", from, l, false, false, nil, "")
	// The Router's context_window_fallbacks are router_settings' unless empty, then
	// litellm.context_window_fallbacks, None unless litellm_settings writes a list (an empty one
	// too). Once they are not None, an overflow goes to a model_name's entry there alone, or,
	// with none, back to the client: never to its fallbacks.
	if len(r.ContextWindowFallbacks) > 0 || s.ContextWindowFallbacks != nil {
		rules.fallbackGuard = openOnOther
	}
	rules.depth = c.maxFallbacks(r, s)
	return rules
}

// maxFallbacks is LiteLLM's max_fallbacks: the Router takes its max_fallbacks argument
// (router_settings') unless it is None, then litellm.max_fallbacks (litellm_settings'), else
// defaultMaxFallbacks (TestImportMaxFallbacksEitherSection).
func (c *converter) maxFallbacks(r *routerYAML, s *settingsYAML) int {
	maxFrom := r.MaxFallbacks
	if maxFrom == nil {
		maxFrom = s.MaxFallbacks
	} else if s.MaxFallbacks != nil {
		c.warnf("litellm_settings.max_fallbacks is not carried: router_settings.max_fallbacks is written, and LiteLLM's Router takes it alone " +
			"(litellm_settings' is its default, read only when router_settings has none)")
	}
	if maxFrom == nil {
		return defaultMaxFallbacks
	}
	return min(max(*maxFrom, 0), 1000) // deeper than any file's chain: a bound on the work
}

// chainOf sets n's route's targets, its own and then those its fallbacks and
// context_window_fallbacks add, with their guards and the notes that say where they came from,
// gives it a policy by strategy, LiteLLM's routing_strategy (spread), and adds it to c.routeList.
func (c *converter) chainOf(n named, rules *chainRules, strategy string) {
	rt := n.rt
	rt.targets = append(rt.targets, n.own...)
	ch := &chain{c: c, rules: rules, rt: rt, followed: map[string]int{}}
	ch.addFallbacks(n.name)
	ch.addWindowFallbacks(n.name)
	ch.noteWindows(len(n.own))
	if len(n.own) > 1 {
		c.spread(rt, len(n.own), strategy)
	}
	c.routeList = append(c.routeList, rt)
}

// chain is one route's chain as chainOf builds it.
type chain struct {
	c     *converter
	rules *chainRules
	rt    *route
	// followed is the least depth each name's fallbacks were followed at (follow).
	followed map[string]int
	// used are the names follow added targets of, in order.
	used []string
}

// add appends the targets of fb, a model_name, an alias or a litellm_params.model (members),
// tried after those the chain holds, each once, guarded by g: one the chain holds already keeps
// its place, opened by the failures of both lists (widened).
func (ch *chain) add(fb string, g guard) (added, widened bool) {
	rt := ch.rt
	for _, t := range ch.c.members(fb) {
		switch had, ok := rt.guard[t]; {
		case !slices.Contains(rt.targets, t):
			rt.targets = append(rt.targets, t)
			rt.guard[t] = g
			added = true
		case ok && had != g && had != openOnAny:
			rt.guard[t] = openOnAny
			widened = true
		}
	}
	return added, widened
}

// follow adds the fallbacks of name, tried at depth at, and theirs in turn. LiteLLM follows a
// fallback's own fallbacks when it fails too, depth first, each name tried counting one towards
// max_fallbacks (its run_async_fallback). It looks them up by the name it tries, an alias's by
// the alias (TestImportFallbacksFollowed).
func (ch *chain) follow(name string, at int) {
	if d, ok := ch.followed[name]; at >= ch.rules.depth || ok && d <= at {
		return
	}
	ch.followed[name] = at
	for _, fb := range ch.rules.fallbacks.of(name) {
		if fb == name {
			continue
		}
		at++
		if added, _ := ch.add(fb, ch.rules.fallbackGuard); added {
			ch.used = append(ch.used, fb)
		}
		ch.follow(fb, at)
	}
}

// addFallbacks adds the fallbacks of name, the route's, followed in turn, and notes them.
func (ch *chain) addFallbacks(name string) {
	ch.follow(name, 0)
	if len(ch.used) == 0 {
		return
	}
	how := "fallbacks"
	if !slices.Equal(ch.used, ch.rules.fallbacks.of(name)) {
		how = fmt.Sprintf("fallbacks, and theirs in turn as LiteLLM follows them (max_fallbacks %d)", ch.rules.depth)
	}
	note := how + ": then " + strings.Join(quoteAll(ch.used), ", ")
	if ch.rules.fallbackGuard == openOnOther {
		note += " (entered on a failure other than overflow: with context_window_fallbacks set, LiteLLM sends an overflow " +
			"to the name's own entry there alone, and with none answers it as it is"
		if len(ch.used) > 1 {
			// A guard opens on every earlier failure's class, so it cannot tell the overflow
			// that ends this model_name from one of a fallback's.
			note += "; a fallback that overflows shuts those after it here, where LiteLLM goes on to the next"
		}
		note += ")"
	}
	ch.rt.notes = append(ch.rt.notes, note)
}

// addWindowFallbacks adds the context_window_fallbacks of name, the route's, guarded to open on
// overflow only, and notes them. Their own fallbacks are not followed: a guard opens on every
// earlier failure's class, so the fallbacks LiteLLM takes after one of these fails otherwise
// cannot be told from the route's own.
func (ch *chain) addWindowFallbacks(name string) {
	rules := ch.rules
	var used []string
	var further []string // those with fallbacks of their own, which are not followed here
	var both []string    // fallbacks too, now entered on any failure
	for _, fb := range rules.windowFallbacks.of(name) {
		if fb == name {
			continue
		}
		added, widened := ch.add(fb, openOnOverflow)
		if widened {
			both = append(both, fb)
		}
		if added {
			used = append(used, fb)
			if slices.ContainsFunc(slices.Concat(rules.fallbacks.of(fb), rules.windowFallbacks.of(fb)), func(n string) bool { return n != fb }) {
				further = append(further, fb)
			}
		}
	}
	if len(used) > 0 {
		note := "context_window_fallbacks (entered on overflow only): then " + strings.Join(quoteAll(used), ", ")
		if len(used) > 1 {
			// LiteLLM walks the list whatever each fails with (run_async_fallback); a guard that
			// opens on overflow alone is shut by any other failure of one of them.
			note += "; one that fails otherwise shuts those after it here, where LiteLLM goes on to the next"
		}
		if len(further) > 0 {
			note += "; the fallbacks of " + strings.Join(quoteAll(further), ", ") + ", which LiteLLM follows when it fails in turn, are not carried into this chain"
		}
		ch.rt.notes = append(ch.rt.notes, note)
	}
	if len(both) > 0 {
		ch.rt.notes = append(ch.rt.notes, "context_window_fallbacks too: "+strings.Join(quoteAll(both), ", ")+
			", entered in its place among the fallbacks on any failure")
	}
}

// noteWindows notes, once context_window_fallbacks are set, the targets past the route's own
// (own of them) that have a context_window: the context filter's passing one over counts as an
// overflow before any failure, and so shuts every guard overflow does not open, where LiteLLM
// passes over that one alone. One of the model_name's own is its overflow in LiteLLM too
// (TestImportSaysWhereGuardsPartFromLiteLLM).
func (ch *chain) noteWindows(own int) {
	rt := ch.rt
	if ch.rules.fallbackGuard != openOnOther {
		return
	}
	var windowed []string
	for _, t := range rt.targets[own:] {
		if t.contextWindow > 0 {
			windowed = append(windowed, strconv.Quote(t.name))
		}
	}
	if len(windowed) > 0 && slices.ContainsFunc(rt.targets, func(t *target) bool { return rt.guard[t] == openOnOther }) {
		rt.notes = append(rt.notes, "a prompt longer than the context_window of "+strings.Join(windowed, " or ")+
			" passes it over before any target is asked, which counts as an overflow here: then the fallbacks guarded to open on other failures stay shut, where LiteLLM skips that one alone")
	}
}

// members returns the targets LiteLLM picks among for name: a model_name's deployments, those
// of the model_name an alias stands for, or those whose litellm_params.model name is (modelTargets).
func (c *converter) members(name string) []*target {
	if g := c.byName[name]; g != nil {
		return g.targets
	}
	if m, ok := c.aliasOf[name]; ok {
		return c.byName[m].targets
	}
	ts, _ := c.modelTargets(name)
	return ts
}

// modelTargets returns the targets LiteLLM picks among for name, neither a model_name nor an
// alias: the deployments whose litellm_params.model it is, of whatever model_name
// (_common_checks_available_deployment: "check if the user sent in a deployment name instead"),
// unless a wildcard model_name matches it first, which wildcard says (its deployments are left
// out here: ts is nil).
func (c *converter) modelTargets(name string) (ts []*target, wildcard string) {
	if w := c.wildcardOf(name); w != "" {
		return nil, w
	}
	return c.byModel[name], ""
}

// wildcard is a model_name with a "*" and the names LiteLLM routes to it.
type wildcard struct {
	modelName string
	re        *regexp.Regexp
}

// wildcardOf returns the first wildcard model_name that matches name, "" for none.
func (c *converter) wildcardOf(name string) string {
	for _, w := range c.wildcards {
		if w.re.MatchString(name) {
			return w.modelName
		}
	}
	return ""
}

// refsByModel returns the names of the fallback lists LiteLLM's Router reads (router_settings',
// else litellm_settings'; of each entry its first key's) that it resolves by
// litellm_params.model (modelTargets), sorted.
func (c *converter) refsByModel(r *routerYAML, s *settingsYAML) []string {
	var refs []string
	add := func(n string) {
		if c.byName[n] == nil && c.aliasOf[n] == "" && !slices.Contains(refs, n) {
			if ts, _ := c.modelTargets(n); len(ts) > 0 {
				refs = append(refs, n)
			}
		}
	}
	for _, l := range [][]fallbackEntry{taken(r.Fallbacks, s.Fallbacks), taken(r.ContextWindowFallbacks, s.ContextWindowFallbacks)} {
		for _, e := range l {
			if len(e.lists) > 0 {
				for _, n := range e.lists[0] {
					add(n)
				}
			}
		}
	}
	for _, n := range taken(r.DefaultFallbacks, s.DefaultFallbacks) {
		add(n)
	}
	slices.Sort(refs)
	return refs
}

// aliasRoute is a route made of a name of router_settings.model_group_alias.
type aliasRoute struct {
	name, model string // the alias, and the model_name it stands for
	rt          *route
}

// aliases returns a route for each of router_settings.model_group_alias's names, whose own
// targets are those of the model_name it stands for, and records them in c.aliasOf. LiteLLM
// serves a request for the alias from that model_name's deployments, but looks its fallbacks up
// by the alias, as the name the client sent: the chain is made so (TestImportModelGroupAlias,
// TestImportAliasFallbacksAreItsOwn). An alias that is a model_name's or a route's name already
// is left out, as are one that cannot be a name here and one whose model_name has no route,
// each with a warning.
func (c *converter) aliases(m map[string]aliasYAML) []aliasRoute {
	c.aliasOf = map[string]string{}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	var out []aliasRoute
	for _, alias := range names {
		to := m[alias]
		g := c.byName[to.Model]
		switch {
		case g == nil || g.route == nil:
			c.warnf("model_group_alias %q: model_name %q has no route here: not carried", alias, to.Model)
		case c.byName[alias] != nil || c.routeNames[alias]:
			c.warnf("model_group_alias %q: a model_name or route has that name already: not carried", alias)
		case alias == "auto" || cleanName(alias) != alias:
			c.warnf(`model_group_alias %q: not a name here (letters, digits and . _ - : / @ + only; "auto" is the automatic router's): not carried`, alias)
		default:
			rt := &route{name: alias, guard: map[*target]guard{}}
			rt.notes = []string{fmt.Sprintf("router_settings.model_group_alias: %q stands for %q, its deployments; "+
				"its fallbacks are the alias's own, as LiteLLM looks them up by the name the client sent", alias, to.Model)}
			if to.Hidden {
				rt.notes = append(rt.notes, "hidden from LiteLLM's /v1/models; here every route is listed there")
			}
			c.routeNames[alias] = true
			c.aliasOf[alias] = to.Model
			out = append(out, aliasRoute{alias, to.Model, rt})
		}
	}
	return out
}

// spread gives rt, whose first n targets are the deployments of one model_name, the policy that
// spreads requests over them as LiteLLM's routing_strategy did (TestImportRoutingStrategy). Only
// when they are the whole route: a policy picks among every target open so far, and a fallback
// opens with the first failure (a guard), so it could be picked before the group's other
// deployment, which LiteLLM tries first. Such a route stays ordered, and says so.
func (c *converter) spread(rt *route, n int, strategy string) {
	if strategy == "" {
		strategy = "simple-shuffle" // LiteLLM's default
	}
	policy, how := "weighted", "picked at random, by each deployment's weight"
	switch strategy {
	case "simple-shuffle":
	case "least-busy":
		policy, how = "least-busy", "the one with the fewest requests in flight"
	case "latency-based-routing":
		policy, how = "latency", "the one with the lowest latency"
	default:
		how = "no equivalent of " + strategy + " here: " + how
	}
	if len(rt.targets) > n {
		rt.notes = append(rt.notes, fmt.Sprintf("LiteLLM spread requests over the %d deployments of this model_name (routing_strategy %s); "+
			"with fallbacks after them they are tried in order here: a policy picks among every target a failure has opened, "+
			"and could pick a fallback before another deployment", n, strategy))
		return
	}
	rt.policy = policy
	rt.notes = append(rt.notes, fmt.Sprintf("LiteLLM spread requests over these %d deployments (routing_strategy %s): policy %s, %s", n, strategy, policy, how))
}

// defaultMaxFallbacks is LiteLLM's max_fallbacks when neither settings section writes it.
const defaultMaxFallbacks = 5

// fallbackTable is one kind of LiteLLM's fallbacks, each name's in order.
type fallbackTable struct {
	// picked are the lists of the model_names and aliases that an entry matches ({"a": ["b",
	// "c"]}); an entry that names none that converts is there all the same, and keeps generic
	// away, as in LiteLLM.
	picked map[string][]string
	// generic is for a name no entry matches: the "*" entry's, or default_fallbacks, which
	// LiteLLM's router appends as one.
	generic []string
}

// of returns the names tried after name, a model_name or an alias, in order.
func (f *fallbackTable) of(name string) []string {
	if l, ok := f.picked[name]; ok {
		return l
	}
	return f.generic
}

// litellmProviders are the provider names of LiteLLM's provider_list (its LlmProviders enum),
// whose "NAME/" prefix its get_fallback_model_group takes off a model_name to match a fallbacks
// entry (_check_stripped_model_group). A LiteLLM of other providers (a newer one, or one with
// providers added from its JSON list) may take off others: a prefix not here is warned of.
var litellmProviders = strings.Fields(`openai openai_like jina_ai xai custom_openai text-completion-openai cohere
	cohere_chat clarifai anthropic anthropic_text bytez replicate runwayml huggingface together_ai openrouter
	datarobot vertex_ai vertex_ai_beta gemini ai21 baseten azure azure_text azure_ai sagemaker sagemaker_chat
	bedrock vllm nlp_cloud petals oobabooga ollama ollama_chat deepinfra perplexity mistral milvus groq
	nvidia_nim cerebras ai21_chat volcengine codestral text-completion-codestral dashscope moonshot v0 morph
	lambda_ai deepseek sambanova maritalk voyage cloudflare xinference fireworks_ai friendliai featherless_ai
	watsonx watsonx_text triton predibase databricks empower github compactifai docker_model_runner custom
	litellm_proxy hosted_vllm llamafile lm_studio galadriel nebius infinity deepgram elevenlabs novita
	aiohttp_openai langfuse humanloop topaz assemblyai github_copilot snowflake gradient_ai meta_llama nscale
	pg_vector hyperbolic recraft fal_ai heroku aiml cometapi oci auto_router vercel_ai_gateway dotprompt wandb
	ovhcloud lemonade`)

// fallbackMap reads one kind of LiteLLM's fallback lists ([{"a": ["b", "c"]}, {"*": ["d"]}]),
// l, from the section from, and defaults, default_fallbacks, read from defaultsFrom, as LiteLLM's
// Router does (get_fallback_model_group, _get_fallback_model_group_from_fallbacks): of each entry
// its first key only; for a model_name or an alias, the first entry of its name, else, for
// fallbacks, the last entry of its name without its provider prefix ("openai/gpt-4o" takes
// "gpt-4o"'s: TestImportFallbackKeyStrippedOfProvider), else the last "*" entry, and defaults
// after them all, which the Router appends as one more. generic says whether LiteLLM reads a "*"
// entry and a prefix taken off for this kind: it matches a model_name's context_window_fallbacks
// exactly, so there a "*" entry is warned of, not carried. validated says whether the Router
// refuses to start with an entry of other than one key (its validate_fallbacks, for fallbacks but
// not context_window_fallbacks): such an entry is warned of so, its first key carried. Every
// entry or key LiteLLM would not read is warned of, by its line, as is a name that no deployment
// has (TestImportFallbackEntriesAsLiteLLMReadsThem).
func (c *converter) fallbackMap(kind, from string, l []fallbackEntry, generic, validated bool, defaults []string, defaultsFrom string) *fallbackTable {
	f := &fallbackTable{picked: map[string][]string{}}
	where := from + "." + kind
	// known are the names of l, from, that have targets: the others are warned of.
	known := func(from string, l []string) []string {
		var out []string
		for _, fb := range l {
			switch g := c.byName[fb]; {
			case g == nil && c.aliasOf[fb] != "":
				if !slices.Contains(out, fb) {
					out = append(out, fb) // LiteLLM tries an alias as its model_name
				}
			case g == nil && slices.Contains(c.modelRefs, fb):
				if !slices.Contains(out, fb) {
					out = append(out, fb) // the deployments of that litellm_params.model
				}
			case g == nil && c.wildcardOf(fb) != "":
				c.warnf("%s of %q: LiteLLM sends %q to the wildcard model_name %q, whose deployments are left out here: left out of its chain",
					kind, from, fb, c.wildcardOf(fb))
			case g == nil && c.models[fb]:
				c.warnf("%s of %q: %q is the model of deployments that have no target (they were left out): left out of its chain", kind, from, fb)
			case g == nil:
				c.warnf("%s of %q: no model_name %q: left out of its chain", kind, from, fb)
			case len(g.targets) == 0:
				c.warnf("%s of %q: %q has no target (its deployments were left out): left out of its chain", kind, from, fb)
			case !slices.Contains(out, fb):
				out = append(out, fb)
			}
		}
		return out
	}
	type entry struct {
		key   string
		line  int
		list  []string
		by    string // the name that takes it, "" for none
		exact bool   // a name takes it as its own, not with its provider prefix taken off
		maybe string // a name LiteLLM takes it for if its prefix is one of LiteLLM's providers
	}
	var entries []*entry
	first, last := map[string]*entry{}, map[string]*entry{} // each key's first and last entries
	genericAt := 0                                          // the line of the "*" entry read so far
	for _, e := range l {
		switch {
		case validated && len(e.keys) == 0:
			c.warnf("%s: the entry at line %d has 0 keys, and LiteLLM's Router refuses to start with it (one key an entry, its validate_fallbacks): not carried", where, e.line)
			continue
		case len(e.keys) == 0:
			c.warnf("%s: the entry at line %d has no key: not carried", where, e.line)
			continue
		case validated && len(e.keys) > 1:
			c.warnf("%s: the entry at line %d has %d keys, and LiteLLM's Router refuses to start with it (one key an entry, its validate_fallbacks): only its first, %q, is carried",
				where, e.line, len(e.keys), e.keys[0])
		case len(e.keys) > 1:
			c.warnf("%s: %s in the entry at line %d %s not carried: LiteLLM reads an entry's first key only, %q",
				where, strings.Join(quoteAll(e.keys[1:]), ", "), e.line, plural(len(e.keys)-1, "is", "are"), e.keys[0])
		}
		k, line, list := e.keys[0], e.line, e.lists[0]
		switch {
		case k == "*" && !generic:
			c.warnf(`%s: LiteLLM reads no "*" entry here, only a model_name's own: the entry at line %d is not carried`, where, line)
		case k == "*":
			if genericAt != 0 {
				c.warnf(`%s: the "*" entry at line %d is not carried: LiteLLM takes the last "*" entry (line %d)`, where, genericAt, line)
			}
			genericAt, f.generic = line, known(k, list)
		default:
			en := &entry{key: k, line: line, list: list}
			entries = append(entries, en)
			if first[k] == nil {
				first[k] = en
			}
			last[k] = en
		}
	}
	if len(defaults) > 0 {
		if genericAt != 0 {
			c.warnf(`%s: the "*" entry at line %d is not carried: LiteLLM appends %s after it as a "*" entry, and takes the last`, where, genericAt, defaultsFrom)
		}
		f.generic = known(defaultsFrom, defaults)
	}
	// Each name's entry, as the Router looks a request's up: by the name the client sent, or
	// the fallback tried.
	names := make([]string, 0, len(c.groups)+len(c.aliasOf)+len(c.modelRefs))
	for _, g := range c.groups {
		if len(g.targets) > 0 {
			names = append(names, g.modelName)
		}
	}
	for a := range c.aliasOf {
		names = append(names, a)
	}
	slices.Sort(names[len(names)-len(c.aliasOf):])
	names = append(names, c.modelRefs...)
	for _, name := range names {
		en := first[name]
		if en != nil {
			en.exact = true
		}
		if p, _, ok := strings.Cut(name, "/"); en == nil && generic && ok {
			// Its provider is the prefix up to the first "/", and Python's replace takes off
			// every "PROVIDER/" of the name, not the first alone.
			switch s := last[strings.ReplaceAll(name, p+"/", "")]; {
			case s == nil:
			case slices.Contains(litellmProviders, p):
				en = s
			case s.maybe == "":
				s.maybe = name
			}
		}
		if en == nil {
			continue
		}
		if en.by == "" {
			// An entry that names none that converts is there all the same, and keeps generic away.
			en.list = known(en.key, en.list)
			if en.list == nil {
				en.list = []string{}
			}
		}
		en.by = name
		f.picked[name] = en.list
	}
	for _, en := range entries {
		k := en.key
		switch {
		case en.by != "":
		case en.maybe != "":
			p, _, _ := strings.Cut(en.maybe, "/")
			c.warnf("%s: the entry for %q at line %d is not carried: LiteLLM applies it to model_name %q if %q is one of its providers "+
				"(its provider_list), which this importer does not know; write an entry for %q if it should be",
				where, k, en.line, en.maybe, p, en.maybe)
		case first[k].exact:
			c.warnf("%s: the entry for %q at line %d is not carried: LiteLLM takes a model_name's first entry (line %d)", where, k, en.line, first[k].line)
		case last[k].by != "":
			c.warnf("%s: the entry for %q at line %d is not carried: for model_name %q LiteLLM takes the last entry for %q (line %d)",
				where, k, en.line, last[k].by, k, last[k].line)
		case c.byName[k] == nil && c.aliasOf[k] == "":
			c.warnf("%s: no model_name %q: its fallbacks are not carried", kind, k)
		}
	}
	return f
}

// plural is one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// taken is the list of a kind LiteLLM's Router takes, as fromSection, without its warning.
func taken[T any](r, s []T) []T {
	if len(r) == 0 {
		return s
	}
	return r
}

// fromSection returns which of router_settings' and litellm_settings' lists of kind LiteLLM's
// Router takes: router_settings', its argument, unless it is empty, then litellm_settings',
// litellm.KIND, its default ("fallbacks or litellm.fallbacks"). The lists are never merged: one
// of litellm_settings beside one of router_settings is warned of, not carried.
func fromSection[T any](c *converter, kind string, r, s []T) ([]T, string) {
	if len(r) == 0 {
		return s, "litellm_settings"
	}
	if len(s) > 0 {
		c.warnf("litellm_settings.%s is not carried: router_settings.%s is written, and LiteLLM's Router takes it alone "+
			"(litellm_settings' is its default, read only when router_settings has none)", kind, kind)
	}
	return r, "router_settings"
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// noneWhy says why no route could be made.
func (c *converter) noneWhy() string {
	for _, g := range c.groups {
		if g.why != "" {
			return fmt.Sprintf("no deployment could become a target (model_name %q: %s)", g.modelName, g.why)
		}
	}
	return "no deployment could become a target"
}
