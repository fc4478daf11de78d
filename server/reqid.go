package server

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"net/http"
	"sync/atomic"
	"unsafe"

	"github.com/hayula/gateway/upstream"
)

// hdrRequestID carries a request's ID both ways: the client's, if it sent a usable one, else the
// gateway's own, in the answer; the same to every target the gateway asks.
const hdrRequestID = "X-Request-Id"

// genIDLen is the length of a generated ID: "req_" and 24 hex digits (96 bits).
const genIDLen = 4 + 24

// requestIDs gives each request its ID. A generated ID is "req_", 8 hex digits of a random 32-bit
// prefix drawn once per server, and 16 of a 64-bit counter that starts at a random value, put
// through splitmix64's finaliser. The finaliser is a bijection of 64-bit words (each step, an
// xor with a right shift or a product by an odd constant, can be undone), so distinct counts
// give distinct IDs: one server repeats an ID only after 2^64 requests. Two servers (a restart, a
// reload) share one only if their random prefixes are equal (2^-32) and their counters' runs
// overlap (about n/2^63 for n requests each). The mixing keeps the IDs from counting the
// gateway's traffic to its clients. A request costs one atomic add and no syscall.
type requestIDs struct {
	prefix [12]byte // "req_" and the prefix's hex digits
	n      atomic.Uint64
	// newID replaces the generator when set (Options.NewRequestID): tests name their requests.
	newID func() string
}

func newRequestIDs(newID func() string) *requestIDs {
	g := &requestIDs{newID: newID}
	var seed [12]byte
	_, _ = rand.Read(seed[:]) // never fails (crypto/rand: it crashes the program instead)
	copy(g.prefix[:], "req_")
	hex.Encode(g.prefix[4:], seed[:4])
	g.n.Store(binary.LittleEndian.Uint64(seed[4:]))
	return g
}

// idBox is a generated ID and the header value that holds it, in one allocation: the bytes and
// the one-element slice a header map needs would otherwise be two (with the string, three).
type idBox struct {
	value [1]string
	b     [genIDLen]byte
}

// next is a new ID, as the one value of a header field. Its string's bytes are b's, written
// once here and never again.
func (g *requestIDs) next() []string {
	box := new(idBox)
	copy(box.b[:], g.prefix[:])
	var x [8]byte
	binary.BigEndian.PutUint64(x[:], mix64(g.n.Add(1)))
	hex.Encode(box.b[len(g.prefix):], x[:])
	box.value[0] = unsafe.String(&box.b[0], len(box.b))
	return box.value[:]
}

// mix64 is splitmix64's finaliser, a bijection of uint64.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// assign gives r its ID and puts it in w's answer, whatever that turns out to be (a whole answer,
// a stream, an error the gateway writes, a 404): as a field line through internal/h1's fielder
// (built in *line, a buffer the caller keeps), else in the header map. The client's X-Request-Id
// is the ID when it sent exactly one that upstream.ValidRequestID accepts; any other is ignored,
// as is an invalid one from Options.NewRequestID.
func (g *requestIDs) assign(w http.ResponseWriter, r *http.Request, line *[]byte) string {
	var value []string
	id := ""
	if v := field(r, hdrRequestID); len(v) == 1 && upstream.ValidRequestID(v[0]) {
		id = v[0]
	} else if g.newID != nil {
		id = g.newID()
	}
	if id == "" || !upstream.ValidRequestID(id) {
		value = g.next()
		id = value[0]
	}
	if f, ok := w.(fielder); ok {
		b := append(append(append((*line)[:0], hdrRequestID+": "...), id...), "\r\n"...)
		*line = b
		f.AddFields(b) // copied: the buffer is the caller's again
		return id
	}
	if value == nil {
		value = []string{id}
	}
	w.Header()[hdrRequestID] = value
	return id
}

// requestIDOf is the ID the recoverer gave the request w answers; "" for a writer it did not wrap.
func requestIDOf(w http.ResponseWriter) string {
	if x, ok := w.(interface{ requestID() string }); ok {
		return x.requestID()
	}
	return ""
}
