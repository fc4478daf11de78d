package errmap

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/lifecycle"
)

// opError is a socket error as the net package reports it: it names both addresses.
func opError(op string, errno syscall.Errno) error {
	return &net.OpError{Op: op, Net: "tcp",
		Source: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50412},
		Addr:   &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 41101},
		Err:    os.NewSyscallError(op, errno)}
}

// urlError is opError as net/http's client wraps it, with the upstream's URL.
func urlError(err error) error {
	return &url.Error{Op: "Post", URL: "http://127.0.0.1:41101/v1/chat/completions", Err: err}
}

// A connection failure reaches the client as the target's name and a short cause: never the
// upstream's address, port, URL or host name, which the error's own text carries.
func TestConnectionCauseHidesAddresses(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"refused", opError("dial", syscall.ECONNREFUSED), "connection refused"},
		{"refused through net/http", urlError(opError("dial", syscall.ECONNREFUSED)), "connection refused"},
		{"reset", opError("read", syscall.ECONNRESET), "connection reset"},
		{"aborted", opError("read", syscall.ECONNABORTED), "connection reset"},
		{"host unreachable", opError("dial", syscall.EHOSTUNREACH), "host unreachable"},
		{"network unreachable", opError("dial", syscall.ENETUNREACH), "network unreachable"},
		{"timed out", opError("dial", syscall.ETIMEDOUT), "connection timed out"},
		{"broken pipe", opError("write", syscall.EPIPE), "connection closed before the answer"},
		{"dns", &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "llm.internal.example",
			Server: "10.0.0.53:53", IsNotFound: true}}, "name not resolved"},
		{"tls record header", urlError(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), "TLS handshake failed"},
		{"tls alert", tls.AlertError(40), "TLS handshake failed"},
		// net/http's replacement for the RecordHeaderError of a plain HTTP answer to the hello.
		{"https to plain http", urlError(http.ErrSchemeMismatch), "TLS handshake failed"},
		{"unknown authority", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, "TLS handshake failed"},
		{"hostname", x509.HostnameError{Host: "10.0.0.7"}, "TLS handshake failed"},
		{"eof", urlError(io.EOF), "connection closed before the answer"},
		{"unexpected eof", fmt.Errorf("reading the head from 127.0.0.1:41101: %w", io.ErrUnexpectedEOF), "connection closed before the answer"},
		{"closed", fmt.Errorf("conn to 127.0.0.1:41101: %w", net.ErrClosed), "connection closed before the answer"},
		{"dial deadline", fmt.Errorf("dial 127.0.0.1:41101: %w", context.DeadlineExceeded), "connection timed out"},
		{"process could not start", &lifecycle.ProcessError{Target: "a",
			Err: &exec.Error{Name: "/opt/llm/bin/llama-server", Err: exec.ErrNotFound}}, "the target's process could not start"},
		{"process exited", &lifecycle.ProcessError{Target: "a", Err: &exec.ExitError{ProcessState: &os.ProcessState{}},
			Stderr: []string{"error: failed to bind 127.0.0.1:41101"}}, "the target's process exited"},
		{"process exited 0", &lifecycle.ProcessError{Target: "a"}, "the target's process exited"},
		{"anything else", errors.New("proxyconnect tcp: dial 127.0.0.1:41101"), "connection failed"},
		{"nothing", nil, "connection failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err
			if _, ok := err.(*lifecycle.ProcessError); !ok && err != nil {
				err = &core.ConnError{Target: "fake-1", Err: err}
			}
			a := Attempt{Target: "fake-1", Decision: Decision{Class: core.ClassConnection, Status: 502}, Err: err}
			got := Restore([]Attempt{a})
			want := ClientError{Status: 502, Type: "upstream_error", Code: "upstream_unreachable",
				Message: "upstream fake-1 unreachable: " + tt.want}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Restore (-want +got):\n%s", diff)
			}
			leaks(t, string(got.JSON()))
		})
	}
}

// A stream that broke off, and an error no adapter foresaw, hide the address too; a stream
// error that is not the connection's keeps its words.
func TestBrokenStreamHidesAddresses(t *testing.T) {
	reset := opError("read", syscall.ECONNRESET)
	tests := []struct {
		name string
		err  error
		want ClientError
	}{
		{"stream reset", &core.StreamError{Target: "a", Message: "upstream broke off: " + reset.Error(), Err: reset},
			ClientError{Status: 502, Type: "upstream_error", Code: "upstream_stream_error",
				Message: "upstream a broke off: connection reset"}},
		{"stream idle", &core.StreamError{Target: "a", Message: "no bytes of the answer's body for 5s (idle_timeout)",
			Err: &core.TimeoutError{Target: "a", After: 5 * time.Second}},
			ClientError{Status: 504, Type: "upstream_error", Code: "upstream_timeout",
				Message: "upstream a did not answer within 5s"}},
		{"stream not json", &core.StreamError{Target: "a", Message: "upstream sent a line that is not JSON: x",
			Err: errors.New("invalid character 'x'")},
			ClientError{Status: 502, Type: "upstream_error", Code: "upstream_stream_error",
				Message: "upstream a broke off: upstream sent a line that is not JSON: x"}},
		{"unforeseen", urlError(errors.New("malformed HTTP response \"127.0.0.1:41101\"")),
			ClientError{Status: 502, Type: "upstream_error", Code: "upstream_error", Message: "upstream a failed"}},
		{"unforeseen reset", fmt.Errorf("relay: %w", reset),
			ClientError{Status: 502, Type: "upstream_error", Code: "upstream_error", Message: "upstream a failed: connection reset"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Restore([]Attempt{attempt("a", tt.err)})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Restore (-want +got):\n%s", diff)
			}
			leaks(t, string(got.JSON()))
		})
	}
}

// leaks fails t when body names an address, a port, a URL or a path.
func leaks(t *testing.T, body string) {
	t.Helper()
	for _, s := range []string{"127.0.0.1", "41101", "50412", "http://", "llm.internal", "10.0.0", "/opt/", "dial", "tcp"} {
		if strings.Contains(body, s) {
			t.Errorf("the client's error holds %q: %s", s, body)
		}
	}
}
