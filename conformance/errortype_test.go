package conformance

import (
	"net/http"
	"testing"
)

// TestErrorTypeJudgedAlike: errors.shape reads the error body and sdk.error reads what openai-go
// made of it; one answer must not pass one and fail the other for the same member. The
// reference's error object has "type" a required string with no further rule, and openai-go
// decodes "" as it decodes any string (apiErr.JSON.Type valid): an empty type passes both. An
// absent, null or object type fails both. The one difference is openai-go's own: it turns a
// number into its digits, a type a Go program can read, so sdk.error passes what errors.shape
// (the reference's string) fails.
func TestErrorTypeJudgedAlike(t *testing.T) {
	tests := []struct {
		name, body         string
		wantShape, wantSDK Result
	}{
		{"type empty", `{"error":{"message":"model not found","type":"","param":null,"code":null}}`, Pass, Pass},
		{"type a word", `{"error":{"message":"model not found","type":"invalid_request_error","param":null,"code":null}}`, Pass, Pass},
		{"type absent", `{"error":{"message":"model not found","param":null,"code":null}}`, Fail, Fail},
		{"type null", `{"error":{"message":"model not found","type":null,"param":null,"code":null}}`, Fail, Fail},
		{"type an object", `{"error":{"message":"model not found","type":{"name":"x"},"param":null,"code":null}}`, Fail, Fail},
		{"message an object", `{"error":{"message":{"text":"x"},"type":"invalid_request_error"}}`, Fail, Fail},
		{"message empty", `{"error":{"message":"","type":"invalid_request_error"}}`, Fail, Fail},
		{"type a number", `{"error":{"message":"model not found","type":404,"param":null,"code":null}}`, Fail, Pass},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newWrappedFake(t, func(h http.Handler) http.Handler {
				return errorAnswer{next: h, status: http.StatusNotFound, ct: "application/json", body: tt.body}
			})
			o := fakeOptions(t, srv)
			o.Only = []string{"errors.shape", "errors.unknown_model", "sdk.error"}
			rep := runAgainst(t, o)
			for id, want := range map[string]Result{"errors.shape": tt.wantShape, "sdk.error": tt.wantSDK} {
				c, _ := rep.Result(id)
				if c.Result != want {
					t.Errorf("%s = %s %q, want %s", id, c.Result, c.Reason, want)
				}
			}
		})
	}
}
