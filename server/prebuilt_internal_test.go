package server

import (
	"strings"
	"testing"
)

// TestPrebuilt: the fields the prebuilt lines write are found in any case, and no other name
// is, the adapters' own (X-Hayula-Specialist) among them; the names' letters hold no k or s,
// whose Unicode folds (K, ſ) are of another length, which prebuilt's length test relies on.
func TestPrebuilt(t *testing.T) {
	for _, k := range []string{"Content-Type", "content-type", "CONTENT-LENGTH", "x-hayula-route", "X-HAYULA-CHAIN",
		"X-Hayula-Target", "cache-control", "x-accel-buffering"} {
		if !prebuilt(k) {
			t.Errorf("prebuilt(%q) = false", k)
		}
		if strings.ContainsAny(strings.ToLower(k), "ks") {
			t.Errorf("%q has a k or an s: prebuilt's length test would miss its Unicode folds", k)
		}
	}
	for _, k := range []string{"X-Hayula-Specialist", "X-Hayula-Routes", "Content-Typ", "X-Request-Id", "", "Content-Type\u212a"} {
		if prebuilt(k) {
			t.Errorf("prebuilt(%q) = true", k)
		}
	}
}
