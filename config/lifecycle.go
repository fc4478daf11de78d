package config

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/lifecycle"
)

// groupTOML is a [groups.NAME] table.
type groupTOML struct {
	Slots  *int      `toml:"slots"`
	Pinned *[]string `toml:"pinned"`
}

// lifecycle compiles the keys of targets with a command, the [groups] tables, state_file and
// wait_healthy, and checks them against each other with the rules lifecycle.New enforces, each
// reported at its line.
func (c *compiler) lifecycle(raw *fileTOML, cfg *Config) Lifecycle {
	var lc Lifecycle
	if raw.WaitHealthy != nil {
		lc.WaitHealthy = *raw.WaitHealthy
	}
	if raw.StateFile != nil {
		switch sf := *raw.StateFile; {
		case sf == "":
			c.errorf([]string{"state_file"}, "empty; leave it out to keep no state")
		case filepath.IsAbs(sf):
			lc.StateFile = filepath.Clean(sf)
		default:
			// Relative to the config, not to wherever the gateway was started from.
			lc.StateFile = filepath.Join(filepath.Dir(cfg.Source), sf)
		}
	}

	// Every variable a target's key comes from. A process the gateway starts gets the
	// environment without the others' (its own target's stays: llama-server and vLLM can read
	// the key they require from the environment).
	var secrets []string
	for _, rt := range raw.Targets {
		if rt.APIKeyEnv != "" && !slices.Contains(secrets, rt.APIKeyEnv) {
			secrets = append(secrets, rt.APIKeyEnv)
		}
	}
	slices.Sort(secrets)
	for _, t := range cfg.Targets {
		rt := raw.Targets[t.Name]
		at := func(key ...string) []string { return append([]string{"targets", t.Name}, key...) }
		if rt.Command == nil {
			c.unmanaged(rt, at)
			continue
		}
		spec := lifecycle.Spec{Name: t.Name, Command: slices.Clone(*rt.Command), URL: t.URL, HealthURL: t.HealthURL}
		for _, name := range secrets {
			if name != rt.APIKeyEnv {
				spec.Withhold = append(spec.Withhold, name)
			}
		}
		switch {
		case len(spec.Command) == 0:
			c.errorf(at("command"), "empty: give the program and its arguments, such as "+
				"[\"llama-server\", \"-m\", \"model.gguf\", \"--port\", \"{port}\"]")
		case spec.Command[0] == "":
			c.errorf(at("command", elem(0)), "empty program name")
		}
		c.commandSecrets(spec.Command, cfg.Targets, at)
		// The port is chosen at each start and reaches the process only through its command: a
		// url with {port} and a command without it points at a port nothing listens on.
		cmdPort := slices.ContainsFunc(spec.Command, func(a string) bool { return strings.Contains(a, lifecycle.PortPlaceholder) })
		switch urlPort := strings.Contains(t.URL, lifecycle.PortPlaceholder); {
		case urlPort && len(spec.Command) > 0 && !cmdPort:
			c.errorf(at("url"), "uses {port} but command does not: the process must be told the port the "+
				"gateway picks, such as \"--port\", \"{port}\"")
		case !urlPort && cmdPort && t.URL != "":
			// The process would listen on the port picked at each start, and requests and
			// health checks go to url's.
			c.errorf(at("url"), "has no {port}, but command does: the gateway calls url, so url must name the "+
				"port it picks and tells the process, such as \"http://127.0.0.1:{port}/v1\"")
		}
		if rt.HealthPath != nil && strings.Contains(t.HealthURL, lifecycle.PortPlaceholder) &&
			!strings.Contains(t.URL, lifecycle.PortPlaceholder) {
			c.errorf(at("health_path"), "uses {port} but url does not: the gateway learns the port of "+
				"the running process from url")
		}
		spec.IdleStop = c.duration(rt.IdleStop, 0, at("idle_stop")...)
		spec.LoadTimeout = c.duration(rt.LoadTimeout, DefaultLoadTimeout, at("load_timeout")...)
		if rt.LoadTimeout != nil && spec.LoadTimeout == 0 {
			c.errorf(at("load_timeout"), "must be longer than 0s")
			spec.LoadTimeout = DefaultLoadTimeout
		}
		if rt.Group != nil {
			spec.Group = *rt.Group
			if _, ok := raw.Groups[spec.Group]; !ok {
				c.errorf(at("group"), "no group named %q: add a [groups.%s] table with its slots", spec.Group, spec.Group)
			}
		}
		lc.Specs = append(lc.Specs, spec)
	}

	for _, name := range slices.Sorted(maps.Keys(raw.Groups)) {
		lc.Groups = append(lc.Groups, c.group(name, raw.Groups[name], lc.Specs, cfg))
	}
	return lc
}

// unmanaged reports the lifecycle keys of a target that has no command.
func (c *compiler) unmanaged(rt targetTOML, at func(...string) []string) {
	const why = "only a target with a command has %s"
	if rt.IdleStop != nil {
		c.errorf(at("idle_stop"), why+": the gateway stops only the processes it started", "idle_stop")
	}
	if rt.Group != nil {
		c.errorf(at("group"), why+": groups share slots between processes the gateway starts", "a group")
	}
	if rt.LoadTimeout != nil {
		c.errorf(at("load_timeout"), why, "load_timeout")
	}
	if strings.Contains(rt.URL, lifecycle.PortPlaceholder) {
		c.errorf(at("url"), "{port} is the port the gateway picks for a process it starts; this target "+
			"has no command")
	}
	if rt.HealthPath != nil && strings.Contains(*rt.HealthPath, lifecycle.PortPlaceholder) {
		c.errorf(at("health_path"), "{port} is the port the gateway picks for a process it starts; this "+
			"target has no command")
	}
}

func (c *compiler) group(name string, raw groupTOML, specs []lifecycle.Spec, cfg *Config) lifecycle.GroupSpec {
	at := func(key ...string) []string { return append([]string{"groups", name}, key...) }
	g := lifecycle.GroupSpec{Name: name}
	if !validName(name) {
		c.errorf(at(), "bad group name: %s", nameRule)
	}
	members := map[string]*lifecycle.Spec{}
	for i := range specs {
		if specs[i].Group == name {
			members[specs[i].Name] = &specs[i]
		}
	}
	if len(members) == 0 {
		c.errorf(at(), "no target is in this group: set group = %q on the targets that share its slots, "+
			"or remove it", name)
	}
	switch {
	case raw.Slots == nil:
		c.errorf(at("slots"), "missing: how many of the group's processes may run at once")
	case *raw.Slots < 1:
		c.errorf(at("slots"), "must be at least 1, got %d", *raw.Slots)
	default:
		g.Slots = *raw.Slots
	}
	if raw.Pinned == nil {
		return g
	}
	seen := map[string]bool{}
	for i, p := range *raw.Pinned {
		el := at("pinned", elem(i))
		spec := members[p]
		_, isTarget := cfg.Target(p)
		switch {
		case seen[p]:
			c.errorf(el, "%q is pinned twice", p)
			continue
		case !isTarget:
			c.errorf(el, "no target named %q", p)
		case spec == nil:
			c.errorf(el, "%q is not a member of this group: pin only targets with group = %q", p, name)
		case spec.IdleStop > 0:
			c.errorf(el, "%q has idle_stop, but a pinned member is never stopped: remove one or the other", p)
		}
		seen[p] = true
		g.Pinned = append(g.Pinned, p)
	}
	if g.Slots > 0 {
		switch n := len(seen); {
		case n > g.Slots:
			c.errorf(at("pinned"), "%d pinned members do not fit in %d slots", n, g.Slots)
		case n == g.Slots && len(members) > n:
			c.errorf(at("pinned"), "every slot is pinned, so the group's other members (%s) could never start",
				strings.Join(unpinned(members, seen), ", "))
		}
	}
	return g
}

func unpinned(members map[string]*lifecycle.Spec, pinned map[string]bool) []string {
	var out []string
	for _, n := range slices.Sorted(maps.Keys(members)) {
		if !pinned[n] {
			out = append(out, n)
		}
	}
	return out
}

// minKeyInCommand is the shortest upstream key looked for in a command's arguments: a shorter
// value (a test's "k1") could be any argument's substring.
const minKeyInCommand = 8

// commandSecrets refuses a credential in a target's command: the config holds no secret, a
// command is printed whole (check-config, the start-up summary), and a process's arguments are
// readable by every user of the machine (ps, /proc/PID/cmdline). An argument is refused when it
// holds the key some target's api_key_env gives, or is a credential flag with its value
// (--api-key KEY, --api-key=KEY, as llama-server, vLLM and SGLang take it). The message never
// repeats the argument.
func (c *compiler) commandSecrets(cmd []string, targets []*core.Target, at func(...string) []string) {
	for i, a := range cmd {
		for _, t := range targets {
			if k := string(t.APIKey); len(k) >= minKeyInCommand && strings.Contains(a, k) {
				c.errorf(at("command", elem(i)), "holds the key that target %s's api_key_env gives: a "+
					"command is printed by check-config and readable by every local user (ps); leave it "+
					"out and let the process read the key from its environment (its own target's "+
					"api_key_env is passed to it: llama-server reads LLAMA_API_KEY, vLLM VLLM_API_KEY)", t.Name)
				return
			}
		}
		name, value, joined := strings.Cut(a, "=")
		if !strings.HasPrefix(name, "-") || !credentialFlag(name) || joined && value == "" ||
			!joined && i == len(cmd)-1 {
			continue
		}
		where := i // the element that holds the value
		if !joined {
			where = i + 1
		}
		c.errorf(at("command", elem(where)), "is the value of %s, a credential: the config holds no secret, a command is "+
			"printed by check-config and readable by every local user (ps); leave the flag out and "+
			"let the process read the key from its environment (name the variable with the target's "+
			"api_key_env, which is passed to it: llama-server reads LLAMA_API_KEY, vLLM "+
			"VLLM_API_KEY), or pass a file (llama-server's --api-key-file)", strings.ToLower(name))
		return
	}
}

// maskCredentials is args with the value of each credential flag (credentialFlag) replaced by
// "…", for a message that spells a command out.
func maskCredentials(args []string) []string {
	for i, a := range args {
		name, _, joined := strings.Cut(a, "=")
		if !strings.HasPrefix(name, "-") || !credentialFlag(name) {
			continue
		}
		if joined {
			args[i] = name + "=…"
		} else if i+1 < len(args) {
			args[i+1] = "…"
		}
	}
	return args
}

// credentialFlag reports whether a command-line flag (with its dashes) takes a credential as its
// value: --api-key, --api_key, --apikey, --api-keys, --token, --hf-token, --auth-token,
// --password, --secret, in any case (CONFIG.md's list, TestCommandHoldsNoSecret).
func credentialFlag(flag string) bool {
	n := strings.ReplaceAll(strings.ToLower(strings.TrimLeft(flag, "-")), "_", "-")
	switch n {
	case "api-key", "apikey", "api-keys", "token", "hf-token", "auth-token", "password", "secret":
		return true
	}
	return false
}
