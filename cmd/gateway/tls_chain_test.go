package main

import (
	"bytes"
	"crypto/tls"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/internal/testcert"
	"github.com/hayula/gateway/server"
)

// TestReloadServesAFixedChain: a reload whose certificate file now holds the same server
// certificate with the intermediate that was missing (the fix for clients that say "unknown
// authority") serves the new chain; it was kept out because the server's certificate alone was
// compared.
func TestReloadServesAFixedChain(t *testing.T) {
	dir := t.TempDir()
	leaf := testcert.Write(t, dir, "cert.pem", "key.pem", 7, time.Now().AddDate(1, 0, 0))
	inter := testcert.Write(t, dir, "inter.pem", "inter-key.pem", 8, time.Now().AddDate(1, 0, 0))
	read := func(path string) []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	key := read(leaf.KeyFile)
	alone, err := tls.X509KeyPair(read(leaf.CertFile), key)
	if err != nil {
		t.Fatal(err)
	}
	chained, err := tls.X509KeyPair(append(read(leaf.CertFile), read(inter.CertFile)...), key)
	if err != nil {
		t.Fatal(err)
	}
	r := &reloader{log: slog.New(slog.DiscardHandler), certs: server.NewCertificates(&alone)}
	r.renewCertificate(&config.Config{TLS: &config.TLS{CertFile: leaf.CertFile, KeyFile: leaf.KeyFile, Certificate: &chained}})
	got := r.certs.Current().Certificate
	if len(got) != 2 || !bytes.Equal(got[1], inter.Leaf.Raw) {
		t.Fatalf("after the reload the chain served is %d certificates, want the server's and the intermediate", len(got))
	}
}
