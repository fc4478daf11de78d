package server_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestCORSExposesEveryHayulaHeader holds CONFIG.md's word on allowed_origins ("the x-hayula-* and
// Retry-After fields exposed"): every X-Hayula-* field an answer carries, a move's
// X-Hayula-Moved-From and X-Hayula-Move-Reason included, is in its Access-Control-Expose-Headers,
// so that a page the operator allowed can read why auto moved its request.
func TestCORSExposesEveryHayulaHeader(t *testing.T) {
	g, _ := moveLayout(t, "")
	rep := g.post(t, "/v1/chat/completions", withImage("auto", reasoningText, ""), "Origin", "http://localhost:5173")
	if rep.status != 200 {
		t.Fatalf("status %d: %s", rep.status, rep.body)
	}
	exposed := strings.Split(rep.header.Get("Access-Control-Expose-Headers"), ", ")
	var hayula []string
	for name := range rep.header {
		if strings.HasPrefix(name, "X-Hayula-") {
			hayula = append(hayula, name)
		}
	}
	if !slices.Contains(hayula, http.CanonicalHeaderKey("x-hayula-moved-from")) {
		t.Fatalf("no move in this answer (fields %v): the test no longer sees what it checks", hayula)
	}
	for _, name := range hayula {
		if !slices.Contains(exposed, name) {
			t.Errorf("the answer carries %s, which Access-Control-Expose-Headers (%q) does not expose", name, exposed)
		}
	}
}
