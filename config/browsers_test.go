package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBrowsersParse(t *testing.T) {
	const key = "\n[[keys]]\nname = \"k\"\nsha256 = \"" + hashTest + "\"\n"
	cfg, err := Parse([]byte(`allowed_hosts = ["AI.home.arpa", "*"]
allowed_origins = ["https://Chat.Example.com", "http://192.168.1.20:3000", "*"]
`+minimal+key), "b.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Browsers{Hosts: []string{"ai.home.arpa"}, AnyHost: true,
		Origins: []string{"https://chat.example.com", "http://192.168.1.20:3000"}, AnyOrigin: true}
	if diff := cmp.Diff(want, cfg.Browsers); diff != "" {
		t.Errorf("Browsers (-want +got):\n%s", diff)
	}
	cfg, err = Parse([]byte("listen = \"localhost:8000\"\n"+minimal), "b.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Browsers{Listen: "localhost"}, cfg.Browsers); diff != "" {
		t.Errorf("listen's name is allowed (-want +got):\n%s", diff)
	}
	for _, bad := range []string{
		`allowed_hosts = ["gateway.lan:8000"]`, `allowed_hosts = ["http://gateway.lan"]`, `allowed_hosts = [""]`,
		`allowed_hosts = ["*.lan"]`, `allowed_origins = ["chat.example.com"]`, `allowed_origins = ["https://a.b/path"]`,
		`allowed_origins = ["https://u:p@a.b"]`, `allowed_hosts = ["*"]`, `allowed_origins = ["*"]`,
	} {
		_, err := Parse([]byte(bad+"\n"+minimal), "b.toml", nil)
		if err == nil || !strings.Contains(err.Error(), "b.toml:1:") || !strings.Contains(err.Error(), "allowed_") {
			t.Errorf("%s: error %v, want one at line 1 naming the key", bad, err)
		}
	}
}

func TestBrowsersAllow(t *testing.T) {
	b := Browsers{Hosts: []string{"gateway.lan"}, Origins: []string{"https://chat.example.com"}}
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"", true}, {"127.0.0.1:8000", true}, {"127.0.0.1", true}, {"[::1]:8000", true}, {"::1", true},
		{"192.168.1.5:8000", true}, {"localhost:8000", true}, {"LOCALHOST", true}, {"app.localhost:8000", true},
		{"localhost.:8000", true}, {"gateway.lan:8000", true}, {"GATEWAY.LAN", true}, {"gateway.lan.", true},
		{"evil.example:8000", false}, {"localhost.evil.example", false}, {"gateway.lan.evil.example", false},
		{"127.0.0.1.nip.io:8000", false}, {"[evil]:8000", false}, {"localhost:1.evil.example", false},
		{"[::1]:1.evil.example", false}, {"gateway.lan:", false},
	} {
		if got := b.AllowHost(tc.host); got != tc.want {
			t.Errorf("AllowHost(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
	for _, tc := range []struct {
		origin string
		want   bool
	}{
		{"", true}, {"http://localhost:3000", true}, {"http://127.0.0.1:5173", true}, {"https://[::1]", true},
		{"http://app.localhost", true}, {"https://chat.example.com", true}, {"HTTPS://CHAT.EXAMPLE.COM", true},
		{"null", false}, {"https://evil.example", false}, {"http://chat.example.com", false},
		{"https://chat.example.com:8443", false}, {"http://192.168.1.5:3000", false}, {"file://", false},
		{"http://localhost.evil.example", false}, {"http://localhost:3000.evil.example", false},
		{"http://[::1]:80.evil.example", false},
	} {
		if got := b.AllowOrigin(tc.origin); got != tc.want {
			t.Errorf("AllowOrigin(%q) = %v, want %v", tc.origin, got, tc.want)
		}
	}
	all := Browsers{AnyHost: true, AnyOrigin: true}
	if !all.AllowHost("evil.example") || !all.AllowOrigin("null") {
		t.Error(`"*" does not allow everything`)
	}
}

// A name allowed with its trailing dot ("gateway.lan.", the fully qualified spelling) allows the
// Host a browser sends for it, with or without the dot: AllowHost compares without it.
func TestAllowedHostTrailingDot(t *testing.T) {
	cfg, err := Parse([]byte("allowed_hosts = [\"gateway.lan.\"]\n"+minimal), "b.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"gateway.lan", "gateway.lan:8000", "gateway.lan.", "GATEWAY.LAN.:8000"} {
		if !cfg.Browsers.AllowHost(h) {
			t.Errorf("AllowHost(%q) = false; Hosts %q", h, cfg.Browsers.Hosts)
		}
	}
}

// A browser serialises an origin without its scheme's default port (RFC 6454 §6.1): an allowed
// origin written with it (":443" on https, ":80" on http) must match what the page sends.
func TestAllowedOriginDefaultPort(t *testing.T) {
	cfg, err := Parse([]byte(`allowed_origins = ["https://chat.example.com:443", "HTTP://a.lan:80", "http://[::2]:80", "https://b.lan:8443", "http://c.lan:443"]
`+minimal), "b.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	b := cfg.Browsers
	for _, o := range []string{"https://chat.example.com", "http://a.lan", "http://[::2]", "https://b.lan:8443", "http://c.lan:443"} {
		if !b.AllowOrigin(o) {
			t.Errorf("AllowOrigin(%q) = false; Origins %q", o, b.Origins)
		}
	}
	for _, o := range []string{"https://b.lan", "http://chat.example.com", "http://c.lan"} {
		if b.AllowOrigin(o) {
			t.Errorf("AllowOrigin(%q) = true: another port or scheme; Origins %q", o, b.Origins)
		}
	}
}

// TestSetListenMovesListenHost: the name a --listen override gives is served, as the file's
// listen would have been, and the file's, under which the gateway does not listen, is not.
func TestSetListenMovesListenHost(t *testing.T) {
	const key = "\n[[keys]]\nname = \"k\"\nsha256 = \"" + hashTest + "\"\n"
	cfg, err := Parse([]byte("listen = \"file.lan:8000\"\nallowed_hosts = [\"extra.lan\"]\n"+minimal+key), "b.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.SetListen("Flag.LAN:9000"); err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{"flag.lan:9000": true, "FLAG.lan": true, "extra.lan": true, "file.lan:8000": false} {
		if got := cfg.Browsers.AllowHost(host); got != want {
			t.Errorf("AllowHost(%q) = %v, want %v", host, got, want)
		}
	}
	if err := cfg.SetListen("127.0.0.1:8000"); err != nil {
		t.Fatal(err)
	}
	if cfg.Browsers.AllowHost("flag.lan") || !cfg.Browsers.AllowHost("extra.lan") {
		t.Errorf("after SetListen to an IP literal: %+v", cfg.Browsers)
	}
	if s := cfg.Summary(); !strings.Contains(s, "browsers: Host IP literals, localhost, extra.lan;") {
		t.Errorf("summary:\n%s", s)
	}
}
