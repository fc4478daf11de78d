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
// upstream is a third party from now on, and those attempts come after that. The request ends as
// one arriving after the reload would (here the first target's 500); one that is not strict
// falls through as before.
func TestReloadMakingTargetPublicHoldsInFlight(t *testing.T) {
	for _, tc := range []struct {
		name    string
		strict  bool
		public  string // the target the reload makes public: "b", or "slow" (retried)
		rename  bool   // the reload renames it as it makes it public: the same URL
		status  int
		slowHit int64
		bHit    int64
	}{
		{name: "strict next in chain", strict: true, public: "b", status: 500, slowHit: 2},
		{name: "strict next in chain, renamed", strict: true, public: "b", rename: true, status: 500, slowHit: 2},
		{name: "strict retry", strict: true, public: "slow", status: 200, slowHit: 1, bHit: 1},
		{name: "not strict", public: "b", status: 200, slowHit: 2, bHit: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slow, b := newFake(t, "slow"), newFake(t, "b")
			entered, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			slow.set(func(w http.ResponseWriter, r *http.Request) {
				once.Do(func() { close(entered) })
				<-release
				errHandler(500, "internal", "down")(w, r)
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
			const retries = "max_retries = 1"
			old := build(target("slow", slow.url(), "private", retries)+target("b", b.url(), "private")+
				"[routes.r]\ntargets = [\"slow\", \"b\"]\n", nil)
			names := map[string]string{"slow": "slow", "b": "b"}
			if tc.rename {
				names[tc.public] = "cloud"
			}
			class := map[string]string{"slow": "private", "b": "private"}
			class[tc.public] = "public"
			newCfg := target(names["slow"], slow.url(), class["slow"], retries) + target(names["b"], b.url(), class["b"]) +
				"[routes.r]\ntargets = [\"" + names["slow"] + "\", \"" + names["b"] + "\"]\n"

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
				resp, err := h.Client().Post(h.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
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
