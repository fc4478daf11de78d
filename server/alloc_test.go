package server_test

import (
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/hayula/gateway/internal/logfmt"
)

// TestChatAllocations holds a 1 KB chat request through the handler (BenchmarkChat1KB's rows:
// decode, route, filters, select, attempt, write, the log line) to the allocations it makes
// today, of which the fake upstream's answer is one (two for a stream) and the request's ID,
// which the sink writer has no connection's buffer for, another: an allocation added on the
// request path fails here, in CI's run without -race, rather than waiting for someone to read
// the benchmark.
func TestChatAllocations(t *testing.T) {
	if raceOn {
		t.Skip("the race detector changes allocation counts")
	}
	answer := []byte(benchAnswer)
	logged := slog.New(logfmt.NewText(io.Discard, nil))
	for _, c := range []struct {
		name   string
		h      http.Handler
		model  string
		stream bool
		status int
		most   float64
	}{
		{"whole", benchServer(t, &fixedUpstream{body: answer}), "saif", false, 200, 2},
		{"logged", benchServer(t, &fixedUpstream{body: answer}, logged), "saif", false, 200, 2},
		{"stream", benchServer(t, &fixedUpstream{events: memEvents}), "saif", true, 200, 4},
		{"auto", benchServer(t, &fixedUpstream{body: answer}), "auto", false, 200, 2}, // X-Hayula-Intent built once (intentValue)
	} {
		t.Run(c.name, func(t *testing.T) {
			body := benchBody(t, c.model, c.stream)
			br := &bodyReader{}
			req, err := http.NewRequest(http.MethodPost, "http://localhost/v1/chat/completions", br)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.ContentLength = int64(len(body))
			w := &sinkWriter{h: http.Header{}}
			serve := func() {
				br.Reset(body)
				w.reset()
				c.h.ServeHTTP(w, req)
			}
			serve() // pools filled
			if w.status != c.status || w.n == 0 {
				t.Fatalf("status %d, %d bytes; want %d with a body", w.status, w.n, c.status)
			}
			if got := testing.AllocsPerRun(200, serve); got > c.most {
				t.Errorf("%.1f allocations a request, want at most %.0f", got, c.most)
			}
			if w.status != c.status {
				t.Fatalf("status %d, want %d", w.status, c.status)
			}
		})
	}
}
