package upstream

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/httpwire"
)

// post sends an adapter's POST to base+path over the synchronous client without building an
// http.Request: the request line and the fixed headers of each endpoint are written once into a
// head kept for it, and a request adds its Accept, key, length and body. It reports false when
// the URL is not one the synchronous client serves; post then uses the http.Client.
//
// The answer's Header may be reused by the connection's next answer once its body has been read
// to the end or closed: read it before the body (statusError copies it).
func (t *h1Transport) post(ctx context.Context, base, path string, tg *core.Target, body *payload, accept, id string) (*http.Response, bool, error) {
	d := t.dest(base, path)
	if d == nil {
		return nil, false, nil
	}
	if !httpwire.ValidValue(string(tg.APIKey)) {
		// It would add lines to the head; net/http refuses such a value too.
		return nil, true, errBadKey
	}
	out := outgoing{post: postRequest{head: d.head, key: tg.APIKey, body: *body, accept: accept, id: id}}
	resp, err := t.do(ctx, d.addr, &out)
	return resp, true, err
}

// lentBody is a buffer for a request body an adapter writes itself (the ollama and saif
// adapters' translated requests, of about the client's body's size), lent by the synchronous
// transport and given back once post has returned, when the body has gone: the synchronous
// client writes it before it reads the answer, and net/http's Transport, which may read a body
// after its RoundTrip, is sent a copy (payload.owned). A new buffer on every request was about
// as much memory again as the client's body, which the collector then had to come for.
type lentBody struct {
	b []byte
	t *h1Transport // nil: not lent, the buffer is the garbage collector's
}

// lendBody lends a lentBody from c's synchronous transport, its buffer empty and of capacity n
// at least; one of net/http's clients gets a new one.
func lendBody(c *http.Client, n int) *lentBody {
	t, ok := c.Transport.(*h1Transport)
	if !ok {
		return &lentBody{b: make([]byte, 0, n)}
	}
	lb, _ := t.bodies.Get().(*lentBody)
	if lb == nil {
		lb = &lentBody{t: t}
	}
	if cap(lb.b) < n {
		lb.b = make([]byte, 0, n)
	}
	lb.b = lb.b[:0]
	return lb
}

// give gives lb back once the body it holds has been sent; a buffer grown past maxKeptBody is
// left to the garbage collector.
func (lb *lentBody) give() {
	if lb.t == nil {
		return
	}
	if cap(lb.b) > maxKeptBody {
		lb.b = nil
	}
	lb.t.bodies.Put(lb)
}

// errBadKey is a target's API key that cannot go into a header field.
var errBadKey = errors.New("upstream: the target's API key holds a control character")

// h1Dest is a target URL as the synchronous client posts to it.
type h1Dest struct {
	addr string
	head []byte // request line, Host, User-Agent, Content-Type and Accept-Encoding
}

// maxDests bounds the endpoints kept for a base URL; an adapter posts to two or three.
const maxDests = 8

// destCache keeps the heads of the endpoints of the base URL last posted to, so that a request
// neither joins the base and the path nor parses the URL. A transport serves one target, whose
// base URL changes only when a managed process restarts on another port; the heads of the old
// one are then dropped.
type destCache struct {
	cur atomic.Pointer[destSet]
}

// destSet is the heads of one base URL's endpoints, never changed once published.
type destSet struct {
	base  string
	dests []destEntry
}

type destEntry struct {
	path string
	d    *h1Dest // nil: not served by the synchronous client
}

func (t *h1Transport) dest(base, path string) *h1Dest {
	cur := t.dests.cur.Load()
	if cur != nil && cur.base == base {
		for i := range cur.dests {
			if cur.dests[i].path == path {
				return cur.dests[i].d
			}
		}
	}
	d := parseDest(base + path)
	next := &destSet{base: base, dests: []destEntry{{path, d}}}
	if cur != nil && cur.base == base {
		if len(cur.dests) >= maxDests {
			return d
		}
		next.dests = append(next.dests, cur.dests...)
	}
	// Two requests that miss at once may each publish theirs; the loser's entry is built again
	// on its next miss.
	t.dests.cur.Store(next)
	return d
}

// parseDest builds the head for rawURL; nil when the synchronous client does not serve it.
func parseDest(rawURL string) *h1Dest {
	u, err := url.Parse(rawURL)
	// A Host that net/http would rewrite (an IPv6 zone, an empty port) is left to it.
	if err != nil || u.Scheme != "http" || u.User != nil || !plainHost(u.Host) {
		return nil
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	head := make([]byte, 0, 128)
	head = append(head, "POST "...)
	head = append(head, u.RequestURI()...)
	head = append(head, " HTTP/1.1\r\nHost: "...)
	head = append(head, u.Host...)
	// Accept-Encoding: identity, as every request says (see checkAnswer).
	head = append(head, "\r\nUser-Agent: hayula-gateway\r\nContent-Type: application/json\r\nAccept-Encoding: identity\r\n"...)
	return &h1Dest{addr: addr, head: head}
}

// postRequest is one POST of a JSON body.
type postRequest struct {
	head   []byte
	key    core.Secret
	body   payload
	accept string
	id     string // the gateway's request ID (X-Request-Id); "" for none. A token (sendableID).
}

func (p *postRequest) write(bw *bufio.Writer) error {
	_, _ = bw.Write(p.head)
	_, _ = bw.Write(p.appendFields(bw.AvailableBuffer()))
	for _, part := range p.body {
		if _, err := bw.Write(part); err != nil {
			return err
		}
	}
	return nil
}

// appendFields appends the fields of the head that change with each request, and the blank
// line that ends it, to b.
func (p *postRequest) appendFields(b []byte) []byte {
	b = append(b, "Accept: "...)
	b = append(b, p.accept...)
	if p.key != "" {
		b = append(b, "\r\nAuthorization: Bearer "...)
		b = append(b, p.key...)
	}
	if p.id != "" {
		b = append(b, "\r\nX-Request-Id: "...)
		b = append(b, p.id...)
	}
	b = append(b, "\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(p.body.len()), 10)
	return append(b, "\r\n\r\n"...)
}
