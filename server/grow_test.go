package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// TestClientValuesAddNoSeries: what a client sends (the model it asks for, a key that does not
// exist, an x-route-hint, a request ID, a header of its own, a path) and what an upstream
// answers (an error's message and type) add no series to /metrics: a thousand requests, each
// with values of its own, leave the scrape with the series it had after one of each kind.
func TestClientValuesAddNoSeries(t *testing.T) {
	t.Parallel()
	up := newFake(t, "up")
	var count atomic.Int64
	up.set(func(w http.ResponseWriter, _ *http.Request) {
		n := count.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(500)
		fmt.Fprintf(w, `{"error":{"message":"broke %d","type":"t%d","code":"c%d"}}`, n, n, n)
	})
	cfg := target("up", up.url(), "private") + "[routes.r]\ntargets = [\"up\"]\n\n" +
		keyBlock("user", "hk-user") + keyBlock("scrape", "hk-scrape", "routes = []")
	g := newGateway(t, cfg, nil)
	scrapeKey := []string{"Authorization", "Bearer hk-scrape"}
	round := func(i int) {
		user := []string{"Authorization", "Bearer hk-user", "X-Request-Id", fmt.Sprintf("id-%d", i),
			"x-route-hint", fmt.Sprintf("hint-%d", i), fmt.Sprintf("X-Own-%d", i), "v"}
		g.chat(t, fmt.Sprintf("model-%d", i), user...)                                 // no such route
		g.chat(t, "r", user...)                                                        // the upstream's error
		g.chat(t, "r", "Authorization", fmt.Sprintf("Bearer hk-nope-%d", i))           // no such key
		g.chat(t, fmt.Sprintf("model-%d", i), "x-api-key", fmt.Sprintf("hk-no-%d", i)) // neither
		g.do(t, http.MethodGet, fmt.Sprintf("/v1/models/model-%d", i), "", user...)
		g.do(t, http.MethodPost, fmt.Sprintf("/v1/path-%d", i), "{}", user...)
		g.post(t, "/v1/embeddings", fmt.Sprintf(`{"model":"emb-%d","input":"x"}`, i), user...)
	}
	series := func() map[string]bool {
		_, lines := scrape(t, g, scrapeKey...)
		out := map[string]bool{}
		for l := range lines {
			out[l[:strings.LastIndexByte(l, ' ')]] = true
		}
		return out
	}
	round(0)
	before := series()
	for i := 1; i <= 1000; i++ {
		round(i)
	}
	after := series()
	for s := range after {
		if !before[s] {
			t.Errorf("new series after a thousand requests of client values: %s", s)
		}
	}
	if len(after) != len(before) {
		t.Errorf("%d series, %d before", len(after), len(before))
	}
}
