package server

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/health"
)

// TestDescribeCheck: what a client reads of a failed health check keeps its status or says a
// cause from the error's type, never a host, address or path the check's error names.
func TestDescribeCheck(t *testing.T) {
	get := func(err error) error {
		return &health.CheckError{Target: "t", Err: &url.Error{Op: "Get", URL: "http://10.0.0.7:8080/v1/models", Err: err}}
	}
	dial := func(errno syscall.Errno) error {
		return &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 8080},
			Err: os.NewSyscallError("connect", errno)}
	}
	const p = "t: health check: "
	tests := map[string]struct {
		err  error
		want string
	}{
		"status":    {&health.CheckError{Target: "t", Status: 500}, p + "status 500"},
		"refused":   {get(dial(syscall.ECONNREFUSED)), p + "connection refused"},
		"dns":       {get(&net.DNSError{Err: "no such host", Name: "gpu.internal", IsNotFound: true}), p + "name not resolved"},
		"timeout":   {get(context.DeadlineExceeded), p + "connection timed out"},
		"eof":       {get(io.EOF), p + "connection closed before the answer"},
		"unknown":   {get(errors.New(`malformed HTTP response "x" from 10.0.0.7:8080`)), p + "connection failed"},
		"not typed": {errors.New("dial tcp 10.0.0.7:8080: refused"), "connection failed"},
	}
	got, want := map[string]string{}, map[string]string{}
	for name, tt := range tests {
		got[name], want[name] = describeCheck(tt.err), tt.want
		if strings.Contains(got[name], "10.0.0.7") || strings.Contains(got[name], "gpu.internal") {
			t.Errorf("%s: %q names the upstream", name, got[name])
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("describeCheck (-want +got):\n%s", diff)
	}
}
