package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// Request bodies are read into buffers the server reuses (serveOp): concurrent requests, some
// of which fall through to a second target, must each reach their upstreams and come back
// with their own bytes.
func TestConcurrentRequestsKeepTheirBodies(t *testing.T) {
	g, saif, r1, _ := threeChain(t)
	echo := func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		content := req.Messages[0].Content
		if strings.HasSuffix(content, "-fail") {
			http.Error(w, `{"error":{"message":"down"}}`, http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}]}`, content)
	}
	saif.set(echo)
	r1.set(func(w http.ResponseWriter, r *http.Request) {
		// The fallback answers what it was sent, without the marker that failed it on saif.
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}]}`,
			strings.TrimSuffix(req.Messages[0].Content, "-fail"))
	})
	var wg sync.WaitGroup
	errs := make(chan error, 16*25)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				token := fmt.Sprintf("w%d-r%d-%s", w, i, strings.Repeat("p", (w*37+i*11)%3000))
				content := token
				if i%5 == 0 {
					content += "-fail"
				}
				body := fmt.Sprintf(`{"model":"saif","messages":[{"role":"user","content":%q}]}`, content)
				rep := g.post(t, "/v1/chat/completions", body)
				var got struct {
					Choices []struct{ Message struct{ Content string } }
				}
				if err := json.Unmarshal(rep.body, &got); err != nil || rep.status != 200 || len(got.Choices) != 1 {
					errs <- fmt.Errorf("%s: status %d: %.200s", token[:8], rep.status, rep.body)
					return
				}
				if got.Choices[0].Message.Content != token {
					errs <- fmt.Errorf("sent %.20s…, got back %.20s…", token, got.Choices[0].Message.Content)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
