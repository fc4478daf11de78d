package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hayula/gateway/server"
)

// idPairs is a slog.Handler that keeps each request line's request_id and upstream_request_id.
type idPairs struct {
	mu    sync.Mutex
	pairs map[string]string
}

func (h *idPairs) Enabled(context.Context, slog.Level) bool { return true }
func (h *idPairs) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *idPairs) WithGroup(string) slog.Handler            { return h }

func (h *idPairs) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "request" {
		return nil
	}
	var id, up string
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "request_id":
			id = a.Value.String()
		case "upstream_request_id":
			up = a.Value.String()
		}
		return true
	})
	h.mu.Lock()
	h.pairs[id] = up
	h.mu.Unlock()
	return nil
}

func (h *idPairs) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.pairs)
}

// TestEachAnswerItsOwnUnderRecycling: many clients at once, most on a new connection for each
// request (the gateway's HTTP server lends each a past connection's header map and arrays), to
// an upstream that closes about half of its connections after the answer (the upstream client
// lends each new connection a closed one's buffers and header map). Whole answers, streams and
// the Responses bridge each carry their own request's X-Request-Id, their own upstream answer,
// and the log line pairs each request's ID with its own upstream's ID, which the upstream
// client read from an answer's header.
func TestEachAnswerItsOwnUnderRecycling(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream bool `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		id := r.Header.Get("X-Request-Id")
		h := w.Header()
		h.Set("X-Request-Id", "up-"+id)
		if len(id)%2 == 0 {
			h.Set("Connection", "close")
		}
		if req.Stream {
			h.Set("Content-Type", "text/event-stream")
			for _, word := range []string{"for ", id} {
				fmt.Fprintf(w, "data: {\"id\":%q,\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", id, word)
				w.(http.Flusher).Flush()
			}
			fmt.Fprintf(w, "data: {\"id\":%q,\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n", id)
			return
		}
		h.Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":%q,"object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"for %s"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`, id, id)
	}))
	t.Cleanup(up.Close)
	logs := &idPairs{pairs: map[string]string{}}
	g := newGateway(t, target("solo", up.URL+"/v1", "private")+"[routes.solo]\ntargets = [\"solo\"]\n", nil,
		func(o *server.Options) { o.Logger = slog.New(logs) })

	fresh := &http.Transport{DisableKeepAlives: true}
	kept := &http.Transport{MaxIdleConnsPerHost: 4}
	t.Cleanup(fresh.CloseIdleConnections)
	t.Cleanup(kept.CloseIdleConnections)

	const workers, each = 8, 50
	var wg sync.WaitGroup
	for wk := range workers {
		wg.Go(func() {
			for i := range each {
				id := fmt.Sprintf("w%d-r%d%s", wk, i, strings.Repeat("z", (wk+i)%3))
				path, body := "/v1/chat/completions", `{"model":"solo","messages":[{"role":"user","content":"hi"}]}`
				switch i % 3 {
				case 1:
					body = `{"model":"solo","stream":true,"messages":[{"role":"user","content":"hi"}]}`
				case 2:
					path, body = "/v1/responses", `{"model":"solo","input":"hi"}`
				}
				tr := fresh
				if i%4 == 3 {
					tr = kept
				}
				if err := ownAnswer(tr, g.ts.URL+path, body, id); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	settles(func() bool { return logs.len() >= workers*each })
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if len(logs.pairs) != workers*each {
		t.Errorf("%d request lines with distinct IDs, want %d", len(logs.pairs), workers*each)
	}
	for id, upID := range logs.pairs {
		if upID != "up-"+id {
			t.Errorf("request %s logged upstream_request_id %q, want %q", id, upID, "up-"+id)
		}
	}
}

// ownAnswer posts body to url with X-Request-Id id and checks that the answer carries id, in
// its header and in what the upstream said.
func ownAnswer(tr *http.Transport, url, body, id string) error {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", id)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := tr.RoundTrip(req.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("%s: %v", id, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	switch {
	case err != nil || resp.StatusCode != http.StatusOK:
		return fmt.Errorf("%s: status %d, %v: %s", id, resp.StatusCode, err, b)
	case resp.Header.Get("X-Request-Id") != id:
		return fmt.Errorf("%s: answered with X-Request-Id %q", id, resp.Header.Get("X-Request-Id"))
	case !strings.Contains(string(b), "for "+id+`"`) && !strings.Contains(string(b), `"`+id+`"`):
		return fmt.Errorf("%s: an answer not its own: %s", id, b)
	}
	return nil
}
