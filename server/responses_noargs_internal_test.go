package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestResponsesStreamNoArgumentCallDoesNotHoldTheNext: a call whose arguments are "" (a function
// of no parameters, as some servers stream one) is done once the next call's arguments
// are whole, as it is once text comes after it. The next call waited for arguments that were
// never going to be a JSON object: it, its arguments and every event after it were held until
// [DONE], where a client's agent could have begun running it.
func TestResponsesStreamNoArgumentCallDoesNotHoldTheNext(t *testing.T) {
	rec := httptest.NewRecorder()
	rec.Header().Set("Content-Type", "text/event-stream")
	b := &responsesWriter{w: rec, stream: true}
	b.WriteHeader(http.StatusOK)
	write := func(delta string) {
		t.Helper()
		ev := `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":` + delta +
			`,"finish_reason":null}]}` + "\n\n"
		if _, err := b.Write([]byte(ev)); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"now","arguments":""}}]}`)
	write(`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"wx","arguments":"{\"city\":"}}]}`)
	write(`{"tool_calls":[{"index":1,"function":{"arguments":"\"P\"}"}}]}`)
	got := rec.Body.String()
	for _, want := range []string{`"call_id":"call_a"`, `"call_id":"call_b"`, `"delta":"{\"city\":\"P\"}"`} {
		if !strings.Contains(got, want) {
			t.Errorf("before [DONE], no %s in what went out:\n%s", want, got)
		}
	}
	if _, err := b.Write([]byte("data: [DONE]\n\n")); err != nil {
		t.Fatal(err)
	}
	out := rec.Body.String()
	if n := strings.Count(out, "event: response.output_item.done\n"); n != 2 {
		t.Errorf("%d items done, want 2:\n%s", n, out)
	}
	if !strings.Contains(out, `"arguments":"","call_id":"call_a"`) && !strings.Contains(out, `"call_id":"call_a","name":"now","arguments":""`) {
		t.Errorf("call_a's arguments are not \"\":\n%s", out)
	}
}
