//go:build unix

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestStopDrainsInFlight: told to stop, the gateway refuses new connections, closes idle
// kept-alive ones, and lets a stream and a whole answer in flight finish (the stream with its
// [DONE]) before it exits 0.
func TestStopDrainsInFlight(t *testing.T) {
	hold := make(chan struct{})
	arrived := make(chan struct{}, 2)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			http.NotFound(w, r)
			return
		}
		chunk := `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`
		if bytes.Contains(body, []byte(`"stream":true`)) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: %s\n\n", chunk)
			w.(http.Flusher).Flush()
			arrived <- struct{}{}
			<-hold
			fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", strings.Replace(chunk, "null", `"stop"`, 1))
			return
		}
		arrived <- struct{}{}
		<-hold
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	defer up.Close()
	path := filepath.Join(t.TempDir(), "gateway.toml")
	writeFile(t, path, gatewayFile("127.0.0.1:0", up.URL, "r"))
	base, _, cancel, code := serving(t, path)
	defer cancel()
	addr := strings.TrimPrefix(base, "http://")

	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	fmt.Fprintf(idle, "GET /healthz HTTP/1.1\r\nHost: h\r\n\r\n")
	ibr := bufio.NewReader(idle)
	resp, err := http.ReadResponse(ibr, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	type answer struct {
		status int
		body   string
		close  bool
		err    error
	}
	post := func(stream bool, got chan<- answer) {
		body := `{"model":"r","messages":[{"role":"user","content":"hi"}]`
		if stream {
			body += `,"stream":true`
		}
		resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body+"}"))
		if err != nil {
			got <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- answer{status: resp.StatusCode, body: string(b), close: resp.Close, err: err}
	}
	streamed, whole := make(chan answer, 1), make(chan answer, 1)
	go post(true, streamed)
	go post(false, whole)
	<-arrived
	<-arrived
	cancel()
	if _, err := ibr.ReadByte(); err == nil {
		t.Error("the idle kept-alive connection is still open once the gateway stops")
	}
	waitFor(t, "the listener to close", func() bool {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return true
		}
		c.Close()
		return false
	})
	close(hold)
	for name, ch := range map[string]chan answer{"stream": streamed, "whole": whole} {
		a := <-ch
		if a.err != nil || a.status != 200 {
			t.Errorf("%s: %d %v", name, a.status, a.err)
		}
		if name == "stream" && !strings.HasSuffix(a.body, "data: [DONE]\n\n") {
			t.Errorf("stream ends %q, want [DONE]", a.body)
		}
	}
	if c := <-code; c != 0 {
		t.Errorf("exit %d", c)
	}
}
