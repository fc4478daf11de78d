package server

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// TestUpstreamKeyMaskedEchoRedacted: an upstream that echoes the refused key masked (OpenAI's
// "sk-…***…ab1C", LiteLLM's "sk-...ab1C" beside the key's SHA-256) has those words removed too,
// while words that merely share the key's last characters stay.
func TestUpstreamKeyMaskedEchoRedacted(t *testing.T) {
	const k = "sk-or-v1-0123456789abcdefab1C"
	sum := sha256.Sum256([]byte(k))
	hash := hex.EncodeToString(sum[:])
	for _, tc := range []struct{ in, want string }{
		{"Incorrect API key provided: sk-or-v1***************ab1C. You can find your API key at",
			"Incorrect API key provided: [redacted]. You can find your API key at"},
		{"Authentication Error, Invalid proxy server token passed. Received API Key = sk-...ab1C, Key Hash (Token) =" + hash + ". Unable to find token in cache",
			"Authentication Error, Invalid proxy server token passed. Received API Key = [redacted], Key Hash (Token) =[redacted]. Unable to find token in cache"},
		{`{"key":"sk-or…ab1C"}`, `{"key":"[redacted]"}`},
		{"bearer " + k + " refused", "bearer [redacted] refused"},
		{"model ab1C not found; try xab1C or ab1Cx", "model ab1C not found; try xab1C or ab1Cx"},
		{"nothing of it here", "nothing of it here"},
	} {
		if got := redactKey(tc.in, k); got != tc.want {
			t.Errorf("redactKey(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
	// A short key: only whole.
	if got := redactKey("key ***ab1C and short-key", "short-key"); got != "key ***ab1C and [redacted]" {
		t.Errorf("short key: %q", got)
	}
}
