package litellm

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// fileYAML is the part of LiteLLM's proxy config.yaml that has a meaning here. The other
// top-level keys are listed as not carried (Result's leading comment), by name only.
type fileYAML struct {
	ModelList       yaml.Node `yaml:"model_list"` // a list, each entry decoded into deploymentYAML
	RouterSettings  yaml.Node `yaml:"router_settings"`
	LiteLLMSettings yaml.Node `yaml:"litellm_settings"`
	// GeneralSettings and EnvironmentVariables are read for their keys' names only: their values
	// (master_key, database_url, REDIS_PASSWORD) are secrets more often than not.
	GeneralSettings      yaml.Node `yaml:"general_settings"`
	EnvironmentVariables yaml.Node `yaml:"environment_variables"`
}

// deploymentYAML is one model_list entry: a LiteLLM deployment.
type deploymentYAML struct {
	ModelName string     `yaml:"model_name"`
	Params    yaml.Node  `yaml:"litellm_params"` // decoded into paramsYAML, its unknown keys kept
	ModelInfo yaml.Node  `yaml:"model_info"`
	RPM       *int       `yaml:"rpm"` // LiteLLM also takes rpm and tpm beside litellm_params
	TPM       *int       `yaml:"tpm"`
	line      int        // the entry's line in the file
	params    paramsYAML // decoded Params
	info      infoYAML   // decoded ModelInfo
	// unknownParams are the keys of litellm_params (and model_info) that are not carried.
	unknownParams []string
	// fromEnv are the keys of litellm_params, mapped here, that LiteLLM reads from the
	// environment (timeout: os.environ/TIMEOUT): they are not carried.
	fromEnv []envRef
}

// paramsYAML is what litellm_params holds that is mapped.
type paramsYAML struct {
	Model         string   `yaml:"model"`
	APIBase       string   `yaml:"api_base"`
	APIKey        string   `yaml:"api_key"`
	RPM           *int     `yaml:"rpm"`
	TPM           *int     `yaml:"tpm"`
	Timeout       *seconds `yaml:"timeout"`
	StreamTimeout *seconds `yaml:"stream_timeout"`
	NumRetries    *int     `yaml:"num_retries"`
	MaxRetries    *int     `yaml:"max_retries"`
	NumCtx        *int     `yaml:"num_ctx"` // Ollama's window: the target's context_window
	Weight        *int     `yaml:"weight"`  // simple-shuffle's share: the target's weight
}

// infoYAML is what model_info holds that is mapped.
type infoYAML struct {
	ID             string `yaml:"id"`   // LiteLLM's own deployment id: nothing to carry
	Mode           string `yaml:"mode"` // chat, embedding, …: the gateway serves every endpoint a target's server has
	MaxInputTokens *int   `yaml:"max_input_tokens"`
}

// routerYAML is what router_settings holds that is mapped.
type routerYAML struct {
	RoutingStrategy        string          `yaml:"routing_strategy"`
	Fallbacks              []fallbackEntry `yaml:"fallbacks"`
	ContextWindowFallbacks []fallbackEntry `yaml:"context_window_fallbacks"`
	// DefaultFallbacks are tried after a model_name without fallbacks of its own ("*").
	DefaultFallbacks []string `yaml:"default_fallbacks"`
	// MaxFallbacks bounds how deep fallbacks' own fallbacks are followed (LiteLLM: 5).
	MaxFallbacks *int `yaml:"max_fallbacks"`
	// ContentPolicyFallbacks are listed as not carried, with why: read for nothing else.
	ContentPolicyFallbacks yaml.Node `yaml:"content_policy_fallbacks"`
	// ModelGroupAlias are other names clients may send for a model_name.
	ModelGroupAlias map[string]aliasYAML `yaml:"model_group_alias"`
	AllowedFails    *int                 `yaml:"allowed_fails"`
	CooldownTime    *seconds             `yaml:"cooldown_time"`
	NumRetries      *int                 `yaml:"num_retries"`
	Timeout         *seconds             `yaml:"timeout"`
}

// settingsYAML is what litellm_settings holds that is mapped.
type settingsYAML struct {
	// Fallbacks, ContextWindowFallbacks and DefaultFallbacks are LiteLLM's litellm.fallbacks and
	// the rest, which its Router reads only when router_settings has none of the kind.
	Fallbacks              []fallbackEntry `yaml:"fallbacks"`
	ContextWindowFallbacks []fallbackEntry `yaml:"context_window_fallbacks"`
	DefaultFallbacks       []string        `yaml:"default_fallbacks"`
	ContentPolicyFallbacks yaml.Node       `yaml:"content_policy_fallbacks"`
	// MaxFallbacks is litellm.max_fallbacks, which the Router reads when router_settings has none.
	MaxFallbacks   *int     `yaml:"max_fallbacks"`
	NumRetries     *int     `yaml:"num_retries"`
	RequestTimeout *seconds `yaml:"request_timeout"`
}

// fallbackEntry is one entry of a LiteLLM fallback list, {"a": ["b", "c"]}, its keys in the
// order LiteLLM has them: it reads an entry's first key only (list(item.keys())[0]), so which one
// is first matters, and a decoded map would not say.
type fallbackEntry struct {
	line  int        // the entry's line
	keys  []string   // the model_names, "*" included
	lists [][]string // each key's fallbacks
}

func (e *fallbackEntry) UnmarshalYAML(n *yaml.Node) error {
	var m map[string][]string // checks the kinds, with yaml's own messages; each key's value as LiteLLM has it
	if err := n.Decode(&m); err != nil {
		return err
	}
	e.line = n.Line
	for _, k := range pyKeys(n, map[*yaml.Node]bool{}) {
		if !slices.Contains(e.keys, k) {
			e.keys, e.lists = append(e.keys, k), append(e.lists, m[k])
		}
	}
	return nil
}

// pyKeys returns the keys of the mapping n in the order of the dict PyYAML, with which LiteLLM
// reads its file, makes of it (a key repeated keeps its first place): the keys merge keys bring in
// first, of a list of merged mappings the last one's first (its flatten_mapping), then n's own.
// Each mapping is read once, as in mergedKeys, to bound the work of a merge bomb.
func pyKeys(n *yaml.Node, read map[*yaml.Node]bool) []string {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode || read[n] {
		return nil
	}
	read[n] = true
	var merged, own []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		switch {
		case k.Tag != "!!merge":
			own = append(own, k.Value)
		case v != nil && v.Kind == yaml.SequenceNode:
			for j := len(v.Content) - 1; j >= 0; j-- {
				merged = append(merged, pyKeys(v.Content[j], read)...)
			}
		default:
			merged = append(merged, pyKeys(v, read)...)
		}
	}
	return append(merged, own...)
}

// aliasYAML is what a model_group_alias name stands for: a model_name, written alone or as
// {model: NAME, hidden: true}.
type aliasYAML struct {
	Model  string
	Hidden bool
}

func (a *aliasYAML) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return n.Decode(&a.Model)
	}
	var v struct {
		Model  string `yaml:"model"`
		Hidden bool   `yaml:"hidden"`
	}
	if err := n.Decode(&v); err != nil {
		return err
	}
	a.Model, a.Hidden = v.Model, v.Hidden
	return nil
}

// seconds is a LiteLLM timeout: a number of seconds, whole or not.
type seconds time.Duration

func (s *seconds) UnmarshalYAML(n *yaml.Node) error {
	var f float64
	if n.Kind != yaml.ScalarNode || n.Decode(&f) != nil || math.IsNaN(f) || math.IsInf(f, 0) || f > 1e9 {
		return fmt.Errorf("line %d: want a number of seconds", n.Line)
	}
	*s = seconds(f * float64(time.Second))
	return nil
}

// String is the duration as the gateway's config writes it: "30s", "1.5s".
func (s seconds) String() string {
	d := time.Duration(s)
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}

// keys returns the keys of a mapping node, in file order, those a merge key (<<: *defaults)
// brings in included; none for any other node.
func keys(n *yaml.Node) []string {
	return mergedKeys(n, map[*yaml.Node]bool{})
}

// mergedKeys is keys, each mapping read once: merged again (<<: [*a, *a]) it adds nothing, and
// a file of ten such lines that each merge the one before ten times would otherwise take 10^10
// steps (TestImportMergeBomb).
func mergedKeys(n *yaml.Node, read map[*yaml.Node]bool) []string {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode || read[n] {
		return nil
	}
	read[n] = true
	var out []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		if k.Tag != "!!merge" {
			out = append(out, k.Value)
			continue
		}
		merged := []*yaml.Node{v}
		if v != nil && v.Kind == yaml.SequenceNode {
			merged = v.Content
		}
		for _, m := range merged {
			for _, mk := range mergedKeys(m, read) {
				if !slices.Contains(out, mk) {
					out = append(out, mk)
				}
			}
		}
	}
	return out
}

// envRef is a key of litellm_params whose value is os.environ/NAME.
type envRef struct{ key, env string }

// stringParams are the keys of paramsYAML that hold a string, and so take os.environ/NAME as
// it is: converting says what each such value becomes.
var stringParams = []string{"model", "api_base", "api_key"}

// withoutEnvRefs returns the litellm_params mapping n without the mapped keys other than
// stringParams whose value is os.environ/NAME, which LiteLLM resolves for every key of
// litellm_params as it starts; each is added to refs. Without them a timeout or an rpm read from
// the environment fails the whole file's decoding (TestImportEnvRefsInParams).
func withoutEnvRefs(n *yaml.Node, refs *[]envRef) *yaml.Node {
	m := resolve(n)
	if m == nil || m.Kind != yaml.MappingNode {
		return n
	}
	known := map[string]bool{}
	t := reflect.TypeOf(paramsYAML{})
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		known[name] = !slices.Contains(stringParams, name)
	}
	out := *m
	out.Content = nil
	pairs := mergedPairs(m, map[*yaml.Node]bool{})
	for i := 0; i+1 < len(pairs); i += 2 {
		k, v := pairs[i], resolve(pairs[i+1])
		if env, ok := strings.CutPrefix(v.Value, "os.environ/"); ok && v.Kind == yaml.ScalarNode && known[k.Value] {
			*refs = append(*refs, envRef{key: k.Value, env: env})
			continue
		}
		out.Content = append(out.Content, pairs[i], pairs[i+1])
	}
	return &out
}

// mergedPairs returns the key and value nodes of the mapping n with what its merge keys
// (<<: *defaults) bring in written out, as yaml's decoding reads them: n's own keys as they are,
// then of the mappings merged, in order, each key that none before had. So a value read from the
// environment that a merge brings in is found too (TestImportEnvRefsInMergedParams). Each mapping
// is read once, as in mergedKeys: what a second merge would bring is there already.
func mergedPairs(n *yaml.Node, read map[*yaml.Node]bool) []*yaml.Node {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode || read[n] {
		return nil
	}
	read[n] = true
	var out []*yaml.Node
	have := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Tag != "!!merge" {
			out = append(out, k, n.Content[i+1])
			have[k.Value] = true
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Tag != "!!merge" {
			continue
		}
		v := resolve(n.Content[i+1])
		merged := []*yaml.Node{v}
		if v != nil && v.Kind == yaml.SequenceNode {
			merged = v.Content
		}
		for _, m := range merged {
			sub := mergedPairs(m, read)
			for j := 0; j+1 < len(sub); j += 2 {
				if !have[sub[j].Value] {
					out = append(out, sub[j], sub[j+1])
					have[sub[j].Value] = true
				}
			}
		}
	}
	return out
}

// resolve is the node an alias (*defaults) stands for; n itself when it is no alias.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// unknownKeys returns the keys of the mapping n that no yaml tag of the struct v names, in file
// order: what the typed decode would drop without a word.
func unknownKeys(n *yaml.Node, v any) []string {
	known := map[string]bool{}
	t := reflect.TypeOf(v)
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			known[name] = true
		}
	}
	var out []string
	for _, k := range keys(n) {
		if !known[k] {
			out = append(out, k)
		}
	}
	return out
}

// decode decodes n into v, which a missing section (a zero Node) leaves as it is. A decode error
// is said without the value it met: yaml's own messages quote it, and the value may be a key.
func decode(n *yaml.Node, v any, where string) error {
	n = resolve(n)
	if n.Kind == 0 || n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: %s is not a mapping of keys to values", n.Line, where)
	}
	if err := n.Decode(v); err != nil {
		return fmt.Errorf("%s: %s", where, quietYAMLError(err))
	}
	return nil
}

// quietYAMLError is err's message with every value yaml quoted in it (`sk-…`) left out.
func quietYAMLError(err error) string {
	msg := err.Error()
	var b strings.Builder
	for {
		i := strings.IndexByte(msg, '`')
		if i < 0 {
			b.WriteString(msg)
			break
		}
		j := strings.IndexByte(msg[i+1:], '`')
		if j < 0 {
			b.WriteString(msg[:i])
			break
		}
		b.WriteString(msg[:i] + "a value")
		msg = msg[i+1+j+1:]
	}
	return strings.NewReplacer("yaml: unmarshal errors:\n  ", "", "yaml: ", "",
		"!!str a value", "a string", "!!int a value", "a number", "!!float a value", "a number",
		"!!bool a value", "a boolean", "!!seq", "a list", "!!map", "a mapping",
		"into int", "where a whole number belongs", "into float64", "where a number belongs",
		"into string", "where a string belongs", "into []string", "where a list of names belongs",
		"into map[string][]string", "where a mapping of a name to a list of names belongs",
		"into []map[string][]string", "where a list of {name: [names]} belongs",
		"into []litellm.fallbackEntry", "where a list of {name: [names]} belongs").Replace(b.String())
}
