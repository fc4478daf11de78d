package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/core"
)

// TestAutoKeepsSystemPromptsPerKey: model "auto" requests keep their long system prompt in the
// classifier (autoroute.RouteMessagesFor) in their key's own partition: a key that sent one
// three times has it kept, another key that never sent it has not, and neither has the
// partition of a gateway without keys.
func TestAutoKeepsSystemPromptsPerKey(t *testing.T) {
	hash := func(tok string) string { s := sha256.Sum256([]byte(tok)); return hex.EncodeToString(s[:]) }
	toml := "listen = \"127.0.0.1:0\"\n[targets.a]\nadapter = \"openai\"\nurl = \"http://127.0.0.1:9/v1\"\nclass = \"private\"\n" +
		"[routes.averroes-q]\ntargets = [\"a\"]\n[routes.saif]\ntargets = [\"a\"]\n[routes.deepseek-r1]\ntargets = [\"a\"]\n[auto]\n" +
		"[[keys]]\nname = \"one\"\nsha256 = \"" + hash("sk-one") + "\"\n" +
		"[[keys]]\nname = \"two\"\nsha256 = \"" + hash("sk-two") + "\"\n"
	cfg, err := config.Parse([]byte(toml), "gateway.toml", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	system := strings.Repeat("You review our web application's code and answer in short paragraphs. ", 10)
	sys, err := json.Marshal(system)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"model":"auto","messages":[{"role":"system","content":` + string(sys) + `},{"role":"user","content":"what does this loop do?"}]}`
	for range 3 {
		r := httptest.NewRequest("POST", "/v1/chat/completions", bytes.NewReader([]byte(body)))
		r.Header.Set("Authorization", "Bearer sk-one")
		if _, _, _, e := s.admit(r, core.OpChat, nil, false); e != nil {
			t.Fatalf("%d %s", e.Status, e.Message)
		}
	}
	one, two := &s.cfg.Keys[0], &s.cfg.Keys[1]
	if autoPartition(one) == autoPartition(two) || autoPartition(one) == autoPartition(nil) {
		t.Fatalf("partitions %x, %x and %x without a key are not distinct", autoPartition(one), autoPartition(two), autoPartition(nil))
	}
	if !s.cfg.Auto.KeepsSystem(autoPartition(one), system) {
		t.Error("key one's system prompt is not kept for key one")
	}
	if s.cfg.Auto.KeepsSystem(autoPartition(two), system) || s.cfg.Auto.KeepsSystem(0, system) {
		t.Error("key one's system prompt is kept for key two, or for no key")
	}
}
