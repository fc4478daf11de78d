package upstream

import (
	"context"
	"errors"
	"io"
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
			ctx := context.Background()
			var failed error
			attempt := func() {
				resp, err := s.ChatID(ctx, tg, req, "req_0123456789abcdef01234567")
				if err != nil {
					failed = err
					return
				}
				if !c.stream {
					resp.Release()
					return
				}
				for {
					if _, err := resp.Stream.Next(); err != nil {
						if !errors.Is(err, io.EOF) {
							failed = err
						}
						break
					}
				}
				resp.Stream.Close()
			}
			attempt() // the connection dialled, the pools filled
			got := testing.AllocsPerRun(200, attempt)
			if failed != nil {
				t.Fatal(failed)
			}
			if got > c.most {
				t.Errorf("%.1f allocations an exchange, want at most %.0f", got, c.most)
			}
		})
	}
}
