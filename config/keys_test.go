package config

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNewKey(t *testing.T) {
	seen := map[string]bool{}
	for range 3 {
		key, sum, err := NewKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(key, "hk-") || len(key) != 3+43 {
			t.Errorf("key %q: want hk- and 43 characters", key)
		}
		if raw, err := base64.RawURLEncoding.DecodeString(key[3:]); err != nil || len(raw) != 32 {
			t.Errorf("key %q: not 32 bytes of base64url (%v)", key, err)
		}
		h := sha256.Sum256([]byte(key))
		if sum != hex.EncodeToString(h[:]) {
			t.Errorf("NewKey hash %s does not match sha256(%q)", sum, key)
		}
		if seen[key] {
			t.Errorf("NewKey repeated %q", key)
		}
		seen[key] = true
	}
}

func TestNewKeyUsesTheReader(t *testing.T) {
	zeros := bytes.NewReader(make([]byte, 32))
	key, _, err := NewKey(zeros)
	if err != nil {
		t.Fatal(err)
	}
	if want := "hk-" + strings.Repeat("A", 43); key != want {
		t.Errorf("NewKey(zeros) = %q, want %q", key, want)
	}
	if _, _, err := NewKey(bytes.NewReader(make([]byte, 31))); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("NewKey(short reader) error = %v, want io.ErrUnexpectedEOF", err)
	}
}

// TestKeyTOMLAuthenticates goes the whole way: keygen → pasted block → Parse → Authenticate.
func TestKeyTOMLAuthenticates(t *testing.T) {
	key, sum, err := NewKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	name := `lap"top\1`
	block := KeyTOML(name, sum)
	cfg, err := Parse([]byte(minimal+block), "k.toml", nil)
	if err != nil {
		t.Fatalf("Parse(minimal + KeyTOML):\n%s\n%v", block, err)
	}
	k, ok := cfg.Authenticate(key)
	if !ok || k.Name != name {
		t.Errorf("Authenticate(new key) = %v, %v; want the key named %q", k, ok, name)
	}
}

func TestKeyTOML(t *testing.T) {
	got := KeyTOML("laptop", "ab12")
	want := "[[keys]]\nname   = \"laptop\"\nsha256 = \"ab12\"\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("KeyTOML mismatch (-want +got):\n%s", diff)
	}
}

func TestAuthenticate(t *testing.T) {
	doc := "listen = \"0.0.0.0:8000\"\n" + minimal + KeyTOML("first", hashTest) +
		KeyTOML("second", "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9") // "hello world"
	cfg, err := Parse([]byte(doc), "auth.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	open, err := Parse([]byte(minimal), "open.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		cfg   *Config
		token string
		want  string // key name; "" = refused
	}{
		{"first key", cfg, "test", "first"},
		{"last key", cfg, "hello world", "second"},
		{"wrong key", cfg, "tesT", ""},
		{"empty token", cfg, "", ""},
		{"hash instead of key", cfg, hashTest, ""},
		{"no keys configured", open, "test", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, ok := tc.cfg.Authenticate(tc.token)
			got := ""
			if ok {
				got = k.Name
			}
			if got != tc.want || ok != (tc.want != "") || (k == nil) == ok {
				t.Errorf("Authenticate(%q) = %v, %v; want key %q", tc.token, k, ok, tc.want)
			}
		})
	}
	// The key returned is the config's own, so that identity comparisons work.
	if k, _ := cfg.Authenticate("test"); k != &cfg.Keys[0] {
		t.Error("Authenticate returned a copy of the key")
	}
}

func TestKeyAllows(t *testing.T) {
	all := Key{Name: "all"}
	some := Key{Name: "some", Routes: map[string]bool{"saif": true, "auto": true}}
	tests := []struct {
		key   Key
		route string
		want  bool
	}{
		{all, "anything", true},
		{some, "saif", true},
		{some, "auto", true},
		{some, "fast", false},
	}
	for _, tc := range tests {
		t.Run(tc.key.Name+"/"+tc.route, func(t *testing.T) {
			if got := tc.key.Allows(tc.route); got != tc.want {
				t.Errorf("Allows(%q) = %v, want %v", tc.route, got, tc.want)
			}
		})
	}
}
