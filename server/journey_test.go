package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestHealthPathsOfOtherGatewaysSayHealthz: a homelab moving off LiteLLM points its container
// healthcheck or uptime monitor at LiteLLM's /health/liveliness (or /health, a Kubernetes-style
// /livez) and got a bare "Unrecognized request URL": the answer now names GET /healthz, and
// where each target's health is read.
func TestHealthPathsOfOtherGatewaysSayHealthz(t *testing.T) {
	g, _ := keyed(t)
	for _, path := range []string{"/health", "/health/liveliness", "/health/liveness", "/health/readiness", "/v1/health", "/livez", "/readyz"} {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			t.Run(method+" "+path, func(t *testing.T) {
				rep := g.do(t, method, path, "")
				if rep.status != http.StatusNotFound {
					t.Fatalf("status %d: %s", rep.status, rep.body)
				}
				if method == http.MethodHead {
					return
				}
				msg, _ := rep.errorField(t, "message").(string)
				if want := "Unrecognized request URL (GET " + path + "). Liveness is served at GET /healthz; each target's health is in GET /metrics (hayula_target_available) and POST /v1/route/explain."; msg != want {
					t.Errorf("message %q\nwant %q", msg, want)
				}
			})
		}
	}
	// A POST there is no health check: no hint.
	rep := g.do(t, http.MethodPost, "/health", "{}")
	if msg, _ := rep.errorField(t, "message").(string); strings.Contains(msg, "healthz") {
		t.Errorf("POST /health: %q", msg)
	}
}
