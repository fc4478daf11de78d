package server_test

import (
	"strings"
	"testing"
)

// A content part's type and members spelled with \u escapes ("\u0069mage_url") are the same strings to every
// JSON reader: vLLM, Ollama's adapter and OpenAI read an image, an audio clip or a file. The
// request's view read the parts only when the raw bytes held "image" ("input_audio", "file"), so an
// escaped spelling hid the image from the vision filter and the part from the format filter, and
// the request went to a target that cannot take it while one that can was on the route.
func TestEscapedPartTypeSeenByEligibility(t *testing.T) {
	for _, tc := range []struct {
		name, cfg, content, want string
	}{
		{"image, escaped type",
			`vision = false`, `[{"type":"\u0069mage_url","\u0069mage_url":{"url":"https://example.com/cat.png"}},{"type":"text","text":"what is it?"}]`, "yes"},
		{"image, escape mid-word",
			`vision = false`, `[{"type":"imag\u0065_url","imag\u0065_url":{"url":"https://example.com/cat.png"}}]`, "yes"},
		{"image, input_image escaped",
			`vision = false`, `[{"type":"input_\u0069mage","\u0069mage_url":"https://example.com/cat.png"}]`, "yes"},
		{"audio part, escaped type",
			`adapter = "ollama"`, `[{"type":"input_\u0061udio","input_\u0061udio":{"data":"UklGRg==","format":"wav"}}]`, "yes"},
		{"file part, escaped type",
			`adapter = "ollama"`, `[{"type":"\u0066ile","\u0066ile":{"file_id":"file-abc"}},{"type":"text","text":"Sum it up."}]`, "yes"},
		{"text only, escapes elsewhere", `vision = false`, `[{"type":"text","text":"caf\u00e9 \u0069mage_url"}]`, "no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			no, yes := newFake(t, "no"), newFake(t, "yes")
			// The first target cannot take the part; "adapter" given twice would be refused, so the
			// ollama one is its own block.
			first := target("no", no.url(), "private", tc.cfg)
			if tc.cfg == `adapter = "ollama"` {
				first = "[targets.no]\nadapter = \"ollama\"\nurl = \"" + strings.TrimSuffix(no.url(), "/v1") + "\"\nclass = \"private\"\nmodel = \"m\"\n\n"
			}
			g := newGateway(t, first+target("yes", yes.url(), "private")+"[routes.r]\ntargets = [\"no\", \"yes\"]\n", nil)
			rep := g.post(t, "/v1/chat/completions", `{"model":"r","messages":[{"role":"user","content":`+tc.content+`}]}`)
			if chain := rep.header.Get("x-hayula-chain"); chain != tc.want {
				t.Errorf("chain %q (status %d), want %q: %s", chain, rep.status, tc.want, rep.body)
			}
		})
	}
}
