package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestTopLevelStrictNeverReachesPublic: with the top-level strict = true, a route that says
// nothing of strictness is strict: its private target's failure is the answer, restored as it
// came, and the public target after it in the chain is never tried, whatever the request says of
// its privacy; without the line, the same request falls through to the public target.
func TestTopLevelStrictNeverReachesPublic(t *testing.T) {
	for _, tc := range []struct {
		name    string
		top     string
		privacy string
		status  int
		pubHits int64
	}{
		{"strict, the request silent", "strict = true\n", "", http.StatusInternalServerError, 0},
		{"strict, the request asking the default", "strict = true\n", "default", http.StatusInternalServerError, 0},
		{"not strict", "", "", http.StatusOK, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			priv, pub := newFake(t, "priv"), newFake(t, "pub")
			priv.set(errHandler(500, "internal", "down"))
			pub.set(okHandler("pub"))
			g := newGateway(t, tc.top+target("priv", priv.url(), "private")+target("pub", pub.url(), "public")+
				"[routes.r]\ntargets = [\"priv\", \"pub\"]\n", nil)
			var hdr []string
			if tc.privacy != "" {
				hdr = []string{"x-hayula-privacy", tc.privacy}
			}
			r := g.chat(t, "r", hdr...)
			if r.status != tc.status || pub.hits.Load() != tc.pubHits || priv.hits.Load() == 0 {
				t.Fatalf("%d %s; priv hit %d, pub hit %d: want %d and pub hit %d",
					r.status, r.body, priv.hits.Load(), pub.hits.Load(), tc.status, tc.pubHits)
			}
			if tc.status != http.StatusOK && !strings.Contains(string(r.body), "down") {
				t.Fatalf("the private target's failure is not the answer: %s", r.body)
			}
		})
	}
}
