package demo_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/demo"
)

// TestDemoVisionHonest: the demo's config declares vision only where the simulated model says
// what it does with an image (averroes-q, whose simulator says it received the image). The
// simulated R1 and the paid tail, text models, answered an image as if it were not there
// (vision left at its default, true); now an image skips them, and a route left with nothing
// answers 400 before any backend is asked (this test failed first: deepseek-r1 answered 200).
func TestDemoVisionHonest(t *testing.T) {
	cfg, err := config.Parse([]byte(demo.Config("127.0.0.1:8000", demo.URLsFor(18441))), "demo.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		vision bool
	}{{"saif", false}, {"averroes-q", true}, {"deepseek-r1", false}, {"openrouter", false}} {
		if tg, ok := cfg.Target(tc.name); !ok || tg.Vision != tc.vision {
			t.Errorf("target %s: vision %v, want %v", tc.name, ok && tg.Vision, tc.vision)
		}
	}

	url := startDemoURL(t)
	const image = `[{"type":"text","text":"What is in this picture?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]`
	for _, tc := range []struct {
		route, chain string
		status       int
	}{
		{"deepseek-r1", "", http.StatusBadRequest},
		{"averroes-q", "averroes-q", http.StatusOK},
	} {
		resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(
			`{"model":"`+tc.route+`","messages":[{"role":"user","content":`+image+`}]}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != tc.status || resp.Header.Get("x-hayula-chain") != tc.chain {
			t.Errorf("route %s: %d chain %q: %s", tc.route, resp.StatusCode, resp.Header.Get("x-hayula-chain"), body)
		}
		if tc.status == http.StatusBadRequest && !strings.Contains(string(body), "vision") {
			t.Errorf("route %s: the refusal does not say why: %s", tc.route, body)
		}
	}
}

// TestDemoAutoImageToReasoning: a reasoning question with an image, sent as model "auto", was a
// 400 (deepseek-r1, the route its text is classified to, reads text only) though averroes-q,
// which auto may choose, sees images. It is served there; the intent stays reasoning, and the
// answer says that auto moved off deepseek-r1, and why.
func TestDemoAutoImageToReasoning(t *testing.T) {
	url := startDemoURL(t)
	const image = `[{"type":"text","text":"Explain step by step why the sum of two odd numbers is even, and prove it."},` +
		`{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]`
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(
		`{"model":"auto","messages":[{"role":"user","content":`+image+`}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d: %s", resp.StatusCode, body)
	}
	for h, want := range map[string]string{"x-hayula-route": "averroes-q", "x-hayula-chain": "averroes-q",
		"x-hayula-intent": "reasoning", "x-hayula-moved-from": "deepseek-r1", "x-hayula-move-reason": "vision"} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("%s %q, want %q", h, got, want)
		}
	}
}
