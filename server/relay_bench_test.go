package server_test

import (
	"net/http"
	"testing"
)

// BenchmarkRelayEvent is one SSE event relayed to the client by the server: written as
// "data: …\n\n" and flushed. The upstream's side of the same event (parsing it off the wire) is
// upstream.BenchmarkStreamRelay; the two add up to the gateway's cost per event. One op is one
// event of a single long stream, so allocs/op is what each event costs once the stream runs.
func BenchmarkRelayEvent(b *testing.B) {
	h := benchServer(b, &fixedUpstream{events: b.N})
	body := benchBody(b, "saif", true)
	br := &bodyReader{}
	br.Reset(body)
	req, err := http.NewRequest(http.MethodPost, "http://localhost/v1/chat/completions", br)
	if err != nil {
		b.Fatal(err)
	}
	w := &sinkWriter{h: http.Header{}}
	b.ReportAllocs()
	b.ResetTimer()
	h.ServeHTTP(w, req)
	b.StopTimer()
	// Every event is "data: " + payload + "\n\n", and [DONE] ends the stream.
	if want := b.N*(len("data: ")+len(benchChunk)+2) + len("data: [DONE]\n\n"); w.status != http.StatusOK || w.n != want {
		b.Fatalf("status %d, %d bytes; want 200 and %d bytes", w.status, w.n, want)
	}
}
