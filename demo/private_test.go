package demo_test

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestDemoPrivateNeverReachesOpenrouter holds the demo's strict route to what its configuration
// says, "never leaves this machine, even when every private target is down": with both private
// targets made to fail by the demo's triggers (failures, overflows, SAIF loading), on every
// endpoint and streamed, no attempt reaches the public openrouter tail; the same overflows on the
// saif route do reach it, which shows the triggers would have let them through.
func TestDemoPrivateNeverReachesOpenrouter(t *testing.T) {
	url := startDemoURL(t)
	post := func(path, body string, hdr ...string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header.Get("x-hayula-chain")
	}
	openrouterAttempts := func() string {
		t.Helper()
		resp, err := http.Get(url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Join(regexp.MustCompile(`(?m)^hayula_upstream_attempts_total\{target="openrouter".*$`).FindAllString(string(b), -1), "\n")
	}
	defer http.DefaultClient.CloseIdleConnections()
	for _, trigger := range []string{"[overflow:saif] [overflow:deepseek-r1]", "[fail:saif] [fail:deepseek-r1]",
		"[loading:saif] [overflow:deepseek-r1]"} {
		for _, tc := range []struct{ name, path, body string }{
			{"chat", "/v1/chat/completions", `{"model":"private","messages":[{"role":"user","content":"` + trigger + ` hi"}]}`},
			{"chat streamed", "/v1/chat/completions", `{"model":"private","stream":true,"messages":[{"role":"user","content":"` + trigger + ` hi"}]}`},
			{"responses", "/v1/responses", `{"model":"private","input":"` + trigger + ` hi"}`},
			{"completions", "/v1/completions", `{"model":"private","prompt":"` + trigger + ` hi"}`},
		} {
			if code, chain := post(tc.path, tc.body); code < 400 || strings.Contains(chain, "openrouter") {
				t.Errorf("%s %s: %d, chain %q; want a failure that never names openrouter", trigger, tc.name, code, chain)
			}
		}
	}
	// And a strict request on a route whose tail is public.
	if code, chain := post("/v1/chat/completions", `{"model":"saif","messages":[{"role":"user","content":"[overflow:saif] [overflow:deepseek-r1] hi"}]}`,
		"x-hayula-privacy", "strict"); code < 400 || strings.Contains(chain, "openrouter") {
		t.Errorf("strict on saif: %d, chain %q", code, chain)
	}
	if got := openrouterAttempts(); got != "" {
		t.Fatalf("openrouter was tried:\n%s", got)
	}
	if code, chain := post("/v1/chat/completions", `{"model":"saif","messages":[{"role":"user","content":"[overflow:saif] [overflow:deepseek-r1] hi"}]}`); code != 200 || !strings.HasSuffix(chain, "(served by openrouter)") {
		t.Errorf("the same overflows on saif: %d, chain %q; want openrouter to serve", code, chain)
	}
	if got := openrouterAttempts(); !strings.Contains(got, `result="ok"} 1`) {
		t.Errorf("openrouter's attempts after the saif route's overflow:\n%s", got)
	}
}
