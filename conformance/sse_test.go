package conformance

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseSSE(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want sseStream
	}{
		{"openai shape", "data: {\"a\":1}\n\ndata: [DONE]\n\n",
			sseStream{Events: []sseEvent{{Data: `{"a":1}`}, {Data: "[DONE]"}}, DoneAt: 1}},
		{"crlf, no space after colon, comments", ": ping\r\ndata:{}\r\n\r\ndata: [DONE]\r\n\r\n",
			sseStream{Events: []sseEvent{{Data: "{}"}, {Data: "[DONE]"}}, DoneAt: 1}},
		{"lone CR line endings, CRLF split after the CR", "data: {}\r\rdata: [DONE]\r\n\r",
			sseStream{Events: []sseEvent{{Data: "{}"}, {Data: "[DONE]"}}, DoneAt: 1}},
		{"leading byte order mark", "\ufeffdata: {}\n\n",
			sseStream{Events: []sseEvent{{Data: "{}"}}, DoneAt: -1}},
		{"blocks without data dispatch nothing", "data: [DONE]\n\nevent: ping\n\nid: 7\n\nretry: 5\n\n",
			sseStream{Events: []sseEvent{{Data: "[DONE]"}}, DoneAt: 0}},
		{"an empty data line is an event", "data: [DONE]\n\ndata:\n\n",
			sseStream{Events: []sseEvent{{Data: "[DONE]"}, {}}, DoneAt: 0, AfterDone: true}},
		{"multi-line data joins with newline", "data: a\ndata: b\n\n",
			sseStream{Events: []sseEvent{{Data: "a\nb"}}, DoneAt: -1}},
		{"event field kept", "event: error\ndata: {}\n\n",
			sseStream{Events: []sseEvent{{Event: "error", Data: "{}"}}, DoneAt: -1}},
		{"something after done", "data: [DONE]\n\ndata: {}\n\n",
			sseStream{Events: []sseEvent{{Data: "[DONE]"}, {Data: "{}"}}, DoneAt: 0, AfterDone: true}},
		{"missing final blank line", "data: {}\n\ndata: [DONE]",
			sseStream{Events: []sseEvent{{Data: "{}"}, {Data: "[DONE]"}}, DoneAt: 1, Truncated: true}},
		// As openai-go and openai-python: data beginning with [DONE] ends the stream.
		{"[DONE] with trailing whitespace", "data: {}\n\ndata:[DONE] \t\n\n",
			sseStream{Events: []sseEvent{{Data: "{}"}, {Data: "[DONE] \t"}}, DoneAt: 1}},
		{"a second space before [DONE] is data", "data:  [DONE]\n\n",
			sseStream{Events: []sseEvent{{Data: " [DONE]"}}, DoneAt: -1}},
		// llama.cpp's 2025 builds: a field SSE ignores, kept for the judges to name.
		{"an error field", "error: {\"code\":400}\n\nerror: second\n\ndata: [DONE]\n\n",
			sseStream{Events: []sseEvent{{Data: "[DONE]"}}, DoneAt: 0, ErrorField: `{"code":400}`}},
		{"empty body", "", sseStream{DoneAt: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseSSE(strings.NewReader(tt.in))
			if diff := cmp.Diff(&tt.want, got, cmp.Comparer(func(a, b error) bool { return (a == nil) == (b == nil) })); diff != "" {
				t.Errorf("parseSSE (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseSSELineTooLong(t *testing.T) {
	got := parseSSE(strings.NewReader("data: " + strings.Repeat("x", maxSSELine+10) + "\n\n"))
	if got.ReadErr == nil {
		t.Fatal("a line over the limit must end the stream with an error")
	}
}

func FuzzParseSSE(f *testing.F) {
	for _, s := range []string{"data: {}\n\ndata: [DONE]\n\n", ": c\r\nevent: x\r\ndata:1\r\n\r\n", "data", "\n\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s := parseSSE(strings.NewReader(in))
		if s.DoneAt >= len(s.Events) {
			t.Fatalf("DoneAt %d out of %d events", s.DoneAt, len(s.Events))
		}
		if s.AfterDone && s.DoneAt == len(s.Events)-1 {
			t.Fatal("AfterDone with [DONE] last")
		}
		_ = s.dataEvents()
	})
}
