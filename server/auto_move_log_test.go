package server_test

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/hayula/gateway/internal/logfmt"
	"github.com/hayula/gateway/server"
)

// TestAutoMoveLoggedAndCounted: a request model auto moved says so on its request line
// (moved_from=, after duration, in both of the handler's paths) and in hayula_auto_moves_total; one
// it kept says neither (CONFIG.md, Log lines and Metrics).
func TestAutoMoveLoggedAndCounted(t *testing.T) {
	for name, handler := range map[string]func(io.Writer) slog.Handler{
		"slog":   func(w io.Writer) slog.Handler { return slog.NewTextHandler(w, nil) },
		"logfmt": func(w io.Writer) slog.Handler { return logfmt.NewText(w, nil) },
	} {
		t.Run(name, func(t *testing.T) {
			var logs syncBuffer
			g, _ := moveLayout(t, "", func(o *server.Options) { o.Logger = slog.New(handler(&logs)) }, countedIDs())
			for _, body := range []string{
				withImage("auto", reasoningText, ""), // deepseek-r1 → averroes-q
				withImage("auto", reasoningText, `,"stream":true`),
				`{"model":"auto","tools":` + aTool + `,"messages":[{"role":"user","content":` + jsonString(securityText) + `}]}`, // saif → deepseek-r1
				`{"model":"auto","messages":[{"role":"user","content":` + jsonString(reasoningText) + `}]}`,                      // kept
			} {
				if rep := g.post(t, "/v1/chat/completions", body); rep.status != 200 {
					t.Fatalf("status %d: %s", rep.status, rep.body)
				}
			}
			var lines []string
			// A line is written once its answer is out: wait for the last.
			for _, l := range logLines(&logs, 4, func(l string) bool { return strings.Contains(l, " msg=request ") }) {
				m := timedRequestLine.FindStringSubmatch(l)
				if m == nil {
					t.Fatalf("request line in an unexpected shape:\n%s", l)
				}
				lines = append(lines, m[2]+m[4])
			}
			want := []string{
				"level=INFO msg=request method=POST path=/v1/chat/completions route=averroes-q chain=averroes-q status=200 moved_from=deepseek-r1 request_id=req-1",
				"level=INFO msg=request method=POST path=/v1/chat/completions route=averroes-q chain=averroes-q status=200 moved_from=deepseek-r1 request_id=req-2",
				"level=INFO msg=request method=POST path=/v1/chat/completions route=deepseek-r1 chain=deepseek-r1 status=200 moved_from=saif request_id=req-3",
				"level=INFO msg=request method=POST path=/v1/chat/completions route=deepseek-r1 chain=deepseek-r1 status=200 request_id=req-4",
			}
			if strings.Join(lines, "\n") != strings.Join(want, "\n") {
				t.Errorf("request lines:\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
			}
			rep, samples := scrape(t, g)
			if rep.status != 200 {
				t.Fatalf("scrape: %d %s", rep.status, rep.body)
			}
			var moves []string
			for l := range samples {
				if strings.HasPrefix(l, "hayula_auto_moves_total") {
					moves = append(moves, l)
				}
			}
			if len(moves) != 2 || !samples[`hayula_auto_moves_total{from="deepseek-r1",to="averroes-q"} 2`] ||
				!samples[`hayula_auto_moves_total{from="saif",to="deepseek-r1"} 1`] {
				t.Errorf("move samples %q, want deepseek-r1→averroes-q 2 and saif→deepseek-r1 1", moves)
			}
		})
	}
}
