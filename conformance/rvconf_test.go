package conformance

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// silentChat takes every chat completion request and never answers it: no status, no header.
type silentChat struct{ next http.Handler }

func (s silentChat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/chat/completions" {
		// Read to the end, so that the server notices the client hang up.
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
		return
	}
	s.next.ServeHTTP(w, r)
}

// TestSilentChatNamesTheTimeout: a server that takes a chat request and never answers fails
// every check whose request it was, each saying that --timeout ran out before the answer began;
// the sdk.* checks as well as the raw ones, where "context deadline exceeded" alone named
// neither the flag nor what it cut short.
func TestSilentChatNamesTheTimeout(t *testing.T) {
	_, srv := newWrappedFake(t, func(h http.Handler) http.Handler { return silentChat{next: h} })
	rep, timeout := runWithin(t, func(d time.Duration) (*Report, bool) {
		o := fakeOptions(t, srv)
		o.Timeout = d
		o.Only = []string{"chat.status", "chat.stream.content_type", "sdk.*"}
		rep, err := Run(context.Background(), o)
		if err != nil {
			return nil, false // the /v1/models probe itself ran out of time
		}
		c, _ := rep.Result("sdk.models")
		return rep, !strings.Contains(c.Reason, "ran out")
	})
	ranOut := fmt.Sprintf("--timeout %v ran out before the answer began", timeout)
	for _, id := range []string{"chat.status", "chat.stream.content_type", "sdk.chat", "sdk.stream", "sdk.error"} {
		c, _ := rep.Result(id)
		if c.Result != Fail || !strings.Contains(c.Reason, ranOut) {
			t.Errorf("%s = %s %q, want FAIL saying %s", id, c.Result, c.Reason, ranOut)
		}
	}
	if c, _ := rep.Result("sdk.models"); c.Result != Pass {
		t.Errorf("sdk.models = %s %q, want PASS: /v1/models answers", c.Result, c.Reason)
	}
	if rep.ExitCode() != 1 {
		t.Errorf("exit code %d, want 1", rep.ExitCode())
	}
}

// timeoutsToTry are the --timeout values runWithin tries, shortest first. A test whose server
// never answers some requests needs a timeout short enough to keep the test quick, and the
// requests that are answered must come within it; on a loaded machine under -race a local
// answer has been seen to take longer than 100 ms, so a run whose answered requests ran out of
// time is tried again with the next.
var timeoutsToTry = []time.Duration{100 * time.Millisecond, time.Second, 10 * time.Second}

// runWithin calls run with each of timeoutsToTry until it reports that the requests that should
// be answered in time were, and returns that report and its timeout. It fails the test when
// none was long enough.
func runWithin(t *testing.T, run func(time.Duration) (*Report, bool)) (*Report, time.Duration) {
	t.Helper()
	for _, d := range timeoutsToTry {
		if rep, inTime := run(d); inTime {
			return rep, d
		}
		t.Logf("--timeout %v: an answer that should have come in time did not; trying a longer one", d)
	}
	t.Fatalf("no --timeout up to %v was long enough for the answers that do come", timeoutsToTry[len(timeoutsToTry)-1])
	return nil, 0
}

// topLogprobsCounts rewrites the logprobs probe's answer so that its i-th entry carries counts[i]
// alternatives (its last count for the entries beyond).
func topLogprobsCounts(counts ...int) streamRewrite {
	return streamRewrite{editJSON: func(req string, _ http.Header, b string) string {
		if !strings.Contains(req, `"logprobs":true`) {
			return b
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(b), &m); err != nil {
			return b
		}
		es, _ := at(m, "choices", 0, "logprobs", "content")
		entries, _ := es.([]any)
		for i, e := range entries {
			n := counts[min(i, len(counts)-1)]
			alts := []any{}
			for k := range n {
				alts = append(alts, map[string]any{"token": "x", "logprob": -1 - float64(k), "bytes": nil})
			}
			e.(map[string]any)["top_logprobs"] = alts
		}
		out, _ := json.Marshal(m)
		return string(out)
	}}
}

// TestTopLogprobsMayBeFewer: the reference says of every entry's top_logprobs that "the number
// of entries may be fewer than the requested top_logprobs", so an entry with one alternative
// where two were asked for is no fault. More than asked for is, and so is none of the entries
// carrying as many as asked, which is a server that ignores top_logprobs.
func TestTopLogprobsMayBeFewer(t *testing.T) {
	tests := []struct {
		name   string
		counts []int
		want   Result
	}{
		{"two each", []int{2}, Pass},
		{"one entry with fewer", []int{2, 1, 2}, Pass},
		{"one entry with none", []int{2, 0, 2}, Pass},
		{"an entry with three", []int{2, 3, 2}, Warn},
		{"every entry with one", []int{1}, Warn},
		{"every entry with none", []int{0}, Warn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newWrappedFake(t, func(h http.Handler) http.Handler {
				rw := topLogprobsCounts(tt.counts...)
				rw.next = h
				return rw
			})
			o := fakeOptions(t, srv)
			o.Only = []string{"logprobs.*"}
			rep := runAgainst(t, o)
			if c, _ := rep.Result("logprobs.content"); c.Result != Pass {
				t.Fatalf("logprobs.content = %s %q, want PASS", c.Result, c.Reason)
			}
			if c, _ := rep.Result("logprobs.top_count"); c.Result != tt.want {
				t.Errorf("logprobs.top_count = %s %q, want %s", c.Result, c.Reason, tt.want)
			}
		})
	}
}

// TestLongStreamIDMustStayTheSame: a long id (a gateway that packs routing state into it) that
// changes past its first 160 bytes still changes, and openai-go's accumulator refuses the chunk;
// chat.stream.id compared the clipped renderings made for the report, and passed it.
func TestLongStreamIDMustStayTheSame(t *testing.T) {
	long := "chatcmpl-" + strings.Repeat("a", 200)
	_, srv := newWrappedFake(t, func(h http.Handler) http.Handler {
		return streamRewrite{next: h, edit: func(req string, _ http.Header, b string) string {
			b = strings.ReplaceAll(b, `"id":"chatcmpl-fake1"`, `"id":"`+long+`1"`)
			// From the second chunk on, the id ends differently.
			first := strings.Index(b, long+"1") + len(long)
			return b[:first] + strings.ReplaceAll(b[first:], long+"1", long+"2")
		}}
	})
	o := fakeOptions(t, srv)
	o.Only = []string{"chat.stream.id", "sdk.stream"}
	rep := runAgainst(t, o)
	for _, id := range o.Only {
		if c, _ := rep.Result(id); c.Result != Fail {
			t.Errorf("%s = %s %q, want FAIL", id, c.Result, c.Reason)
		}
	}
	// Both ids are clipped alike in the report, so it says where they part.
	if c, _ := rep.Result("chat.stream.id"); !strings.Contains(c.Reason, "chunk 1 id differs from chunk 0's after the first 209 bytes") {
		t.Errorf("chat.stream.id reason %q does not say where the ids differ", c.Reason)
	}
}

// dropUnknownField resets the connection of every request that carries the suite's unknown
// field, before any answer: a server that crashes on a request field it does not know.
type dropUnknownField struct{ next http.Handler }

func (d dropUnknownField) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if strings.Contains(string(body), unknownKey) {
		panic(http.ErrAbortHandler)
	}
	r2 := r.Clone(r.Context())
	r2.Body = httpBody(body)
	d.next.ServeHTTP(w, r2)
}

// TestStandInDoesNotHideTheCheckOwnFailure: errors.shape judges every error answer; with --only
// leaving out the gates of its requests, one request without any answer is its to report, as
// the gate would grade it (STRICT for the unknown-field request: a warning). That must not stand
// in for what errors.shape finds in the answers that did come: flat error bodies, a MUST failure.
func TestStandInDoesNotHideTheCheckOwnFailure(t *testing.T) {
	_, srv := newWrappedFake(t, func(h http.Handler) http.Handler { return dropUnknownField{next: h} }, faultFlatError)
	o := fakeOptions(t, srv)
	o.Strict = false
	o.Only = []string{"errors.shape"}
	rep := runAgainst(t, o)
	c, _ := rep.Result("errors.shape")
	if c.Result != Fail || !strings.Contains(c.Reason, `no "error" object`) {
		t.Errorf("errors.shape = %s %q, want FAIL for the flat error bodies", c.Result, c.Reason)
	}
	if rep.ExitCode() != 1 {
		t.Errorf("exit code %d, want 1", rep.ExitCode())
	}
	// Where the answers that came are right, the request that got none is still reported.
	_, srv = newWrappedFake(t, func(h http.Handler) http.Handler { return dropUnknownField{next: h} })
	o = fakeOptions(t, srv)
	o.Strict = false
	o.Only = []string{"errors.shape"}
	rep = runAgainst(t, o)
	if c, _ := rep.Result("errors.shape"); c.Result != Warn || !strings.Contains(c.Evidence.Expected, "errors.strict.unknown_field") {
		t.Errorf("errors.shape = %s %q, want WARN for the unknown-field request that got no answer", c.Result, c.Reason)
	}
}

// TestErrorBodyLabelledAStreamFailsOnce: a server that has sent its event-stream head and then
// fails writes the error as the body, with no data event, a JSON error object; or llama.cpp's
// "error: {...}" line, a field SSE ignores, before any data event or after some. The request failed, as when the error comes as a
// JSON answer or a data event: its gate says so quoting the message, where it passed (the
// Content-Type was right) and four checks failed around a stream with nothing in it.
func TestErrorBodyLabelledAStreamFailsOnce(t *testing.T) {
	const envelope = `{"error":{"message":"model overloaded","type":"server_error","param":null,"code":null}}`
	const llama = `error: {"code":500,"message":"model overloaded","type":"server_error"}` + "\n\n"
	tests := []struct {
		name string
		edit func(stream string) string
	}{
		{"a JSON error body", func(string) string { return envelope + "\n" }},
		// As llama-server's 2025 builds end such a stream.
		{"an error line", func(string) string { return llama + "data: [DONE]\n\n" }},
		{"an error line mid-stream", func(b string) string {
			i := strings.Index(b, "\n\n") + 2
			return b[:i] + llama
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newWrappedFake(t, func(h http.Handler) http.Handler {
				return streamRewrite{next: h, edit: func(req string, _ http.Header, b string) string {
					if rawProbe(req, `"stream":true}`) {
						return tt.edit(b)
					}
					return b
				}}
			})
			rep := runAgainst(t, fakeOptions(t, srv))
			const gate = "chat.stream.content_type"
			for id, r := range notPassing(rep) {
				if r == Fail && id != gate {
					t.Errorf("%s failed too: one broken request is one failure", id)
				}
			}
			c, _ := rep.Result(gate)
			if c.Result != Fail || !strings.Contains(c.Reason, "model overloaded") {
				t.Errorf("%s = %s %q, want FAIL quoting the error", gate, c.Result, c.Reason)
			}
			if c, _ := rep.Result("chat.stream.json"); c.Result != Skip {
				t.Errorf("chat.stream.json = %s %q, want SKIP behind %s", c.Result, c.Reason, gate)
			}
		})
	}
}

// TestUnavailableWithRetryAfterIsRetriedOnce: a 503 that carries Retry-After says, as RFC 9110
// defines it, that the server is unavailable for that long (loading a model, shedding load);
// OpenAI answers 503 when overloaded and the SDKs try again. Like a 429 it is sent once more after
// the wait, and only a 503 that persists is judged. One without Retry-After is judged at once.
func TestUnavailableWithRetryAfterIsRetriedOnce(t *testing.T) {
	tests := []struct {
		name       string
		retryAfter string
		always     bool
		waits      bool
	}{
		{"503 once, Retry-After 2", "2", false, true},
		{"503 every time, Retry-After 2", "2", true, true},
		{"503 once, no Retry-After", "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newWrappedFake(t, func(h http.Handler) http.Handler {
				return &throttle{next: h, retryAfter: tt.retryAfter, always: tt.always, status: http.StatusServiceUnavailable, seen: map[string]bool{}}
			})
			o := fakeOptions(t, srv)
			o.Model = fakeModel
			var mu sync.Mutex
			var waits []time.Duration
			o.Sleep = func(_ context.Context, d time.Duration) error {
				mu.Lock()
				defer mu.Unlock()
				waits = append(waits, d)
				return nil
			}
			rep := runAgainst(t, o)
			if tt.waits && !tt.always {
				if diff := cmp.Diff(baseline(), notPassing(rep)); diff != "" {
					t.Errorf("non-passing checks (-want +got):\n%s", diff)
				}
			} else if c, _ := rep.Result("chat.status"); c.Result != Fail || !strings.Contains(c.Reason, "503") {
				t.Errorf("chat.status = %s %q, want FAIL naming the 503", c.Result, c.Reason)
			}
			if !tt.waits {
				if len(waits) != 0 {
					t.Errorf("%d waits after a 503 without Retry-After, want none", len(waits))
				}
				return
			}
			if len(waits) < 25 {
				t.Errorf("%d waits, want one per request (about 30)", len(waits))
			}
			for _, d := range waits {
				if d != 2*time.Second {
					t.Fatalf("waited %v, want 2s", d)
				}
			}
		})
	}
}

// chatModelEmbeds serves /v1/embeddings for the chat model too, as a server whose one model
// does both; with noBase64 it refuses encoding_format base64 with a 400.
type chatModelEmbeds struct {
	next     http.Handler
	noBase64 bool
	// none: the model embeds nothing, and every embeddings request gets a 400.
	none bool
}

func (c chatModelEmbeds) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/embeddings" {
		c.next.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	if c.none || c.noBase64 && strings.Contains(string(body), `"base64"`) {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
			"message": "encoding_format must be float", "type": "invalid_request_error", "param": "encoding_format", "code": nil}})
		return
	}
	body = []byte(strings.ReplaceAll(string(body), `"model":"`+fakeModel+`"`, `"model":"`+fakeEmbed+`"`))
	r2 := r.Clone(r.Context())
	r2.Body = httpBody(body)
	r2.ContentLength = int64(len(body))
	c.next.ServeHTTP(w, r2)
}

// TestBase64RefusedBesideFloatFails: without --embedding-model a 400 from /v1/embeddings means
// that the chat model does not embed, and the embeddings checks skip. When the same model's
// float request was served, a 400 to encoding_format base64 refuses base64, which the reference
// offers beside float: embeddings.base64 fails, where it skipped and the run exited 0.
func TestBase64RefusedBesideFloatFails(t *testing.T) {
	tests := []struct {
		name         string
		server       chatModelEmbeds
		entries, b64 Result
	}{
		{"both served", chatModelEmbeds{}, Pass, Pass},
		{"base64 refused", chatModelEmbeds{noBase64: true}, Pass, Fail},
		{"the model embeds nothing", chatModelEmbeds{none: true}, Skip, Skip},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newWrappedFake(t, func(h http.Handler) http.Handler { tt.server.next = h; return tt.server })
			o := fakeOptions(t, srv)
			// The chat model is the embedding model only when --model names it: without, the
			// suite would send the embeddings requests to fake-embed, which /v1/models lists.
			o.Model = fakeModel
			o.EmbeddingModel = ""
			o.Only = []string{"embeddings.*"}
			rep := runAgainst(t, o)
			if c, _ := rep.Result("embeddings.base64"); c.Result != tt.b64 || tt.b64 == Fail && !strings.Contains(c.Reason, "400") {
				t.Errorf("embeddings.base64 = %s %q, want %s", c.Result, c.Reason, tt.b64)
			}
			if c, _ := rep.Result("embeddings.entries"); c.Result != tt.entries {
				t.Errorf("embeddings.entries = %s %q, want %s", c.Result, c.Reason, tt.entries)
			}
		})
	}
}

// gzipWhenAsked compresses every answer whose request accepts gzip, flushing the compressor
// with each flush so that an event stream stays a stream.
type gzipWhenAsked struct {
	next http.Handler
	// gzipped counts the answers compressed.
	gzipped *atomic.Int64
}

type gzipWriter struct {
	http.ResponseWriter
	z      *gzip.Writer
	headed bool
}

func (g *gzipWriter) WriteHeader(code int) {
	g.headed = true
	g.Header().Del("Content-Length")
	g.Header().Set("Content-Encoding", "gzip")
	g.ResponseWriter.WriteHeader(code)
}

func (g *gzipWriter) Write(p []byte) (int, error) {
	if !g.headed {
		g.WriteHeader(http.StatusOK)
	}
	return g.z.Write(p)
}

func (g *gzipWriter) Flush() {
	_ = g.z.Flush()
	g.ResponseWriter.(http.Flusher).Flush()
}

func (h gzipWhenAsked) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		h.next.ServeHTTP(w, r)
		return
	}
	h.gzipped.Add(1)
	z := gzip.NewWriter(w)
	defer z.Close()
	h.next.ServeHTTP(&gzipWriter{ResponseWriter: w, z: z}, r)
}

// TestTransportVariantsPass: what HTTP allows a conforming server fails no check: answers
// compressed because the client (Go's transport, for the raw probes and openai-go alike) asked
// for gzip, streams among them written a few bytes at a time; error bodies with members of their
// own beside the reference's; an event type named on every event.
func TestTransportVariantsPass(t *testing.T) {
	var gzipped atomic.Int64
	tests := []struct {
		name string
		wrap func(http.Handler) http.Handler
	}{
		{"gzip", func(h http.Handler) http.Handler { return gzipWhenAsked{next: h, gzipped: &gzipped} }},
		{"gzip, streams in pieces", func(h http.Handler) http.Handler {
			return gzipWhenAsked{next: streamRewrite{next: h, pieces: 5}, gzipped: &gzipped}
		}},
		{"error bodies with extra members", func(h http.Handler) http.Handler {
			return streamRewrite{next: h, editJSON: func(_ string, _ http.Header, b string) string {
				return strings.Replace(b, `{"error":{`, `{"request_id":"req_1","error":{"innererror":{"code":"x"},`, 1)
			}}
		}},
		{"event: message on every event", func(h http.Handler) http.Handler {
			return streamRewrite{next: h, edit: func(_ string, _ http.Header, b string) string {
				return strings.ReplaceAll(b, "data: ", "event: message\ndata: ")
			}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newWrappedFake(t, tt.wrap)
			rep := runAgainst(t, fakeOptions(t, srv))
			if diff := cmp.Diff(baseline(), notPassing(rep)); diff != "" {
				t.Errorf("non-passing checks (-want +got):\n%s", diff)
			}
		})
	}
	if gzipped.Load() < 50 {
		t.Errorf("%d answers gzipped, want every one of both gzip runs", gzipped.Load())
	}
}

// TestNullBodyIsNotCalledEmpty: a 200 whose body is the JSON literal null is no completion, and
// its gate says what came, not that nothing did.
func TestNullBodyIsNotCalledEmpty(t *testing.T) {
	_, srv := newWrappedFake(t, func(h http.Handler) http.Handler {
		return streamRewrite{next: h, editJSON: func(req string, _ http.Header, b string) string {
			if rawProbe(req, `"model":"`+fakeModel+`"}`) {
				return "null\n"
			}
			return b
		}}
	})
	o := fakeOptions(t, srv)
	o.Only = []string{"chat.status"}
	rep := runAgainst(t, o)
	if c, _ := rep.Result("chat.status"); c.Result != Fail || !strings.Contains(c.Reason, "JSON null") {
		t.Errorf("chat.status = %s %q, want FAIL saying the body is JSON null", c.Result, c.Reason)
	}
}
