//go:build unix

package lifecycle

import (
	"context"
	"net"
	"strings"
	"testing"
)

// TestFixedPortAlreadyAnswering: a target with a fixed port (no {port}) that something already
// answers on before its process starts is warned about, since its health check may pass against
// that other program; a fixed port nothing answers on is not.
func TestFixedPortAlreadyAnswering(t *testing.T) {
	squatter, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer squatter.Close()
	go func() {
		for {
			c, err := squatter.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freeAddr := free.Addr().String()
	free.Close()
	for _, tc := range []struct {
		name, addr string
		warned     bool
	}{
		{"taken", squatter.Addr().String(), true},
		{"free", freeAddr, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := Spec{Name: "a", Command: []string{"/bin/sh", "-c", "exec sleep 30"},
				URL: "http://" + tc.addr + "/v1", HealthURL: "http://" + tc.addr + "/health"}
			h := newHarness(t, []Spec{spec}, nil, Options{})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				_, _, _ = h.m.Ensure(ctx, "a")
			}()
			defer func() { cancel(); <-done }()
			// The check comes before the launch: once the launch is logged, it has been made.
			eventually(t, "the launch", func() bool { return strings.Contains(h.log.String(), "lifecycle: launched") })
			warned := strings.Contains(h.log.String(), "already answers before its process starts")
			if warned != tc.warned {
				t.Fatalf("warned %v, want %v:\n%s", warned, tc.warned, h.log.String())
			}
			if tc.warned && !strings.Contains(h.log.String(), "addr="+tc.addr) {
				t.Fatalf("the warning does not name the address:\n%s", h.log.String())
			}
		})
	}
}
