package server

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCheckCause: what a client reads of a failed health check keeps its status or says a cause,
// never a host, address or path the check's error text names.
func TestCheckCause(t *testing.T) {
	const p = "t: health check: "
	tests := map[string]string{
		p + "status 500": p + "status 500",
		p + `Get "http://10.0.0.7:8080/v1/models": dial tcp 10.0.0.7:8080: connect: connection refused`:                                         p + "connection refused",
		p + `Get "http://gpu.internal/v1/models": dial tcp: lookup gpu.internal on 127.0.0.53:53: no such host`:                                 p + "name not resolved",
		p + `Get "https://gpu.internal/health": tls: failed to verify certificate: x509: certificate is valid for a.internal, not gpu.internal`: p + "TLS handshake failed",
		p + `Get "http://10.0.0.7:8080/health": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`:                     p + "connection timed out",
		p + `Get "http://10.0.0.7:8080/health": EOF`: p + "connection closed before the answer",
		p + `Get "http://10.0.0.7:8080/health": net/http: HTTP/1.x transport connection broken: malformed HTTP response "x"`: p + "no answer",
		p + "status 5000 at http://10.0.0.7": p + "no answer",
		"":                                   "no answer",
	}
	got := map[string]string{}
	for in := range tests {
		got[in] = checkCause(in)
	}
	if diff := cmp.Diff(tests, got); diff != "" {
		t.Errorf("checkCause (-want +got):\n%s", diff)
	}
}
