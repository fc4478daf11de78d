package conformance

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"
)

// Options configure one run. The zero value of every optional field means
// the default stated on it.
type Options struct {
	// BaseURL is the server's root ("http://host:8080") or its API root
	// ("http://host:8080/v1"); both mean the same server. Required.
	BaseURL string
	// APIKey is sent as a bearer token. Empty sends no Authorization header
	// and skips the bad-key check.
	APIKey string
	// Model is the chat model to test. Empty: the first id in /v1/models not named like an
	// embedding model and not refusing a chat request (see chooseModel); Report.ModelChoice
	// says which and why.
	Model string
	// EmbeddingModel is the model for /v1/embeddings. Empty: when Model is empty too, the
	// first id of /v1/models named like an embedding model (not a reranker), which choosing
	// the chat model passed over; else the chat model. A 400 to the float embeddings request
	// then counts as "not supported" (SKIP) rather than a failure; a 400 to base64 beside a
	// served float request still fails embeddings.base64. Report.EmbeddingChoice says which
	// and why.
	EmbeddingModel string
	// Only keeps the checks whose id matches one of these globs (path.Match
	// syntax, e.g. "chat.stream.*"). Empty: every check.
	Only []string
	// Strict makes STRICT checks count like MUST; otherwise they only warn.
	Strict bool
	// Timeout bounds each request, body included. Zero: 30s.
	Timeout time.Duration
	// Concurrency bounds the requests in flight. Zero: 4.
	Concurrency int
	// HTTPClient carries the requests. Nil: a private client whose idle
	// connections are closed when Run returns. Timeout applies per request
	// through the context, so the client needs no overall timeout.
	HTTPClient *http.Client
	// Progress receives one line per judged check while the suite runs.
	// Nil: silent.
	Progress io.Writer
	// Now is the clock for the report's timestamps and for judging whether
	// "created" is plausible. Nil: time.Now.
	Now func() time.Time
	// Sleep waits d, or until ctx is done (returning its error), before a
	// request answered 429 is sent again. Nil: a timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

const (
	defaultTimeout     = 30 * time.Second
	defaultConcurrency = 4
)

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// apiRoot validates BaseURL and returns the "/v1" root without a trailing
// slash.
func (o *Options) apiRoot() (string, error) {
	if o.BaseURL == "" {
		return "", &UsageError{Msg: "--base-url is required"}
	}
	u, err := url.Parse(o.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", &UsageError{Msg: fmt.Sprintf("--base-url %q is not an http(s) URL", redactURL(o.BaseURL))}
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		// Each request's path is appended to the root: a query would land before it.
		return "", &UsageError{Msg: fmt.Sprintf("--base-url %q has a query or fragment: give the server's root or its /v1 root", u.Redacted())}
	}
	root := strings.TrimRight(u.String(), "/")
	if !strings.HasSuffix(root, "/v1") {
		root += "/v1"
	}
	return root, nil
}

func (o *Options) normalize() (root string, err error) {
	root, err = o.apiRoot()
	if err != nil {
		return "", err
	}
	if o.Timeout < 0 {
		return "", &UsageError{Msg: "--timeout must not be negative"}
	}
	if o.Timeout == 0 {
		o.Timeout = defaultTimeout
	}
	if o.Concurrency < 0 {
		return "", &UsageError{Msg: "concurrency must not be negative"}
	}
	if o.Concurrency == 0 {
		o.Concurrency = defaultConcurrency
	}
	for _, g := range o.Only {
		if _, err := path.Match(g, ""); err != nil {
			return "", &UsageError{Msg: fmt.Sprintf("--only %q: %v", g, err)}
		}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	return root, nil
}

func (o *Options) selects(id string) bool {
	if len(o.Only) == 0 {
		return true
	}
	for _, g := range o.Only {
		if ok, _ := path.Match(g, id); ok {
			return true
		}
	}
	return false
}

// redactURL is s with the password of its userinfo (a server behind basic auth) shown as
// "xxxxx", as url.URL.Redacted shows it; an s that does not parse loses all it has between
// "//" and its last "@", wherever that is: a '/' in the password, which may be what spoilt it,
// would otherwise end the authority before the "@" and leave s whole
// (TestBaseURLPasswordNotReported). Reports and errors show this, never the password.
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil {
		if _, has := u.User.Password(); !has {
			return s
		}
		return u.Redacted()
	}
	_, rest, ok := strings.Cut(s, "//")
	if !ok {
		return s
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return s
	}
	return s[:len(s)-len(rest)] + "xxxxx" + rest[at:]
}
