package litellm

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/hayula/gateway/internal/tomlx"
)

// result writes the TOML and gathers the warnings.
func (c *converter) result(r *routerYAML) *Result {
	var b strings.Builder
	comment := func(format string, a ...any) { writeComment(&b, fmt.Sprintf(format, a...), "") }
	env := make([]string, 0, len(c.envs))
	for e := range c.envs {
		env = append(env, e)
	}
	slices.Sort(env)

	comment("Hayula Gateway configuration, converted from LiteLLM's %s by `gateway import litellm`. Each target says which deployment it came from and why it is private or public: read it through, then check it with `gateway check-config FILE`.", c.file)
	if len(env) > 0 {
		b.WriteString("#\n")
		comment("Before check-config and serve, export: %s", strings.Join(env, ", "))
	}
	b.WriteString("#\n")
	master := ""
	if slices.Contains(c.general, "master_key") {
		master = " (this file had a master_key)"
	}
	comment("Keys: LiteLLM's master_key and virtual keys are not carried%s: there is no key database here. Run `gateway keygen NAME` for each client and paste the [[keys]] block it prints; until then the gateway takes requests without a key, and listens on loopback only (127.0.0.1:8000).", master)
	if len(c.skipped) > 0 || len(c.envNames) > 0 {
		b.WriteString("#\n# Not carried (no equivalent here):\n")
		for _, s := range c.skipped {
			writeComment(&b, "  "+s, "    ")
		}
		if len(c.envNames) > 0 {
			writeComment(&b, "  environment_variables: "+strings.Join(c.envNames, ", ")+
				" (names only: their values were not copied; set them where something still needs them)", "    ")
		}
	}
	for _, l := range c.leftOut {
		b.WriteString("#\n")
		comment("%s", l)
	}
	if len(c.skipped) > 0 {
		c.warnf("not carried (no equivalent here; listed at the top of the file): %s", strings.Join(c.skipped, "; "))
	}

	if r.AllowedFails != nil || r.CooldownTime != nil {
		b.WriteString("\n[cooldown]\n")
		if n := r.AllowedFails; n != nil {
			failures := max(*n, 0)
			if failures < math.MaxInt {
				failures++ // the largest int stays itself: one more wrapped to a negative count (FuzzConvert)
			}
			fmt.Fprintf(&b, "failures = %d", failures)
			trailing(&b, fmt.Sprintf("router_settings.allowed_fails = %d: LiteLLM cools a deployment down once it fails more often than that", *n))
		}
		if s := r.CooldownTime; s != nil && *s > 0 {
			fmt.Fprintf(&b, "base = %s", tomlx.String(s.String()))
			trailing(&b, "router_settings.cooldown_time; here each cooldown in a row doubles it, up to max")
			if *s > seconds(defaultCooldownMax) {
				fmt.Fprintf(&b, "max = %s\n", tomlx.String(s.String()))
			}
		}
	}

	for _, g := range c.groups {
		for _, t := range g.targets {
			c.writeTarget(&b, t)
		}
	}
	for _, rt := range c.routeList {
		fmt.Fprintf(&b, "\n[routes.%s]\n", tomlx.String(rt.name))
		for _, n := range rt.notes {
			comment("%s", n)
		}
		names := make([]string, len(rt.targets))
		var guards []string
		for i, t := range rt.targets {
			names[i] = tomlx.String(t.name)
			switch rt.guard[t] {
			case openOnOverflow:
				guards = append(guards, tomlx.String(t.name)+` = ["overflow"]`)
			case openOnOther:
				guards = append(guards, tomlx.String(t.name)+" = ["+strings.Join(quoteAll(notOverflow), ", ")+"]")
			}
		}
		fmt.Fprintf(&b, "targets = [%s]\n", strings.Join(names, ", "))
		if rt.policy != "" {
			fmt.Fprintf(&b, "policy = %s\n", tomlx.String(rt.policy))
		}
		if len(guards) > 0 {
			fmt.Fprintf(&b, "guard = { %s }\n", strings.Join(guards, ", "))
		}
	}
	return &Result{TOML: []byte(b.String()), Warnings: c.warnings, Env: env}
}

// defaultCooldownMax is the gateway's [cooldown] max when it is not written: a cooldown_time
// above it needs max written too (max is at least base).
const defaultCooldownMax = 300 * time.Second

func (c *converter) writeTarget(b *strings.Builder, t *target) {
	fmt.Fprintf(b, "\n[targets.%s]\n", tomlx.String(t.name))
	writeComment(b, fmt.Sprintf("From the model_list entry at line %d: model_name %q, model %q", t.line, t.modelName, t.litellmModel), "")
	for _, n := range t.notes {
		writeComment(b, n, "")
	}
	fmt.Fprintf(b, "adapter = %s\nurl = %s\nmodel = %s\n", tomlx.String(t.adapter), tomlx.String(t.url), tomlx.String(t.model))
	fmt.Fprintf(b, "class = %s", tomlx.String(t.class))
	trailing(b, t.whyIs)
	if t.apiKeyEnv != "" {
		fmt.Fprintf(b, "api_key_env = %s\n", tomlx.String(t.apiKeyEnv))
	}
	if t.contextWindow > 0 {
		fmt.Fprintf(b, "context_window = %d\n", t.contextWindow)
	}
	if t.timeout != nil {
		fmt.Fprintf(b, "timeout = %s\n", tomlx.String(t.timeout.String()))
	}
	if t.idleTimeout != nil {
		fmt.Fprintf(b, "idle_timeout = %s\n", tomlx.String(t.idleTimeout.String()))
	}
	if t.weight > 0 {
		fmt.Fprintf(b, "weight = %d\n", t.weight)
	}
	if t.maxRetries != nil {
		fmt.Fprintf(b, "max_retries = %d\n", *t.maxRetries)
	}
}

// writeComment writes text as TOML comment lines of its own, wrapped at about 100 columns;
// indent starts each line after the first. Control characters become spaces, so that nothing of
// the YAML can end a comment and be read as TOML.
func writeComment(b *strings.Builder, text, indent string) {
	text = clean(text)
	line := "#" + text[:len(text)-len(strings.TrimLeft(text, " "))]
	for i, w := range strings.Fields(text) {
		if i > 0 && len(line)+1+len(w) > 100 {
			b.WriteString(line + "\n")
			line = "#" + indent
		}
		line += " " + w
	}
	b.WriteString(line + "\n")
}

// trailing ends a line of TOML with text as its comment.
func trailing(b *strings.Builder, text string) {
	b.WriteString("  # " + clean(text) + "\n")
}

// clean is text with its control characters turned into spaces.
func clean(text string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, text)
}
