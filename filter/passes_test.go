package filter

import (
	"testing"

	"github.com/hayula/gateway/core"
)

// TestPassesKeepsEvery: a filter that says from the request alone that it keeps every target
// (passer) keeps every target, over every request and target its Keep reads.
func TestPassesKeepsEvery(t *testing.T) {
	var targets []*core.Target
	for _, p := range []core.Privacy{core.Private, core.Public} {
		for _, vision := range []bool{false, true} {
			for _, tools := range []bool{false, true} {
				targets = append(targets, &core.Target{Name: "t", Privacy: p, Vision: vision, Tools: tools})
			}
		}
	}
	passed := map[string]int{}
	for _, f := range []Filter{Privacy{}, Vision{}, Tools{}} {
		p, ok := f.(passer)
		if !ok {
			t.Fatalf("%s does not say when it keeps every target", f.Name())
		}
		for _, strict := range []bool{false, true} {
			for _, images := range []bool{false, true} {
				for _, tools := range []bool{false, true} {
					req := &core.Request{Strict: strict, Images: images, Tools: tools}
					if !p.passes(req) {
						continue
					}
					passed[f.Name()]++
					for _, tg := range targets {
						if ok, reason := f.Keep(req, tg); !ok {
							t.Errorf("%s passes %+v, yet drops %+v: %s", f.Name(), *req, *tg, reason)
						}
					}
				}
			}
		}
		if passed[f.Name()] != 4 {
			t.Errorf("%s passes %d of the 8 requests, want the 4 without what it filters on", f.Name(), passed[f.Name()])
		}
	}
}

// askCounter counts Keep's calls, and says it passes every request when pass is set.
type askCounter struct {
	asked *int
	pass  bool
}

func (askCounter) Name() string { return "counter" }
func (a askCounter) Keep(*core.Request, *core.Target) (bool, string) {
	*a.asked++
	return true, ""
}
func (a askCounter) passes(*core.Request) bool { return a.pass }

// TestRunIntoSkipsPassingStage: a stage whose filter passes the request is not asked target by
// target; one that does not pass it is, and the result is the same.
func TestRunIntoSkipsPassingStage(t *testing.T) {
	targets := []*core.Target{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	for _, pass := range []bool{true, false} {
		asked := 0
		res := RunInto(nil, &core.Request{}, targets, []Stage{{Filter: askCounter{asked: &asked, pass: pass}}})
		want := 3
		if pass {
			want = 0
		}
		if asked != want || len(res.Kept) != 3 || res.Drops != nil || res.FailedOpen != nil {
			t.Errorf("pass=%v: asked %d times (want %d), kept %d, drops %v, failed open %v",
				pass, asked, want, len(res.Kept), res.Drops, res.FailedOpen)
		}
	}
}
