package keepalive

import (
	"net"
	"testing"
)

func TestRemote(t *testing.T) {
	for _, tc := range []struct {
		addr   net.Addr
		remote bool
	}{
		{&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 80}, false},
		{&net.TCPAddr{IP: net.ParseIP("127.8.9.10")}, false},
		{&net.TCPAddr{IP: net.ParseIP("::1")}, false},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:127.0.0.1")}, false},
		{&net.TCPAddr{IP: net.ParseIP("10.0.0.1")}, true},
		{&net.TCPAddr{IP: net.ParseIP("192.168.1.20")}, true},
		{&net.TCPAddr{IP: net.ParseIP("8.8.8.8")}, true},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:10.0.0.1")}, true},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8::1")}, true},
		{&net.TCPAddr{IP: net.ParseIP("0.0.0.0")}, true},
		{&net.TCPAddr{}, true}, // addresses net could not read: probes, as before
		{nil, true},
	} {
		if got := Remote(tc.addr); got != tc.remote {
			t.Errorf("Remote(%v) = %v, want %v", tc.addr, got, tc.remote)
		}
	}
}
