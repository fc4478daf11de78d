package config

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/netclass"
	"github.com/hayula/gateway/lifecycle"
)

// Summary is a human summary of the compiled config, for the log at start-up and for review: each
// route → its targets (class, adapter, url), policy, strict and guard; then each target's limits.
// It never shows a secret or a key hash.
func (c *Config) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "config %s\n", c.Source)
	fmt.Fprintf(&b, "listen %s, max body %d bytes, max connections %s, metrics %s\n", c.Listen, c.MaxBodyBytes,
		connsSummary(c.MaxConnections), metricsSummary(c.Metrics))
	if c.TLS != nil {
		fmt.Fprintf(&b, "https: certificate %s, key %s, valid until %s\n", c.TLS.CertFile, c.TLS.KeyFile,
			c.TLS.Certificate.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(&b, "cooldown after %d failures: %s, doubling up to %s\n", c.Cooldown.Failures,
		c.Cooldown.Base, c.Cooldown.Max)
	if c.Strict {
		b.WriteString("strict: every route (top-level strict = true): no request reaches a public target\n")
	}
	if c.Open() {
		b.WriteString("keys: none, the gateway is open (loopback only)\n")
	} else {
		fmt.Fprintf(&b, "keys: %d\n", len(c.Keys))
		for _, k := range c.Keys {
			routes := "every route"
			switch {
			case k.Routes != nil && len(k.Routes) == 0 && c.Metrics:
				routes = "no route (GET /metrics only)"
			case k.Routes != nil && len(k.Routes) == 0:
				routes = "no route"
			case k.Routes != nil:
				names := make([]string, 0, len(k.Routes))
				for n := range k.Routes {
					names = append(names, n)
				}
				slices.Sort(names)
				routes = "routes " + strings.Join(names, ", ")
			}
			caps := ""
			if k.RPM > 0 {
				caps += fmt.Sprintf(", %d requests a minute", k.RPM)
			}
			if k.TPM > 0 {
				caps += fmt.Sprintf(", %d tokens a minute", k.TPM)
			}
			if k.MaxConcurrent > 0 {
				caps += fmt.Sprintf(", %d at once", k.MaxConcurrent)
			}
			fmt.Fprintf(&b, "  %s: %s%s%s\n", summaryName(k.Name), routes, yes(k.Strict, ", strict"), caps)
		}
	}

	fmt.Fprintf(&b, "browsers: Host %s; Origin %s\n",
		browserList(c.Browsers.AnyHost, c.Browsers.AllowedHosts(), "IP literals, localhost"),
		browserList(c.Browsers.AnyOrigin, c.Browsers.Origins, "none, loopback"))

	if c.Auto != nil {
		fmt.Fprintf(&b, "model auto: classifies the system prompt and the last user turn into routes %s\n", strings.Join(c.Auto.Routes(), ", "))
	}

	used := map[string]bool{}
	for _, r := range c.Routes {
		fmt.Fprintf(&b, "\nroute %s: policy %s%s, fallback_on %s\n", r.Name, r.Policy,
			yes(r.Strict, ", strict"), classList(r.FallbackOn))
		w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for i, t := range r.Targets {
			used[t.Name] = true
			guard := ""
			if i < len(r.Guard) && r.Guard[i] != 0 {
				guard = "guard " + classList(r.Guard[i])
			}
			if r.Strict && t.Privacy == core.Public {
				guard = "never used: the route is strict"
			}
			fmt.Fprintf(w, "  %d. %s\t%s\t%s\t%s\t%s\n", i+1, t.Name, t.Privacy, t.Adapter, t.URL, guard)
		}
		_ = w.Flush()
	}

	b.WriteString("\ntargets:\n")
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "  name\tmodel\tcontext\ttools\tvision\ttimeout\tidle timeout\tretries\tweight\treasoning\tapi key\t\n")
	for _, t := range c.Targets {
		ctx := "unknown"
		if t.ContextWindow > 0 {
			ctx = fmt.Sprint(t.ContextWindow)
		}
		timeout, idle := t.Timeout.String(), t.IdleTimeout.String()
		if t.Timeout == 0 {
			timeout = "none"
		}
		if t.IdleTimeout == 0 {
			idle = "none"
		}
		reasoning := "passthrough"
		switch t.Reasoning {
		case core.ReasoningThinkTags:
			reasoning = "think-tags"
		case core.ReasoningThinkOpen:
			reasoning = "think-open"
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", t.Name, t.Model, ctx,
			yesNo(t.Tools), yesNo(t.Vision), timeout, idle, t.MaxRetries, t.Weight, reasoning,
			yes(t.APIKey != "", "set")+yes(t.APIKey == "", "none"), yes(!used[t.Name], "(in no route)"))
	}
	_ = w.Flush()
	for _, t := range c.Targets {
		if len(t.Specialists) > 0 {
			fmt.Fprintf(&b, "  %s specialists: %s\n", t.Name, strings.Join(t.Specialists, ", "))
		}
	}
	for _, t := range c.Targets {
		// Shown where they differ from the adapter's default (CONFIG.md), as specialists are
		// where set: the usual config shows neither (TestSummaryStreamUsageAndWindow).
		var set []string
		if t.WindowCountsMaxTokens != windowCountsMaxTokensDefault(t.Adapter) {
			set = append(set, "window_counts_max_tokens "+strconv.FormatBool(t.WindowCountsMaxTokens))
		}
		if t.StreamUsage != streamUsageDefault(t.Adapter) {
			set = append(set, "stream_usage "+strconv.FormatBool(t.StreamUsage))
		}
		if len(set) > 0 {
			fmt.Fprintf(&b, "  %s: %s\n", t.Name, strings.Join(set, ", "))
		}
	}
	c.healthSummary(&b)
	c.lifecycleSummary(&b)
	if ws := c.Warnings(); len(ws) > 0 {
		b.WriteString("\nwarnings:\n")
		for _, w := range ws {
			fmt.Fprintf(&b, "  %s\n", w)
		}
	}
	// tabwriter pads cells before an empty last one; trailing blanks only upset diffs.
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// summaryName is a key's name as the summary shows it: as written, or quoted when it holds a
// control character (a name may hold a line feed), which would otherwise start a line of its own.
func summaryName(name string) string {
	if strings.ContainsFunc(name, unicode.IsControl) {
		return strconv.Quote(name)
	}
	return name
}

func classList(s core.ClassSet) string {
	var names []string
	for _, c := range s.Classes() {
		names = append(names, c.String())
	}
	if len(names) == 0 {
		return "none (a failure is answered as it is)"
	}
	return strings.Join(names, " ")
}

func yes(b bool, s string) string {
	if b {
		return s
	}
	return ""
}

func connsSummary(n int) string {
	if n == 0 {
		return "no cap"
	}
	return strconv.Itoa(n)
}

func metricsSummary(on bool) string {
	if on {
		return "at GET /metrics"
	}
	return "off"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func (c *Config) healthSummary(b *strings.Builder) {
	b.WriteString("\nhealth checks:\n")
	w := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "  name\tevery\ttimeout\tdegraded after\turl\t\n")
	for _, t := range c.Targets {
		if t.HealthInterval == 0 || t.HealthURL == "" {
			fmt.Fprintf(w, "  %s\toff\t\t\t%s\t\n", t.Name, t.HealthURL)
			continue
		}
		degraded := t.DegradedAfter.String()
		if t.DegradedAfter == 0 {
			degraded = "never"
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\t\n", t.Name, t.HealthInterval, t.HealthTimeout, degraded, t.HealthURL)
	}
	_ = w.Flush()
}

// lifecycleSummary shows the processes the gateway runs. A command is shown whole: it is written
// in the config, which holds no secret (commandSecrets refuses a credential in it).
func (c *Config) lifecycleSummary(b *strings.Builder) {
	l := &c.Lifecycle
	if len(l.Specs) == 0 {
		return
	}
	state := "none (the LRU order is not kept across restarts)"
	if l.StateFile != "" {
		state = l.StateFile
	}
	fmt.Fprintf(b, "\nprocesses: state file %s; wait_healthy %s\n", state, yesNo(l.WaitHealthy))
	w := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "  name\tgroup\tidle stop\tload timeout\tcommand\t\n")
	for _, s := range l.Specs {
		group, idle := s.Group, s.IdleStop.String()
		if group == "" {
			group = "-"
		}
		if s.IdleStop == 0 {
			idle = "never"
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\t\n", s.Name, group, idle, s.LoadTimeout, strings.Join(s.Command, " "))
	}
	_ = w.Flush()
	for _, g := range l.Groups {
		var members []string
		for _, s := range l.Specs {
			if s.Group == g.Name {
				members = append(members, s.Name)
			}
		}
		pinned := "none"
		if len(g.Pinned) > 0 {
			pinned = strings.Join(g.Pinned, ", ")
		}
		fmt.Fprintf(b, "  group %s: %d slots, pinned %s; members %s\n", g.Name, g.Slots, pinned, strings.Join(members, ", "))
	}
}

// Warnings are what a config may mean without its author meaning it: it loads, and works, but
// not as intended. Summary lists them, so check-config and the start-up log show them.
func (c *Config) Warnings() []string {
	var ws []string
	if c.TLS == nil && !c.Open() && !IsLoopback(c.Listen) {
		// Off loopback the keys cross a network; the gateway can serve HTTPS itself.
		ws = append(ws, fmt.Sprintf("listen %s is not loopback and tls_cert_file is not set: clients' API keys and "+
			"prompts travel over the network in clear; set tls_cert_file and tls_key_file, or put a TLS proxy in front", c.Listen))
	}
	if c.TLS != nil && c.TLS.Expired(time.Now()) {
		ws = append(ws, fmt.Sprintf("tls_cert_file %s: the certificate expired on %s, and clients refuse it; renew it and "+
			"reload (SIGHUP)", c.TLS.CertFile, c.TLS.Certificate.Leaf.NotAfter.UTC().Format(time.RFC3339)))
	}
	adapters := make(map[string]core.AdapterKind, len(c.Targets))
	for _, t := range c.Targets {
		adapters[t.Name] = t.Adapter
	}
	for _, t := range c.Targets {
		// A check that takes longer than health_timeout has failed, so it is never a slow answer.
		if t.HealthInterval > 0 && t.HealthURL != "" && t.DegradedAfter > 0 && t.DegradedAfter >= t.HealthTimeout {
			ws = append(ws, fmt.Sprintf("target %s: degraded_after %s is not shorter than health_timeout %s, and a "+
				"check slower than health_timeout has failed, so the target is never degraded; set degraded_after "+
				"below health_timeout (left out, it is half of it), or \"0s\" for never", t.Name, t.DegradedAfter, t.HealthTimeout))
		}
	}
	for _, s := range c.Lifecycle.Specs {
		// A process is handed requests once its health check passes (lifecycle's readiness
		// probe). llama.cpp's llama-server answers /v1/models 200 while it is still loading the
		// model, and every other path 503 "Loading model" until it is done: probed on
		// /v1/models, the openai default, it is ready too soon and the first requests fail.
		// vLLM serves /v1/models only once it is up, but /health as well, so /health suits both.
		if adapters[s.Name] == core.AdapterOpenAI && strings.HasSuffix(strings.TrimRight(s.HealthURL, "/"), "/models") {
			ws = append(ws, fmt.Sprintf("target %s: its process counts as ready when %s answers, which llama-server "+
				"does while it is still loading the model (requests then fail with 503 until it is done); "+
				"for llama-server or vLLM set health_path = \"http://127.0.0.1:{port}/health\" (or its fixed port)",
				s.Name, s.HealthURL))
		}
	}
	for _, t := range c.Targets {
		// Keys sent in cleartext: anyone on the path between here and there reads them.
		if t.APIKey == "" || !strings.HasPrefix(strings.ToLower(t.URL), "http://") {
			continue
		}
		if host, ok := publicHost(t.URL); ok {
			ws = append(ws, fmt.Sprintf("target %s: its api_key_env key goes in cleartext to %s (its url is http://), "+
				"with every request and health check; use https if the server offers it", t.Name, host))
		}
	}
	for _, t := range c.classDefaulted {
		// A strict request may reach any private target: one a third party runs, left private
		// because class was left out, would see the prompts strictness keeps from the public.
		if host, ok := publicHost(t.URL); ok {
			ws = append(ws, fmt.Sprintf("target %s: class is private (the default, as no class is written), so strict "+
				"requests may be sent to it, yet its url names %s, which looks like a third party's host; if "+
				"someone else runs it, set class = \"public\"; if you do, write class = \"private\" to say so",
				t.Name, host))
		}
	}
	if c.Auto != nil {
		// A specialist hint goes to specialist_route whatever the text, where a saif target
		// that does not list it is passed over (filter specialist) and a hint that no saif target
		// of the route lists is answered 400 unknown_specialist before any target is asked.
		if r, ok := c.Route(c.Auto.SpecialistRoute()); ok {
			var saif []*core.Target
			var names, missing []string
			for _, t := range r.Targets {
				if t.Adapter == core.AdapterSAIF {
					saif, names = append(saif, t), append(names, t.Name)
				}
			}
			for _, sp := range c.Auto.Specialists() {
				if !slices.ContainsFunc(saif, func(t *core.Target) bool { _, ok := t.Specialist(sp); return ok }) {
					missing = append(missing, sp)
				}
			}
			if len(saif) > 0 && len(missing) > 0 {
				ws = append(ws, fmt.Sprintf("[auto]: x-route-hint %s sends model auto to route %s, where no saif target (%s) "+
					"has such a specialist, and is answered 400 unknown_specialist; add it to a saif target's specialists, "+
					"or list [auto] specialists as the targets do", orList(missing), r.Name, strings.Join(names, ", ")))
			}
		}
		// x-route-hint names a specialist before a route: a route named like one cannot be hinted.
		routes, specialists := c.Auto.HintShadowed()
		for i, r := range routes {
			ws = append(ws, fmt.Sprintf("[auto]: route %s cannot be chosen with x-route-hint: %s, since that hint names "+
				"the specialist %s first and goes to specialist_route %q; rename the route, or leave %s out of "+
				"[auto] specialists, to hint it", r, r, specialists[i], c.Auto.SpecialistRoute(), specialists[i]))
		}
	}
	return ws
}

// orList joins names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// publicHost is the host of rawURL when it looks like one on the internet, by netclass.Local: not
// on this machine nor a local network (loopback, RFC 1918, fc00::/7, link-local, Tailscale's and
// carrier-grade NAT's 100.64.0.0/10, a name without a dot, or under a local network's suffix:
// .localhost, .local, .lan, .home, .home.arpa, .internal, .localdomain, .test, .ts.net). The
// LiteLLM import writes its targets' class by the same answer.
func publicHost(rawURL string) (string, bool) {
	u, err := url.Parse(strings.ReplaceAll(rawURL, lifecycle.PortPlaceholder, "1"))
	if err != nil {
		return "", false
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "" {
		return host, false
	}
	local, _ := netclass.Local(host)
	return host, !local
}

// browserList says which Host or Origin values requests may carry: any, or always beside those
// the config names.
func browserList(any bool, named []string, always string) string {
	switch {
	case any:
		return "any (\"*\")"
	case len(named) == 0:
		return always + " only"
	}
	return always + ", " + strings.Join(named, ", ")
}
