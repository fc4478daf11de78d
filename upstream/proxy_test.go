package upstream

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
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
