package server_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// threeChain is saif → deepseek-r1 → openrouter, the last public and guarded for overflow.
func threeChain(t *testing.T) (*gateway, *fake, *fake, *fake) {
	t.Helper()
	// A loaded machine running the suite with -race can take hundreds of milliseconds to an
	// answer's head: only the test of the timeout class gets a short one.
	return threeChainTimeout(t, "10s")
}

// threeChainTimeout is threeChain with saif's timeout.
func threeChainTimeout(t *testing.T, saifTimeout string) (*gateway, *fake, *fake, *fake) {
	t.Helper()
	saif, r1, or := newFake(t, "saif"), newFake(t, "deepseek-r1"), newFake(t, "openrouter")
	cfg := target("saif", saif.url(), "private", fmt.Sprintf("timeout = %q", saifTimeout)) +
		target("deepseek-r1", r1.url(), "private") +
		target("openrouter", or.url(), "public", `model = "deepseek/deepseek-r1"`) + `
[routes.saif]
targets = ["saif", "deepseek-r1", "openrouter"]
guard = { openrouter = ["overflow"] }

[routes.open]
targets = ["saif", "deepseek-r1", "openrouter"]
`
	return newGateway(t, cfg, nil), saif, r1, or
}

func TestFallbackOnEachClass(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		closed  bool
	}{
		{name: "connection", closed: true},
		{name: "timeout", handler: func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}},
		{name: "server_error 500", handler: errHandler(500, "internal", "boom")},
		{name: "server_error 503", handler: errHandler(503, "unavailable", "busy")},
		{name: "rate_limit", handler: errHandler(429, "rate_limited", "slow down")},
		{name: "overflow 413", handler: errHandler(413, "too_large", "too large")},
		{name: "overflow 400", handler: errHandler(400, "context_length_exceeded", "This model's maximum context length is 10 tokens")},
		{name: "endpoint 401", handler: errHandler(401, "invalid_api_key", "bad key")},
		{name: "endpoint 402", handler: errHandler(402, "insufficient_quota", "pay up")},
		{name: "endpoint 403", handler: errHandler(403, "forbidden", "no")},
		{name: "endpoint 404", handler: errHandler(404, "model_not_found", "no model")},
		{name: "endpoint 410", handler: errHandler(410, "gone", "gone")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			timeout := "10s"
			if tc.name == "timeout" {
				timeout = "300ms"
			}
			g, saif, r1, or := threeChainTimeout(t, timeout)
			if tc.closed {
				saif.srv.Close()
			} else {
				saif.set(tc.handler)
			}
			rep := g.chat(t, "saif")
			if rep.status != 200 {
				t.Fatalf("status %d: %s", rep.status, rep.body)
			}
			if got, want := rep.header.Get("x-hayula-chain"), "saif→deepseek-r1 (served by deepseek-r1)"; got != want {
				t.Errorf("x-hayula-chain = %q, want %q", got, want)
			}
			if got := rep.header.Get("x-hayula-target"); got != "deepseek-r1" {
				t.Errorf("x-hayula-target = %q", got)
			}
			if got := rep.header.Get("x-hayula-route"); got != "saif" {
				t.Errorf("x-hayula-route = %q", got)
			}
			if r1.hits.Load() != 1 || or.hits.Load() != 0 {
				t.Errorf("hits: deepseek-r1 %d, openrouter %d", r1.hits.Load(), or.hits.Load())
			}
		})
	}
}

func TestChainHeaderFirstServed(t *testing.T) {
	g, _, r1, _ := threeChain(t)
	rep := g.chat(t, "saif")
	if rep.status != 200 || rep.header.Get("x-hayula-chain") != "saif" || rep.header.Get("x-hayula-target") != "saif" {
		t.Fatalf("status %d chain %q target %q", rep.status, rep.header.Get("x-hayula-chain"), rep.header.Get("x-hayula-target"))
	}
	if r1.hits.Load() != 0 {
		t.Fatal("deepseek-r1 was asked although saif served")
	}
	if !strings.Contains(string(rep.body), "hello from saif") {
		t.Fatalf("body %s", rep.body)
	}
}

func TestRequestErrorDoesNotFallThrough(t *testing.T) {
	g, saif, r1, _ := threeChain(t)
	saif.set(errHandler(422, "invalid_value", "temperature out of range"))
	rep := g.chat(t, "saif")
	if rep.status != 422 {
		t.Fatalf("status %d, want the upstream's 422: %s", rep.status, rep.body)
	}
	if msg := rep.errorField(t, "message"); msg != "temperature out of range" {
		t.Errorf("message %q", msg)
	}
	if r1.hits.Load() != 0 {
		t.Error("a request error fell through")
	}
}

func TestGuard(t *testing.T) {
	t.Run("a 503 blip never reaches the guarded tail", func(t *testing.T) {
		g, saif, r1, or := threeChain(t)
		saif.set(errHandler(503, "unavailable", "blip"))
		r1.set(errHandler(503, "unavailable", "blip"))
		rep := g.chat(t, "saif")
		if or.hits.Load() != 0 {
			t.Fatal("the guarded tail was entered after 503s")
		}
		if rep.status != 503 {
			t.Fatalf("status %d: %s", rep.status, rep.body)
		}
		if got := rep.header.Get("x-hayula-chain"); got != "saif→deepseek-r1" {
			t.Errorf("chain %q", got)
		}
	})
	t.Run("an overflow does", func(t *testing.T) {
		g, saif, r1, or := threeChain(t)
		saif.set(errHandler(400, "context_length_exceeded", "too long"))
		r1.set(errHandler(413, "too_large", "too long"))
		rep := g.chat(t, "saif")
		if rep.status != 200 || or.hits.Load() != 1 {
			t.Fatalf("status %d, openrouter hits %d", rep.status, or.hits.Load())
		}
		if got, want := rep.header.Get("x-hayula-chain"), "saif→deepseek-r1→openrouter (served by openrouter)"; got != want {
			t.Errorf("chain %q, want %q", got, want)
		}
		if m := or.lastBody(t)["model"]; m != "deepseek/deepseek-r1" {
			t.Errorf("openrouter got model %v", m)
		}
	})
	t.Run("a mix of overflow and 503 does not", func(t *testing.T) {
		g, saif, r1, or := threeChain(t)
		saif.set(errHandler(400, "context_length_exceeded", "too long"))
		r1.set(errHandler(503, "unavailable", "blip"))
		_ = g.chat(t, "saif")
		if or.hits.Load() != 0 {
			t.Fatal("guarded tail entered after a 503")
		}
	})
}

func TestRestoreOriginalError(t *testing.T) {
	t.Run("single target keeps its 401", func(t *testing.T) {
		up := newFake(t, "solo")
		up.set(errHandler(401, "invalid_api_key", "Incorrect API key provided: sk-...xyz"))
		g := newGateway(t, target("solo", up.url(), "private")+"[routes.solo]\ntargets = [\"solo\"]\n", nil)
		rep := g.chat(t, "solo")
		if rep.status != 401 {
			t.Fatalf("status %d: %s", rep.status, rep.body)
		}
		if rep.errorField(t, "message") != "Incorrect API key provided: sk-...xyz" || rep.errorField(t, "code") != "invalid_api_key" {
			t.Errorf("not restored: %s", rep.body)
		}
	})
	t.Run("mixed failures give 503 naming each attempt", func(t *testing.T) {
		g, saif, r1, _ := threeChain(t)
		saif.set(errHandler(500, "internal", "boom"))
		r1.set(errHandler(404, "model_not_found", "no such model"))
		rep := g.chat(t, "saif")
		if rep.status != 503 {
			t.Fatalf("status %d: %s", rep.status, rep.body)
		}
		msg, _ := rep.errorField(t, "message").(string)
		for _, want := range []string{"saif", "server_error", "500", "deepseek-r1", "endpoint", "404"} {
			if !strings.Contains(msg, want) {
				t.Errorf("message %q lacks %q", msg, want)
			}
		}
	})
}

func TestNoFallbackHeader(t *testing.T) {
	for _, how := range []string{"header", "body"} {
		t.Run(how, func(t *testing.T) {
			g, saif, r1, _ := threeChain(t)
			saif.set(errHandler(500, "internal", "boom"))
			var rep reply
			if how == "header" {
				rep = g.chat(t, "saif", "x-fallback-on", "false")
			} else {
				rep = g.post(t, "/v1/chat/completions", `{"model":"saif","x-fallback-on":false,"messages":[{"role":"user","content":"hi"}]}`)
			}
			if rep.status != 500 || r1.hits.Load() != 0 {
				t.Fatalf("status %d, deepseek-r1 hits %d", rep.status, r1.hits.Load())
			}
		})
	}
}

func TestHayulaFieldsStripped(t *testing.T) {
	g, saif, _, _ := threeChain(t)
	rep := g.post(t, "/v1/chat/completions",
		`{"model":"open","x-route-hint":"webapp","x-hayula-privacy":"strict","x-fallback-on":true,"temperature":0.5,"messages":[{"role":"user","content":"hi"}]}`)
	if rep.status != 200 {
		t.Fatalf("status %d: %s", rep.status, rep.body)
	}
	got := saif.lastBody(t)
	for _, k := range []string{"x-route-hint", "x-hayula-privacy", "x-fallback-on"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s forwarded upstream", k)
		}
	}
	if got["model"] != "saif" || got["temperature"] != 0.5 {
		t.Errorf("forwarded body %v", got)
	}
}

// TestNullHayulaFieldsStripped: an option sent as null (a typed client's unset field) asks for
// nothing, and is stripped all the same: an upstream that refuses unknown fields must not see it.
func TestNullHayulaFieldsStripped(t *testing.T) {
	g, saif, _, _ := threeChain(t)
	for _, path := range []string{"/v1/chat/completions", "/v1/completions"} {
		for _, k := range []string{"x-route-hint", "x-hayula-privacy", "x-fallback-on"} {
			t.Run(path+" "+k, func(t *testing.T) {
				rep := g.post(t, path, `{"model":"open","`+k+`":null,"prompt":"hi","messages":[{"role":"user","content":"hi"}]}`)
				if rep.status != 200 {
					t.Fatalf("status %d: %s", rep.status, rep.body)
				}
				got := saif.lastBody(t)
				if _, ok := got[k]; ok || got["model"] != "saif" {
					t.Errorf("forwarded body %v", got)
				}
			})
		}
	}
}

func TestSameTargetRetry(t *testing.T) {
	up := newFake(t, "solo")
	var n int
	up.set(func(w http.ResponseWriter, r *http.Request) {
		n++
		if n < 3 {
			errHandler(502, "bad_gateway", "flaky")(w, r)
			return
		}
		okHandler("solo")(w, r)
	})
	g := newGateway(t, target("solo", up.url(), "private", "max_retries = 2")+"[routes.solo]\ntargets = [\"solo\"]\n", nil)
	rep := g.chat(t, "solo")
	if rep.status != 200 || up.hits.Load() != 3 {
		t.Fatalf("status %d after %d hits", rep.status, up.hits.Load())
	}
	if rep.header.Get("x-hayula-chain") != "solo" {
		t.Errorf("chain %q", rep.header.Get("x-hayula-chain"))
	}
}

// Every answer gives back the in-flight count it took (the least-busy selector reads it),
// however it ended: served, failed over, refused by every target, streamed; while a stream is
// open its target counts one.
func TestInFlightCountsReturnToZero(t *testing.T) {
	g, saif, r1, _ := threeChain(t)
	inFlight := func() map[string]int64 {
		m := map[string]int64{}
		for _, tg := range g.srv.Config().Targets {
			m[tg.Name] = tg.Stats.InFlight()
		}
		return m
	}
	zero := map[string]int64{"saif": 0, "deepseek-r1": 0, "openrouter": 0}
	// The handler ends the count after the answer has gone out (the client may read it
	// first): a count is waited for, boundedly, before it is compared.
	check := func(when string, want map[string]int64) {
		t.Helper()
		settles(func() bool { return cmp.Equal(want, inFlight()) })
		if diff := cmp.Diff(want, inFlight()); diff != "" {
			t.Errorf("%s: in flight (-want +got):\n%s", when, diff)
		}
	}

	if rep := g.chat(t, "saif"); rep.status != 200 {
		t.Fatalf("status %d", rep.status)
	}
	check("after an answer", zero)
	saif.set(errHandler(500, "internal", "boom"))
	if rep := g.chat(t, "saif"); rep.status != 200 {
		t.Fatalf("status %d", rep.status)
	}
	check("after a fallback", zero)
	r1.set(errHandler(500, "internal", "boom"))
	if rep := g.chat(t, "saif"); rep.status == 200 {
		t.Fatal("served although both private targets fail")
	}
	check("after every target failed", zero)

	release := make(chan struct{})
	r1.set(stalledStream(burstChunk, burstFinish, release))
	resp, err := g.ts.Client().Post(g.ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(streamBody("saif")))
	if err != nil {
		close(release)
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		close(release)
		t.Fatal(err)
	}
	check("while a stream is open", map[string]int64{"saif": 0, "deepseek-r1": 1, "openrouter": 0})
	close(release)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	check("after the stream", zero)
}

// TestCaseFoldedHayulaFieldsStripped: encoding/json matches member names case-insensitively, so
// "X-Hayula-Privacy" (or an escaped spelling) is read as the option; it is stripped too, in
// whatever spelling it came: the upstream must not see a Hayula option.
func TestCaseFoldedHayulaFieldsStripped(t *testing.T) {
	g, saif, _, _ := threeChain(t)
	for _, path := range []string{"/v1/chat/completions", "/v1/completions"} {
		for _, member := range []string{
			`"X-Hayula-Privacy":"strict"`, `"X-Route-Hint":null`, `"X-FALLBACK-ON":true`,
			`"x-route-hint":"webapp","X-Route-Hint":null`, `"x-hayula-priv\u0061cy":null`,
			`"X-Hayula-Priv\u0061cy":"strict"`,
		} {
			t.Run(path+" "+member, func(t *testing.T) {
				rep := g.post(t, path, `{"model":"open",`+member+`,"prompt":"hi","messages":[{"role":"user","content":"hi"}]}`)
				if rep.status != 200 {
					t.Fatalf("status %d: %s", rep.status, rep.body)
				}
				got := saif.lastBody(t)
				for k := range got {
					for _, opt := range []string{"x-route-hint", "x-hayula-privacy", "x-fallback-on"} {
						if strings.EqualFold(k, opt) {
							t.Errorf("%s forwarded upstream: %v", k, got)
						}
					}
				}
				if got["model"] != "saif" {
					t.Errorf("forwarded body %v", got)
				}
			})
		}
	}
}

// encoding/json reads "Model" (or "MODEL") as the model; the gateway routes by it and sends the
// upstream the target's model as "model", so the other spelling must not reach the upstream
// beside it. An escaped "mod\u0065l" is "model" itself and is replaced.
func TestModelSpellingsStripped(t *testing.T) {
	g, saif, _, _ := threeChain(t)
	for _, path := range []string{"/v1/chat/completions", "/v1/completions"} {
		for _, member := range []string{`"Model":"open"`, `"MODEL":"open"`, `"model":"nope","Model":"open"`,
			`"mod\u0065l":"open"`, `"Model":"open","x-route-hint":null`} {
			t.Run(path+" "+member, func(t *testing.T) {
				rep := g.post(t, path, `{`+member+`,"prompt":"hi","messages":[{"role":"user","content":"hi"}]}`)
				if rep.status != 200 {
					t.Fatalf("status %d: %s", rep.status, rep.body)
				}
				var models []string
				for k, v := range saif.lastBody(t) {
					if strings.EqualFold(k, "model") {
						models = append(models, k+"="+v.(string))
					}
				}
				if len(models) != 1 || models[0] != "model=saif" {
					t.Errorf("the upstream's model members: %q, want only model=saif", models)
				}
			})
		}
	}
}

// TestFallbackAnyFalseCounts: x-fallback-on sent on several header lines counts each, as
// x-hayula-privacy's lines do: a second line that says false turns fallback off, and a second
// line that is neither true nor false is refused.
func TestFallbackAnyFalseCounts(t *testing.T) {
	g, saif, r1, _ := threeChain(t)
	saif.set(errHandler(500, "internal", "boom"))
	send := func(lines ...string) reply {
		req, err := http.NewRequest("POST", g.ts.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"saif","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		for _, l := range lines {
			req.Header.Add("x-fallback-on", l)
		}
		return g.send(t, req)
	}
	if rep := send("true", "false"); rep.status != 500 || r1.hits.Load() != 0 {
		t.Fatalf("true, false: status %d, deepseek-r1 hits %d", rep.status, r1.hits.Load())
	}
	if rep := send("true", "maybe"); rep.status != 400 || rep.errorField(t, "param") != "x-fallback-on" {
		t.Fatalf("true, maybe: %d %s", rep.status, rep.body)
	}
	if rep := send("true", "yes"); rep.status != 200 || r1.hits.Load() != 1 {
		t.Fatalf("true, yes: status %d, deepseek-r1 hits %d", rep.status, r1.hits.Load())
	}
}
