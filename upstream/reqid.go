package upstream

import (
	"net/http"
	"strings"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/swar"
)

// hdrRequestID is the field a request's ID travels in, both ways, in canonical form: indexed
// directly, it is neither canonicalised nor copied on every request.
const hdrRequestID = "X-Request-Id"

// MaxRequestID is the longest request ID passed on: nginx's $request_id is 32 bytes, a UUID
// 36, and nothing that identifies a request needs more than 128.
const MaxRequestID = 128

// ValidRequestID reports whether id can identify a request: 1 to MaxRequestID bytes of
// printable ASCII with no space and no comma. Such a value goes into a header field, and into a
// log line, as it is: it can neither end the field nor be mistaken for another key=value pair.
// A comma would make it a list (RFC 9110, 5.3: "a,b" is two field lines joined), which a target
// or a proxy before it may split into two IDs: the gateway refuses two X-Request-Id lines, and
// must refuse their join too.
func ValidRequestID(id string) bool {
	if id == "" || len(id) > MaxRequestID {
		return false
	}
	// Eight bytes a step (swar): the gateway's own IDs are 28 bytes, checked on every request.
	i := 0
	for ; i < len(id)-7; i += 8 {
		if notInID(swar.Word(id, i)) {
			return false
		}
	}
	return !notInID(swar.Short(id[i:], 'a'))
}

// notInID reports whether a byte of the word x is one an ID may not hold: a space, a control
// character, a comma, DEL or a byte above it.
func notInID(x uint64) bool {
	return swar.Below(x, '!')|swar.Is(x, ',')|swar.Is(x, 0x7f)|swar.High(x) != 0
}

// upstreamID is the upstream's own ID for the request, from its answer's X-Request-Id; "" when it
// sent none, one that is not a valid ID, or one that holds key, the target's key (it goes into
// the log line as it is, and an upstream that echoes the Authorization it got into its ID
// would put the key there: TestUpstreamIDHoldingKeyNotRead). Read it before the body: the
// synchronous client's next answer on the connection may reuse the header.
func upstreamID(resp *http.Response, key core.Secret) string {
	if v := resp.Header[hdrRequestID]; len(v) > 0 && ValidRequestID(v[0]) &&
		(key == "" || !strings.Contains(v[0], string(key))) {
		return v[0]
	}
	return ""
}
