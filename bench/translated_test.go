//go:build linux

package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/server"
)

// TestOllamaRowsThroughTheGateway: --count's ollama rows, sent through the gateway built from
// the bench's own config to the fake upstream's /api/chat, are answered, and the rows' checks
// pass them; the same checks refuse an answer whose content or ending is not the upstream's, so
// a count of an error or of a cut stream cannot pass for the translation's.
func TestOllamaRowsThroughTheGateway(t *testing.T) {
	translatedRowsThroughTheGateway(t, "bench-ollama")
}

// TestSAIFRowsThroughTheGateway: --count's saif rows, as the ollama rows are, through the fake
// upstream's /v1/completions in the SAIF protocol.
func TestSAIFRowsThroughTheGateway(t *testing.T) {
	translatedRowsThroughTheGateway(t, "bench-saif")
}

// translatedRowsThroughTheGateway sends the count rows' bodies for route, whose target speaks
// another protocol than OpenAI's, and holds the rows' checks to the answers and to refusing
// answers that are not the upstream's.
func translatedRowsThroughTheGateway(t *testing.T, route string) {
	const chunks = 5
	f := newFakeUpstream(chunks, 0)
	up := httptest.NewServer(f)
	defer up.Close()
	addr := strings.TrimPrefix(up.URL, "http://")
	cfg, err := config.Parse([]byte(gatewayConfig("127.0.0.1:0", addr, addr, false)), "bench.toml", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	gw := httptest.NewServer(srv.Handler())
	defer gw.Close()
	post := func(body []byte) []byte {
		t.Helper()
		resp, err := http.Post(gw.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d, %v: %s", resp.StatusCode, err, got)
		}
		return got
	}
	chat, stream := translatedChat(chatContent), translatedStream(ollamaStreamContent(chunks))
	whole := post(chatBody(route, false, 1024))
	if err := chat(whole); err != nil {
		t.Errorf("whole answer: %v", err)
	}
	streamed := post(chatBody(route, true, 1024))
	if err := stream(streamed); err != nil {
		t.Errorf("stream: %v", err)
	}
	if n := bytes.Count(streamed, []byte("data: ")); n < chunks+1 {
		t.Errorf("%d events for %d of the upstream's: not one each", n, chunks+1)
	}
	for name, bad := range map[string]struct {
		check func([]byte) error
		got   []byte
	}{
		"other content":      {chat, bytes.Replace(whole, []byte("fixed answer"), []byte("fixed ANSWER"), 1)},
		"an error":           {chat, []byte(`{"error":{"message":"no","type":"x","param":null,"code":null}}`)},
		"no stop":            {chat, bytes.Replace(whole, []byte(`"stop"`), []byte(`"length"`), 1)},
		"stream cut":         {stream, streamed[:bytes.LastIndex(streamed, []byte("data: "))]},
		"a token changed":    {stream, bytes.Replace(streamed, []byte(" token2"), []byte(" token9"), 1)},
		"after [DONE]":       {stream, append(bytes.Clone(streamed), "data: {}\n\n"...)},
		"two stops":          {stream, bytes.Replace(streamed, []byte(`"finish_reason":null`), []byte(`"finish_reason":"stop"`), 1)},
		"a whole for chunks": {stream, whole},
	} {
		if err := bad.check(bad.got); err == nil {
			t.Errorf("%s: passed", name)
		}
	}
}
