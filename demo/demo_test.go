package demo_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"go.uber.org/goleak"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/demo"
	"github.com/hayula/gateway/server"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestDemoEndToEnd runs the demo topology and talks to it with the official SDK.
func TestDemoEndToEnd(t *testing.T) {
	b, err := demo.StartBackends(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cfg, err := config.Parse([]byte(demo.Config("127.0.0.1:8000", b.URLs)), "demo.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	var resp *http.Response
	c := openai.NewClient(option.WithBaseURL(ts.URL+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	got, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "saif",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("[fail:saif] what is XSS?")},
	}, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.Choices[0].Message.Content, "simulated deepseek-r1") {
		t.Fatalf("content %q", got.Choices[0].Message.Content)
	}
	if chain := resp.Header.Get("x-hayula-chain"); chain != "saif→deepseek-r1 (served by deepseek-r1)" {
		t.Fatalf("chain %q", chain)
	}

	st := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:    "averroes-q",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("مرحبا")},
	})
	var acc openai.ChatCompletionAccumulator
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(acc.Choices[0].Message.Content, "simulated averroes-q") {
		t.Fatalf("streamed %q", acc.Choices[0].Message.Content)
	}
}
