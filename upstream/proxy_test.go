package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hayula/gateway/core"
)

// TestPrivateTargetsBypassProxy: with a proxy configured for every request (as HTTP_PROXY would
// for a LAN address), a public target's request goes through it and a private target's never
// does: a strict route's prompt reaches no one but its target.
func TestPrivateTargetsBypassProxy(t *testing.T) {
	answer := `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`
	var direct, proxied atomic.Int64
	serve := func(n *atomic.Int64) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			n.Add(1)
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, answer)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	up, proxy := serve(&direct), serve(&proxied)
	proxyURL, _ := url.Parse(proxy.URL)
	private := &core.Target{Name: "private", Adapter: core.AdapterOpenAI, URL: up.URL + "/v1", Model: "m",
		Privacy: core.Private, Timeout: 5 * time.Second, Stats: &core.Stats{}}
	public := &core.Target{Name: "public", Index: 1, Adapter: core.AdapterOpenAI, URL: up.URL + "/v1", Model: "m",
		Privacy: core.Public, Timeout: 5 * time.Second, Stats: &core.Stats{}}
	for _, tmpl := range []*http.Transport{nil, {Proxy: http.ProxyURL(proxyURL)}} {
		s := NewSet([]*core.Target{private, public}, Options{Transport: tmpl,
			Proxy: func(*http.Request) (*url.URL, error) { return proxyURL, nil }})
		direct.Store(0)
		proxied.Store(0)
		for _, tg := range []*core.Target{private, public} {
			resp, err := s.Chat(context.Background(), tg, chatReq(false))
			if err != nil {
				t.Fatalf("template %v, %s: %v", tmpl != nil, tg.Name, err)
			}
			resp.Release()
		}
		s.Close()
		if direct.Load() != 1 || proxied.Load() != 1 {
			t.Errorf("template %v: %d requests went direct and %d through the proxy, want 1 and 1 (private direct, public proxied)",
				tmpl != nil, direct.Load(), proxied.Load())
		}
	}
}

// TestInvalidProxyNotQuoted: a proxy setting that is not a valid URL fails a public target's
// request as a connection failure whose text names the setting, not its value: net/http quotes
// an invalid HTTPS_PROXY whole, and its password went into the log with every attempt.
func TestInvalidProxyNotQuoted(t *testing.T) {
	const raw = "http://user:s3cret@[::1"
	_, perr := url.Parse(raw) //lint:ignore SA1007 the value is invalid on purpose: the test needs url.Parse's error
	if perr == nil {
		t.Fatal("the test's proxy value parses")
	}
	public := &core.Target{Name: "public", Adapter: core.AdapterOpenAI, URL: "http://127.0.0.1:9/v1", Model: "m",
		Privacy: core.Public, Timeout: 5 * time.Second, Stats: &core.Stats{}}
	// The error as net/http's ProxyFromEnvironment words it.
	s := NewSet([]*core.Target{public}, Options{Proxy: func(*http.Request) (*url.URL, error) {
		return nil, fmt.Errorf("invalid proxy address %q: %v", raw, perr)
	}})
	defer s.Close()
	_, err := s.Chat(context.Background(), public, chatReq(false))
	if err == nil {
		t.Fatal("no error through an invalid proxy")
	}
	if _, ok := errors.AsType[*core.ConnError](err); !ok {
		t.Errorf("error %T %v, want a connection failure", err, err)
	}
	if strings.Contains(err.Error(), "s3cret") || strings.Contains(fmt.Sprintf("%+v", err), "s3cret") {
		t.Errorf("error quotes the proxy's password: %v", err)
	}
	if !strings.Contains(err.Error(), "proxy") {
		t.Errorf("error %q does not say the proxy is the cause", err)
	}
}
