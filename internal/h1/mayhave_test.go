package h1

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestMayHave serves requests on one connection and asks MayHave, in the handler, for every
// name the request came with (true) and for names it did not (false, when the request has a
// body): each request's names are its own, not the ones before it on the connection.
func TestMayHave(t *testing.T) {
	type asked struct {
		present, absent map[string]bool
	}
	results := make(chan asked, 8)
	probe := []string{"Origin", "X-Request-Id", "X-Fallback-On", "X-Route-Hint", "X-Hayula-Privacy", "Content-Encoding", "X-Api-Key"}
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := asked{present: map[string]bool{}, absent: map[string]bool{}}
		for k := range r.Header {
			a.present[k] = MayHave(r, k)
		}
		for _, k := range probe {
			if _, ok := r.Header[k]; !ok {
				a.absent[k] = MayHave(r, k)
			}
		}
		_, _ = io.Copy(io.Discard, r.Body)
		results <- a
	}))
	c, br := dialRaw(t, addr)
	sdk := "Accept: application/json\r\nAccept-Encoding: gzip, deflate\r\nAuthorization: Bearer sk-x\r\n" +
		"Content-Type: application/json\r\nUser-Agent: OpenAI/Python 1.99.0\r\nX-Stainless-Lang: python\r\n" +
		"X-Stainless-Package-Version: 1.99.0\r\nX-Stainless-Os: Linux\r\nX-Stainless-Arch: x64\r\n" +
		"X-Stainless-Runtime: CPython\r\nX-Stainless-Runtime-Version: 3.12.3\r\nX-Stainless-Async: false\r\n" +
		"X-Stainless-Retry-Count: 0\r\nX-Stainless-Read-Timeout: 600\r\n"
	for i, tc := range []struct {
		head       string // fields besides Host and the framing
		body       bool
		wantAbsent bool // MayHave says false for every absent probe name
	}{
		{sdk, true, true},
		{sdk + "Origin: http://a\r\nX-Request-Id: r1\r\nX-Route-Hint: code\r\n", true, true},
		{sdk, true, true}, // the last request's Origin is not this one's
		{"x-fallback-on: false\r\nx-hayula-privacy: strict\r\n", true, true},
		{sdk, false, false}, // no body: MayHave cannot tell, and says true
	} {
		method, framing := "POST", "Content-Length: 2\r\n\r\n{}"
		if !tc.body {
			method, framing = "GET", "\r\n"
		}
		if _, err := fmt.Fprintf(c, "%s /v1/x HTTP/1.1\r\nHost: h\r\n%s%s", method, tc.head, framing); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		a := <-results
		for k, may := range a.present {
			if !may {
				t.Errorf("request %d: %s came, and MayHave says it did not", i, k)
			}
		}
		for k, may := range a.absent {
			if may == tc.wantAbsent {
				t.Errorf("request %d: %s did not come, and MayHave says %v", i, k, may)
			}
		}
	}
	// A request this server did not read: MayHave cannot tell.
	r := httptest.NewRequest("POST", "/v1/x", strings.NewReader("{}"))
	if !MayHave(r, "Origin") {
		t.Error("MayHave is false for a request net/http made")
	}
	r = httptest.NewRequest("POST", "/v1/x", nil)
	r.Body = nil
	if !MayHave(r, "Origin") {
		t.Error("MayHave is false for a request without a body")
	}
}

// TestNameBitsOfCommonFields holds nameMul to what it was chosen for: the names the gateway's
// server asks MayHave for that clients seldom send (asked, the names its calls of field pass,
// Authorization aside, which SDKs send) have bits of their own, which none of the fields common
// clients send (the OpenAI SDKs', browsers', proxies' and tracers') shares, so that a request
// from such a client costs no map lookup for them. A collision costs a lookup, not a wrong
// answer; this test fails so that a change of the hash, or a new name asked, is weighed
// knowingly.
func TestNameBitsOfCommonFields(t *testing.T) {
	sent := []string{"Accept", "Accept-Encoding", "Authorization", "Connection", "Content-Length", "Content-Type",
		"User-Agent", "X-Stainless-Lang", "X-Stainless-Package-Version", "X-Stainless-Os", "X-Stainless-Arch",
		"X-Stainless-Runtime", "X-Stainless-Runtime-Version", "X-Stainless-Async", "X-Stainless-Retry-Count",
		"X-Stainless-Read-Timeout", "X-Stainless-Timeout", "Accept-Language", "Sec-Fetch-Mode", "Traceparent",
		"X-Forwarded-For", "X-Forwarded-Proto", "X-Real-Ip", "Openai-Organization", "Openai-Project",
		"Http-Referer", "X-Title", "Tracestate", "Cookie", "Referer", "Sec-Fetch-Site", "Sec-Fetch-Dest",
		"Cache-Control", "Pragma", "Priority", "Sec-Ch-Ua", "X-Forwarded-Host", "Baggage", "Anthropic-Version",
		"X-Amzn-Trace-Id", "Upgrade-Insecure-Requests", "Dnt", "Keep-Alive"}
	asked := []string{"Origin", "Content-Encoding", "X-Fallback-On", "X-Hayula-Privacy", "X-Route-Hint",
		"X-Request-Id", "X-Api-Key"}
	var common uint64
	for _, k := range sent {
		common |= nameBit(k)
	}
	var seen uint64
	for _, k := range asked {
		b := nameBit(k)
		if b&common != 0 {
			t.Errorf("%s shares its bit with a field common clients send", k)
		}
		if b&seen != 0 {
			t.Errorf("%s shares its bit with another name the server asks for", k)
		}
		seen |= b
	}
}

// BenchmarkMayHave is the look at one absent name that MayHave spares, against the map's lookup,
// for the head of Go's own client (four fields: a map of one group, whose lookup compares the
// name with each slot's) and of the OpenAI Python SDK (sixteen: a table, whose lookup hashes it):
// about 9 and 6 ns against 1 on the machine of the thirty-first session.
func BenchmarkMayHave(b *testing.B) {
	for _, h := range []struct{ name, fields string }{
		{"go", "User-Agent: Go-http-client/1.1\r\nContent-Type: application/json\r\nAccept-Encoding: gzip\r\n"},
		{"sdk", "Accept: application/json\r\nAccept-Encoding: gzip, deflate\r\nAuthorization: Bearer sk-x\r\n" +
			"Connection: keep-alive\r\nContent-Type: application/json\r\nUser-Agent: OpenAI/Python 1.99.0\r\n" +
			"X-Stainless-Lang: python\r\nX-Stainless-Package-Version: 1.99.0\r\nX-Stainless-Os: Linux\r\n" +
			"X-Stainless-Arch: x64\r\nX-Stainless-Runtime: CPython\r\nX-Stainless-Runtime-Version: 3.12.3\r\n" +
			"X-Stainless-Async: false\r\nX-Stainless-Retry-Count: 0\r\nX-Stainless-Read-Timeout: 600\r\n"},
	} {
		raw := "POST /v1/chat/completions HTTP/1.1\r\nHost: h\r\n" + h.fields + "Content-Length: 2\r\n\r\n{}"
		c := readerConn(strings.NewReader(raw))
		if err := c.readRequest(); err != nil {
			b.Fatal(err)
		}
		r := &c.base
		b.Run(h.name+"/mayhave", func(b *testing.B) {
			n := 0
			for b.Loop() {
				if MayHave(r, "Origin") {
					n++
				}
			}
			if n != 0 {
				b.Fatal("Origin may have come")
			}
		})
		b.Run(h.name+"/map", func(b *testing.B) {
			n := 0
			for b.Loop() {
				if _, ok := r.Header["Origin"]; ok {
					n++
				}
			}
			if n != 0 {
				b.Fatal("Origin came")
			}
		})
	}
}
