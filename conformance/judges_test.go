package conformance

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func mustJSON(t *testing.T, s string) any {
	t.Helper()
	v, err := decodeJSON([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// outcome reduces a verdict to the word a report would show for a MUST.
func outcome(v verdict) Result {
	switch {
	case v.skip != "":
		return Skip
	case v.fail:
		return Fail
	}
	return Pass
}

func TestPlausibleCreated(t *testing.T) {
	now := time.Unix(1750000100, 0)
	tests := []struct {
		doc  string
		want Result
	}{
		{`{"created": 1750000000}`, Pass},
		{`{"created": 1750000000000}`, Fail}, // milliseconds
		{`{"created": 1750000000.5}`, Fail},
		{`{"created": "1750000000"}`, Fail},
		{`{"created": 1000}`, Fail},
		{`{}`, Fail},
	}
	for _, tt := range tests {
		t.Run(tt.doc, func(t *testing.T) {
			v, ok := at(mustJSON(t, tt.doc), "created")
			got := Pass
			if f := plausibleCreated(v, ok, now); f != nil {
				got = outcome(*f)
			}
			if got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestRetryAfterJudge(t *testing.T) {
	var retryAfter *check
	for _, c := range catalogue() {
		if c.id == "errors.retry_after" {
			retryAfter = c
		}
	}
	x429 := func(h string) *exchange {
		x := &exchange{method: "POST", path: "/v1/chat/completions", status: 429, header: http.Header{}}
		if h != "" {
			x.header.Set("Retry-After", h)
		}
		return x
	}
	tests := []struct {
		name string
		ex   map[probeID]*exchange
		want Result
	}{
		{"no 429 seen", map[probeID]*exchange{"chat.basic": {status: 200}}, Skip},
		{"429 with seconds", map[probeID]*exchange{"chat.basic": x429("3")}, Pass},
		{"429 with HTTP date", map[probeID]*exchange{"chat.basic": x429("Wed, 21 Oct 2026 07:28:00 GMT")}, Pass},
		{"429 without Retry-After", map[probeID]*exchange{"chat.basic": x429("")}, Fail},
		{"429 with garbage", map[probeID]*exchange{"chat.basic": x429("soon")}, Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := outcome(retryAfter.judge(&judge{ex: tt.ex})); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func streamExchange(t *testing.T, body string) *exchange {
	t.Helper()
	x := &exchange{status: 200, header: http.Header{"Content-Type": {"text/event-stream"}}, body: []byte(body)}
	x.decode(true)
	return x
}

func TestStreamFinishJudge(t *testing.T) {
	const (
		open  = `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n"
		stop  = `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"
		more  = `data: {"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]}` + "\n\n"
		weird = `data: {"choices":[{"index":0,"delta":{},"finish_reason":"done"}]}` + "\n\n"
		done  = "data: [DONE]\n\n"
	)
	tests := []struct {
		name string
		body string
		want Result
	}{
		{"one final value", open + more + stop + done, Pass},
		{"never finishes", open + more + done, Fail},
		{"content after finish", open + stop + more + done, Fail},
		{"finishes twice", open + stop + stop + done, Fail},
		{"unknown value", open + weird + done, Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := outcome(judgeStreamFinish(streamExchange(t, tt.body), chatFinishReasons())); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// fail500 answers every chat completion with a 500, leaving the rest of the
// fake intact, to exercise gating.
type fail500 struct{ next http.Handler }

func (f fail500) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/chat/completions" {
		writeJSON(w, 500, map[string]any{"error": map[string]any{"message": "boom", "type": "server_error", "param": nil, "code": nil}})
		return
	}
	f.next.ServeHTTP(w, r)
}

// TestOneBrokenRequestIsOneFailure: when the shared request fails, its gate
// check fails and the checks judging it skip, pointing at the gate; with the
// gate filtered out, the failure moves to the checks that remain.
func TestOneBrokenRequestIsOneFailure(t *testing.T) {
	_, srv := newWrappedFake(t, func(h http.Handler) http.Handler { return fail500{next: h} })

	rep := runAgainst(t, fakeOptions(t, srv))
	if c, _ := rep.Result("chat.status"); c.Result != Fail || !strings.Contains(c.Reason, "500") {
		t.Errorf("chat.status = %s (%s), want FAIL naming the 500", c.Result, c.Reason)
	}
	for _, id := range []string{"chat.id", "chat.object", "chat.usage", "chat.usage.total"} {
		if c, _ := rep.Result(id); c.Result != Skip || !strings.Contains(c.Reason, "chat.status") {
			t.Errorf("%s = %s (%s), want SKIP pointing at chat.status", id, c.Result, c.Reason)
		}
	}

	o := fakeOptions(t, srv)
	o.Only = []string{"chat.object"}
	rep = runAgainst(t, o)
	if c, _ := rep.Result("chat.object"); c.Result != Fail {
		t.Errorf("with its gate filtered out chat.object = %s, want FAIL", c.Result)
	}
}
