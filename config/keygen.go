package config

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/hayula/gateway/internal/tomlx"
)

// KeyPrefix starts every key NewKey makes, so that a leaked key is easy to recognise and grep for.
const KeyPrefix = "hk-"

// NewKey makes a new random API key ("hk-" and 43 characters of base64url: 32 bytes from rand,
// pass crypto/rand.Reader) and the hex SHA-256 to store in the config.
func NewKey(rand io.Reader) (key, sha256hex string, err error) {
	var b [32]byte
	if _, err := io.ReadFull(rand, b[:]); err != nil {
		return "", "", fmt.Errorf("config: reading randomness for a key: %w", err)
	}
	key = KeyPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	sum := sha256.Sum256([]byte(key))
	return key, hex.EncodeToString(sum[:]), nil
}

// KeyTOML renders the [[keys]] block to paste into the config.
func KeyTOML(name, sha256hex string) string {
	return fmt.Sprintf("[[keys]]\nname   = %s\nsha256 = %s\n", tomlx.String(name), tomlx.String(sha256hex))
}
