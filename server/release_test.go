package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// releaseAnswer is the content request id gets back: its id, then padding in a byte of its own,
// of a length that grows, shrinks and now and then passes the 64 KB an answer's buffer keeps, so
// that an answer written from memory another answer reused shows as the wrong bytes.
func releaseAnswer(id int) string {
	n := id * 193 % 3000
	if id%17 == 0 {
		n = 70<<10 + id
	}
	return "a-" + strconv.Itoa(id) + "-" + strings.Repeat(string(rune('A'+id%26)), n)
}

// releaseUpstream answers what releaseAnswer says for the id in the request's content, with a
// Content-Length (so that the gateway reads the body into the answer's own buffer), wrapped in a
// think block when the content says so; "-fail" answers 503 when failing, and "-hang" waits for
// the caller to leave, after telling arrived.
func releaseUpstream(failing bool, arrived *sync.Map) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream   bool
			Messages []struct{ Content string }
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		content := req.Messages[0].Content
		idText, flags, _ := strings.Cut(content, "-")
		id, _ := strconv.Atoi(idText)
		switch {
		case failing && strings.Contains(flags, "fail"):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"error":{"message":"down","type":"server_error"}}`)
			return
		case strings.Contains(flags, "hang"):
			if ch, ok := arrived.Load(id); ok {
				close(ch.(chan struct{}))
			}
			<-r.Context().Done()
			return
		}
		text := releaseAnswer(id)
		if strings.Contains(flags, "think") {
			text = "<think>r-" + strconv.Itoa(id) + "</think>" + text
		}
		quoted, _ := json.Marshal(text)
		if req.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"id\":\"s\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%s},\"finish_reason\":null}]}\n\n", quoted)
			fmt.Fprint(w, "data: {\"id\":\"s\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
			return
		}
		body := `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":` +
			string(quoted) + `},"finish_reason":"stop"}]}`
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = io.WriteString(w, body)
	}
}

// A whole answer's memory serves the next answer once written (upstream.Response.Release):
// many concurrent requests, whole and streamed, some falling through a failing first target,
// some through a think-tags target, some whose client leaves before the answer, must each get
// exactly their own answer. Whether sync.Pool hands a released answer on is its own affair (the
// race detector drops some at random): the test asks only that no client ever sees another's
// bytes.
func TestReleasedAnswersReachOnlyTheirClient(t *testing.T) {
	var arrived sync.Map
	first, second, think := newFake(t, "first"), newFake(t, "second"), newFake(t, "think")
	for _, f := range []*fake{first, second, think} {
		f.set(releaseUpstream(f == first, &arrived))
	}
	cfg := target("first", first.url(), "private") + target("second", second.url(), "private") +
		target("think", think.url(), "private", `reasoning = "think-tags"`) + `
[routes.chain]
targets = ["first", "second"]

[routes.think]
targets = ["think"]
`
	g := newGateway(t, cfg, nil)

	const workers, each = 12, 30
	var gone atomic.Int64
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			errs <- func() error {
				for i := range each {
					id := w*each + i + 1
					if err := releaseRound(g, &arrived, id, &gone); err != nil {
						return err
					}
				}
				return nil
			}()
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	// Every shape was tried, or the test proves less than it says.
	if gone.Load() == 0 || first.hits.Load() == 0 || second.hits.Load() == 0 || think.hits.Load() == 0 {
		t.Errorf("clients gone %d, hits first %d, second %d, think %d: a shape was never tried",
			gone.Load(), first.hits.Load(), second.hits.Load(), think.hits.Load())
	}
}

// releaseRound sends request id in the shape its number picks and checks that the answer is its.
func releaseRound(g *gateway, arrived *sync.Map, id int, gone *atomic.Int64) error {
	route, flags, stream := "chain", "", false
	switch id % 6 {
	case 1:
		flags = "-fail" // first fails, second serves
	case 2:
		route, flags = "think", "-think"
	case 3:
		stream = true
	case 4:
		route, flags, stream = "think", "-think", true
	case 5:
		if id%5 == 0 {
			flags = "-hang"
		}
	}
	body := fmt.Sprintf(`{"model":%q,"stream":%t,"messages":[{"role":"user","content":"%d%s"}]}`, route, stream, id, flags)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if flags == "-hang" {
		ch := make(chan struct{})
		arrived.Store(id, ch)
		go func() {
			select {
			case <-ch:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.ts.URL+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := g.ts.Client().Do(req)
	if flags == "-hang" {
		if err == nil {
			_ = resp.Body.Close()
			return fmt.Errorf("request %d: the client left, yet got status %d", id, resp.StatusCode)
		}
		if !errors.Is(err, context.Canceled) {
			return fmt.Errorf("request %d: %v", id, err)
		}
		gone.Add(1)
		return nil
	}
	if err != nil {
		return fmt.Errorf("request %d: %v", id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("request %d: status %d: %.200s", id, resp.StatusCode, b)
	}
	want := releaseAnswer(id)
	var content, reasoning string
	if stream {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok || p == "[DONE]" {
				continue
			}
			var ch struct {
				Choices []struct {
					Delta struct {
						Content   string
						Reasoning string `json:"reasoning_content"`
					}
				}
			}
			if err := json.Unmarshal([]byte(p), &ch); err != nil || len(ch.Choices) != 1 {
				return fmt.Errorf("request %d: event %.200s", id, p)
			}
			content += ch.Choices[0].Delta.Content
			reasoning += ch.Choices[0].Delta.Reasoning
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("request %d: %v", id, err)
		}
	} else {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return fmt.Errorf("request %d: %v", id, err)
		}
		if cl := resp.Header.Get("Content-Length"); cl != strconv.Itoa(len(b)) {
			return fmt.Errorf("request %d: Content-Length %q for %d bytes", id, cl, len(b))
		}
		var got struct {
			Choices []struct {
				Message struct {
					Content   string
					Reasoning string `json:"reasoning_content"`
				}
			}
		}
		if err := json.Unmarshal(b, &got); err != nil || len(got.Choices) != 1 {
			return fmt.Errorf("request %d: answer %.200s", id, b)
		}
		content, reasoning = got.Choices[0].Message.Content, got.Choices[0].Message.Reasoning
	}
	wantReasoning := ""
	if flags == "-think" {
		wantReasoning = "r-" + strconv.Itoa(id)
	}
	if content != want || reasoning != wantReasoning {
		return fmt.Errorf("request %d got content %.30q… (%d bytes), reasoning %q; want %.30q… (%d bytes), %q",
			id, content, len(content), reasoning, want, len(want), wantReasoning)
	}
	return nil
}
