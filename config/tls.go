package config

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// TLS is the certificate the gateway serves HTTPS with, read and checked as a pair at load.
type TLS struct {
	// CertFile and KeyFile are tls_cert_file and tls_key_file, a relative path resolved against
	// the config file's directory.
	CertFile, KeyFile string
	// Certificate is the pair as it was read; its Leaf is the first certificate of CertFile.
	Certificate *tls.Certificate
}

// Expired reports whether the served certificate is past its NotAfter at now.
func (t *TLS) Expired(now time.Time) bool { return now.After(t.Certificate.Leaf.NotAfter) }

// tls compiles tls_cert_file and tls_key_file: both or neither, each a PEM file that can be read,
// the two a pair. An expired certificate loads (Warnings says so): the gateway serving it is
// better than a gateway that does not start, and certbot's renewal then takes a reload.
func (c *compiler) tls(raw *fileTOML, source string) *TLS {
	cert, key := raw.TLSCertFile, raw.TLSKeyFile
	switch {
	case cert == nil && key == nil:
		return nil
	case cert == nil:
		c.errorf([]string{"tls_key_file"}, "set without tls_cert_file: give both (PEM files) to serve HTTPS, or neither for plain HTTP")
		return nil
	case key == nil:
		c.errorf([]string{"tls_cert_file"}, "set without tls_key_file: give both (PEM files) to serve HTTPS, or neither for plain HTTP")
		return nil
	}
	certPath, certPEM := c.tlsFile("tls_cert_file", *cert, source)
	keyPath, keyPEM := c.tlsFile("tls_key_file", *key, source)
	if certPEM == nil || keyPEM == nil {
		return nil
	}
	ok := true
	if b, _ := pem.Decode(certPEM); b == nil || b.Type != "CERTIFICATE" {
		c.errorf([]string{"tls_cert_file"}, "%s holds no PEM certificate (-----BEGIN CERTIFICATE-----)%s", certPath, swapped(b))
		ok = false
	}
	kb := firstKey(keyPEM)
	if kb == nil {
		what := ""
		if b, _ := pem.Decode(keyPEM); b != nil && b.Type == "CERTIFICATE" {
			what = " (it holds a certificate: are the two files swapped?)"
		}
		c.errorf([]string{"tls_key_file"}, "%s holds no PEM private key (-----BEGIN … PRIVATE KEY-----)%s", keyPath, what)
		ok = false
	}
	if !ok || !c.tlsParses(certPath, certPEM, keyPath, kb) {
		return nil
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		if n := keysCertificate(certPEM, keyPEM); n > 1 {
			// A chain put together by hand, the intermediate first: the key is right, the order
			// is not (TestTLSChainOutOfOrderSaid).
			c.errorf([]string{"tls_cert_file"}, "%s: the key in %s is the key of certificate %d of the file, and the server's "+
				"certificate must come first, then its intermediates (as certbot's fullchain.pem has them)", certPath, keyPath, n)
			return nil
		}
		c.errorf([]string{"tls_key_file"}, "%s is not the key of the certificate in %s: %s", keyPath, certPath,
			strings.TrimPrefix(err.Error(), "tls: "))
		return nil
	}
	return &TLS{CertFile: certPath, KeyFile: keyPath, Certificate: &pair}
}

// tlsParses reports whether every certificate in certPEM and the key block kb parse, and says
// what is wrong with a file when they do not: tls.X509KeyPair fails an encrypted key, a damaged
// one and a damaged certificate alike, which the load then said as a key that is not the
// certificate's (TestTLSKeyUnusableSaid). No error repeats a byte of either file.
func (c *compiler) tlsParses(certPath string, certPEM []byte, keyPath string, kb *pem.Block) bool {
	ok := true
	for i, rest := 1, certPEM; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			c.errorf([]string{"tls_cert_file"}, "%s: certificate %d of the file cannot be parsed (%s)", certPath, i,
				strings.TrimPrefix(err.Error(), "x509: "))
			ok = false
			break
		}
		i++
	}
	switch {
	case kb.Type == "ENCRYPTED PRIVATE KEY" || strings.Contains(kb.Headers["Proc-Type"], "ENCRYPTED"):
		c.errorf([]string{"tls_key_file"}, "%s is encrypted, and the gateway asks for no passphrase: write the key decrypted "+
			"(openssl pkey -in %s -out key.pem), readable by the gateway's user alone", keyPath, keyPath)
		return false
	case !parsesAsKey(kb.Bytes):
		c.errorf([]string{"tls_key_file"}, "%s: the private key cannot be parsed (a %s block; PKCS #8, PKCS #1 or SEC1 expected)",
			keyPath, kb.Type)
		return false
	}
	return ok
}

// keysCertificate is the place (from 1) among certPEM's certificates of the one keyPEM is the key
// of; 0 when none is.
func keysCertificate(certPEM, keyPEM []byte) int {
	for i, rest := 1, certPEM; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return 0
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		if _, err := tls.X509KeyPair(pem.EncodeToMemory(b), keyPEM); err == nil {
			return i
		}
		i++
	}
}

// parsesAsKey reports whether der is a private key in one of the forms tls.X509KeyPair reads.
func parsesAsKey(der []byte) bool {
	if _, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return true
	}
	if _, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		return true
	}
	_, err := x509.ParseECPrivateKey(der)
	return err == nil
}

// swapped says, after a certificate file found without a certificate, that it holds a key.
func swapped(b *pem.Block) string {
	if b != nil && strings.HasSuffix(b.Type, "PRIVATE KEY") {
		return " (it holds a private key: are the two files swapped?)"
	}
	return ""
}

// firstKey is the first PEM private key block in data, as tls.X509KeyPair looks for it.
func firstKey(data []byte) *pem.Block {
	for {
		b, rest := pem.Decode(data)
		if b == nil {
			return nil
		}
		if b.Type == "PRIVATE KEY" || strings.HasSuffix(b.Type, " PRIVATE KEY") {
			return b
		}
		data = rest
	}
}

// tlsFile resolves the file key names, as state_file is resolved, and reads it; nil when it
// cannot, the error said.
func (c *compiler) tlsFile(key, name, source string) (string, []byte) {
	if name == "" {
		c.errorf([]string{key}, "empty; leave tls_cert_file and tls_key_file out to serve plain HTTP")
		return "", nil
	}
	path := filepath.Clean(name)
	if !filepath.IsAbs(name) {
		// Relative to the config, not to wherever the gateway was started from.
		path = filepath.Join(filepath.Dir(source), name)
	}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		c.errorf([]string{key}, "%s does not exist%s", path, relativeNote(name, path))
		return path, nil
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		c.errorf([]string{key}, "cannot read %s: %v", path, err)
		return path, nil
	}
	return path, data
}

// relativeNote says where a relative name was looked for, when the path does not show it.
func relativeNote(name, path string) string {
	if filepath.IsAbs(name) {
		return ""
	}
	return fmt.Sprintf(" (%q is relative to the config file's directory)", name)
}
