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
	t.HealthInterval = c.duration(raw.HealthInterval, DefaultHealthInterval, at("health_interval")...)
	t.HealthTimeout = c.duration(raw.HealthTimeout, DefaultHealthTimeout, at("health_timeout")...)
	if raw.HealthTimeout != nil && t.HealthTimeout == 0 {
		c.errorf(at("health_timeout"), "must be longer than 0s (to turn checks off, set health_interval = \"0s\")")
		t.HealthTimeout = DefaultHealthTimeout
	}
	// Left out, half of health_timeout: a check slower than health_timeout has failed, so only an
	// answer within it can be slow (DefaultDegradedAfter; Warnings for one set at or past it).
	t.DegradedAfter = c.duration(raw.DegradedAfter, t.HealthTimeout/2, at("degraded_after")...)
	t.HealthURL = c.healthURL(raw, t.URL, at("health_path"))
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
			"http or https URL", hp)
		return ""
	}
	u, err := url.Parse(strings.ReplaceAll(full, lifecycle.PortPlaceholder, "1"))
	switch {
	case err != nil || u.Host == "":
		c.errorf(path, "%q does not make a valid URL", hp)
		return ""
	case u.User != nil:
		c.errorf(path, "credentials in the URL are refused: the target's api_key_env key is sent "+
			"with every check")
		return ""
	}
	return full
}
