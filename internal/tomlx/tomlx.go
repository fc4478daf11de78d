// Package tomlx owns the writing of TOML text that the gateway prints for people to paste or
// keep: one value's quoting, shared by `gateway keygen`'s [[keys]] block (config) and the
// configuration `gateway import litellm` writes (config/litellm).
package tomlx

import (
	"fmt"
	"strings"
)

// String is s as a TOML basic string: quotes and backslashes escaped, control characters as
// \uXXXX. strconv.Quote would not do: TOML has no \x or \a.
func String(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
