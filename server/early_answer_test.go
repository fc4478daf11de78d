package server_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hayula/gateway/internal/conntest"
)

// TestEarlyRefusalMovesTheChainOn: a target that refuses a large request from its head (a 413
// with Connection: close, sent once it has read the request's head) and then reads nothing, the
// connection left open, is a 413 for the chain (overflow: the next target serves), reached
// without waiting out the target's timeout: the gateway stops writing the body once the
// refusal has come. It waited for the timeout before, and the chain moved on as after a timeout,
// so the client's deadline is what tells the two apart: 2 minutes against a 10-minute timeout,
// room for a loaded machine to move 24 MiB through a race-instrumented gateway (10 s against 30
// failed so once).
func TestEarlyRefusalMovesTheChainOn(t *testing.T) {
	t.Parallel()
	const refusal = `{"error":{"message":"request entity too large"}}`
	addr := conntest.AnswersAtOnce(t, "HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\nConnection: close\r\n"+
		"Content-Length: "+strconv.Itoa(len(refusal))+"\r\n\r\n"+refusal)
	b := newFake(t, "b")
	b.set(bigBodyOK("b"))
	g := newGateway(t, "max_body_bytes = 33554432\n\n"+target("a", "http://"+addr+"/v1", "private", `timeout = "10m"`)+
		target("b", b.url(), "private")+"[routes.r]\ntargets = [\"a\", \"b\"]\n", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.ts.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"r","messages":[{"role":"user","content":"`+strings.Repeat("x", 24<<20)+`"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	rep := g.send(t, req)
	if rep.status != http.StatusOK || !strings.Contains(string(rep.body), "hello from b") {
		t.Fatalf("status %d: %.300s", rep.status, rep.body)
	}
	if got, want := rep.header.Get("x-hayula-chain"), "a→b (served by b)"; got != want {
		t.Errorf("x-hayula-chain = %q, want %q", got, want)
	}
}
