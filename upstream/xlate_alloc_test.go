package upstream

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hayula/gateway/core"
)

// TestOllamaStreamAllocations and TestSAIFStreamAllocations hold a token's event of a long
// translated stream (BenchmarkOllamaStream's and BenchmarkSAIFStream's) to none: the line or
// event is walked rather than given to json.Unmarshal (decodeOllamaLine, decodeSAIFEvent), the
// chunk appended to a buffer the stream reuses rather than marshalled (chunkjson.go), and a
// token's literal copied into it rather than unquoted into a string when it is what the chunk
// would write (plainToken), escaped newlines and quotes included. They were 17 and 13, then 1
// (the token's text). CI runs tests named *Alloc* without -race.
func TestOllamaStreamAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	// A token as Ollama writes most of them, and one with a newline and a quote, which its
	// encoder escapes as appendJSONString does (jsonx.Exact).
	escaped := strings.Replace(ollamaTokenLine, `" token"`, `"\n\"token\"\n"`, 1)
	for _, line := range []string{ollamaTokenLine, escaped} {
		a := &openaiOllama{t: &core.Target{Name: "averroes-q", Model: "averroes-q"}, now: fixedNow, newID: func() string { return "x" }}
		s := a.newStream(io.NopCloser(&loopReader{event: []byte(line)}), true, core.ReasoningPassthrough)
		checkEventAllocs(t, s, 0)
	}
}

func TestSAIFStreamAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	a := &openaiSAIF{t: &core.Target{Name: "saif", Model: "saif"}, now: fixedNow, newID: func() string { return "x" }}
	resp := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(&loopReader{event: []byte(saifTokenEvent)})}
	r, err := a.stream(resp, &core.Request{Op: core.OpChat, Stream: true, IncludeUsage: true})
	if err != nil {
		t.Fatal(err)
	}
	checkEventAllocs(t, r.Stream, 0)
}

// checkEventAllocs fails when a chunk of s costs more than most allocations once s runs.
func checkEventAllocs(t *testing.T, s Stream, most float64) {
	t.Helper()
	next := func() {
		if _, err := s.Next(); err != nil {
			t.Fatal(err)
		}
	}
	for range 4 {
		next() // the first chunk, and the buffers grown
	}
	if got := testing.AllocsPerRun(1000, next); got > most {
		t.Errorf("%.1f allocations a chunk, want at most %.0f", got, most)
	}
}
