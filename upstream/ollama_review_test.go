package upstream

// The Ollama review: the adapter against the answers Ollama's /api/chat really sends (server/routes.go
// ChatHandler, streamResponse; openai/openai.go for how Ollama's own OpenAI endpoint reads them).

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/hayula/gateway/core"
)

// Ollama answers a chat request with no messages by loading the model (done_reason "load"), or,
// with keep_alive 0, by unloading it ("unload"): one object written with c.JSON, no newline and
// no Content-Type of NDJSON, whether or not streaming was asked for. Nothing was generated; passed
// on, it is an empty completion with finish_reason "stop" the client takes for the model's
// answer. It must fall through, whole or streamed, as any other 2xx that answers nothing does.
func TestOllamaLoadIsNoAnswer(t *testing.T) {
	for _, reason := range []string{"load", "unload"} {
		body := `{"model":"llama3.2","created_at":"2026-01-02T15:04:05.123456Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"` + reason + `"}`
		for _, stream := range []bool{false, true} {
			name := reason + "/whole"
			if stream {
				name = reason + "/stream"
			}
			t.Run(name, func(t *testing.T) {
				srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/json; charset=utf-8")
					_, _ = io.WriteString(w, body)
				})
				tg := ollamaTarget(srv.URL)
				req := chatRequestOf(t, `{"messages":[{"role":"user","content":"x"}],"stream_options":{"include_usage":true}}`)
				req.Stream = stream
				resp, err := newSet(t, tg).Chat(context.Background(), tg, req)
				if !stream {
					if !errors.As(err, new(*core.ProtocolError)) {
						t.Fatalf("Chat = %v (%T), want a *core.ProtocolError; answer %s", err, err, bodyOf(resp))
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Stream.Close()
				ev, err := resp.Stream.Next()
				if !errors.As(err, new(*core.StreamError)) {
					t.Fatalf("first Next = %s, %v; want a *core.StreamError before any chunk", ev, err)
				}
			})
		}
	}
}

func bodyOf(r *Response) string {
	if r == nil {
		return "(none)"
	}
	return string(r.Body)
}
