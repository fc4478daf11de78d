package upstream

import (
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// idleTransport bounds the body reads of the answers net/http's Transport serves (https://,
// proxied targets, a Transport template) by the target's idle timeout, as the sweeper does for
// the synchronous client's: each read that waits longer than idle for the upstream's next bytes
// closes the body, which closes the connection (net/http never pools a connection whose body was
// closed before its end), and fails with an *IdleTimeoutError.
type idleTransport struct {
	next   http.RoundTripper // the *http.Transport, or a headTransport over it
	target string
	idle   time.Duration
}

var _ http.RoundTripper = (*idleTransport)(nil)

func (t *idleTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.Body == nil || resp.Body == http.NoBody {
		return resp, err
	}
	resp.Body = &idleBody{body: resp.Body, target: t.target, idle: t.idle}
	return resp, nil
}

// CloseIdleConnections is what http.Client.CloseIdleConnections calls.
func (t *idleTransport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// idleBody times each Read rather than the gaps between reads that returned bytes: a caller that
// does not read (its own client is slow) leaves the upstream's bytes waiting in the socket, and
// that is not the upstream's silence. The timer is made at the first Read and reset on each,
// so a read costs a timer reset and stop, which net/http's per-read cost dwarfs.
type idleBody struct {
	body   io.ReadCloser
	target string
	idle   time.Duration
	timer  *time.Timer
	fired  atomic.Bool // the timer closed the body
}

func (b *idleBody) Read(p []byte) (int, error) {
	if b.timer == nil {
		b.timer = time.AfterFunc(b.idle, b.expire)
	} else {
		b.timer.Reset(b.idle)
	}
	n, err := b.body.Read(p)
	b.timer.Stop()
	if err != nil && b.fired.Load() {
		err = newIdleTimeoutError(b.target, b.idle)
	}
	return n, err
}

// expire runs on the timer's goroutine; net/http allows Close concurrently with Read.
func (b *idleBody) expire() {
	b.fired.Store(true)
	_ = b.body.Close()
}

// Close leaves the timer alone: it may run concurrently with a Read (closeDrained's timer), and
// the timer is stopped by the Read it times.
func (b *idleBody) Close() error { return b.body.Close() }
