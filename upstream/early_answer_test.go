package upstream

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/errmap"
	"github.com/hayula/gateway/internal/conntest"
)

// answersAtOnce is conntest.AnswersAtOnce's upstream, as a URL.
func answersAtOnce(t *testing.T, answer string) string {
	t.Helper()
	return "http://" + conntest.AnswersAtOnce(t, answer)
}

// TestEarlyAnswerStopsTheWrite: an upstream that answers (a 413 with Connection: close) before
// it has read the request's body, and then reads nothing and keeps the connection open, is
// answered with its status, not held until the target's timeout: the write of a body larger
// than the socket buffers stops once the answer has come, and the answer is the attempt's
// failure, which errmap classifies as usual (413: overflow, in the default fallback_on). The
// target's timeout is 30 s; the attempt must end within 10. The synchronous client waited out
// the timeout (and then failed as a timeout) before.
func TestEarlyAnswerStopsTheWrite(t *testing.T) {
	const refusal = `{"error":{"message":"request entity too large"}}`
	answer := "HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\nConnection: close\r\n" +
		"Content-Length: " + strconv.Itoa(len(refusal)) + "\r\n\r\n" + refusal
	body := `{"model":"auto","messages":[{"role":"user","content":"` + strings.Repeat("x", 48<<20) + `"}]}`
	for _, tc := range []struct {
		name string
		tmpl *http.Transport
	}{
		{"synchronous client", nil},
		{"net/http", &http.Transport{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := target(answersAtOnce(t, answer))
			tg.Timeout = 30 * time.Second
			s := NewSet([]*core.Target{tg}, Options{Now: fixedNow, DialTimeout: 2 * time.Second, Transport: tc.tmpl})
			t.Cleanup(s.Close)
			ctx, cancel := context.WithTimeout(context.Background(), generous)
			defer cancel()
			resp, err := s.Chat(ctx, tg, &core.Request{Model: "auto", Body: []byte(body)})
			if err == nil {
				resp.Release()
				t.Fatal("an answer from an upstream that refused the request")
			}
			if ctx.Err() != nil {
				t.Fatalf("the attempt did not end within %v: %v", generous, err)
			}
			se, ok := errors.AsType[*core.StatusError](err)
			if !ok || se.Status != http.StatusRequestEntityTooLarge || !strings.Contains(se.Message, "too large") {
				t.Fatalf("error %v (%T), want the upstream's 413", err, err)
			}
			if d := errmap.Classify(err); d.Class != core.ClassOverflow {
				t.Errorf("classified %s, want overflow", d.Class)
			}
		})
	}
}

// TestEarlyRefusal: what the sweeper takes for a refusal when it comes while the request is
// being written: a status of 300 or more, or bytes that are no status line; a 1xx or 2xx is an
// answer a server may send as it reads, and the write goes on.
func TestEarlyRefusal(t *testing.T) {
	for _, tc := range []struct {
		b    string
		want bool
	}{
		{"HTTP/1.1 413", true},
		{"HTTP/1.0 400", true},
		{"HTTP/1.1 302", true},
		{"HTTP/1.1 503", true},
		{"HTTP/1.1 200", false},
		{"HTTP/1.1 204", false},
		{"HTTP/1.1 100", false},
		{"HTTP/1.1 1x0", true},
		{"HTTP/2.0 200", true},
		{"<html><body>", true},
	} {
		if got := earlyRefusal([]byte(tc.b)); got != tc.want {
			t.Errorf("earlyRefusal(%q) = %v, want %v", tc.b, got, tc.want)
		}
	}
}

// TestEarlyRefusalAfterInformational: an upstream that sends an informational answer (100
// Continue, which RFC 9110 §15.2 lets a server send unasked, or 103 Early Hints) and then
// refuses the request from its head, reading nothing more, is answered with its refusal as one
// that refuses at once is (TestEarlyAnswerStopsTheWrite): the sweeper's peek looked only at the
// first status line, took the 1xx for an answer that lets the write go on, and saw the same 1xx
// at every later look, so the write of a body larger than the socket buffers ran out the target's
// timeout (30 s here; the attempt must end within 10) and failed as a timeout.
func TestEarlyRefusalAfterInformational(t *testing.T) {
	const refusal = `{"error":{"message":"request entity too large"}}`
	final := "HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\nConnection: close\r\n" +
		"Content-Length: " + strconv.Itoa(len(refusal)) + "\r\n\r\n" + refusal
	body := `{"model":"auto","messages":[{"role":"user","content":"` + strings.Repeat("x", 48<<20) + `"}]}`
	for _, tc := range []struct{ name, interim string }{
		{"100 continue", "HTTP/1.1 100 Continue\r\n\r\n"},
		{"103 early hints", "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n\r\n"},
		{"two, bare line ends", "HTTP/1.1 100 Continue\n\nHTTP/1.1 103 Early Hints\nLink: </a>\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := target(answersAtOnce(t, tc.interim+final))
			tg.Timeout = 30 * time.Second
			s := NewSet([]*core.Target{tg}, Options{Now: fixedNow, DialTimeout: 2 * time.Second})
			t.Cleanup(s.Close)
			ctx, cancel := context.WithTimeout(context.Background(), generous)
			defer cancel()
			resp, err := s.Chat(ctx, tg, &core.Request{Model: "auto", Body: []byte(body)})
			if err == nil {
				resp.Release()
				t.Fatal("an answer from an upstream that refused the request")
			}
			if ctx.Err() != nil {
				t.Fatalf("the attempt did not end within %v: %v", generous, err)
			}
			if se, ok := errors.AsType[*core.StatusError](err); !ok || se.Status != http.StatusRequestEntityTooLarge {
				t.Fatalf("error %v (%T), want the upstream's 413", err, err)
			}
		})
	}
}

// TestEarlyVerdict: how the peeked first bytes of an answer that came while its request was
// being written are judged, past whole informational heads: a refusal, an answer that lets the
// write go on, or too few bytes to tell yet.
func TestEarlyVerdict(t *testing.T) {
	const (
		no = iota
		yes
		unsure
	)
	for _, tc := range []struct {
		b    string
		want int
	}{
		{"HTTP/1.1 413 Payload Too Large\r\n", yes},
		{"HTTP/1.1 200 OK\r\n", no},
		{"HTTP/1.1 41", unsure},
		{"<html>", unsure},
		{"<html><body>", yes},
		{"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 413 Payload Too Large\r\n", yes},
		{"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n", no},
		{"HTTP/1.1 100 Continue\r\n\r\n", unsure},
		{"HTTP/1.1 100 Continue\r\n", unsure},
		{"HTTP/1.1 103 Early Hints\nLink: </a>\n\nHTTP/1.0 401 Unauthorized\n", yes},
		{"HTTP/1.1 101 Switching Protocols\r\n\r\n", no},
		{strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", max1xx+1) + "HTTP/1.1 200 OK\r\n", yes},
	} {
		refused, sure := earlyVerdict([]byte(tc.b))
		got := no
		switch {
		case !sure:
			got = unsure
		case refused:
			got = yes
		}
		if got != tc.want {
			t.Errorf("earlyVerdict(%q) = %v, %v", tc.b, refused, sure)
		}
	}
}

// TestEarlySuccessThenNothingIsIdle: an upstream that answers 2xx (its head, no byte of the
// body) before it has read the request's body, and then neither reads nor sends, fails as its
// idle_timeout says once that has passed since the head came, as CONFIG.md has idle_timeout
// count from the head, and as net/http's Transport, which reads such a head while the body is
// still being written, already did on https:// targets. The synchronous client, which reads the
// head only once the whole request is written, held the write until the target's timeout (30 s
// here; the attempt must end within 10) and failed it as "no response", the head that had come
// unread.
func TestEarlySuccessThenNothingIsIdle(t *testing.T) {
	const answer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
	body := `{"model":"auto","messages":[{"role":"user","content":"` + strings.Repeat("x", 48<<20) + `"}]}`
	for _, tc := range []struct {
		name string
		tmpl *http.Transport
	}{
		{"synchronous client", nil},
		{"net/http", &http.Transport{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := target(answersAtOnce(t, answer))
			tg.Timeout, tg.IdleTimeout = 30*time.Second, 100*time.Millisecond
			s := NewSet([]*core.Target{tg}, Options{Now: fixedNow, DialTimeout: 2 * time.Second, Transport: tc.tmpl})
			t.Cleanup(s.Close)
			ctx, cancel := context.WithTimeout(context.Background(), generous)
			defer cancel()
			resp, err := s.Chat(ctx, tg, &core.Request{Model: "auto", Body: []byte(body)})
			if err == nil {
				resp.Release()
				t.Fatal("an answer from an upstream that sent no body")
			}
			if ctx.Err() != nil {
				t.Fatalf("the attempt did not end within %v: %v", generous, err)
			}
			if _, ok := errors.AsType[*IdleTimeoutError](err); !ok {
				t.Errorf("error %v (%T), want the idle timeout", err, err)
			}
			if d := errmap.Classify(err); d.Class != core.ClassTimeout {
				t.Errorf("classified %s, want timeout", d.Class)
			}
		})
	}
}
