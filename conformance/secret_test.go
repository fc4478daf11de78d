package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestReportHidesTheKey: a server that repeats the key it was sent in its answers (LiteLLM's
// "Received API Key = …", a debugging proxy that quotes the request's headers) must not put the
// --api-key into the report, in any format, whose evidence quotes the answers: reports are
// pasted into issues and kept as CI artifacts. Nor into the error Run returns.
func TestReportHidesTheKey(t *testing.T) {
	const key = "sk-conformance-secret-7f3a"
	echo := func(models bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			a := r.Header.Get("Authorization")
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Echo", a)
			if models && r.URL.Path == "/v1/models" {
				fmt.Fprintf(w, `{"object":"list","data":[{"id":"m","object":"model","created":1,"owned_by":%q}]}`, a)
				return
			}
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":{"message":"Received API Key = %s","type":"auth %s","param":null,"code":"bad key %s"}}`, a, a, a)
		}
	}
	srv := httptest.NewServer(echo(true))
	defer srv.Close()
	o := fakeOptions(t, srv)
	o.APIKey = key
	rep := runAgainst(t, o)
	if rep.Summary().Fail == 0 {
		t.Fatal("nothing failed: the report holds no evidence, and the test would prove nothing")
	}
	for _, f := range []Format{FormatTable, FormatJSON, FormatJUnit, FormatMarkdown} {
		var b bytes.Buffer
		if err := rep.Write(&b, f); err != nil {
			t.Fatal(err)
		}
		// Its first 16 bytes: an excerpt cut inside the key would leave those.
		if strings.Contains(b.String(), key[:16]) {
			t.Errorf("the %s report holds the key:\n%s", f, b.String())
		}
	}
	if !strings.Contains(fmt.Sprint(rep.Checks), "Received API Key") {
		t.Errorf("the server's message should stay, the key alone removed: %v", rep.Checks)
	}

	// Without --model, a /v1/models answer that names no model is a usage error that quotes it.
	bare := httptest.NewServer(echo(false))
	defer bare.Close()
	o = fakeOptions(t, bare)
	o.APIKey, o.Model = key, ""
	_, err := Run(context.Background(), o)
	var ue *UsageError
	if !errors.As(err, &ue) {
		t.Fatalf("Run: %v, want a usage error", err)
	}
	if strings.Contains(err.Error(), key) {
		t.Errorf("Run's error holds the key: %v", err)
	}
}
