package config

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/hayula/gateway/autoroute"
	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/lifecycle"
)

// fileTOML is the file as TOML decodes it. Pointers tell an absent key (take the default) from a
// zero one. Durations are strings parsed here, so that a bad one is reported with the others.
type fileTOML struct {
	Listen       *string `toml:"listen"`
	MaxBodyBytes *int64  `toml:"max_body_bytes"`
	// MaxConnections is max_connections: nil takes DefaultMaxConnections, 0 turns the cap off.
	MaxConnections *int `toml:"max_connections"`

	AllowedHosts   *[]string `toml:"allowed_hosts"`
	AllowedOrigins *[]string `toml:"allowed_origins"`
	// Keys are decoded one by one, because TOML positions name "keys.sha256" without saying
	// which [[keys]] block it was.
	Keys     []toml.Primitive      `toml:"keys"`
	Cooldown cooldownTOML          `toml:"cooldown"`
	Targets  map[string]targetTOML `toml:"targets"`
	Routes   map[string]routeTOML  `toml:"routes"`
	// Groups are the [groups.NAME] tables of lifecycle-managed targets.
	Groups      map[string]groupTOML `toml:"groups"`
	StateFile   *string              `toml:"state_file"`
	TLSCertFile *string              `toml:"tls_cert_file"`
	TLSKeyFile  *string              `toml:"tls_key_file"`
	WaitHealthy *bool                `toml:"wait_healthy"`
	Metrics     *bool                `toml:"metrics"`
	Strict      bool                 `toml:"strict"`
	// Auto turns on model "auto"; its fields are autoroute.Rules (zero values mean the defaults).
	Auto *autoroute.Rules `toml:"auto"`
}

type keyTOML struct {
	Name          string    `toml:"name"`
	SHA256        string    `toml:"sha256"`
	Routes        *[]string `toml:"routes"`
	Strict        bool      `toml:"strict"`
	RPM           int       `toml:"rpm"`
	MaxConcurrent int       `toml:"max_concurrent"`
	TPM           int       `toml:"tpm"`
}

type cooldownTOML struct {
	Failures *int    `toml:"failures"`
	Base     *string `toml:"base"`
	Max      *string `toml:"max"`
}

type targetTOML struct {
	Adapter       string    `toml:"adapter"`
	URL           string    `toml:"url"`
	Model         *string   `toml:"model"`
	Class         *string   `toml:"class"`
	ContextWindow int       `toml:"context_window"`
	WindowMax     *bool     `toml:"window_counts_max_tokens"`
	Tools         *bool     `toml:"tools"`
	Vision        *bool     `toml:"vision"`
	Timeout       *string   `toml:"timeout"`
	IdleTimeout   *string   `toml:"idle_timeout"`
	MaxRetries    int       `toml:"max_retries"`
	APIKeyEnv     string    `toml:"api_key_env"`
	Weight        *int      `toml:"weight"`
	Reasoning     *string   `toml:"reasoning"`
	StreamUsage   *bool     `toml:"stream_usage"`
	Specialists   *[]string `toml:"specialists"`
	// Active health (see health.go).
	HealthPath     *string `toml:"health_path"`
	HealthInterval *string `toml:"health_interval"`
	HealthTimeout  *string `toml:"health_timeout"`
	DegradedAfter  *string `toml:"degraded_after"`
	// Lifecycle (see lifecycle.go).
	Command     *[]string `toml:"command"`
	IdleStop    *string   `toml:"idle_stop"`
	Group       *string   `toml:"group"`
	LoadTimeout *string   `toml:"load_timeout"`
}

type routeTOML struct {
	Targets    []string            `toml:"targets"`
	Strict     bool                `toml:"strict"`
	Policy     *string             `toml:"policy"`
	FallbackOn *[]string           `toml:"fallback_on"`
	Guard      map[string][]string `toml:"guard"`
}

// windowCountsMaxTokensDefault is window_counts_max_tokens left out. Only the OpenAI API (and the
// servers that follow it here, vLLM, SGLang) refuses a request whose prompt plus max_tokens
// overflows the window; Ollama shifts the context or stops early, and SAIF's protocol does not say.
func windowCountsMaxTokensDefault(a core.AdapterKind) bool { return a == core.AdapterOpenAI }

// streamUsageDefault is stream_usage left out. Only an OpenAI-compatible server reports a stream's
// usage only when asked: Ollama's and SAIF's report it on their last line always.
func streamUsageDefault(a core.AdapterKind) bool { return a == core.AdapterOpenAI }

// Parse parses a config from data; filename is only for messages and Config.Source. getenv
// resolves api_key_env; nil means an empty environment. Every error is a *Error, several joined
// when there are several (see Errors).
func Parse(data []byte, filename string, getenv func(string) string) (*Config, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	c := &compiler{problems: problems{file: filename}, src: data, getenv: getenv,
		meant: map[string]bool{}, dotted: map[string]bool{}}

	// The layout is read first: a key defined twice is refused by the decoder, and the message
	// names the line of its first definition. It never panics on text the decoder refuses.
	c.l = scanLayout(data)
	var raw fileTOML
	md, err := toml.Decode(string(data), &raw)
	if err != nil {
		c.decodeErr(err, nil)
		return nil, c.err()
	}
	keys := make([]keyTOML, len(raw.Keys))
	for i, prim := range raw.Keys {
		if err := md.PrimitiveDecode(prim, &keys[i]); err != nil {
			c.decodeErr(err, []string{"keys", elem(i)})
		}
	}
	if len(c.list) > 0 {
		// The values are not all there; checking them would only add noise.
		return nil, c.err()
	}
	c.md = md
	c.unknown(md.Undecoded())
	if c.meant["targets"] || c.meant["routes"] || c.meant["groups"] || c.meant["keys"] {
		// A misspelt table name ([target.x], [[key]]) leaves what it holds out of the config:
		// every target, route or key named elsewhere would be reported missing.
		return nil, c.err()
	}
	c.tables(md, &raw)

	cfg := &Config{Source: filename}
	c.top(cfg, &raw)
	cfg.Cooldown = c.cooldown(&raw.Cooldown)
	cfg.Targets = c.targets(raw.Targets)
	cfg.classDefaulted = c.classDefaulted
	cfg.Lifecycle = c.lifecycle(&raw, cfg)
	cfg.TLS = c.tls(&raw, cfg.Source)
	cfg.Routes = c.routes(raw.Routes, cfg)
	cfg.Keys = c.keys(keys, raw.Routes)
	cfg.Auto = c.auto(raw.Auto, cfg)
	c.strictKeys(cfg)
	if len(keys) == 0 && !IsLoopback(cfg.Listen) {
		c.errorf([]string{"listen"}, "%s", openMsg(cfg.Listen))
	}
	if len(keys) == 0 && cfg.Browsers.AnyHost {
		c.errorf([]string{"allowed_hosts"}, "\"*\" on a gateway without [[keys]] lets any web page that points a name at this machine use it: list the names, or add a key (gateway keygen)")
	}
	if len(keys) == 0 && cfg.Browsers.AnyOrigin {
		c.errorf([]string{"allowed_origins"}, "\"*\" on a gateway without [[keys]] lets any web page use it: list the origins, or add a key (gateway keygen)")
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// compiler turns the decoded file into typed values, collecting every problem on the way.
type compiler struct {
	problems
	src    []byte // the file as given, for messages that quote a line of it
	l      *layout
	getenv func(string) string
	md     toml.MetaData
	// meant holds the paths (pathKey) of keys the file does not write but an unknown key next to
	// them was a misspelling of ("adpter" for adapter): the unknown key's error says it, and a
	// "missing" error for the key meant would only repeat it. dotted holds the names written
	// unquoted with a dot ("targets\x1fqwen2.5"), and the tables such a name made by mistake
	// ("targets\x1fqwen2"), whose errors would repeat the unknown key's as well.
	meant, dotted map[string]bool
	// classDefaulted are the targets compiled without a class key (Config.classDefaulted).
	classDefaulted []*core.Target
}

// echo reports whether a problem with the key at path only repeats an unknown key's error: the
// key is one a misspelt key meant, or is inside one ([Cooldown] for [cooldown]), or belongs to a
// table an unquoted dotted name made.
func (c *compiler) echo(path []string) bool {
	for n := 1; n <= len(path); n++ {
		if c.meant[pathKey(path[:n])] {
			return true
		}
	}
	return len(path) >= 2 && c.dotted[pathKey(path[:2])]
}

// meantUnder reports whether a misspelt key was meant for a key under prefix.
func (c *compiler) meantUnder(prefix ...string) bool {
	p := pathKey(prefix)
	for k := range c.meant {
		if k == p || strings.HasPrefix(k, p+"\x1f") {
			return true
		}
	}
	return false
}

// errorf records a problem with the key at path, found at that key's line (or its table's).
func (c *compiler) errorf(path []string, format string, args ...any) {
	if c.echo(path) {
		return
	}
	c.add(c.l.line(path...), "%s: %s", display(path), fmt.Sprintf(format, args...))
}

// decodeErr records an error from the TOML library. Inside an array of tables (in, e.g. keys[1])
// the library's line is that of the key's last occurrence in any element, so the layout answers.
func (c *compiler) decodeErr(err error, in []string) {
	line, last, msg := 0, "", err.Error()
	var pe toml.ParseError
	if errors.As(err, &pe) {
		line, last, msg = pe.Position.Line, pe.LastKey, pe.Message
		if p := pe.Position.Start; line > 0 && p >= 0 && p < len(c.src) {
			// The library counts a line once it has read its newline, so an error at that
			// newline (a table header left open) was put on the next line; its offset is exact.
			line = bytes.Count(c.src[:p], []byte{'\n'}) + 1
		}
	} else {
		// Type mismatches come as plain errors: "toml: line 4 (last key \"a.b\"): incompatible …".
		msg = strings.TrimPrefix(msg, "toml: ")
		if rest, ok := strings.CutPrefix(msg, "line "); ok {
			n, after, _ := strings.Cut(rest, " ")
			if v, err := strconv.Atoi(n); err == nil {
				line, msg = v, after
			}
		}
		if rest, ok := strings.CutPrefix(msg, "(last key \""); ok {
			if k, after, ok := strings.Cut(rest, "\"): "); ok {
				last, msg = k, after
			}
		}
	}
	if key, ok := redefined(msg); ok {
		c.add(line, "%s", c.redefinedMsg(key, line))
		return
	}
	if last == "" {
		c.add(line, "%s", msg)
		return
	}
	if in == nil && strings.HasPrefix(last, "auto.intents.") {
		in = c.failingIntent()
	}
	if in != nil {
		// Fields inside [[keys]] and [[auto.intents]] are plain names, so the last key splits
		// on dots; the names of in, but for its indexes, start it.
		rel := strings.Split(last, ".")[len(plain(in)):]
		path := append(slices.Clone(in), rel...)
		if l := c.l.line(path...); l > 0 {
			line = l
		}
		last = display(path)
	}
	parts := strings.Split(last, ".")
	if k := parts[len(parts)-1]; isSecretName(k) || k == "api_key_env" {
		// The value of such a key may be a key written without quotes, and the library's
		// syntax errors quote what they found ("expected value but found \"sk…\" instead").
		msg = withoutQuoted(msg)
	}
	if got, want, ok := mismatch(msg); ok {
		msg = fmt.Sprintf("want %s, got %s", want, got)
		if hint := c.typeHint(line, parts[len(parts)-1], got, want); hint != "" {
			msg += " (" + hint + ")"
		}
	}
	c.add(line, "%s: %s", last, msg)
}

// failingIntent is the path (auto, intents, elem(i)) of the first [[auto.intents]] block that
// does not decode on its own, for a decode error the library names by auto.intents.KEY, at the
// line of KEY in the last block that has it; nil when none is found.
func (c *compiler) failingIntent() []string {
	var doc struct {
		Auto struct {
			Intents []map[string]any `toml:"intents"`
		} `toml:"auto"`
	}
	if _, err := toml.Decode(string(c.src), &doc); err != nil {
		return nil
	}
	for i, block := range doc.Auto.Intents {
		var b strings.Builder
		if err := toml.NewEncoder(&b).Encode(block); err != nil {
			continue
		}
		var rule autoroute.IntentRule
		if _, err := toml.Decode(b.String(), &rule); err != nil {
			return []string{"auto", "intents", elem(i)}
		}
	}
	return nil
}

// withoutQuoted is msg with every double-quoted stretch in it replaced by a note that the value
// is not repeated.
func withoutQuoted(msg string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(msg, '"')
		if i < 0 {
			b.WriteString(msg)
			return b.String()
		}
		j := strings.IndexByte(msg[i+1:], '"')
		if j < 0 {
			b.WriteString(msg[:i])
			b.WriteString("(value not repeated)")
			return b.String()
		}
		b.WriteString(msg[:i])
		b.WriteString("(value not repeated)")
		msg = msg[i+1+j+1:]
	}
}

// mismatch reads the TOML library's "incompatible types: TOML value has type int64; destination
// has type string" (or, for a value where a table belongs, "type mismatch for T: expected table
// but found int64") and says both types as a TOML file spells them ("an integer", "a string"):
// a config's author never saw the Go types.
func mismatch(msg string) (got, want string, ok bool) {
	var g, w string
	if rest, found := strings.CutPrefix(msg, "incompatible types: TOML value has type "); found {
		g, w, ok = strings.Cut(rest, "; destination has type ")
	} else if rest, found := strings.CutPrefix(msg, "type mismatch for "); found {
		// A value where a table belongs: "type mismatch for config.cooldownTOML: expected
		// table but found int64".
		_, rest, _ = strings.Cut(rest, ": expected ")
		w, g, ok = strings.Cut(rest, " but found ")
	}
	if !ok {
		return "", "", false
	}
	tomlType := map[string]string{
		"string": "a string", "int64": "an integer", "float64": "a float", "bool": "a boolean",
		"[]any": "an array", "[]map[string]any": "an array of tables", "map[string]any": "a table",
		"time.Time": "a date", "integer": "an integer", "float": "a number", "boolean": "a boolean",
		"slice": "an array", "map": "a table", "table": "a table",
		"[]interface {}": "an array", "map[string]interface {}": "a table",
	}
	got, want = tomlType[g], tomlType[w]
	if got == "" {
		got = g
	}
	if want == "" {
		want = w
	}
	return got, want, true
}

// typeHint says how to write the value of key, on line (1-based) of the file, in the type the
// key wants, quoting the line's own value when it is a plain `key = value`.
func (c *compiler) typeHint(line int, key, got, want string) string {
	val := ""
	if lines := strings.Split(string(c.src), "\n"); line >= 1 && line <= len(lines) {
		k, v, ok := strings.Cut(lines[line-1], "=")
		if ok && strings.TrimSpace(k) == key {
			val = strings.TrimSpace(v)
			if i := strings.Index(val, " #"); i >= 0 && !strings.HasPrefix(val, "[") {
				val = strings.TrimSpace(val[:i])
			}
		}
	}
	switch {
	case isDurationKey(key) && want == "a string":
		if _, err := strconv.ParseFloat(val, 64); err == nil && got != "a string" {
			return fmt.Sprintf("a duration is a string with its unit: %s = \"%ss\" for %s seconds, not %s = %s", key, val, val, key, val)
		}
		return `a duration is a string such as "30s"`
	case got == "a string" && (want == "an integer" || want == "a number"):
		return c.unquoteHint(line)
	case got == "a string" && want == "a boolean":
		return "true or false, without quotes"
	case got == "a float" && want == "an integer":
		return "a whole number, without a decimal point"
	case key == "listen" && want == "a string":
		return `host and port in quotes, such as listen = "127.0.0.1:8000"`
	case got == "a string" && want == "an array":
		s, err := strconv.Unquote(val)
		if err != nil {
			return `a list in brackets, such as ["a", "b"]`
		}
		items := []string{s}
		if key == "command" {
			// A command line written as one string: each argument is its own element, a
			// credential's value left out (commandSecrets refuses it anyway).
			items = maskCredentials(strings.Fields(s))
		}
		for i := range items {
			items[i] = strconv.Quote(items[i])
		}
		return fmt.Sprintf("a list in brackets, even of one: %s = [%s]", key, strings.Join(items, ", "))
	case want == "a string" && (got == "an integer" || got == "a float" || got == "a boolean"):
		return "a string is written in quotes"
	}
	return ""
}

// redefined reads the TOML library's "Key 'routes.chat' has already been defined." and returns
// the key as the library spells it.
func redefined(msg string) (string, bool) {
	rest, ok := strings.CutPrefix(msg, "Key '")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "' has already been defined.")
}

// redefinedMsg says that key (as the TOML library spells it) is written again on line, where it
// was before, and what to do. The earlier definition is the latest one above line: in an array
// of tables ([[keys]]) every block has its own name, and only the same block's counts.
func (c *compiler) redefinedMsg(key string, line int) string {
	first, name := 0, key
	for _, d := range c.l.keys {
		if l := c.l.lineAt(d.off); plain(d.path).String() == key && (l < line || line == 0) {
			first, name = l, display(d.path)
		}
	}
	where := ""
	if first > 0 {
		where = fmt.Sprintf(" (first at line %d)", first)
	}
	return fmt.Sprintf("%s is defined twice%s: TOML allows each table and each key once; "+
		"merge the two, or rename one", name, where)
}

// unquoteHint says how to write the quoted number on line (1-based) of the file: with the line's
// own key and value when it is a plain `key = "20"`, else in general.
func (c *compiler) unquoteHint(line int) string {
	const general = "a number is written without quotes"
	lines := strings.Split(string(c.src), "\n")
	if line < 1 || line > len(lines) {
		return general
	}
	key, val, ok := strings.Cut(lines[line-1], "=")
	key, val = strings.TrimSpace(key), strings.TrimSpace(val)
	n, err := strconv.Unquote(val)
	if !ok || err != nil || key == "" {
		return general
	}
	if _, err := strconv.ParseFloat(n, 64); err != nil {
		return general
	}
	return fmt.Sprintf("%s: %s = %s, not %s = %s", general, key, n, key, val)
}

// isDurationKey is true of the keys whose values are durations, for a hint when one is not a
// string.
func isDurationKey(name string) bool {
	switch name {
	case "timeout", "idle_timeout", "base", "max", "health_interval", "health_timeout", "degraded_after", "idle_stop",
		"load_timeout":
		return true
	}
	return false
}

// isSecretName is true of the keys a user may reach for to write a credential inline; the config
// refuses them with a pointer to the right place rather than a bare "unknown key".
func isSecretName(name string) bool {
	switch name {
	case "api_key", "apikey", "key", "token", "secret", "password":
		return true
	}
	return false
}

// tables reports a map-valued key holding something other than a table: the decoder ignores
// that silently.
func (c *compiler) tables(md toml.MetaData, raw *fileTOML) {
	check := func(path ...string) {
		if typ := md.Type(path...); typ != "" && typ != "Hash" {
			c.errorf(path, "want a table, got %s", strings.ToLower(typ))
		}
	}
	check("targets")
	check("routes")
	check("groups")
	for name := range raw.Routes {
		check("routes", name, "guard")
	}
}

// unknown reports keys the decoder did not use, each at its line, and only the outermost of a
// nest of unknown keys.
func (c *compiler) unknown(undecoded []toml.Key) {
	bad := map[string]bool{}
	for _, k := range undecoded {
		bad[k.String()] = true
	}
	inside := func(k toml.Key) bool {
		for n := 1; n < len(k); n++ {
			if bad[k[:n].String()] {
				return true
			}
		}
		return false
	}
	// The decoder matches names case-insensitively, every name of a path ("Targets" in
	// [Targets.b], "URL"), so such a key counts as decoded; TOML keys are case-sensitive and
	// this config's are lower case. Beside its right spelling ([[keys]] and [[Keys]]) one of the
	// two replaced the other, whose keys the decoder then left: the misspelt name's error says
	// it all, and the right name's keys are not reported (collided).
	collided := map[string]bool{}
	for _, d := range c.l.keys {
		if n := foldedAt(d.path); n > 0 {
			right := append(slices.Clone(d.path[:n-1]), suggest(d.path[n-1], knownKeys(d.path[:n])))
			if _, written := c.l.at[pathKey(right)]; written {
				collided[pathKey(right)] = true
				c.meant[pathKey(right)] = true
			}
		}
	}
	under := func(path []string, set map[string]bool) bool {
		for n := 1; n <= len(path); n++ {
			if set[pathKey(path[:n])] {
				return true
			}
		}
		return false
	}
	reported, found := map[string]bool{}, map[string]bool{}
	for _, d := range c.l.keys {
		plain := plain(d.path)
		path := d.path
		if n := foldedAt(d.path); n > 0 {
			path = d.path[:n]
		} else if !bad[plain.String()] || inside(plain) {
			continue
		} else if under(d.path, collided) {
			found[plain.String()] = true
			continue
		}
		found[plain.String()] = true
		if reported[pathKey(path)] {
			continue
		}
		reported[pathKey(path)] = true
		c.unknownKey(path, c.l.lineAt(d.off))
	}
	for _, k := range undecoded {
		if !found[k.String()] && !inside(k) {
			found[k.String()] = true
			c.unknownKey(k, 0)
		}
	}
}

// foldedAt is the length of the shortest prefix of path whose last name is one of its table's
// keys (knownKeys) in another case, which the decoder took for that key; 0 when there is none.
// Names of targets, routes, groups and guards, and array indexes, are anyone's.
func foldedAt(path []string) int {
	for n := 1; n <= len(path); n++ {
		name := path[n-1]
		known := knownKeys(path[:n])
		if !slices.Contains(known, name) && slices.ContainsFunc(known, func(k string) bool { return strings.EqualFold(k, name) }) {
			return n
		}
	}
	return 0
}

func (c *compiler) unknownKey(path []string, line int) {
	name := path[len(path)-1]
	switch {
	case isSecretName(name) && path[0] == "keys":
		c.add(line, "%s: the API key itself never goes in the config: store its hash as sha256 "+
			"(gateway keygen prints both)", display(path))
	case isSecretName(name):
		c.add(line, "%s: secrets are refused in the config: put the upstream key in an "+
			"environment variable and name that variable with api_key_env", display(path))
	case c.dottedName(path):
		c.add(line, "%s: a name with a dot is written in quotes, [%s.%q]: unquoted, the dot makes %q a "+
			"table inside a %s named %q", display(path), path[0], path[1]+"."+path[2], path[2],
			strings.TrimSuffix(path[0], "s"), path[1])
	case len(path) > 1 && !slices.Contains(knownKeys(path[:1]), path[0]) && suggest(path[0], knownKeys(path[:1])) != "":
		// [target.x] for [targets.x]: the table's name is what was misspelt, not x.
		meant := slices.Clone(path)
		meant[0] = suggest(path[0], knownKeys(path[:1]))
		c.meant[pathKey(meant[:1])] = true
		c.add(line, "unknown table %s (did you mean %s?)", display(path), display(meant))
	default:
		msg := "unknown key " + display(path)
		meant := suggest(name, knownKeys(path))
		if meant != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", meant)
		} else if s, from := otherGatewayName(path); s != "" {
			meant = s
			msg += fmt.Sprintf(" (did you mean %q? %s is %s name for it)", s, name, from)
		} else if len(path) == 1 && name == "master_key" {
			// LiteLLM's one admin key has no counterpart: a key per client, by its hash.
			msg += " (LiteLLM's; here each client has its own key, a [[keys]] block holding its SHA-256: " +
				"gateway keygen NAME prints both, and the key is not written in the file)"
		}
		if meant != "" {
			sibling := append(slices.Clone(path[:len(path)-1]), meant)
			if _, written := c.l.at[pathKey(sibling)]; !written {
				c.meant[pathKey(sibling)] = true
			}
		}
		c.add(line, "%s", msg)
	}
}

// dottedName reports whether path is [targets.qwen2.5] (or a route's or group's) written without
// quotes, which TOML reads as a table "5" inside a target "qwen2"; it records the name meant and
// the table made, when that table holds nothing else, so that their errors are not repeated.
func (c *compiler) dottedName(path []string) bool {
	if len(path) != 3 || (path[0] != "targets" && path[0] != "routes" && path[0] != "groups") ||
		c.md.Type(path...) != "Hash" || slices.ContainsFunc(knownKeys(path), func(k string) bool {
		// Guard = {}: a key of the table in another case, not a name with a dot.
		return strings.EqualFold(k, path[2])
	}) {
		return false
	}
	c.dotted[pathKey([]string{path[0], path[1] + "." + path[2]})] = true
	parent := path[:2]
	own := slices.ContainsFunc(c.l.keys, func(d keyDef) bool {
		return len(d.path) >= 2 && slices.Equal(d.path[:2], parent) &&
			(len(d.path) == 2 || !c.dotted[pathKey([]string{path[0], path[1] + "." + d.path[2]})])
	})
	if !own {
		c.dotted[pathKey(parent)] = true
	}
	return true
}

// otherGatewayName returns this file's key for a key of the same table that another gateway's
// config names differently (LiteLLM's api_base, num_retries, its keys' models, rpm_limit and
// tpm_limit), and whose name it is, possessive: a user moving a config over gets the key to
// write, where no spelling is close.
func otherGatewayName(path []string) (key, from string) {
	if len(path) != 3 {
		return "", ""
	}
	switch path[0] + "." + path[2] {
	case "targets.api_base", "targets.api_url":
		return "url", "LiteLLM's"
	case "targets.base_url":
		return "url", "the OpenAI SDK's"
	case "targets.provider", "targets.custom_llm_provider":
		return "adapter", "LiteLLM's"
	case "targets.num_retries":
		return "max_retries", "LiteLLM's"
	case "targets.request_timeout", "targets.stream_timeout":
		// LiteLLM's bound the whole call, or a stream's first chunk; timeout bounds the wait
		// for the answer's head, idle_timeout each wait after it (CONFIG.md's LiteLLM table).
		return "timeout", "LiteLLM's"
	case "routes.fallbacks":
		return "targets", "LiteLLM's"
	case "routes.context_window_fallbacks":
		// A tail entered only when the prompt did not fit: guard = { tail = ["overflow"] }.
		return "guard", "LiteLLM's"
	case "keys.models":
		return "routes", "LiteLLM's"
	case "keys.rpm_limit":
		return "rpm", "LiteLLM's"
	case "keys.max_parallel_requests":
		return "max_concurrent", "LiteLLM's"
	case "keys.tpm_limit":
		return "tpm", "LiteLLM's"
	}
	return "", ""
}

// knownKeys lists the keys of the table that holds path, from the decode types' tags.
func knownKeys(path []string) []string {
	var v any
	switch {
	case len(path) == 1:
		v = fileTOML{}
	case len(path) == 3 && path[0] == "targets":
		v = targetTOML{}
	case len(path) == 3 && path[0] == "routes":
		v = routeTOML{}
	case len(path) == 3 && path[0] == "keys":
		v = keyTOML{}
	case len(path) == 3 && path[0] == "groups":
		v = groupTOML{}
	case len(path) == 2 && path[0] == "cooldown":
		v = cooldownTOML{}
	case len(path) == 2 && path[0] == "auto":
		v = autoroute.Rules{}
	case len(path) == 4 && path[0] == "auto" && path[1] == "intents":
		v = autoroute.IntentRule{}
	default:
		return nil
	}
	var out []string
	t := reflect.TypeOf(v)
	for i := range t.NumField() {
		out = append(out, t.Field(i).Tag.Get("toml"))
	}
	return out
}

// suggest returns the known key within two edits of name, if one is.
func suggest(name string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if strings.EqualFold(k, name) {
			return k
		}
		if d := editDistance(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func (c *compiler) top(cfg *Config, raw *fileTOML) {
	cfg.Listen = DefaultListen
	if raw.Listen != nil {
		cfg.Listen = *raw.Listen
		if err := CheckListen(cfg.Listen); err != nil {
			c.errorf([]string{"listen"}, "%v", err)
		}
	}
	cfg.MaxBodyBytes = DefaultMaxBodyBytes
	if raw.MaxBodyBytes != nil {
		cfg.MaxBodyBytes = *raw.MaxBodyBytes
		if cfg.MaxBodyBytes <= 0 {
			c.errorf([]string{"max_body_bytes"}, "must be positive, got %d", cfg.MaxBodyBytes)
		}
	}
	cfg.MaxConnections = DefaultMaxConnections
	if raw.MaxConnections != nil {
		cfg.MaxConnections = *raw.MaxConnections
		if cfg.MaxConnections < 0 {
			c.errorf([]string{"max_connections"}, "must be 0 (no cap) or more, got %d", cfg.MaxConnections)
		}
	}
	cfg.Browsers = c.browsers(raw, cfg.Listen)
	cfg.Metrics = raw.Metrics == nil || *raw.Metrics
	cfg.Strict = raw.Strict
}

// browsers compiles allowed_hosts and allowed_origins. The host that listen names, when it is a
// name, is allowed without being listed.
func (c *compiler) browsers(raw *fileTOML, listen string) Browsers {
	b := Browsers{Listen: listenHost(listen)}
	if raw.AllowedHosts != nil {
		for i, h := range *raw.AllowedHosts {
			at := []string{"allowed_hosts", elem(i)}
			switch {
			case h == "*":
				b.AnyHost = true
			case hostName(h) == "" || strings.ContainsAny(h, ":/ ") || strings.HasPrefix(h, "*"):
				c.errorf(at, "%q is not a host name (write it without scheme or port, as \"gateway.lan\"; \"*\" allows any)", h)
			default:
				b.Hosts = append(b.Hosts, hostName(h))
			}
		}
	}
	if raw.AllowedOrigins != nil {
		for i, o := range *raw.AllowedOrigins {
			at := []string{"allowed_origins", elem(i)}
			if o == "*" {
				b.AnyOrigin = true
				continue
			}
			u, err := url.Parse(o)
			if err != nil || u.Scheme == "" || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
				c.errorf(at, "%q is not an origin (scheme://host[:port], as \"http://192.168.1.20:3000\"; \"*\" allows any)", o)
				continue
			}
			host, scheme := u.Host, strings.ToLower(u.Scheme)
			if p := u.Port(); scheme == "http" && p == "80" || scheme == "https" && p == "443" {
				// A browser serialises an origin without its scheme's default port (RFC 6454 §6.1).
				host = strings.TrimSuffix(host, ":"+p)
			}
			b.Origins = append(b.Origins, strings.ToLower(scheme+"://"+host))
		}
	}
	return b
}

// hostName is an allowed host as Browsers.AllowHost compares it: lower case, without the
// trailing dot of a fully qualified name ("gateway.lan." and "gateway.lan" are one name).
func hostName(h string) string {
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

func openMsg(listen string) string {
	return fmt.Sprintf("no [[keys]] configured, so the gateway would be open to anyone who can "+
		"reach %q: an open gateway may only listen on loopback (127.0.0.0/8, ::1, localhost); "+
		"add a key (gateway keygen) or listen on 127.0.0.1", listen)
}

// CheckListen says what is wrong with addr as a listen address, on its own: it is host:port, and
// the port a number from 0 to 65535 (0 picks a free one). Whether the host is allowed depends on
// the keys (an open gateway listens only on loopback: IsLoopback); nil when it will do. The
// command line checks --listen with it before it reads any file.
func CheckListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	switch {
	case err != nil:
		return fmt.Errorf("%q is not host:port (example: \"127.0.0.1:8000\")", addr)
	case !validPort(port):
		return fmt.Errorf("the port %q of %q is not a number from 0 to 65535", port, addr)
	}
	return nil
}

// validPort is a number, not a service name: "http" would depend on the machine's /etc/services.
func validPort(port string) bool {
	_, err := strconv.ParseUint(port, 10, 16)
	return err == nil
}

// IsLoopback reports whether a listen address only accepts connections from this machine: a
// loopback IP (127.0.0.0/8, ::1) or localhost, which the system resolves when the gateway listens.
func IsLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (c *compiler) cooldown(raw *cooldownTOML) Cooldown {
	cd := Cooldown{Failures: DefaultFailures}
	if raw.Failures != nil {
		cd.Failures = *raw.Failures
		if cd.Failures < 1 {
			c.errorf([]string{"cooldown", "failures"}, "must be at least 1, got %d", cd.Failures)
		}
	}
	cd.Base = c.duration(raw.Base, DefaultCooldownBase, "cooldown", "base")
	cd.Max = c.duration(raw.Max, DefaultCooldownMax, "cooldown", "max")
	switch {
	case cd.Base == 0:
		c.errorf([]string{"cooldown", "base"}, "must be longer than 0s")
	case cd.Max < cd.Base:
		c.errorf([]string{"cooldown", "max"}, "%s is shorter than cooldown.base %s", cd.Max, cd.Base)
	}
	return cd
}

// duration parses a config duration; on a problem it records it and returns def.
func (c *compiler) duration(v *string, def time.Duration, path ...string) time.Duration {
	if v == nil {
		return def
	}
	d, err := time.ParseDuration(*v)
	switch {
	case err != nil:
		c.errorf(path, "%q is not a duration (examples: \"30s\", \"2m\", \"1h30m\")", *v)
		return def
	case d < 0:
		c.errorf(path, "%q is negative", *v)
		return def
	}
	return d
}

// validName keeps target and route names to what is safe in a model field, a log line and the
// comma-separated x-hayula-chain header.
func validName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isBare(s[i]) && !strings.ContainsRune("._:/@+", rune(s[i])) {
			return false
		}
	}
	return true
}

const nameRule = "use letters, digits and . _ - : / @ + only"

// targets compiles the [targets] tables.
func (c *compiler) targets(raw map[string]targetTOML) []*core.Target {
	names := slices.Sorted(maps.Keys(raw))
	out := make([]*core.Target, 0, len(names))
	for i, name := range names {
		out = append(out, c.target(i, name, raw[name]))
	}
	return out
}

func (c *compiler) target(index int, name string, raw targetTOML) *core.Target {
	at := func(key ...string) []string { return append([]string{"targets", name}, key...) }
	t := &core.Target{Name: name, Index: index, Model: name, Privacy: core.Private, Tools: true,
		Vision: true, Weight: 1, Stats: &core.Stats{}}
	if !validName(name) {
		c.errorf(at(), "bad target name: %s", nameRule)
	}

	switch raw.Adapter {
	case "openai":
		t.Adapter = core.AdapterOpenAI
	case "ollama":
		t.Adapter = core.AdapterOllama
	case "saif":
		t.Adapter = core.AdapterSAIF
	case "":
		c.errorf(at("adapter"), "missing: say which protocol the target speaks (openai, ollama or saif)")
	default:
		c.errorf(at("adapter"), "unknown adapter %q (want openai, ollama or saif; OpenRouter, vLLM, llama-server and LM Studio speak openai)", raw.Adapter)
	}

	t.URL = c.url(raw.URL, t.Adapter, at("url"))

	if raw.Model != nil {
		t.Model = *raw.Model
		if t.Model == "" {
			c.errorf(at("model"), "empty; leave it out to send the target name %q", name)
		}
		// LiteLLM names the provider in the model ("ollama/llama3.1"); Ollama would answer 404
		// for that tag at the first request, so it is refused here with the tag to write.
		for _, prefix := range []string{"ollama/", "ollama_chat/"} {
			if tag, ok := strings.CutPrefix(t.Model, prefix); ok && t.Adapter == core.AdapterOllama && tag != "" {
				c.errorf(at("model"), "%q is LiteLLM's provider/model form; adapter = \"ollama\" already says "+
					"the provider: write the Ollama tag, %q", t.Model, tag)
			}
		}
	}
	if raw.Class == nil {
		c.classDefaulted = append(c.classDefaulted, t)
	} else {
		switch *raw.Class {
		case "private":
		case "public":
			t.Privacy = core.Public
		default:
			c.errorf(at("class"), "unknown class %q (want private or public)", *raw.Class)
		}
	}
	c.health(t, raw, at) // after class: a public target is not checked unless asked
	t.ContextWindow = raw.ContextWindow
	if t.ContextWindow < 0 {
		c.errorf(at("context_window"), "must not be negative (0 means unknown)")
	}
	t.WindowCountsMaxTokens = windowCountsMaxTokensDefault(t.Adapter)
	if raw.WindowMax != nil {
		t.WindowCountsMaxTokens = *raw.WindowMax
	}
	if raw.Tools != nil {
		t.Tools = *raw.Tools
	}
	if raw.Vision != nil {
		t.Vision = *raw.Vision
	}
	if t.Adapter == core.AdapterSAIF {
		// SAIF's protocol carries neither tools nor images: a request with them is certain not
		// to be served as asked, so eligibility passes the target by.
		if raw.Tools != nil && t.Tools {
			c.errorf(at("tools"), "the saif protocol carries no tools: leave it out (false is the saif default)")
		}
		if raw.Vision != nil && t.Vision {
			c.errorf(at("vision"), "the saif protocol carries no images: leave it out (false is the saif default)")
		}
		t.Tools, t.Vision = false, false
	}
	t.Timeout = c.duration(raw.Timeout, DefaultTimeout, at("timeout")...)
	t.IdleTimeout = c.duration(raw.IdleTimeout, DefaultIdleTimeout, at("idle_timeout")...)
	t.MaxRetries = raw.MaxRetries
	if t.MaxRetries < 0 || t.MaxRetries > maxRetries {
		c.errorf(at("max_retries"), "must be from 0 to %d, got %d", maxRetries, t.MaxRetries)
	}
	t.APIKey = c.apiKey(raw.APIKeyEnv, at("api_key_env"))
	if raw.APIKeyEnv == "" && c.md.IsDefined(at("api_key_env")...) {
		c.errorf(at("api_key_env"), "empty; leave it out for a target that takes no key")
	}
	if raw.Weight != nil {
		t.Weight = *raw.Weight
		if t.Weight < 1 {
			c.errorf(at("weight"), "must be at least 1, got %d", t.Weight)
		}
	}
	if raw.Reasoning != nil {
		switch *raw.Reasoning {
		case "passthrough":
		case "think-tags":
			t.Reasoning = core.ReasoningThinkTags
		case "think-open":
			t.Reasoning = core.ReasoningThinkOpen
		default:
			c.errorf(at("reasoning"), "unknown reasoning %q (want passthrough, think-tags or think-open)", *raw.Reasoning)
		}
	}
	t.StreamUsage = streamUsageDefault(t.Adapter) && (raw.StreamUsage == nil || *raw.StreamUsage)
	if raw.StreamUsage != nil && t.Adapter != core.AdapterOpenAI {
		c.errorf(at("stream_usage"), "only an openai target is asked for a stream's usage (the %s protocol always reports it): leave it out", t.Adapter)
	}
	t.Specialists = c.specialists(raw, at("specialists"))
	return t
}

func (c *compiler) url(raw string, adapter core.AdapterKind, path []string) string {
	if raw == "" {
		// Ollama's base has no /v1 and the others' has: the example is the one to copy.
		example := `"http://127.0.0.1:8080/v1"`
		if adapter == core.AdapterOllama {
			example = `"http://127.0.0.1:11434" (Ollama's, without /v1)`
		}
		c.errorf(path, "missing: the target's base URL, such as %s", example)
		return ""
	}
	// "{port}" stands for the port of a target's own process (see lifecycle.go); it is checked
	// there, and parsed here as any port.
	u, err := url.Parse(strings.ReplaceAll(raw, lifecycle.PortPlaceholder, "1"))
	wellFormed := false
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "":
		c.errorf(path, "%q is not an absolute http or https URL", quotableURL(raw))
	case u.User != nil:
		// The message leaves the URL out: it holds a credential.
		c.errorf(path, "credentials in the URL are refused: put the upstream key in an "+
			"environment variable and name that variable with api_key_env")
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		// The query is left out of the message: some hosted APIs take their key there (?key=).
		c.errorf(path, "%q is followed by a query or fragment (not repeated here); adapters append paths "+
			"to a plain base URL, and the key goes in api_key_env", quotableURL(raw))
	default:
		wellFormed = true
	}
	base := strings.TrimRight(raw, "/")
	if adapter == core.AdapterOllama && wellFormed {
		// The ollama adapter appends /api/chat (and /api/embed, /api/tags) to url. Ollama's
		// OpenAI-compatible API is at /v1, which LiteLLM's api_base and Open WebUI's OpenAI
		// connections name: copied here, every request and health check met a 404 at
		// /v1/api/chat, and the chain moved on without a word at load
		// (TestLiteLLMCopiesSayWhatToWrite).
		for _, suffix := range []string{"/v1", "/api"} {
			root, ok := strings.CutSuffix(base, suffix)
			if !ok || strings.Contains(root[strings.Index(root, "://")+len("://"):], "/") {
				continue
			}
			if suffix == "/v1" {
				c.errorf(path, "%q ends in /v1, Ollama's OpenAI-compatible API, but adapter = \"ollama\" calls Ollama's "+
					"own API (/api/chat) under the base URL: write url = %q, or adapter = \"openai\" to keep /v1",
					quotableURL(raw), quotableURL(root))
			} else {
				c.errorf(path, "%q ends in /api, which adapter = \"ollama\" adds itself (/api/chat): write url = %q",
					quotableURL(raw), quotableURL(root))
			}
		}
	}
	return base
}

// quotableURL is a URL as an error message may quote it: without what comes before its last @
// (user:password@), and without its query and fragment, each of which may hold a credential. A
// URL that does not parse is cut the same way: a password may be what spoilt it. The userinfo
// goes first, wherever the @ is: a password holding '?' or '#' would otherwise pass for the
// start of a query, and the URL be quoted up to it, password's start included
// (TestBadURLCredentialsNotRepeated). An @ in a query takes the authority with it, which is the
// safe way to be wrong.
func quotableURL(raw string) string {
	start := 0
	if i := strings.Index(raw, "://"); i >= 0 {
		start = i + len("://")
	}
	if at := strings.LastIndexByte(raw[start:], '@'); at >= 0 {
		raw = raw[:start] + "…@" + raw[start+at+1:]
	}
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i]
	}
	return raw
}

// apiKey reads the upstream key from the environment variable named env.
func (c *compiler) apiKey(env string, path []string) core.Secret {
	if env == "" {
		return ""
	}
	if name, how, ok := envReference(env); ok {
		// LiteLLM's config.yaml names a variable "os.environ/NAME", a shell "$NAME": a user
		// moving either over writes it so, and was told not to paste the key, which they had
		// not (TestLiteLLMCopiesSayWhatToWrite). The name is repeated only when it looks like
		// one, upper case, as the unset-variable message below repeats it.
		if validEnvName(name) && conventionalEnvName(name) {
			c.errorf(path, "%q is %s way to name a variable: write api_key_env = %q", env, how, name)
			return ""
		}
	}
	if !validEnvName(env) {
		// The value is left out of the message: a pasted key must not reach the logs.
		c.errorf(path, "must name an environment variable (letters, digits, _), not hold the key itself")
		return ""
	}
	v := c.getenv(env)
	switch {
	case v != "":
	case conventionalEnvName(env):
		c.errorf(path, "environment variable %s is unset or empty: set it where the gateway runs, for "+
			"check-config as well as serve (export %s=…; under systemd, Environment= or EnvironmentFile=)", env, env)
	default:
		// Some keys are valid variable names too (Hugging Face's hf_…, GitHub's ghp_…): a name
		// that is not upper case may be a pasted key, so the message does not repeat it.
		c.errorf(path, "the environment variable it names is unset or empty (the name is not "+
			"repeated: it is not upper case, and may be a pasted key)")
	}
	return core.Secret(v)
}

// envReference reads env as another tool's reference to a variable: LiteLLM's os.environ/NAME,
// or a shell's $NAME or ${NAME}. how names the tool, for a message.
func envReference(env string) (name, how string, ok bool) {
	if name, ok := strings.CutPrefix(env, "os.environ/"); ok {
		return name, "LiteLLM's", true
	}
	if inner, ok := strings.CutPrefix(env, "${"); ok {
		if name, ok := strings.CutSuffix(inner, "}"); ok {
			return name, "a shell's", true
		}
	}
	if name, ok := strings.CutPrefix(env, "$"); ok {
		return name, "a shell's", true
	}
	return "", "", false
}

// validEnvName reports whether s is a variable name api_key_env takes: letters, digits and _,
// not starting with a digit.
func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if !(ch == '_' || ch >= 'A' && ch <= 'Z' || ch >= 'a' && ch <= 'z' || i > 0 && ch >= '0' && ch <= '9') {
			return false
		}
	}
	return true
}

// conventionalEnvName is true of a variable name in the usual upper-case form (OPENROUTER_API_KEY).
func conventionalEnvName(s string) bool {
	return s != "" && strings.ToUpper(s) == s
}

func (c *compiler) specialists(raw targetTOML, path []string) []string {
	if raw.Specialists == nil {
		if raw.Adapter == "saif" {
			return DefaultSpecialists()
		}
		return nil
	}
	if raw.Adapter != "saif" {
		c.errorf(path, "only a target with adapter = \"saif\" has specialists")
		return nil
	}
	list := slices.Clone(*raw.Specialists)
	// A hint names a specialist in any case, the first match winning: by lower case, the name
	// first written.
	seen := map[string]string{}
	for i, s := range list {
		el := append(slices.Clone(path), elem(i))
		first, dup := seen[strings.ToLower(s)]
		switch {
		case !validName(s):
			c.errorf(el, "bad specialist name %q: %s", s, nameRule)
		case dup && first == s:
			c.errorf(el, "%q is listed twice", s)
		case dup:
			c.errorf(el, "%q is listed twice (as %q; a hint names a specialist in any case)", s, first)
		}
		if !dup {
			seen[strings.ToLower(s)] = s
		}
	}
	return list
}

func (c *compiler) routes(raw map[string]routeTOML, cfg *Config) []*Route {
	names := slices.Sorted(maps.Keys(raw))
	if len(names) == 0 {
		c.add(0, "no routes: add at least one [routes.NAME] table (NAME is what clients put in \"model\")")
	}
	out := make([]*Route, 0, len(names))
	for _, name := range names {
		out = append(out, c.route(name, raw[name], cfg))
	}
	return out
}

func (c *compiler) route(name string, raw routeTOML, cfg *Config) *Route {
	at := func(key ...string) []string { return append([]string{"routes", name}, key...) }
	r := &Route{Name: name, Strict: raw.Strict || cfg.Strict, FallbackOn: core.DefaultFallbackOn}
	if cfg.Strict && !raw.Strict && c.md.IsDefined("routes", name, "strict") {
		// The top-level strict is the operator's word that no prompt leaves the machines they
		// control: a route cannot take it back (TestTopLevelStrict).
		c.errorf(at("strict"), "strict = false, but the top-level strict = true makes every route strict: "+
			"remove this line (or the top-level strict)")
	}
	switch {
	case name == RouteAuto:
		c.errorf(at(), "the route name %q is reserved for the automatic router", RouteAuto)
	case !validName(name):
		c.errorf(at(), "bad route name: %s", nameRule)
	}

	if len(raw.Targets) == 0 {
		c.errorf(at("targets"), "the route has no targets: list at least one target name")
	}
	position := map[string]int{}
	for i, tn := range raw.Targets {
		el := at("targets", elem(i))
		t, ok := cfg.Target(tn)
		switch {
		case !ok && c.dotted[pathKey([]string{"targets", tn})]:
			// The target is there, under an unquoted dotted name, whose error says so.
		case !ok:
			c.errorf(el, "no target named %q", tn)
		case position[tn] > 0:
			c.errorf(el, "target %q is listed twice", tn)
		default:
			position[tn] = i + 1
			r.Targets = append(r.Targets, t)
		}
	}

	// A strict route never sends to a public target, so with only public ones it would refuse
	// every request: the config would load but the route could not work.
	if r.Strict && len(r.Targets) > 0 && !slices.ContainsFunc(r.Targets, func(t *core.Target) bool {
		return t.Privacy != core.Public
	}) {
		if raw.Strict {
			c.errorf(at("strict"), "every target of this strict route is public, and a strict request "+
				"never reaches a public target: add a private target or remove strict")
		} else {
			c.errorf(at("targets"), "every target of this route is public, and the top-level strict = true "+
				"keeps every request from public targets: add a private target, or remove the route")
		}
	}

	if raw.Policy != nil {
		p, ok := core.ParsePolicy(*raw.Policy)
		if !ok || *raw.Policy == "" {
			c.errorf(at("policy"), "unknown policy %q (want ordered, weighted, least-busy or latency)", *raw.Policy)
		}
		r.Policy = p
	}
	if raw.FallbackOn != nil {
		r.FallbackOn = c.classes(*raw.FallbackOn, at("fallback_on"))
	}

	r.Guard = make([]core.ClassSet, len(r.Targets))
	for _, tn := range slices.Sorted(maps.Keys(raw.Guard)) {
		path := at("guard", tn)
		pos := position[tn]
		switch {
		case pos == 0:
			c.errorf(path, "%q is not a target of this route", tn)
			continue
		case pos == 1:
			c.errorf(path, "%q is the route's first target; nothing fails before it, so a guard "+
				"would never let it be tried", tn)
			continue
		case len(raw.Guard[tn]) == 0:
			c.errorf(path, "empty: a guard with no classes never lets %q be tried; remove it "+
				"from targets instead", tn)
			continue
		}
		set := c.classes(raw.Guard[tn], path)
		// Only a failure in fallback_on moves the chain on; a target passed over for its context
		// window counts as an overflow whatever fallback_on says.
		if moves := r.FallbackOn | core.SetOf(core.ClassOverflow); set != 0 && set&moves == 0 {
			fallback := classList(r.FallbackOn)
			if r.FallbackOn == 0 {
				fallback = "none"
			}
			c.errorf(path, "none of its classes (%s) moves this route on (fallback_on: %s), so it would never "+
				"let %q be tried; add one of them to fallback_on, or remove %q from targets", classList(set), fallback, tn, tn)
		}
		// Guard is aligned with the kept targets; a target that was not kept already has its error.
		if idx := slices.IndexFunc(r.Targets, func(t *core.Target) bool { return t.Name == tn }); idx > 0 {
			r.Guard[idx] = set
		}
	}
	return r
}

// classes parses failure class names, refusing those that never move a chain on.
func (c *compiler) classes(names []string, path []string) core.ClassSet {
	var set core.ClassSet
	for i, n := range names {
		el := append(slices.Clone(path), elem(i))
		cl, ok := core.ParseClass(n)
		switch {
		case !ok:
			c.errorf(el, "unknown failure class %q (want connection, timeout, server_error, "+
				"rate_limit, overflow, endpoint or loading)", n)
		case cl == core.ClassRequest:
			c.errorf(el, "\"request\" failures are the client's own and are answered as they are; "+
				"they never fall through")
		case cl == core.ClassClientGone:
			c.errorf(el, "\"client_gone\" means nobody is left to answer; it never falls through")
		default:
			set |= core.SetOf(cl)
		}
	}
	return set
}

func (c *compiler) keys(raw []keyTOML, routes map[string]routeTOML) []Key {
	out := make([]Key, 0, len(raw))
	names := map[string]int{}
	hashes := map[[32]byte]int{}
	for i, k := range raw {
		at := func(key ...string) []string { return append([]string{"keys", elem(i)}, key...) }
		key := Key{Name: k.Name, Strict: k.Strict, Index: i, RPM: k.RPM, MaxConcurrent: k.MaxConcurrent, TPM: k.TPM}
		if k.RPM < 0 {
			c.errorf(at("rpm"), "must be 0 (no limit) or more, got %d", k.RPM)
		}
		if k.MaxConcurrent < 0 {
			c.errorf(at("max_concurrent"), "must be 0 (no limit) or more, got %d", k.MaxConcurrent)
		}
		if k.TPM < 0 {
			c.errorf(at("tpm"), "must be 0 (no limit) or more, got %d", k.TPM)
		}
		if k.Name == "" {
			c.errorf(at("name"), "missing: every key needs a name for the logs")
		} else if j, dup := names[k.Name]; dup {
			c.errorf(at("name"), "duplicate key name %q (also keys[%d])", k.Name, j)
		} else {
			names[k.Name] = i
		}

		sum, err := hex.DecodeString(k.SHA256)
		switch {
		case k.SHA256 == "":
			c.errorf(at("sha256"), "missing: the hex SHA-256 of the key (gateway keygen prints it)")
		case strings.HasPrefix(k.SHA256, "hk-"):
			c.errorf(at("sha256"), "holds a key, not its hash; the key itself never goes in the "+
				"config: store the sha256 gateway keygen prints")
		case err != nil || len(sum) != 32:
			c.errorf(at("sha256"), "want 64 hex digits (gateway keygen prints them), got %d characters", len(k.SHA256))
		default:
			copy(key.SHA256[:], sum)
			if j, dup := hashes[key.SHA256]; dup {
				c.errorf(at("sha256"), "the same hash as keys[%d]: one key, two names", j)
			}
			hashes[key.SHA256] = i
		}

		if k.Routes != nil {
			// An empty list allows no route: a key for scraping /metrics, which no chat can use.
			key.Routes = map[string]bool{}
			for j, rn := range *k.Routes {
				if _, ok := routes[rn]; !ok && rn != RouteAuto && !c.dotted[pathKey([]string{"routes", rn})] {
					c.errorf(at("routes", elem(j)), "no route named %q", rn)
				}
				key.Routes[rn] = true
			}
		}
		out = append(out, key)
	}
	return out
}

// strictKeys refuses a strict key every route of which has only public targets: a strict request
// never reaches a public target, so the key would load but every request with it would be refused.
// Model "auto" counts as every route it may choose. A key allowed no route (routes = [], a key for
// /metrics) is left alone.
func (c *compiler) strictKeys(cfg *Config) {
	private := func(r *Route) bool {
		// A route left without targets has its own error already.
		return len(r.Targets) == 0 || slices.ContainsFunc(r.Targets, func(t *core.Target) bool { return t.Privacy != core.Public })
	}
	for i := range cfg.Keys {
		k := &cfg.Keys[i]
		if !k.Strict {
			continue
		}
		reach, serves := 0, false
		for _, r := range cfg.Routes {
			if k.Allows(r.Name) {
				reach++
				serves = serves || private(r)
			}
		}
		if cfg.Auto != nil && k.Allows(RouteAuto) {
			for _, name := range cfg.Auto.Routes() {
				if r, ok := cfg.Route(name); ok {
					reach++
					serves = serves || private(r)
				}
			}
		}
		if reach > 0 && !serves {
			c.errorf([]string{"keys", elem(i), "strict"}, "every route this strict key may use has only "+
				"public targets, and a strict request never reaches a public target: add a private target "+
				"to one of them, allow the key a route with one, or remove strict")
		}
	}
}

// auto compiles the [auto] table into the classifier for model "auto", and checks that every
// route it can choose exists.
// autoPath is the file's path of an autoroute.ConfigError's Field ("intents[1].terms[4]"):
// ["auto", "intents", elem(1), "terms", elem(4)].
func autoPath(field string) []string {
	path := []string{"auto"}
	for part := range strings.SplitSeq(field, ".") {
		name, index, ok := strings.Cut(part, "[")
		path = append(path, name)
		if n, err := strconv.Atoi(strings.TrimSuffix(index, "]")); ok && err == nil {
			path = append(path, elem(n))
		}
	}
	return path
}

func (c *compiler) auto(raw *autoroute.Rules, cfg *Config) *autoroute.Classifier {
	if raw == nil || c.meantUnder("auto") {
		// A misspelt key in [auto] left a rule at its default: whatever the rules say now, the
		// misspelling's error is the one to fix.
		return nil
	}
	// autoroute takes an empty value for one left out, the built-in one: written, it is more
	// likely a mistake than a wish for the default, and intents = [] reads as "no intents".
	empty := false
	for _, e := range []struct {
		key, why string
		is       bool
	}{
		{"intents", "it would be the built-in intents (security, reasoning), not none: leave it out for those; " +
			"for none, give one [[auto.intents]] with any = true and the default's route", len(raw.Intents) == 0},
		{"default", "leave it out for \"" + autoroute.RouteAverroesQ + "\", or name a route", raw.Default == ""},
		{"specialist_route", "leave it out for \"" + autoroute.RouteSAIF + "\", or name a route", raw.SpecialistRoute == ""},
		{"negations", "leave it out for the built-in cues, or write [\"-\"] for none", len(raw.Negations) == 0},
		{"specialists", "leave it out for the built-in list (" + strings.Join(autoroute.DefaultRules().Specialists, ", ") +
			")", len(raw.Specialists) == 0},
	} {
		if e.is && c.md.IsDefined("auto", e.key) {
			c.errorf([]string{"auto", e.key}, "empty; %s", e.why)
			empty = true
		}
	}
	if empty {
		return nil
	}
	cl, err := autoroute.New(*raw)
	if err != nil {
		errs := []error{err}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			errs = j.Unwrap() // each problem New found
		}
		for _, err := range errs {
			var ce *autoroute.ConfigError
			if errors.As(err, &ce) {
				// At the key's line when the file has it (intents[1].min_score), else its table's.
				c.add(c.l.line(autoPath(ce.Field)...), "auto: %s: %s", ce.Field, ce.Problem)
			} else {
				c.errorf([]string{"auto"}, "%v", err)
			}
		}
		return nil
	}
	for _, r := range cl.Routes() {
		if _, ok := cfg.Route(r); !ok {
			c.errorf([]string{"auto"}, "model \"auto\" may choose route %q, which is not configured (add [routes.%s] or change the [auto] rules)", r, r)
		}
	}
	return cl
}
