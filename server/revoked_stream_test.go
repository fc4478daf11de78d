package server_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/hayula/gateway/server"
)

// TestRevokedKeysStreamFinishes pins what a reload does to a key it removes: the key is refused
// 401 invalid_api_key from the reload on, on every request, streams included, while the streams
// it had under way finish whole, as every request under way finishes on the configuration it
// began on (CONFIG.md, Reloading: a revoked key's streams are not cut). Another key goes on.
func TestRevokedKeysStreamFinishes(t *testing.T) {
	up := newFake(t, "up")
	release := make(chan struct{})
	up.set(func(w http.ResponseWriter, r *http.Request) {
		if b, _ := io.ReadAll(r.Body); !strings.Contains(string(b), "hold me") {
			okHandler("up")(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta, finish string) {
			_, _ = io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":`+
				delta+`,"finish_reason":`+finish+"}]}\n\n")
			w.(http.Flusher).Flush()
		}
		chunk(`{"role":"assistant","content":"hello"}`, "null")
		if !waitRelease(r, release) {
			return
		}
		chunk(`{"content":" world"}`, "null")
		chunk(`{}`, `"stop"`)
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	})
	tail := target("up", up.url(), "private") + "[routes.r]\ntargets = [\"up\"]\n"
	old := newServerWith(t, server.Options{Config: parseText(t, keyBlock("leaked", "hk-leaked")+keyBlock("other", "hk-other")+tail)})
	l := server.NewLive(old)
	g := &gateway{ts: serveLive(t, l)}

	c := sdkClient(g, "hk-leaked")
	st := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:    "r",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hold me")},
	})
	defer st.Close()
	var acc openai.ChatCompletionAccumulator
	if !st.Next() {
		t.Fatalf("the stream's first chunk: %v", st.Err())
	}
	acc.AddChunk(st.Current())

	l.Replace(newServerWith(t, server.Options{Config: parseText(t, keyBlock("other", "hk-other")+tail), Previous: old}))
	for _, body := range []string{
		`{"model":"r","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"r","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
	} {
		rep := g.post(t, "/v1/chat/completions", body, "Authorization", "Bearer hk-leaked")
		if rep.status != http.StatusUnauthorized || rep.errorField(t, "code") != "invalid_api_key" {
			t.Errorf("the removed key after the reload: %d %s, want 401 invalid_api_key", rep.status, rep.body)
		}
	}
	if rep := g.chat(t, "r", "Authorization", "Bearer hk-other"); rep.status != http.StatusOK {
		t.Errorf("the key the reload kept: %d %s, want 200", rep.status, rep.body)
	}

	close(release)
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("the removed key's stream under way: %v, want it to finish", err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "hello world" || acc.Choices[0].FinishReason != "stop" {
		t.Errorf("the removed key's stream under way ended as %+v, want it whole", acc.Choices)
	}
}
