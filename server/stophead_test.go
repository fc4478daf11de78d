package server_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/hayula/gateway/server"
)

// TestStopClosesStalledHead: a client that sent part of a request's head and then nothing (a
// slowloris client, or one that stalled mid-head) has no request under way, and does not hold a
// stop for the 10 s head timeout: its connection is closed, without an answer, about a second
// after its head stalled, while a chat request under way (the SDK's) is answered in full, and
// Serve returns once it is. The stalled connection was closed only by the head timeout, and the
// stop waited for it. The client's 8 s read is a watchdog under those 10 s, not a speed asserted.
func TestStopClosesStalledHead(t *testing.T) {
	a := newFake(t, "a")
	in, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	defer free() // a test failed before it freed the upstream ends, rather than hang in cleanup
	a.set(func(w http.ResponseWriter, r *http.Request) {
		close(in)
		<-release
		okHandler("a")(w, r)
	})
	g := newGateway(t, target("a", a.url(), "private")+"[routes.r]\ntargets = [\"a\"]\n", nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- server.Serve(ctx, ln, g.srv.Handler(), 30*time.Second, nil) }()

	half, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer half.Close()
	if _, err := io.WriteString(half, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"); err != nil {
		t.Fatal(err)
	}

	sdk := openai.NewClient(option.WithBaseURL("http://"+ln.Addr().String()+"/v1/"),
		option.WithAPIKey("unused"), option.WithMaxRetries(0))
	answered := make(chan error, 1)
	var got string
	go func() {
		resp, err := sdk.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model:    "r",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
		})
		if err == nil && len(resp.Choices) > 0 {
			got = resp.Choices[0].Message.Content
		}
		answered <- err
	}()
	<-in
	stop()

	_ = half.SetReadDeadline(time.Now().Add(8 * time.Second))
	b, err := io.ReadAll(bufio.NewReader(half))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("the connection stalled in its head is still open 8 s into the stop")
	}
	if len(b) != 0 {
		t.Errorf("the stalled head got %q, want the connection closed without an answer", b)
	}
	free()
	if err := <-answered; err != nil || got != "hello from a" {
		t.Errorf("the request under way: %q, %v; want it answered in full", got, err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the stop still waits 20 s after the request under way was answered")
	}
}
