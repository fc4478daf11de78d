package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/server"
)

// streamEnds are a scrape's hayula_stream_ends_total lines, sorted.
func streamEnds(lines map[string]bool) []string {
	var out []string
	for l := range lines {
		if strings.HasPrefix(l, "hayula_stream_ends_total{") {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

// settleStreamEnds scrapes g until its hayula_stream_ends_total lines are want (a stream is
// counted once its handler is done, a moment after the client has its last byte) and reports
// what the last scrape had when they never were.
func settleStreamEnds(t *testing.T, g *gateway, want []string) {
	t.Helper()
	slices.Sort(want)
	var got []string
	var lines map[string]bool
	settles(func() bool {
		_, lines = scrape(t, g)
		got = streamEnds(lines)
		return slices.Equal(got, want)
	})
	if !slices.Equal(got, want) {
		t.Fatalf("hayula_stream_ends_total:\n got %q\nwant %q", got, want)
	}
}

// TestMetricsCountStreamEnds: a stream whose head went out counts 200 in hayula_requests_total
// however it ended; hayula_stream_ends_total tells how, by the target that relayed it, with the
// request line's words. A stream that ends with its [DONE] counts done (under the target that
// served it at the end of a chain, not the route's first), one the upstream breaks off after
// its first event broke_off, one whose client leaves mid-stream client_left, a Responses stream
// under endpoint responses; a whole answer counts nothing there. Each increments its own series
// and no other.
func TestMetricsCountStreamEnds(t *testing.T) {
	var logs syncBuffer
	g := logReviewGateway(t, &logs, func(w io.Writer) slog.Handler { return slog.NewTextHandler(w, nil) })
	stream := func(model string) string {
		return `{"model":"` + model + `","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	}

	if rep := g.post(t, "/v1/chat/completions", stream("fall")); rep.status != 200 || !strings.HasSuffix(string(rep.body), "data: [DONE]\n\n") {
		t.Fatalf("stream on fall: %d %s", rep.status, rep.body)
	}
	done := `hayula_stream_ends_total{endpoint="chat",route="fall",target="ok",end="done"} 1`
	settleStreamEnds(t, g, []string{done})

	if rep := g.chat(t, "fall"); rep.status != 200 {
		t.Fatalf("whole answer on fall: %d %s", rep.status, rep.body)
	}
	if rep := g.post(t, "/v1/chat/completions", stream("brk")); rep.status != 200 || !strings.Contains(string(rep.body), "stream_interrupted") {
		t.Fatalf("stream on brk: %d %s", rep.status, rep.body)
	}
	broke := `hayula_stream_ends_total{endpoint="chat",route="brk",target="brk",end="broke_off"} 1`
	settleStreamEnds(t, g, []string{done, broke})

	g.openStream(t, stream("hold"))()
	left := `hayula_stream_ends_total{endpoint="chat",route="hold",target="hold",end="client_left"} 1`
	settleStreamEnds(t, g, []string{done, broke, left})

	if rep := g.post(t, "/v1/responses", `{"model":"brk","stream":true,"input":"hi"}`); rep.status != 200 || !strings.Contains(string(rep.body), "response.failed") {
		t.Fatalf("Responses stream on brk: %d %s", rep.status, rep.body)
	}
	settleStreamEnds(t, g, []string{done, broke, left,
		`hayula_stream_ends_total{endpoint="responses",route="brk",target="brk",end="broke_off"} 1`})

	// hayula_requests_total is as it was: every one of them answered 200.
	_, lines := scrape(t, g)
	for _, w := range []string{
		`hayula_requests_total{endpoint="chat",route="fall",code="200"} 2`,
		`hayula_requests_total{endpoint="chat",route="brk",code="200"} 1`,
		`hayula_requests_total{endpoint="chat",route="hold",code="200"} 1`,
		`hayula_requests_total{endpoint="responses",route="brk",code="200"} 1`,
	} {
		if !lines[w] {
			t.Errorf("no line %q", w)
		}
	}
}

// TestStreamEndsCountAcrossReload: hayula_stream_ends_total goes on across a reload as the other
// counters do: a count made before it is still there after, and a stream the reload crossed,
// which its client leaves on the replaced configuration, is counted where a scrape of the new
// one sees it.
func TestStreamEndsCountAcrossReload(t *testing.T) {
	up, hold := newFake(t, "up"), newFake(t, "hold")
	event := `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}` + "\n\n"
	hold.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(event))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	conf := func(extra string) *config.Config {
		cfg, err := config.Parse([]byte(target("up", up.url(), "private")+target("hold", hold.url(), "private")+
			"[routes.r]\ntargets = [\"up\"]\n[routes.hold]\ntargets = [\"hold\"]\n"+extra), "test.toml",
			func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	newServer := func(cfg *config.Config, prev *server.Server) *server.Server {
		s, err := server.New(server.Options{Config: cfg, Previous: prev,
			Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	old := newServer(conf(""), nil)
	l := server.NewLive(old)
	g := &gateway{ts: serveLive(t, l)}
	streamBody := func(model string) string {
		return `{"model":"` + model + `","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	}
	if rep := g.post(t, "/v1/chat/completions", streamBody("r")); rep.status != 200 {
		t.Fatalf("stream before the reload: %d %s", rep.status, rep.body)
	}
	done := `hayula_stream_ends_total{endpoint="chat",route="r",target="up",end="done"} 1`
	settleStreamEnds(t, g, []string{done})

	hangUp := g.openStream(t, streamBody("hold"))
	l.Replace(newServer(conf("[routes.added]\ntargets = [\"up\"]\n"), old))
	settleStreamEnds(t, g, []string{done})
	hangUp()
	settleStreamEnds(t, g, []string{done,
		`hayula_stream_ends_total{endpoint="chat",route="hold",target="hold",end="client_left"} 1`})

	if rep := g.post(t, "/v1/chat/completions", streamBody("r")); rep.status != 200 {
		t.Fatalf("stream after the reload: %d %s", rep.status, rep.body)
	}
	settleStreamEnds(t, g, []string{`hayula_stream_ends_total{endpoint="chat",route="r",target="up",end="done"} 2`,
		`hayula_stream_ends_total{endpoint="chat",route="hold",target="hold",end="client_left"} 1`})
}
