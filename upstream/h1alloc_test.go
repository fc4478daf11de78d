package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/hayula/gateway/core"
)

// TestH1ExchangeAllocations holds a pooled exchange with an openai target, whole and streamed,
// to the allocations BenchmarkH1Chat reports: the transport's own part of a request, on a
// reused connection. An allocation a request adds on this path (the pool's list of an address
// made again on every release did: one a request) fails here, in CI's run without -race,
// rather than waiting for someone to read the benchmark.
func TestH1ExchangeAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	for _, c := range []struct {
		name   string
		stream bool
		most   float64
	}{
		{"json", false, 0},
		{"sse", true, 1}, // the stream's reader state
	} {
		t.Run(c.name, func(t *testing.T) {
			u := newRawUpstream(t)
			tg := &core.Target{Name: "alloc", Adapter: core.AdapterOpenAI, URL: u.url() + "/v1", Model: "fake-model",
				Timeout: 120 * time.Second, Stats: &core.Stats{}}
			s := NewSet([]*core.Target{tg}, Options{})
			t.Cleanup(s.Close)
			req := &core.Request{Model: "auto", Stream: c.stream, Body: benchChatBody(c.stream)}
			got := allocsPerChat(t, s, tg, req, func(resp *Response) error {
				if !c.stream {
					resp.Release()
					return nil
				}
				defer resp.Stream.Close()
				for {
					if _, err := resp.Stream.Next(); err != nil {
						if errors.Is(err, io.EOF) {
							return nil
						}
						return err
					}
				}
			})
			if got > c.most {
				t.Errorf("%.1f allocations an exchange, want at most %.0f", got, c.most)
			}
		})
	}
}

// TestTranslatedAnswerAllocations holds a whole answer through an ollama and a saif target, on a
// reused connection of the synchronous client, to the allocations it makes today. The
// translated chat.completion, its Response and its usage live in the client's pooled answer
// (xlateBuf, translatedResponse) and go back with Release, as a relayed answer's do, and the
// translated request is written into a buffer the transport lends (lendBody): each new one was
// about 1 KB a request, which the collector then had to come for (bench --count: the
// collector's marking was some 10,000 instructions of a chat request through an ollama target,
// and nearly none of one relayed to an openai target). An answer's text that the
// chat.completion would write as it came is copied, not unquoted into a string (plainToken,
// completionMessage's lit): ollama 12 → 10, saif 17 → 14. A saif answer's usage, finish reason
// and hayula member stay in the adapter's frame (textCompletion takes copies for encoding/json),
// and its X-Hayula-Specialist header is the target's, built once for each specialist it lists
// (specialistHeaders): saif 14 → 8.
func TestTranslatedAnswerAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	const text = "This is a fixed answer from the benchmark's fake upstream. It is about as long as a short reply."
	for _, c := range []struct {
		name    string
		adapter core.AdapterKind
		ct      string
		answer  string
		most    float64
	}{
		{"ollama", core.AdapterOllama, "application/json; charset=utf-8",
			`{"model":"fake-model","created_at":"2025-11-30T00:00:00.000000000Z","message":{"role":"assistant","content":"` + text + `"},` +
				`"done":true,"done_reason":"stop","total_duration":912345678,"load_duration":1234567,"prompt_eval_count":212,` +
				`"prompt_eval_duration":23456789,"eval_count":38,"eval_duration":876543210}`, 7},
		{"saif", core.AdapterSAIF, "application/json",
			`{"id":"saif-bench","specialist":"webapp","routed_by":"router","confidence":0.7,"text":"` + text + `",` +
				`"finish_reason":"stop","usage":{"prompt_tokens":212,"completion_tokens":38}}`, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := newRawUpstreamAnswering(t, c.ct, c.answer)
			tg := &core.Target{Name: "alloc", Adapter: c.adapter, URL: u.url(), Model: "fake-model",
				Timeout: 120 * time.Second, Stats: &core.Stats{}}
			if c.adapter == core.AdapterSAIF {
				tg.Specialists = []string{"rev_eng", "webapp", "malware"} // as config lists them by default
			}
			s := NewSet([]*core.Target{tg}, Options{})
			t.Cleanup(s.Close)
			req := clientRequest(t, benchChatBody(false))
			req.Validated = true // as the server's decode says of every body it accepts
			got := allocsPerChat(t, s, tg, req, func(resp *Response) error {
				defer resp.Release()
				if !bytes.Contains(resp.Body, []byte(text)) {
					return errors.New("the answer lacks the upstream's text: " + string(resp.Body))
				}
				return nil
			})
			if got > c.most {
				t.Errorf("%.1f allocations a request, want at most %.0f", got, c.most)
			}
		})
	}
}

// allocsPerChat is testing.AllocsPerRun of a chat request to tg through s, each answer handed to
// use (which releases or drains it), after one request that dials the connection and fills the
// pools; the first error of a request or of use fails t.
func allocsPerChat(t *testing.T, s *Set, tg *core.Target, req *core.Request, use func(*Response) error) float64 {
	t.Helper()
	ctx := context.Background()
	var failed error
	attempt := func() {
		resp, err := s.ChatID(ctx, tg, req, "req_0123456789abcdef01234567")
		if err == nil {
			err = use(resp)
		}
		if err != nil && failed == nil {
			failed = err
		}
	}
	attempt()
	got := testing.AllocsPerRun(200, attempt)
	if failed != nil {
		t.Fatal(failed)
	}
	return got
}

// TestTranslatedStreamAllocations holds a whole stream of 32 tokens through an ollama and a saif
// target, on a reused connection of the synchronous client, to the allocations it makes today:
// none a token (TestOllamaStreamAllocations), and, a stream, the translated request, the
// stream and its chunker, the chunks' id and the upstream's model. The line or SSE reader (its
// 4 KiB buffer) is lent by the Set and given back on Close (readerPool), as a relayed stream's
// is; the chunks' envelope and buffer are made at their size, and a token's chunks are queued in
// the stream's own array (queue.room). They were 56 and 59 a stream, one of them each token's.
func TestTranslatedStreamAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	chunked := func(ct string, pieces []string) string {
		s := "HTTP/1.1 200 OK\r\nContent-Type: " + ct + "\r\nDate: Mon, 01 Dec 2025 00:00:00 GMT\r\nTransfer-Encoding: chunked\r\n\r\n"
		for _, p := range pieces {
			s += strconv.FormatInt(int64(len(p)), 16) + "\r\n" + p + "\r\n"
		}
		return s + "0\r\n\r\n"
	}
	const ollamaHead = `{"model":"fake-model","created_at":"2025-11-30T00:00:00.000000000Z","message":{"role":"assistant","content":%q},`
	var ollama, saif []string
	for i := range 32 {
		ollama = append(ollama, fmt.Sprintf(ollamaHead+`"done":false}`+"\n", " token"+strconv.Itoa(i)))
		saif = append(saif, fmt.Sprintf(`data: {"text":%q,"specialist":"webapp"}`+"\n\n", " token"+strconv.Itoa(i)))
	}
	ollama = append(ollama, fmt.Sprintf(ollamaHead+`"done":true,"done_reason":"stop","total_duration":912345678,`+
		`"load_duration":1234567,"prompt_eval_count":212,"prompt_eval_duration":23456789,"eval_count":32,"eval_duration":876543210}`+"\n", ""))
	saif = append(saif, saifDoneEvent)
	for _, c := range []struct {
		name    string
		adapter core.AdapterKind
		answer  string
		most    float64
	}{
		{"ollama", core.AdapterOllama, chunked("application/x-ndjson", ollama), 18},
		{"saif", core.AdapterSAIF, chunked("text/event-stream", saif), 18},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := newRawUpstreamAnswering(t, "application/json", "{}")
			u.answer, u.sse = []byte(c.answer), []byte(c.answer)
			tg := &core.Target{Name: "alloc", Adapter: c.adapter, URL: u.url(), Model: "fake-model",
				Timeout: 120 * time.Second, Stats: &core.Stats{}}
			s := NewSet([]*core.Target{tg}, Options{})
			t.Cleanup(s.Close)
			req := clientRequest(t, benchChatBody(true))
			req.Validated = true
			got := allocsPerChat(t, s, tg, req, func(resp *Response) error {
				defer resp.Release()
				defer resp.Stream.Close()
				n, err := eachChunk(resp.Stream, nil)
				if err != nil {
					return err
				}
				if n < 33 {
					return fmt.Errorf("%d chunks, want the 32 tokens' and the finishing one", n)
				}
				return nil
			})
			if got > c.most {
				t.Errorf("%.1f allocations a stream, want at most %.0f", got, c.most)
			}
		})
	}
}
