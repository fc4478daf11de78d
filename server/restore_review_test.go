package server_test

import (
	"fmt"
	"net/http"
	"testing"
)

// restoreChain is route r over private targets a then b (and c when three), each with a fake
// upstream; extra is appended to the route's table.
func restoreChain(t *testing.T, extra string) (*gateway, *fake, *fake) {
	t.Helper()
	a, b := newFake(t, "a"), newFake(t, "b")
	cfg := target("a", a.url(), "private") + target("b", b.url(), "private") +
		"[routes.r]\ntargets = [\"a\", \"b\"]\n" + extra
	return newGateway(t, cfg, nil), a, b
}

// TestChainStopAnswersAsIs: a failure that ends the chain by its class (a request error, which
// another target would refuse too, or a class the route's fallback_on leaves out) is answered as
// it is, as CONFIG.md's Failure classes promise, even after earlier failures that moved the chain
// on. It was answered 503 all_targets_failed: a client told to retry a request whose temperature
// is out of range, its 400's message and param lost.
func TestChainStopAnswersAsIs(t *testing.T) {
	tests := []struct {
		name       string
		extra      string
		a, b       http.HandlerFunc
		status     int
		message    string
		param      any
		retryAfter string
	}{
		{name: "a request error after a 500", a: errHandler(500, "internal", "boom"),
			b: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(400)
				fmt.Fprint(w, `{"error":{"message":"temperature must be <= 2","type":"invalid_request_error","param":"temperature","code":null}}`)
			},
			status: 400, message: "temperature must be <= 2", param: "temperature"},
		{name: "a 422 after a 404", a: errHandler(404, "model_not_found", "no model"),
			b: errHandler(422, "invalid_value", "bad tool schema"), status: 422, message: "bad tool schema"},
		{name: "a class fallback_on leaves out, after one it has", extra: "fallback_on = [\"server_error\"]\n",
			a: errHandler(500, "internal", "boom"),
			b: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Retry-After", "7")
				w.WriteHeader(429)
				fmt.Fprint(w, `{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}`)
			},
			status: 429, message: "slow down", retryAfter: "7"},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tt.name, stream), func(t *testing.T) {
				g, a, b := restoreChain(t, tt.extra)
				a.set(tt.a)
				b.set(tt.b)
				rep := g.post(t, "/v1/chat/completions",
					fmt.Sprintf(`{"model":"r","stream":%v,"messages":[{"role":"user","content":"hi"}]}`, stream))
				if rep.status != tt.status {
					t.Fatalf("status %d, want %d: %s", rep.status, tt.status, rep.body)
				}
				if got := rep.errorField(t, "message"); got != tt.message {
					t.Errorf("message %q, want %q", got, tt.message)
				}
				if got := rep.errorField(t, "param"); got != tt.param {
					t.Errorf("param %v, want %v", got, tt.param)
				}
				if got := rep.header.Get("Retry-After"); got != tt.retryAfter {
					t.Errorf("Retry-After %q, want %q", got, tt.retryAfter)
				}
				if got := rep.header.Get("x-hayula-chain"); got != "a→b" {
					t.Errorf("x-hayula-chain %q, want a→b", got)
				}
			})
		}
	}
}

// TestRateLimitedEverywhereSoonestRetryAfter: every target answering 429 is one failure, restored
// as the first upstream's 429, and its Retry-After is the soonest any of them gave, as for a mix
// of failures: the client may come back as soon as one target takes requests again. It was the
// first's alone: none at all when the first 429 gave no wait and a later one did.
func TestRateLimitedEverywhereSoonestRetryAfter(t *testing.T) {
	limited := func(wait string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if wait != "" {
				w.Header().Set("Retry-After", wait)
			}
			w.WriteHeader(429)
			fmt.Fprint(w, `{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}`)
		}
	}
	for _, tt := range []struct{ a, b, want string }{
		{"", "5", "5"},
		{"60", "3", "3"},
		{"4", "", "4"},
	} {
		t.Run(tt.a+"/"+tt.b, func(t *testing.T) {
			g, a, b := restoreChain(t, "")
			a.set(limited(tt.a))
			b.set(limited(tt.b))
			rep := g.chat(t, "r")
			if rep.status != 429 || rep.errorField(t, "message") != "slow down" {
				t.Fatalf("status %d: %s", rep.status, rep.body)
			}
			if got := rep.header.Get("Retry-After"); got != tt.want {
				t.Errorf("Retry-After %q, want %q", got, tt.want)
			}
		})
	}
}
