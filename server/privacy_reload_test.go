package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/server"
)

// TestReloadMakingTargetPublicHoldsInFlight: a strict request under way when a reload (SIGHUP)
// makes a target of its chain public, under the same name or at the same URL, makes no further
// attempt on it: neither the next in its chain nor a same-target retry. The reload says the
// upstream is a third party from now on, and those attempts come after that. So too for a request
// whose route or key the reload makes strict, or every route (the top-level strict), and a
// public target. The request ends as one arriving after the reload would (here the first target's 500); one the reload leaves free to
// use the target falls through as before.
func TestReloadMakingTargetPublicHoldsInFlight(t *testing.T) {
	// Configurations over targets slow (which fails, after the reload) and b, route r = [slow, b],
	// as a function of the two targets' URLs.
	type cfgFunc func(slow, b string) string
	plain := func(slowClass, bName, bClass, routeExtra, keyExtra string) cfgFunc {
		return func(slow, b string) string {
			return keyBlock("k", "hk-k", keyExtra) + target("slow", slow, slowClass, "max_retries = 1") + target(bName, b, bClass) +
				"[routes.r]\ntargets = [\"slow\", \"" + bName + "\"]\n" + routeExtra
		}
	}
	// renamed is f with the key k renamed k2, its sha256 the same: the same key.
	renamed := func(f cfgFunc) cfgFunc {
		return func(slow, b string) string { return strings.Replace(f(slow, b), `name = "k"`, `name = "k2"`, 1) }
	}
	// topStrict is f with the top-level strict = true (TestTopLevelStrictNeverReachesPublic).
	topStrict := func(f cfgFunc) cfgFunc {
		return func(slow, b string) string { return "strict = true\n" + f(slow, b) }
	}
	for _, tc := range []struct {
		name     string
		strict   bool // the request says strict
		old, new cfgFunc
		status   int
		slowHit  int64
		bHit     int64
	}{
		{"class: next in chain", true, plain("private", "b", "private", "", ""), plain("private", "b", "public", "", ""), 500, 2, 0},
		{"class: next in chain, renamed", true, plain("private", "b", "private", "", ""), plain("private", "cloud", "public", "", ""), 500, 2, 0},
		{"class: retry", true, plain("private", "b", "private", "", ""), plain("public", "b", "private", "", ""), 200, 1, 1},
		{"route made strict", false, plain("private", "b", "public", "", ""), plain("private", "b", "public", "strict = true\n", ""), 500, 2, 0},
		{"key made strict", false, plain("private", "b", "public", "", ""), plain("private", "b", "public", "", "strict = true"), 500, 2, 0},
		{"key renamed and made strict", false, plain("private", "b", "public", "", ""), renamed(plain("private", "b", "public", "", "strict = true")), 500, 2, 0},
		{"top-level strict turned on", false, plain("private", "b", "public", "", ""), topStrict(plain("private", "b", "public", "", "")), 500, 2, 0},
		{"not strict", false, plain("private", "b", "private", "", ""), plain("private", "b", "public", "", ""), 200, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slow, b := newFake(t, "slow"), newFake(t, "b")
			entered, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			slow.set(func(w http.ResponseWriter, r *http.Request) {
				once.Do(func() { close(entered) })
				if waitRelease(r, release) {
					errHandler(500, "internal", "down")(w, r)
				}
			})
			b.set(okHandler("b"))
			build := func(text string, prev *server.Server) *server.Server {
				cfg, err := config.Parse([]byte(text), "test.toml", func(string) string { return "" })
				if err != nil {
					t.Fatal(err)
				}
				s, err := server.New(server.Options{Config: cfg, Previous: prev,
					Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(s.Close)
				return s
			}
			old := build(tc.old(slow.url(), b.url()), nil)
			newCfg := tc.new(slow.url(), b.url())
			l := server.NewLive(old)
			h := serveLive(t, l)
			t.Cleanup(h.Close)
			type answer struct {
				status int
				body   string
			}
			done := make(chan answer, 1)
			go func() {
				body := `{"model":"r","messages":[{"role":"user","content":"hi"}]}`
				if tc.strict {
					body = `{"model":"r","x-hayula-privacy":"strict","messages":[{"role":"user","content":"hi"}]}`
				}
				req, err := http.NewRequest(http.MethodPost, h.URL+"/v1/chat/completions", strings.NewReader(body))
				if err != nil {
					done <- answer{-1, err.Error()}
					return
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer hk-k")
				resp, err := h.Client().Do(req)
				if err != nil {
					done <- answer{-1, err.Error()}
					return
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				done <- answer{resp.StatusCode, string(b)}
			}()
			<-entered
			ret := l.Replace(build(newCfg, old))
			close(release)
			a := <-done
			<-ret.Drained()
			ret.Close()
			if a.status != tc.status || slow.hits.Load() != tc.slowHit || b.hits.Load() != tc.bHit {
				t.Fatalf("%d %s; slow hit %d, b hit %d: want %d, %d and %d",
					a.status, a.body, slow.hits.Load(), b.hits.Load(), tc.status, tc.slowHit, tc.bHit)
			}
		})
	}
}
