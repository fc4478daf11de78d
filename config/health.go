package config

import (
	"net/url"
	"strings"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/lifecycle"
)

// defaultHealthPath is the path the adapter's servers answer health on, joined to the target's
// url. An openai url includes /v1, so /v1/models is "/models". SAIF serves /v1/health; its url is
// written with or without /v1, and /v1 is not repeated.
func defaultHealthPath(adapter, base string) string {
	switch adapter {
	case "openai":
		return "/models"
	case "ollama":
		return "/api/tags"
	case "saif":
		if strings.HasSuffix(base, "/v1") {
			return "/health"
		}
		return "/v1/health"
	}
	return ""
}

// health compiles a target's active-health keys onto t. It runs after t.URL is set.
func (c *compiler) health(t *core.Target, raw targetTOML, at func(...string) []string) {
	// A public target is a third party's: it is not asked for its health every 30 s, with the
	// gateway's key, unless the file says so; requests' outcomes still bench it
	// (TestPublicTargetNotPolledByDefault).
	interval := DefaultHealthInterval
	if t.Privacy == core.Public {
		interval = 0
	}
	t.HealthInterval = c.duration(raw.HealthInterval, interval, at("health_interval")...)
	t.HealthTimeout = c.duration(raw.HealthTimeout, DefaultHealthTimeout, at("health_timeout")...)
	if raw.HealthTimeout != nil && t.HealthTimeout == 0 {
		c.errorf(at("health_timeout"), "must be longer than 0s (to turn checks off, set health_interval = \"0s\")")
		t.HealthTimeout = DefaultHealthTimeout
	}
	// Left out, half of health_timeout: a check slower than health_timeout has failed, so only an
	// answer within it can be slow (DefaultDegradedAfter; Warnings for one set at or past it).
	t.DegradedAfter = c.duration(raw.DegradedAfter, t.HealthTimeout/2, at("degraded_after")...)
	t.HealthURL = c.healthURL(raw, t.URL, at("health_path"))
	t.HealthElsewhere = t.HealthURL != "" && !sameOrigin(t.HealthURL, t.URL)
}

// sameOrigin reports whether two URLs (either may hold "{port}", the same port in both when both
// do) have one scheme, host and port, a default port written or not.
func sameOrigin(a, b string) bool {
	origin := func(raw string) (string, bool) {
		u, err := url.Parse(strings.ReplaceAll(raw, lifecycle.PortPlaceholder, "1"))
		if err != nil || u.Host == "" {
			return "", false
		}
		scheme, port := strings.ToLower(u.Scheme), u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[scheme]
		}
		return scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port, true
	}
	oa, okA := origin(a)
	ob, okB := origin(b)
	return okA && okB && oa == ob
}

// healthURL is the URL the checks GET: health_path joined to the url when it is a path, as it is
// when it is an absolute URL, or the adapter's default path joined to the url.
func (c *compiler) healthURL(raw targetTOML, base string, path []string) string {
	if base == "" {
		return "" // the url's own error says enough
	}
	if raw.HealthPath == nil {
		if p := defaultHealthPath(raw.Adapter, base); p != "" {
			return base + p
		}
		return ""
	}
	hp := *raw.HealthPath
	if name, ok := secretQuery(hp); ok {
		// Before any message that quotes hp.
		c.errorf(path, "its query has %s, a credential: check-config prints the health URL and a failed "+
			"check's debug line logs it, and the config holds no secret; the target's api_key_env key "+
			"is sent with every check as its Authorization header", name)
		return ""
	}
	var full string
	switch {
	case hp == "":
		c.errorf(path, "empty; leave it out for the adapter's default (openai: /models after the url, "+
			"ollama: /api/tags, saif: /v1/health), or set health_interval = \"0s\" for no checks")
		return ""
	case strings.HasPrefix(hp, "/"):
		full = base + hp
	case strings.HasPrefix(hp, "http://") || strings.HasPrefix(hp, "https://"):
		full = hp
	default:
		c.errorf(path, "%q is neither a path starting with / (joined to the url) nor an absolute "+
			"http or https URL", quotableURL(hp))
		return ""
	}
	u, err := url.Parse(strings.ReplaceAll(full, lifecycle.PortPlaceholder, "1"))
	switch {
	case err != nil || u.Host == "":
		c.errorf(path, "%q does not make a valid URL", quotableURL(hp))
		return ""
	case u.User != nil:
		c.errorf(path, "credentials in the URL are refused: the target's api_key_env key is sent "+
			"with every check on its url's origin")
		return ""
	}
	return full
}

// secretQuery reports the first parameter of raw's query whose name says it is a credential
// (?api_key=, ?token=, ?access_token=…, in any case, - or _), as the name was written.
func secretQuery(raw string) (string, bool) {
	_, q, ok := strings.Cut(raw, "?")
	if !ok {
		return "", false
	}
	q, _, _ = strings.Cut(q, "#")
	for part := range strings.SplitSeq(q, "&") {
		name, _, _ := strings.Cut(part, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		switch strings.ReplaceAll(strings.ToLower(name), "-", "_") {
		case "api_key", "apikey", "key", "token", "access_token", "auth", "secret", "password":
			return name, true
		}
	}
	return "", false
}
