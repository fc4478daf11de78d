package server

import (
	"net/http"

	"github.com/hayula/gateway/internal/h1"
)

// field is r.Header[key] for a name in canonical form, without the map's lookup when
// internal/h1 read the request and knows that no field of that name came (h1.MayHave): every
// request is asked for names nearly always absent (Origin, X-Request-Id, Content-Encoding, the
// Hayula options), each a lookup that found nothing. The server adds no field to a request's
// Header, so the answer is the map's. The names its callers pass are listed in internal/h1's
// TestNameBitsOfCommonFields, which keeps their bits apart from the fields clients commonly
// send: a name added to a call here belongs in that list too.
func field(r *http.Request, key string) []string {
	if !h1.MayHave(r, key) {
		return nil
	}
	return r.Header[key]
}
