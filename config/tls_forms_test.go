package config

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chainFor makes a CA, an intermediate it signs, and a leaf for key the intermediate signs, and
// returns the leaf's and the intermediate's DER.
func chainFor(t *testing.T, key crypto.Signer) (leaf, inter []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	interKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "root"}, NotBefore: now.Add(-time.Hour),
		NotAfter: now.AddDate(1, 0, 0), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	it := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "intermediate"}, NotBefore: now.Add(-time.Hour),
		NotAfter: now.AddDate(1, 0, 0), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	lf := &x509.Certificate{SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "gateway.lan"}, DNSNames: []string{"gateway.lan"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(1, 0, 0), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	if inter, err = x509.CreateCertificate(rand.Reader, it, ca, &interKey.PublicKey, caKey); err != nil {
		t.Fatal(err)
	}
	if leaf, err = x509.CreateCertificate(rand.Reader, lf, it, key.Public(), interKey); err != nil {
		t.Fatal(err)
	}
	return leaf, inter
}

func pemOf(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// TestTLSKeyFormsAndChain: an RSA, ECDSA or Ed25519 key in each PEM form openssl and certbot write
// (PKCS #8, PKCS #1, SEC1) loads, and a certificate file with a chain (the leaf, then an
// intermediate) is kept whole and in order, the leaf first, to be served so.
func TestTLSKeyFormsAndChain(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8 := func(k any) []byte {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pemOf("PRIVATE KEY", der)
	}
	sec1, err := x509.MarshalECPrivateKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		key  crypto.Signer
		pem  []byte
	}{
		{"RSA PKCS#8", rsaKey, pkcs8(rsaKey)},
		{"RSA PKCS#1", rsaKey, pemOf("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey))},
		{"ECDSA PKCS#8", ecKey, pkcs8(ecKey)},
		{"ECDSA SEC1", ecKey, pemOf("EC PRIVATE KEY", sec1)},
		{"Ed25519 PKCS#8", edKey, pkcs8(edKey)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			leaf, inter := chainFor(t, tt.key)
			writeTestFile(t, filepath.Join(dir, "fullchain.pem"), append(pemOf("CERTIFICATE", leaf), pemOf("CERTIFICATE", inter)...))
			writeTestFile(t, filepath.Join(dir, "privkey.pem"), tt.pem)
			src := "tls_cert_file = \"fullchain.pem\"\ntls_key_file = \"privkey.pem\"\n" + minimal
			cfg, err := Parse([]byte(src), filepath.Join(dir, "gateway.toml"), nil)
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.TLS.Certificate.Certificate
			if len(got) != 2 || !bytes.Equal(got[0], leaf) || !bytes.Equal(got[1], inter) {
				t.Errorf("the chain loaded is %d certificates, want the leaf then the intermediate", len(got))
			}
			if cfg.TLS.Certificate.Leaf.Subject.CommonName != "gateway.lan" {
				t.Errorf("Leaf is %q, want the first certificate", cfg.TLS.Certificate.Leaf.Subject.CommonName)
			}
		})
	}
}

// TestTLSKeyUnusableSaid: a key the gateway cannot use (encrypted, in PKCS #8's or the old
// OpenSSL form, or damaged) and a certificate that does not parse are said as what they are,
// with the file's path, not as a key that is not the certificate's; and no error repeats the
// key's bytes.
func TestTLSKeyUnusableSaid(t *testing.T) {
	dir := t.TempDir()
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := chainFor(t, ecKey)
	writeTestFile(t, filepath.Join(dir, "cert.pem"), pemOf("CERTIFICATE", leaf))
	secret := bytes.Repeat([]byte{0x5a}, 64) // "ZZZZ…" in the base64 of the PEM
	writeTestFile(t, filepath.Join(dir, "pkcs8-enc.pem"), pemOf("ENCRYPTED PRIVATE KEY", secret))
	writeTestFile(t, filepath.Join(dir, "legacy-enc.pem"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY",
		Headers: map[string]string{"Proc-Type": "4,ENCRYPTED", "DEK-Info": "AES-128-CBC,00112233445566778899AABBCCDDEEFF"}, Bytes: secret}))
	writeTestFile(t, filepath.Join(dir, "damaged.pem"), pemOf("PRIVATE KEY", secret))
	writeTestFile(t, filepath.Join(dir, "bad-cert.pem"), pemOf("CERTIFICATE", secret))
	sec1, err := x509.MarshalECPrivateKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "key.pem"), pemOf("EC PRIVATE KEY", sec1))
	files := func(cert, key string) string {
		return "tls_cert_file = \"" + cert + "\"\ntls_key_file = \"" + key + "\"\n" + minimal
	}
	for _, tt := range []struct {
		name, src string
		want      []string
	}{
		{"PKCS#8 encrypted", files("cert.pem", "pkcs8-enc.pem"), []string{"tls_key_file", filepath.Join(dir, "pkcs8-enc.pem"), "is encrypted", "openssl"}},
		{"OpenSSL encrypted", files("cert.pem", "legacy-enc.pem"), []string{"tls_key_file", filepath.Join(dir, "legacy-enc.pem"), "is encrypted", "openssl"}},
		{"damaged key", files("cert.pem", "damaged.pem"), []string{"tls_key_file", filepath.Join(dir, "damaged.pem"), "cannot be parsed"}},
		{"damaged certificate", files("bad-cert.pem", "key.pem"), []string{"tls_cert_file", filepath.Join(dir, "bad-cert.pem"), "cannot be parsed"}},
	} {
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
			if strings.Contains(err.Error(), "is not the key of the certificate") {
				t.Errorf("error %q says the key is not the certificate's", err)
			}
			if strings.Contains(err.Error(), "ZZZZ") {
				t.Errorf("error %q repeats the key file's bytes", err)
			}
		})
	}
}

func writeTestFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestTLSChainOutOfOrderSaid: a chain put together by hand with the intermediate first has the
// right key, in the wrong order; the load says so, naming the place of the key's certificate,
// rather than that the key is not the certificate's.
func TestTLSChainOutOfOrderSaid(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	leaf, inter := chainFor(t, key)
	writeTestFile(t, filepath.Join(dir, "chain.pem"), append(pemOf("CERTIFICATE", inter), pemOf("CERTIFICATE", leaf)...))
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "key.pem"), pemOf("PRIVATE KEY", der))
	src := "tls_cert_file = \"chain.pem\"\ntls_key_file = \"key.pem\"\n" + minimal
	_, err = Parse([]byte(src), filepath.Join(dir, "gateway.toml"), nil)
	if err == nil || !strings.Contains(err.Error(), "certificate 2 of the file") || !strings.Contains(err.Error(), "must come first") {
		t.Fatalf("load: %v; want the key's certificate named as the file's second, and the order asked for", err)
	}
}
