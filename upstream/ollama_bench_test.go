package upstream

import (
	"testing"
)

// BenchmarkOllamaTranslate is the /api/chat body built for a chat request of the usual kind: a
// system prompt, three turns, a temperature and max_tokens, none of the Ollama-only fields
// (top_k, keep_alive, …), no reasoning replayed and no tool results. What a request that uses
// none of them pays is what this measures; tools adds a turn of two calls answered in order.
func BenchmarkOllamaTranslate(b *testing.B) {
	bodies := map[string]string{
		"plain": `{"model":"m","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"What is a gateway?"},` +
			`{"role":"assistant","content":"A front door for several services."},{"role":"user","content":"And a load balancer?"}],` +
			`"temperature":0.2,"max_tokens":256}`,
		"tools": `{"model":"m","messages":[{"role":"user","content":"Weather in Fes and Rabat?"},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Fes\"}"}},` +
			`{"id":"c2","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Rabat\"}"}}]},` +
			`{"role":"tool","tool_call_id":"c1","content":"31C"},{"role":"tool","tool_call_id":"c2","content":"24C"}],` +
			`"tools":[{"type":"function","function":{"name":"weather","parameters":{"type":"object"}}}]}`,
	}
	for _, name := range []string{"plain", "tools"} {
		b.Run(name, func(b *testing.B) {
			req := clientRequest(b, []byte(bodies[name]))
			a := &openaiOllama{t: ollamaTarget("http://127.0.0.1:1"), newID: func() string { return "x" }}
			b.ReportAllocs()
			for b.Loop() {
				out, err := a.translate(req)
				if err != nil {
					b.Fatal(err)
				}
				_ = appendOllamaRequest(nil, out)
			}
		})
	}
}
