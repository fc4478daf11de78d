package server_test

import (
	"testing"

	"github.com/hayula/gateway/server"
)

// TestMetricsCountPanic: a request whose attempt panics is answered 500 by the recoverer, and
// counted as one: an operator who alerts on 5xx sees the gateway's worst failure too. Its key's
// max_concurrent slot is given back.
func TestMetricsCountPanic(t *testing.T) {
	up := newFake(t, "solo")
	g := newGateway(t, keyBlock("one", "hk-one", "max_concurrent = 1")+
		target("solo", up.url(), "private")+"[routes.solo]\ntargets = [\"solo\"]\n", nil,
		func(o *server.Options) { o.Upstream = panicky{} })
	auth := []string{"Authorization", "Bearer hk-one"}
	for i := 0; i < 2; i++ { // the second would be 429 if the first kept its slot
		if rep := g.chat(t, "solo", auth...); rep.status != 500 {
			t.Fatalf("request %d: %d %s", i, rep.status, rep.body)
		}
	}
	want := []string{
		`hayula_requests_total{endpoint="chat",route="solo",code="500"} 2`,
		`hayula_request_duration_seconds_count{endpoint="chat",route="solo"} 2`,
	}
	var lines map[string]bool
	settles(func() bool {
		_, lines = scrape(t, g, auth...)
		return lines[want[0]]
	})
	for _, w := range want {
		if !lines[w] {
			t.Errorf("no line %q", w)
		}
	}
}
