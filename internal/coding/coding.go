// Package coding reads a body that came in a content coding the gateway asked not to get
// (Accept-Encoding: identity): some servers, or a reverse proxy in front of them, code every
// answer anyway. Its words are what tell a loading model, an overflow or a bad key, so the
// upstream client reads a non-2xx answer's, and the health checker a check's, decoded when the
// coding is one the standard library decodes. It imports nothing of ours.
package coding

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"io"
	"strings"
)

// Identity reports whether the Content-Encoding values ce name no coding but identity.
func Identity(ce []string) bool {
	for _, v := range ce {
		for v != "" {
			var c string
			c, v, _ = strings.Cut(v, ",")
			if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
				return false
			}
		}
	}
	return true
}

// Decode is a body in the content codings ce decoded, at most limit bytes of it, as a plain body
// is cut; decoded is false when ce names other than one coding of gzip, x-gzip and deflate
// (identity aside), or the body does not decode. What is kept is the decoded bytes, never the
// coded ones: a small body that decodes to gigabytes (a gzip bomb) costs limit bytes (upstream's
// TestCodedErrorBodyBounded). At most
// twice limit is read of the coded body, which a limit on the decoded bytes cannot bound: one
// that codes nothing (gzip members of no data, one after another) would be read to its end for
// none; twice holds any body that decodes to limit, whose coding adds a few bytes a block to
// what does not compress. "deflate" is zlib's format (RFC 9110 §8.4.1.2), but some servers send
// raw DEFLATE under that name, as browsers accept: a body that does not open with a zlib header
// is read as raw.
func Decode(ce []string, r io.Reader, limit int64) (body []byte, decoded bool) {
	coding := ""
	for _, v := range ce {
		for v != "" {
			var c string
			c, v, _ = strings.Cut(v, ",")
			if c = strings.TrimSpace(c); c == "" || strings.EqualFold(c, "identity") {
				continue
			}
			if coding != "" {
				return nil, false // stacked codings: none seen in the wild, and none decoded
			}
			coding = strings.ToLower(c)
		}
	}
	in := bufio.NewReader(io.LimitReader(r, 2*limit))
	if _, err := in.Peek(1); err == io.EOF {
		// No body at all, coded or not: nothing to decode, as a plain empty body has no words.
		return nil, coding == "gzip" || coding == "x-gzip" || coding == "deflate"
	}
	var dec io.Reader
	switch coding {
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(in)
		if err != nil {
			return nil, false
		}
		dec = zr
	case "deflate":
		if head, err := in.Peek(2); err == nil && zlibHeader(head) {
			zr, err := zlib.NewReader(in)
			if err != nil {
				return nil, false
			}
			dec = zr
		} else {
			dec = flate.NewReader(in)
		}
	default:
		return nil, false
	}
	body, err := io.ReadAll(io.LimitReader(dec, limit))
	if err != nil {
		return nil, false
	}
	return body, true
}

// zlibHeader reports whether head, a body's first two bytes, is a zlib header (RFC 1950 §2.2):
// DEFLATE's method with a window of at most 32 KiB, and a check that makes the pair a multiple
// of 31. Raw DEFLATE opening so would be a stored block with its padding bits set, which no
// compressor writes.
func zlibHeader(head []byte) bool {
	cmf, flg := head[0], head[1]
	return cmf&0x0f == 8 && cmf>>4 <= 7 && (uint16(cmf)<<8|uint16(flg))%31 == 0
}
