package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hayula/gateway/internal/testcert"
)

// keyed is minimal with a key, so that listen may leave loopback.
const keyed = minimal + "\n[[keys]]\nname = \"k\"\nsha256 = \"" + hashTest + "\"\n"

// TestTLSFilesLoad: tls_cert_file and tls_key_file, relative to the config file's directory as
// state_file is, are read as a pair at load; the summary says the gateway serves HTTPS.
func TestTLSFilesLoad(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "tls"), 0o700); err != nil {
		t.Fatal(err)
	}
	c := testcert.Write(t, filepath.Join(dir, "tls"), "cert.pem", "key.pem", 7, time.Now().AddDate(1, 0, 0))
	path := filepath.Join(dir, "gateway.toml")
	src := "listen = \"0.0.0.0:8443\"\ntls_cert_file = \"tls/cert.pem\"\ntls_key_file = \"tls/key.pem\"\n" + keyed
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TLS == nil || cfg.TLS.CertFile != c.CertFile || cfg.TLS.KeyFile != c.KeyFile {
		t.Fatalf("TLS = %+v, want the files %s and %s", cfg.TLS, c.CertFile, c.KeyFile)
	}
	if got := cfg.TLS.Certificate.Leaf.SerialNumber; got.Cmp(c.Serial) != 0 {
		t.Errorf("the certificate loaded has serial %v, want %v", got, c.Serial)
	}
	if s := cfg.Summary(); !strings.Contains(s, "https: certificate "+c.CertFile) {
		t.Errorf("the summary does not say it serves HTTPS:\n%s", s)
	}
	if ws := cfg.Warnings(); len(ws) > 0 {
		t.Errorf("warnings for a keyed gateway serving HTTPS off loopback: %q", ws)
	}

	plain, err := Parse([]byte(keyed), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if plain.TLS != nil {
		t.Errorf("a file without the keys serves HTTPS: %+v", plain.TLS)
	}
}

// TestTLSLoadErrors: a missing, unreadable or mismatched file fails the load with a message that
// names the file and what is wrong with it; an expired certificate loads, with a warning.
func TestTLSLoadErrors(t *testing.T) {
	dir := t.TempDir()
	good := testcert.Write(t, dir, "cert.pem", "key.pem", 1, time.Now().AddDate(1, 0, 0))
	other := testcert.Write(t, dir, "other.pem", "other-key.pem", 2, time.Now().AddDate(1, 0, 0))
	expired := testcert.Write(t, dir, "old.pem", "old-key.pem", 3, time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC))
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o700); err != nil {
		t.Fatal(err)
	}
	files := func(cert, key string) string {
		return "tls_cert_file = \"" + cert + "\"\ntls_key_file = \"" + key + "\"\n" + minimal
	}
	tests := []struct {
		name, src string
		want      []string // in the one error
	}{
		{"cert without key", "tls_cert_file = \"cert.pem\"\n" + minimal, []string{"tls_cert_file", "without tls_key_file"}},
		{"key without cert", "tls_key_file = \"key.pem\"\n" + minimal, []string{"tls_key_file", "without tls_cert_file"}},
		{"empty", files("", "key.pem"), []string{"tls_cert_file: empty"}},
		{"missing", files("nope.pem", "key.pem"), []string{"tls_cert_file", filepath.Join(dir, "nope.pem"), "does not exist", "relative to the config file's directory"}},
		{"unreadable", files("cert.pem", "adir"), []string{"tls_key_file", "cannot read " + filepath.Join(dir, "adir"), "is a directory"}},
		{"not a certificate", files("key.pem", "key.pem"), []string{"tls_cert_file", good.KeyFile, "no PEM certificate", "swapped"}},
		{"not a key", files("cert.pem", "cert.pem"), []string{"tls_key_file", good.CertFile, "no PEM private key", "swapped"}},
		{"not a pair", files("cert.pem", "other-key.pem"), []string{"tls_key_file", other.KeyFile + " is not the key of the certificate in " + good.CertFile}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src), filepath.Join(dir, "gateway.toml"), nil)
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}

	cfg, err := Parse([]byte(files("old.pem", "old-key.pem")), filepath.Join(dir, "gateway.toml"), nil)
	if err != nil {
		t.Fatalf("an expired certificate does not load: %v", err)
	}
	ws := strings.Join(cfg.Warnings(), "\n")
	if !strings.Contains(ws, expired.CertFile) || !strings.Contains(ws, "expired on 2001-01-01") {
		t.Errorf("no warning that %s expired: %q", expired.CertFile, ws)
	}
}

// TestKeysInClearWarned: a gateway with keys that listens off loopback without TLS warns that
// the keys travel in clear, whether the file or --listen (SetListen) takes it off loopback.
func TestKeysInClearWarned(t *testing.T) {
	const warning = "travel over the network in clear"
	for _, tt := range []struct {
		name, src, listen string
		want              bool
	}{
		{"loopback", keyed, "", false},
		{"file off loopback", "listen = \"0.0.0.0:8000\"\n" + keyed, "", true},
		{"--listen off loopback", keyed, "192.168.1.5:8000", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tt.src), "g.toml", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.listen != "" {
				if err := cfg.SetListen(tt.listen); err != nil {
					t.Fatal(err)
				}
			}
			ws := strings.Join(cfg.Warnings(), "\n")
			if got := strings.Contains(ws, warning); got != tt.want {
				t.Errorf("warned %v, want %v: %q", got, tt.want, ws)
			}
			if got := strings.Contains(cfg.Summary(), warning); got != tt.want {
				t.Errorf("check-config's summary warns %v, want %v", got, tt.want)
			}
		})
	}
}
