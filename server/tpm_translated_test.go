package server_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/filter"
)

// TestKeyTPMTranslatedWithoutCounts: an ollama answer without prompt_eval_count and eval_count,
// or a saif answer without usage, whole or streamed, is an answer without usage, as an openai
// target's is (TestKeyTPMStream's "no usage"): the key's tpm is charged its prompt's lower
// bound and the bound of the text it answered (relayed, for a stream), not the 0/0 the adapters made of it,
// which charged nothing; and the client is told no
// usage (none in the whole answer, no usage chunk although it asked for one).
func TestKeyTPMTranslatedWithoutCounts(t *testing.T) {
	content := "the quick brown fox jumps over the lazy dog while seven wizards quietly judge boxing matches"
	low := filter.PromptTokensMin([]core.Message{{Role: "user", Content: json.RawMessage(strconv.Quote(content))}})
	if low < 2 {
		t.Fatalf("the prompt's lower bound is %d: too small to tell", low)
	}
	ollama := func(w http.ResponseWriter, stream bool) {
		if stream {
			w.Header().Set("Content-Type", "application/x-ndjson")
			fmt.Fprint(w, `{"model":"o","message":{"role":"assistant","content":"hello"},"done":false}`+"\n"+
				`{"model":"o","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"}`+"\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"model":"o","message":{"role":"assistant","content":"hello"},"done":true,"done_reason":"stop"}`)
	}
	saif := func(w http.ResponseWriter, stream bool) {
		if stream {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"text\":\"hello\"}\n\ndata: {\"done\":true,\"finish_reason\":\"stop\"}\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"text":"hello","finish_reason":"stop"}`)
	}
	for _, tc := range []struct {
		adapter, extra string
		answer         func(http.ResponseWriter, bool)
	}{
		{"ollama", "", ollama},
		{"saif", "tools = false\nvision = false\n", saif},
	} {
		for _, body := range []string{
			`{"model":"r","messages":[{"role":"user","content":` + strconv.Quote(content) + `}]}`,
			`{"model":"r","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":` + strconv.Quote(content) + `}]}`,
			`{"model":"r","stream":true,"messages":[{"role":"user","content":` + strconv.Quote(content) + `}]}`,
		} {
			t.Run(tc.adapter+" "+body[:40], func(t *testing.T) {
				up := newFake(t, "up")
				up.set(func(w http.ResponseWriter, r *http.Request) {
					var req struct {
						Stream bool `json:"stream"`
					}
					_ = json.NewDecoder(r.Body).Decode(&req)
					tc.answer(w, req.Stream)
				})
				url := up.url()
				if tc.adapter == "ollama" {
					url = strings.TrimSuffix(url, "/v1") // Ollama's root: the adapter adds /api/chat
				}
				g := newGateway(t, keyBlock("slow", "hk-slow", fmt.Sprintf("tpm = %d", low))+
					"[targets.up]\nadapter = \""+tc.adapter+"\"\nurl = \""+url+"\"\nclass = \"private\"\nmodel = \"o\"\n"+tc.extra+"\n"+
					"[routes.r]\ntargets = [\"up\"]\n", nil)
				slow := []string{"Authorization", "Bearer hk-slow"}
				rep := g.post(t, "/v1/chat/completions", body, slow...)
				if rep.status != 200 || !strings.Contains(string(rep.body), "hello") {
					t.Fatalf("request: %d %s", rep.status, rep.body)
				}
				if strings.Contains(string(rep.body), `"usage"`) {
					t.Errorf("the client is told a usage the server did not report: %s", rep.body)
				}
				// Charged low of its tpm = low, and the bound of the text it answered (relayed, for a
				// stream), "hello"'s one token: the bucket is one in debt, and holds a token again
				// in 2×60/low seconds.
				tpmRefused(t, g.post(t, "/v1/chat/completions", body, slow...), "slow", low, strconv.Itoa(int(math.Ceil(2*60/float64(low)))))
				g.clock.Advance(time.Minute)
				if rep := g.post(t, "/v1/chat/completions", body, slow...); rep.status != 200 {
					t.Errorf("a minute later: %d %s, want 200", rep.status, rep.body)
				}
			})
		}
	}
}
