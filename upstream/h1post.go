package upstream

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/httpwire"
)

// post sends an adapter's POST over the synchronous client without building an http.Request:
// the request line and the fixed headers of each target URL are written once into a head kept
// for the URL, and a request adds its Accept, key, length and body. It reports false when the
// URL is not one the synchronous client serves; post then uses the http.Client.
func (t *h1Transport) post(ctx context.Context, rawURL string, tg *core.Target, body payload, accept string) (*http.Response, bool, error) {
	d := t.dest(rawURL)
	if d == nil {
		return nil, false, nil
	}
	if !httpwire.ValidValue(string(tg.APIKey)) {
		// It would add lines to the head; net/http refuses such a value too.
		return nil, true, errBadKey
	}
	out := outgoing{post: postRequest{head: d.head, key: tg.APIKey, body: body, accept: accept}}
	resp, err := t.do(ctx, d.addr, &out)
	return resp, true, err
}

// errBadKey is a target's API key that cannot go into a header field.
var errBadKey = errors.New("upstream: the target's API key holds a control character")

// h1Dest is a target URL as the synchronous client posts to it.
type h1Dest struct {
	addr string
	head []byte // request line, Host, User-Agent and Content-Type
}

// maxDests bounds the heads kept per transport; a managed target's port moves only when its
// process restarts, so a transport sees few URLs.
const maxDests = 32

type destCache struct {
	m sync.Map // URL → *h1Dest
	n atomic.Int32
}

func (t *h1Transport) dest(rawURL string) *h1Dest {
	if d, ok := t.dests.m.Load(rawURL); ok {
		return d.(*h1Dest)
	}
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
	head = append(head, "\r\nUser-Agent: hayula-gateway\r\nContent-Type: application/json\r\n"...)
	d := &h1Dest{addr: addr, head: head}
	if t.dests.n.Add(1) <= maxDests {
		t.dests.m.Store(rawURL, d)
	}
	return d
}

// postRequest is one POST of a JSON body.
type postRequest struct {
	head   []byte
	key    core.Secret
	body   payload
	accept string
}

func (p *postRequest) write(bw *bufio.Writer) error {
	_, _ = bw.Write(p.head)
	_, _ = bw.WriteString("Accept: ")
	_, _ = bw.WriteString(p.accept)
	if p.key != "" {
		_, _ = bw.WriteString("\r\nAuthorization: Bearer ")
		_, _ = bw.WriteString(string(p.key))
	}
	_, _ = bw.WriteString("\r\nContent-Length: ")
	_, _ = bw.Write(strconv.AppendInt(bw.AvailableBuffer(), int64(p.body.len()), 10))
	_, _ = bw.WriteString("\r\n\r\n")
	for _, part := range p.body {
		if _, err := bw.Write(part); err != nil {
			return err
		}
	}
	return nil
}
