package keepalive

import (
	"context"
	"net"
	"testing"
	"time"
)

// BenchmarkLoopbackConn: a connection on loopback dialed and accepted, with net's probes on both
// ends (as before this package) and with this package's (none on loopback), closed at once.
func BenchmarkLoopbackConn(b *testing.B) {
	for _, bc := range []struct {
		name   string
		listen func() (net.Listener, error)
		dial   func(context.Context, string, string) (net.Conn, error)
	}{
		{"net", func() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") },
			(&net.Dialer{KeepAlive: 30 * time.Second}).DialContext},
		{"keepalive", func() (net.Listener, error) {
			return Listen(context.Background(), "tcp", "127.0.0.1:0", net.KeepAliveConfig{})
		}, Dialer(&net.Dialer{}, net.KeepAliveConfig{Idle: 30 * time.Second})},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ln, err := bc.listen()
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					_ = c.Close()
				}
			}()
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				c, err := bc.dial(ctx, "tcp", ln.Addr().String())
				if err != nil {
					b.Fatal(err)
				}
				_ = c.Close()
			}
			ln.Close()
			<-done
		})
	}
}
