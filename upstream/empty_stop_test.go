package upstream

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/core"
)

// An empty stop string stops Ollama's runner before the first token (FindStop: every text
// contains ""), so "stop": "" — which clients send for an empty stop field (Visual ChatGPT
// Studio does) — was answered with an empty completion and finish_reason "stop"; SAIF's protocol
// gives it no meaning either. OpenAI's API stops at no empty string: the ollama and saif adapters
// send the client's stop without its empty strings, and no stop at all when none is left.
func TestEmptyStopDropped(t *testing.T) {
	for _, tc := range []struct {
		stop string
		want []string
	}{
		{`""`, nil},
		{`["", "\n\n"]`, []string{"\n\n"}},
		{`[""]`, nil},
		{`"END"`, []string{"END"}},
	} {
		for _, adapter := range []core.AdapterKind{core.AdapterOllama, core.AdapterSAIF} {
			t.Run(adapter.String()+" "+tc.stop, func(t *testing.T) {
				var sent []byte
				srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
					sent, _ = io.ReadAll(r.Body)
					if adapter == core.AdapterSAIF {
						w.Header().Set("Content-Type", "application/json")
						_, _ = io.WriteString(w, `{"id":"s","specialist":"webapp","routed_by":"router","confidence":1,"text":"x","finish_reason":"stop","usage":{"prompt_tokens":1,"completion_tokens":1}}`)
						return
					}
					_, _ = io.WriteString(w, `{"model":"m","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":"x"},"done":true,"done_reason":"stop"}`)
				})
				tg := ollamaTarget(srv.URL)
				if adapter == core.AdapterSAIF {
					tg = saifTarget(srv.URL)
				}
				req := chatRequestOf(t, `{"messages":[{"role":"user","content":"x"}],"stop":`+tc.stop+`}`)
				if _, err := newSet(t, tg).Chat(context.Background(), tg, req); err != nil {
					t.Fatal(err)
				}
				var body struct {
					Stop    []string `json:"stop"`
					Options struct {
						Stop []string `json:"stop"`
					} `json:"options"`
				}
				if err := json.Unmarshal(sent, &body); err != nil {
					t.Fatal(err)
				}
				got := body.Stop
				if adapter == core.AdapterOllama {
					got = body.Options.Stop
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("stop sent (-want +got):\n%s\nbody %s", diff, sent)
				}
			})
		}
	}
}
