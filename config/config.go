package config

import (
	"crypto/sha256"
	"crypto/subtle"
	"os"
	"time"

	"github.com/hayula/gateway/autoroute"
	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/lifecycle"
)

// Config is a loaded, checked configuration. It is read-only after Load: share it by pointer.
type Config struct {
	// Source is the file name it was loaded from.
	Source string
	// Listen is the address the gateway listens on; default "127.0.0.1:8000".
	Listen string
	// MaxBodyBytes caps a client request body; default 10 MiB.
	MaxBodyBytes int64
	// MaxConnections caps the client connections open at once (max_connections): at the cap the
	// gateway takes no new connection until one closes, and closes idle ones, the oldest idle
	// first, to make room. Default DefaultMaxConnections; 0 means no cap.
	MaxConnections int
	// Keys are the API keys; empty means the gateway is open, which Load allows only when Listen
	// is a loopback address.
	Keys []Key
	// Targets are every configured upstream, sorted by name; Targets[i].Index == i and Stats is
	// non-nil.
	Targets []*core.Target
	// Routes are the model names clients may ask for, sorted by name.
	Routes []*Route
	// Cooldown is when and for how long a failing target is set aside.
	Cooldown Cooldown
	// Auto classifies requests for model "auto"; nil when the config has no [auto] table.
	Auto *autoroute.Classifier
	// Lifecycle is what the gateway needs to run the processes of targets with a command; its
	// Specs are empty when no target has one.
	Lifecycle Lifecycle
	// TLS is the certificate the gateway serves HTTPS with (tls_cert_file, tls_key_file); nil
	// (the default) serves plain HTTP.
	TLS *TLS
	// Browsers is which Host and Origin headers requests may carry (allowed_hosts,
	// allowed_origins).
	Browsers Browsers
	// Metrics turns on the counters behind GET /metrics; default true.
	Metrics bool
	// Strict is the top-level strict: every route is strict (each Route's Strict is true), so no
	// request reaches a public target, whatever route, key or header it comes with.
	Strict bool

	// classDefaulted are the targets without a class key, which are private by default; Warnings
	// names those whose url looks like a third party's.
	classDefaulted []*core.Target
}

// Lifecycle is the lifecycle manager's input, compiled from the targets' command, idle_stop,
// group and load_timeout keys, the [groups.NAME] tables and the top-level state_file and
// wait_healthy.
type Lifecycle struct {
	// Specs are the targets with a command, in target order. URL and HealthURL may hold "{port}".
	Specs []lifecycle.Spec
	// Groups are the [groups.NAME] tables, sorted by name.
	Groups []lifecycle.GroupSpec
	// StateFile is where the LRU order of group members is kept across restarts, resolved against
	// the config file's directory; "" (the default) keeps none, so nothing is pre-warmed.
	StateFile string
	// WaitHealthy makes `gateway serve` wait, before it accepts requests, until every pinned
	// member is healthy; false (the default) accepts requests at once.
	WaitHealthy bool
}

// Managed reports whether the target named name has a command.
func (l *Lifecycle) Managed(name string) bool {
	for _, s := range l.Specs {
		if s.Name == name {
			return true
		}
	}
	return false
}

// Key is one API key, stored only as the SHA-256 of the token.
type Key struct {
	// Name identifies the key in logs; unique.
	Name string
	// SHA256 is the hash of the token the client sends as a Bearer token.
	SHA256 [32]byte
	// Routes is the allowlist of route names (which may include "auto"); nil allows every route,
	// an empty map none (a key for scraping /metrics).
	Routes map[string]bool
	// Strict makes every request with this key strict.
	Strict bool
	// Index is the key's position in Config.Keys, for per-key state.
	Index int
	// RPM caps the key's requests on the OpenAI endpoints per minute (a token bucket that holds
	// RPM and refills RPM a minute); 0 means no cap.
	RPM int
	// MaxConcurrent caps the key's requests on the OpenAI endpoints in flight at once; 0 means
	// no cap.
	MaxConcurrent int
	// TPM caps the tokens the answers to the key's requests may use per minute (a token bucket
	// that holds TPM and refills TPM a minute, charged each answer's usage after the answer; a
	// request is admitted while the bucket is not in debt); 0 means no cap.
	TPM int
}

// Allows reports whether the key may use the route named name.
func (k *Key) Allows(name string) bool { return k.Routes == nil || k.Routes[name] }

// Route is a model name clients may ask for and the chain of targets that may serve it.
type Route struct {
	// Name is what a client puts in "model".
	Name string
	// Targets are the candidates in chain order; never empty, no duplicates.
	Targets []*core.Target
	// Strict means public targets are never eligible for this route.
	Strict bool
	// Policy picks among the eligible targets; default ordered.
	Policy core.Policy
	// FallbackOn are the failure classes that move the chain to the next target; default
	// core.DefaultFallbackOn. Empty means a failure is answered as-is.
	FallbackOn core.ClassSet
	// Guard is aligned with Targets; 0 = unguarded; non-zero = entered only when every earlier
	// failure's class is in the set. Guard[0] is always 0.
	Guard []core.ClassSet
}

// Cooldown is when and for how long a failing target is set aside.
type Cooldown struct {
	// Failures is how many consecutive counted failures start a cooldown; default 3, at least 1.
	Failures int
	// Base is the first cooldown; default 30s. Each further cooldown in a row doubles it.
	Base time.Duration
	// Max caps the doubling; default 300s, at least Base.
	Max time.Duration
}

// Defaults, stated once so that CONFIG.md, Parse and the tests agree.
const (
	DefaultListen       = "127.0.0.1:8000"
	DefaultMaxBodyBytes = 10 << 20
	// DefaultMaxConnections is four times the bench's 1,000 concurrent streams (PERFORMANCE.md;
	// its client keeps 1,016 connections), so that it never holds back a load the gateway is
	// measured at, and bounds what a flood of silent connections costs: each holds its
	// goroutine and buffers, about 17 KB (70 MB at the cap), and a file descriptor, which with
	// an upstream connection behind each busy one stays under the usual hard limits (systemd's
	// 524,288; Go raises the soft limit to the hard one at start).
	DefaultMaxConnections = 4096
	DefaultTimeout        = 120 * time.Second
	DefaultIdleTimeout    = 120 * time.Second // as long as DefaultTimeout: a local server may send a stream's head before a long prompt or a model load
	DefaultFailures       = 3
	DefaultCooldownBase   = 30 * time.Second
	DefaultCooldownMax    = 300 * time.Second
	// Active health and lifecycle.
	DefaultHealthInterval = 30 * time.Second
	DefaultHealthTimeout  = 5 * time.Second
	// DefaultDegradedAfter is degraded_after's default for the default health_timeout: half of
	// it, as for any other health_timeout. A check slower than health_timeout has failed, so a
	// degraded_after at or past it could never mark a target degraded (TestDegradedReachable).
	DefaultDegradedAfter = DefaultHealthTimeout / 2
	DefaultLoadTimeout   = lifecycle.DefaultLoadTimeout
	// maxRetries bounds max_retries: more same-target retries only delay the fallback.
	maxRetries = 10
	// RouteAuto is the model name the automatic router answers to; a key's allowlist may name
	// it, a [routes] table may not.
	RouteAuto = "auto"
)

// DefaultSpecialists are the SAIF specialists of a saif target that lists none. A function, not a
// variable, so that no caller can change another's default.
func DefaultSpecialists() []string {
	return []string{"rev_eng", "webapp", "malware", "network", "forensics", "crypto", "cloud", "exploit"}
}

// Load reads and parses the file at path. getenv resolves api_key_env (pass os.Getenv); every
// error is a *Error, several joined when there are several.
func Load(path string, getenv func(string) string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error(), Err: err}
	}
	return Parse(data, path, getenv)
}

// Route returns the route named name.
func (c *Config) Route(name string) (*Route, bool) {
	// A scan rather than a map: a handful of routes, and a Config built by hand in a test works.
	for _, r := range c.Routes {
		if r.Name == name {
			return r, true
		}
	}
	return nil, false
}

// Target returns the target named name.
func (c *Config) Target(name string) (*core.Target, bool) {
	for _, t := range c.Targets {
		if t.Name == name {
			return t, true
		}
	}
	return nil, false
}

// SetListen replaces Listen, for a command-line override, under the rule the file obeys: an open
// gateway listens only on loopback. Call it before the Config is shared.
func (c *Config) SetListen(addr string) error {
	if err := CheckListen(addr); err != nil {
		return &Error{File: c.Source, Msg: "listen override: " + err.Error()}
	}
	if c.Open() && !IsLoopback(addr) {
		return &Error{File: c.Source, Msg: "listen override: " + openMsg(addr)}
	}
	c.Listen = addr
	c.Browsers.Listen = listenHost(addr)
	return nil
}

// Open reports whether the gateway takes requests without a key.
func (c *Config) Open() bool { return len(c.Keys) == 0 }

// Authenticate hashes token with SHA-256 and compares it with every key's hash in constant time
// (crypto/subtle, no early exit on a match); nil, false when none matches.
func (c *Config) Authenticate(token string) (*Key, bool) {
	sum := sha256.Sum256([]byte(token))
	found := -1
	for i := range c.Keys {
		eq := subtle.ConstantTimeCompare(sum[:], c.Keys[i].SHA256[:])
		found = subtle.ConstantTimeSelect(eq, i, found)
	}
	if found < 0 {
		return nil, false
	}
	return &c.Keys[found], true
}
