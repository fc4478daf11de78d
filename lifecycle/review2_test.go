//go:build unix

package lifecycle

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// A request waiting for a pinned member that cannot start gets the start's failure (a
// connection failure) when the launch it waited for fails, as for an unpinned member, instead of
// waiting out load_timeout through every restart and being told the model is loading.
func TestPinnedStartFailureAnswersWaiter(t *testing.T) {
	specs := []Spec{inGroup("g", fake("p", "-crash-at-start")), inGroup("g", fake("a"))}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 2, Pinned: []string{"p"}}},
		Options{RestartBackoff: time.Second, MaxRestartBackoff: time.Second})
	if err := h.m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "p to wait for its first restart", func() bool {
		return h.status(t, "p").State == StateBackoff
	})
	got := make(chan error, 1)
	go func() {
		_, _, err := h.m.Ensure(context.Background(), "p")
		got <- err
	}()
	// The request's load_timeout timer joins the restart's.
	eventually(t, "the request to wait", func() bool { return h.clock.Pending() == 2 })
	h.clock.Advance(2 * time.Second) // the restart, which fails at once
	select {
	case err := <-got:
		var pe *ProcessError
		if !errors.As(err, &pe) || pe.Target != "p" {
			t.Fatalf("Ensure(p) = %v, want *ProcessError", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Ensure(p) still waiting after the restart it waited for failed")
	}
}

// A request still holds the URL of a process that crashed under it (its same-target retries use
// it): that port must not go to another target's next process meanwhile, else the retry is
// answered by the other target's model.
func TestCrashedPortNotReusedWhileHeld(t *testing.T) {
	h := newHarness(t, []Spec{fake("a", "-crash-after", "1"), fake("b")}, nil, Options{})
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	next := []int{port, port} // the kernel's answer to a's launch, and again to b's
	var mu sync.Mutex
	h.m.freePort = func() (int, error) {
		mu.Lock()
		defer mu.Unlock()
		if len(next) > 0 {
			p := next[0]
			next = next[1:]
			return p, nil
		}
		return freePort()
	}
	urlA, release, err := h.m.Ensure(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if model, err := chat(urlA); err != nil || model != "a" {
		t.Fatalf("first chat with a: %q, %v", model, err)
	}
	if _, err := chat(urlA); err == nil {
		t.Fatal("chat with a succeeded; its process should have crashed")
	}
	eventually(t, "a's crash to be seen", func() bool { return h.m.State("a") == StateBackoff })
	urlB := h.use(t, "b")
	if model, err := chat(urlA); err == nil {
		t.Errorf("a retry at a's URL %s (b has %s) was answered by %q", urlA, urlB, model)
	}
}
