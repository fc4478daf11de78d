package server_test

import (
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// TestResponsesStreamOptionsRefused: the stream_options asked of a Responses stream's chat
// request, for the usage response.completed carries, is the gateway's asking, not the
// client's: a strict server that refuses it (400 naming stream_options) is asked again at once
// without it, and a target with stream_usage = false is never sent it, as on the chat endpoint
// (TestStreamUsageRefusedOptions). Sent as the client's, the strict server's 400 about a field the
// client never sent was the client's answer, stream_usage = false or not. Served without usage,
// the response's usage is null.
func TestResponsesStreamOptionsRefused(t *testing.T) {
	strict := refusesStreamOptions
	for _, tc := range []struct {
		name  string
		extra []string
		hits  int64
	}{
		{"refused", nil, 2},
		{"stream_usage false", []string{"stream_usage = false"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newFake(t, "up")
			up.set(strict)
			g := newGateway(t, target("up", up.url(), "private", tc.extra...)+"[routes.r]\ntargets = [\"up\"]\n", nil)
			evs, err := streamAll(t, g, responses.ResponseNewParams{Model: "r",
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			if len(evs) == 0 {
				t.Fatal("no events")
			}
			checkEvents(t, evs)
			last := evs[len(evs)-1]
			if last.Type != "response.completed" || last.Response.OutputText() != "hello from up" {
				t.Fatalf("last event %s", last.RawJSON())
			}
			if u := last.Response.JSON.Usage.Raw(); u != "null" {
				t.Errorf("usage %s, want null: the upstream reported none", u)
			}
			if n := up.hits.Load(); n != tc.hits {
				t.Errorf("upstream got %d requests, want %d", n, tc.hits)
			}
			if so := sentStreamOptions(t, up); so != nil {
				t.Errorf("the request served had stream_options %v, want none", so)
			}
		})
	}

	// A server that takes it still reports the usage the response carries.
	t.Run("taken", func(t *testing.T) {
		g, up := oneTarget(t)
		up.set(streamHandler(`{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}`,
			`usage{"prompt_tokens":2,"completion_tokens":1,"total_tokens":3}`))
		evs, err := streamAll(t, g, responses.ResponseNewParams{Model: "r",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
		if err != nil || len(evs) == 0 {
			t.Fatalf("stream: %v, %d events", err, len(evs))
		}
		if u := evs[len(evs)-1].Response.Usage; u.TotalTokens != 3 || u.InputTokens != 2 {
			t.Errorf("usage %s", u.RawJSON())
		}
		if so := sentStreamOptions(t, up); so["include_usage"] != true {
			t.Errorf("stream_options %v, want include_usage", so)
		}
	})
}
