package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/jsonx"
)

// ordinary bodies take the one-pass walk; each must decode to what encoding/json gives.
var ordinary = []string{
	`{"model":"saif","messages":[{"role":"user","content":"x"}]}`,
	`{"model":"saif","messages":[{"role":"user","content":"x"},{"role":"assistant","content":null,"refusal":"I can't."},{"role":"user","content":"why?"}]}`,
	`{"model":"saif","messages":[{"role":"user","content":"x"},{"role":"assistant","content":"y","reasoning_content":"because","reasoning":null},{"role":"assistant","content":"z","reasoning":"so"}]}`,
	`{"model":"saif","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi \"there\"\n\u00e9\ud83d\ude00"}],` +
		`"max_tokens":256,"temperature":0.2,"top_p":1,"seed":-42,"stream":true,"stream_options":{"include_usage":true}}`,
	`{"model":"auto","messages":[{"role":"user","content":[{"type":"text","text":"what?"},{"type":"image_url","image_url":{"url":"data:x"}}]}],` +
		`"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"tool_choice":"auto","stop":["a","b"],` +
		`"response_format":{"type":"json_object"},"functions":[],"max_completion_tokens":10}`,
	`{"model":"saif","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function"}]},` +
		`{"role":"tool","tool_call_id":"c","name":"f","content":"42"},null],"x-fallback-on":false,"x-route-hint":" SAIF ",` +
		`"x-hayula-privacy":"strict","user":"someone","logprobs":true,"n":1}`,
	` { "model" : "saif" , "messages" : [ ] , "stream" : null , "max_tokens" : null , "temperature" : -0 } `,
	`{"model":null,"messages":null}`,
	`{"model":"a","model":"b","stream":true,"stream":false,"max_tokens":1,"max_tokens":null,"messages":[{"role":"user","role":null,"content":"a","content":"b"}]}`,
	`{"model":"saif","stream_options":{"include_usage":true},"stream_options":{},"messages":[]}`,
	`{"model":"saif","Unknown":1,"MESSAGES_X":2,"messages":[{"role":"user","Extra":{"Role":"no"}}]}`,
	`{"model":"sa\u0069f","messages":[{"role":"user","content":"x"}]}`,
	`{"model":"saif ","messages":[{"role":"user","content":"x"}]}`,
	`{"model":"","messages":[{"role":"user","content":"x"}]}`,
	`{"model":"saif","messages":[{"role":"user","content":"x"}],"tools":{},"n":"2","stop":1,"logit_bias":[]}`,
	`{"model":"saif","messages":[],"frequency_penalty":0.5,"presence_penalty":-1.25,"frequency_penalty":null}`,
	`{"model":"saif","messages":[],"presence_penalty":2}`,
	`{"model":"saif","messages":[],"unknown":` + deep(maxBodyDepth-1) + `}`,
}

// testNames are the models decode takes from the server rather than from the body.
var testNames = map[string]string{"saif": "saif", "auto": "auto", "a": "a", "b": "b", "": ""}

// declined bodies go to encoding/json: invalid, wrongly typed, or keys it would match by folding.
var declined = []string{
	`{"model":`, `[1,2]`, `null`, `"x"`, `{"model":"saif"} x`, `{"model":5}`, `{"stream":"yes"}`,
	`{"messages":"hi"}`, `{"messages":[1]}`, `{"messages":[{"role":5}]}`, `{"max_tokens":1.5}`, `{"max_tokens":1e3}`,
	`{"max_tokens":99999999999999999999}`, `{"temperature":"hot"}`, `{"temperature":1e999}`, `{"seed":true}`,
	`{"frequency_penalty":"high"}`, `{"presence_penalty":[1]}`,
	`{"Model":"saif"}`, `{"MODEL":"saif"}`, `{"mod\u0065l":"saif"}`, `{"messages":[{"Role":"user"}]}`,
	`{"messages":[],"messages":[]}`, `{"model":"saif","messages":[{"role":"user","content":"x"}],"x":"\'"}`,
	`{"stream_options":1}`, "{\"\u212ax\":1}", `{"x-hayula-privacy":1}`, `{"model":"saif","messages":[],"\u006e":0}`,
}

// repaired are bodies with lone surrogate escapes, and the body decodeWire leaves for the
// upstream: each lone one rewritten to \ufffd in place, as encoding/json reads it.
var repaired = []struct{ body, fixed string }{
	{`{"model":"saif","messages":[{"role":"user","content":"\ud800"}]}`,
		`{"model":"saif","messages":[{"role":"user","content":"\ufffd"}]}`},
	{`{"model":"saif","messages":[{"role":"user"}],"x":"\udc00\uD800\u0041\ud800"}`,
		`{"model":"saif","messages":[{"role":"user"}],"x":"\ufffd\ufffd\u0041\ufffd"}`},
	{`{"model":"saif","messages":[{"role":"user","content":"\ud83d\ud83d\ude00"}],"\udfff":1}`,
		`{"model":"saif","messages":[{"role":"user","content":"\ufffd\ud83d\ude00"}],"\ufffd":1}`},
	{`{"model":"sa\udbffif","messages":[{"role":"user","content":[{"type":"text","text":"\\ud800\ud800"}]}]}`,
		`{"model":"sa\ufffdif","messages":[{"role":"user","content":[{"type":"text","text":"\\ud800\ufffd"}]}]}`},
}

// refusedText are bodies decodeWire refuses before any decoder reads them (jsonx.TextError): not
// UTF-8, or nested deeper than maxBodyDepth.
var refusedText = []string{
	`{"model":"saif","messages":[{"role":"user","content":"` + "\xff\xfe invalid utf-8" + `","name":"` + "\xc3" + `"}]}`,
	`{"model":"` + "sa\xffif" + `","messages":[{"role":"user","content":"x"}]}`,
	`{"model":"saif","messages":[{"role":"user","content":"x"}],"` + "\xed\xa0\x80" + `":1}`, // a surrogate in UTF-8
	"{\"model\":\"saif\",\"messages\":[]}\xff",
	`{"model":"saif","messages":[{"role":"user","content":` + deep(600) + `}]}`,
	`{"model":"saif","messages":[{"role":"user","content":` + deep(127) + `}]}`,
	`{"model":"saif","messages":[],"unknown":` + deep(maxBodyDepth) + `}`,
}

// deep is n nested arrays.
func deep(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func reference(t testing.TB, body []byte) (wireView, error) {
	t.Helper()
	var w wireRequest
	err := json.Unmarshal(body, &w)
	return viewOf(&w), err
}

// TestViewOf holds the view to what encoding/json decodes: every field of a wireRequest survives
// the conversion, and the parameters rebuilt from the view point at the same values.
func TestViewOf(t *testing.T) {
	for _, b := range ordinary {
		t.Run(b, func(t *testing.T) {
			var w wireRequest
			if err := json.Unmarshal([]byte(b), &w); err != nil {
				t.Fatal(err)
			}
			v := viewOf(&w)
			back := wireRequest{Model: ptrOf(v.Model), Stream: v.Stream, StreamOptions: v.StreamOptions,
				Messages: v.Messages, MaxTokens: ptrOf(v.MaxTokens),
				MaxCompletion: ptrOf(v.MaxCompletion), Fallback: v.Fallback, Hint: ptrOf(v.Hint),
				Privacy: ptrOf(v.Privacy), Params: v.params()}
			if diff := cmp.Diff(w, back); diff != "" {
				t.Errorf("round trip (-encoding/json +view):\n%s", diff)
			}
		})
	}
}

func ptrOf[T any](o opt[T]) *T {
	if !o.Set {
		return nil
	}
	return &o.V
}

// viewOpts compares views as encoding/json fills them: the fast walk's own notes are not part of it.
var viewOpts = cmpopts.IgnoreUnexported(wireView{})

// ignoreModelAt leaves out what only the fast walk knows; checkModelAt checks ModelAt,
// TestNoStreamOptions NoStreamOptions.
var ignoreModelAt = cmpopts.IgnoreFields(core.Request{}, "ModelAt", "NoStreamOptions", "KnownMembers")

// checkKnownMembers holds a request's KnownMembers, when set, to the body it was decoded from:
// every top-level member's key is, as spelled and unescaped, one the server decodes itself.
func checkKnownMembers(t *testing.T, req *core.Request) {
	t.Helper()
	if !req.KnownMembers {
		return
	}
	it := jsonx.Object(req.Body, true)
	for {
		k, _, ok := it.Next()
		if !ok {
			break
		}
		if name, plain := jsonx.PlainKey(k); !plain || !isWireKey(string(name)) {
			t.Fatalf("KnownMembers set for %q, which has the member %s", req.Body, k)
		}
	}
}

// checkModelAt holds a request's ModelAt, when set, to where jsonx finds the one "model" value.
func checkModelAt(t *testing.T, req *core.Request) {
	t.Helper()
	if req.ModelAt == [2]int{} {
		return
	}
	head, mid, tail := jsonx.SetQuotedSplit(req.Body, "model", "x", []byte(`"x"`))
	if mid == nil {
		t.Fatalf("ModelAt %v in %q, but jsonx does not find exactly one model member", req.ModelAt, req.Body)
	}
	if want := [2]int{len(head), len(req.Body) - len(tail)}; req.ModelAt != want {
		t.Fatalf("ModelAt %v in %q, jsonx finds the value at %v", req.ModelAt, req.Body, want)
	}
}

// An ordinary body's model is located by the decode; a body whose bytes the gateway changes, or
// with the model twice, is not.
func TestModelAt(t *testing.T) {
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	for _, b := range []string{
		`{"model":"saif","messages":[{"role":"user","content":"x"}]}`,
		` { "messages" : [{"role":"user","content":"x"}], "model" : "averroes-q" , "stream":true} `,
		`{"model":"unknown-to-the-server","messages":[{"role":"user","content":"x"}],"max_tokens":9}`,
	} {
		req, e := decodeChat(r, []byte(b), new(reqState), testNames)
		if e != nil {
			t.Fatalf("%s: %v", b, e.Message)
		}
		if req.ModelAt == [2]int{} {
			t.Errorf("%s: ModelAt not set", b)
		}
		checkModelAt(t, req)
	}
	for _, b := range []string{
		`{"model":"saif","model":"saif","messages":[{"role":"user","content":"x"}]}`,
		`{"model":"saif","x-route-hint":"saif","messages":[{"role":"user","content":"x"}]}`,
		`{"Model":"saif","messages":[{"role":"user","content":"x"}]}`,
	} {
		req, e := decodeChat(r, []byte(b), new(reqState), testNames)
		if e != nil {
			t.Fatalf("%s: %v", b, e.Message)
		}
		if req.ModelAt != [2]int{} {
			t.Errorf("%s: ModelAt %v, want unset", b, req.ModelAt)
		}
	}
}

func TestFastWire(t *testing.T) {
	for _, b := range ordinary {
		t.Run("takes "+b, func(t *testing.T) {
			var got wireView
			if !fastWire([]byte(b), &got, nil, testNames) {
				t.Fatal("declined an ordinary body")
			}
			want, err := reference(t, []byte(b))
			if err != nil {
				t.Fatalf("encoding/json refuses it: %v", err)
			}
			if diff := cmp.Diff(want, got, viewOpts); diff != "" {
				t.Errorf("decoded (-encoding/json +fast):\n%s", diff)
			}
		})
	}
	for _, b := range declined {
		t.Run("declines "+b, func(t *testing.T) {
			var got wireView
			if fastWire([]byte(b), &got, nil, testNames) {
				t.Fatal("took a body it must leave to encoding/json")
			}
			// The fallback answers as encoding/json alone did.
			want, wantErr := reference(t, []byte(b))
			got = wireView{}
			err := decodeWire([]byte(b), &got, nil, testNames)
			if diff := cmp.Diff(errString(wantErr), errString(err)); diff != "" {
				t.Errorf("error (-encoding/json +decodeWire):\n%s", diff)
			}
			if diff := cmp.Diff(want, got, viewOpts); diff != "" {
				t.Errorf("decoded (-encoding/json +decodeWire):\n%s", diff)
			}
		})
	}
}

// TestTextRefused: a body that is not UTF-8, or nests deeper than maxBodyDepth, is a 400 in the
// shape of any other body that is not JSON, saying why and where; a chat body, and a completions
// or embeddings one alike.
func TestTextRefused(t *testing.T) {
	for _, b := range append(refusedText,
		`{"model":"saif","messages":[],"unknown":`+deep(10000)+`}`,
		`{"model":"saif","messages":[{"role":"user","content":`+deep(10000)+`}]}`,
		`{"model":"saif","messages":[],"tools":`+deep(10000)+`}`,
	) {
		name := b
		if len(name) > 80 {
			name = name[:80]
		}
		t.Run(name, func(t *testing.T) {
			want := "the request body is not valid UTF-8 (RFC 8259 §8.1): invalid byte at offset "
			if !utf8.ValidString(b) {
				want += strconv.Itoa(strings.IndexFunc(b, func(r rune) bool { return r == utf8.RuneError }))
			} else {
				// These bodies have no bracket inside a string.
				want = "the request body nests arrays and objects deeper than " + strconv.Itoa(maxBodyDepth) + " levels (at byte offset "
				depth, i := 0, 0
				for ; depth <= maxBodyDepth; i++ {
					switch b[i] {
					case '[', '{':
						depth++
					case ']', '}':
						depth--
					}
				}
				want += strconv.Itoa(i-1) + ")"
			}
			r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
			_, got := decodeChat(r, []byte(b), new(reqState), testNames)
			wantE := &apiError{Status: http.StatusBadRequest, Type: typeInvalidRequest, Code: "invalid_json", Message: want}
			if diff := cmp.Diff(wantE, got); diff != "" {
				t.Errorf("chat (-want +got):\n%s", diff)
			}
			other := strings.Replace(b, `"messages":`, `"prompt":"p","x":`, 1)
			_, got = decodeOther(r, []byte(other), core.OpCompletions)
			if got == nil || got.Code != "invalid_json" || !strings.HasPrefix(got.Message, want[:40]) {
				t.Errorf("completions: got %+v, want %s…", got, want[:40])
			}
		})
	}
}

// TestLoneSurrogatesRepaired: a lone surrogate escape is rewritten in place to \ufffd, in the body
// the upstream is sent, and decodes as encoding/json decoded it before; a pair is left alone.
func TestLoneSurrogatesRepaired(t *testing.T) {
	for _, tt := range repaired {
		t.Run(tt.body, func(t *testing.T) {
			body := []byte(tt.body)
			r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
			req, e := decodeChat(r, body, new(reqState), testNames)
			if e != nil {
				t.Fatal(e)
			}
			if diff := cmp.Diff(tt.fixed, string(req.Body)); diff != "" {
				t.Errorf("body sent on (-want +got):\n%s", diff)
			}
			var before, after wireRequest
			if err := json.Unmarshal([]byte(tt.body), &before); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(body, &after); err != nil {
				t.Fatal(err)
			}
			strs := func(w wireRequest) []string {
				s := []string{*w.Model}
				for _, m := range w.Messages {
					var c any
					_ = json.Unmarshal(m.Content, &c)
					s = append(s, fmt.Sprint(c))
				}
				return s
			}
			if diff := cmp.Diff(strs(before), strs(after)); diff != "" {
				t.Errorf("decoded (-original +repaired):\n%s", diff)
			}
			other := []byte(strings.Replace(tt.body, `"messages":`, `"prompt":"p","x":`, 1))
			oreq, e := decodeOther(r, other, core.OpCompletions)
			if e != nil || string(oreq.Body) != strings.Replace(tt.fixed, `"messages":`, `"prompt":"p","x":`, 1) {
				t.Errorf("completions: %v, sent %s", e, oreq.Body)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestContentsAreSubslices checks the point of the walk: no copy of a message content.
func TestContentsAreSubslices(t *testing.T) {
	body := []byte(`{"model":"saif","messages":[{"role":"user","content":"hello","tool_calls":[]}]}`)
	var w wireView
	if !fastWire(body, &w, nil, testNames) {
		t.Fatal("declined")
	}
	for _, raw := range [][]byte{w.Messages[0].Content, w.Messages[0].ToolCalls} {
		if cap(raw) == 0 || &raw[:cap(raw)][cap(raw)-1] != &body[len(body)-1] {
			t.Errorf("%s is not a sub-slice of the body", raw)
		}
	}
}

// FuzzDecodeWire holds the one-pass decode to encoding/json's: whatever it takes, encoding/json
// takes too and decodes to the same view; and the request built from it answers the same. What
// jsonx.FixText refuses, decodeWire refuses with its error; what it repairs (lone surrogate
// escapes), the fast walk leaves to the fallback, which decodes the repaired body, as
// encoding/json decodes the original, and passes the repaired one on.
func FuzzDecodeWire(f *testing.F) {
	for _, b := range append(decodeSeeds(), messageSeeds()...) {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, orig []byte) {
		sameAsOldWalk(t, orig)
		decodeWireAgrees(t, orig)
	})
}

// decodeSeeds are the bodies FuzzDecodeWire starts from, but for messageSeeds.
func decodeSeeds() []string {
	seeds := append(append(append([]string{}, ordinary...), declined...), refusedText...)
	for _, r := range repaired {
		seeds = append(seeds, r.body)
	}
	return seeds
}

// decodeWireAgrees fails t unless the fast walk takes orig only when FixText neither refuses nor
// repairs it and encoding/json takes it, with the view and request encoding/json gives (and
// Validated set only for valid JSON in valid UTF-8), and the fallback answers as encoding/json.
func decodeWireAgrees(t *testing.T, orig []byte) {
	t.Helper()
	body := bytes.Clone(orig)
	textErr := jsonx.FixText(body, maxBodyDepth)
	var got wireView
	in := bytes.Clone(orig)
	fast := fastWire(in, &got, nil, testNames)
	if fast && (textErr != nil || !bytes.Equal(body, orig)) {
		t.Fatalf("fast walk took %q, which FixText refuses (%v) or repairs", orig, textErr)
	}
	if textErr != nil {
		got = wireView{}
		if err := decodeWire(in, &got, nil, testNames); errString(err) != textErr.Error() {
			t.Fatalf("%q: decodeWire error %v, FixText %v", orig, err, textErr)
		}
		return
	}
	want, err := reference(t, body)
	if !fast {
		got = wireView{}
		gotErr := decodeWire(in, &got, nil, testNames)
		if errString(gotErr) != errString(err) {
			t.Fatalf("fallback error %v, encoding/json %v", gotErr, err)
		}
		if !bytes.Equal(in, body) {
			t.Fatalf("decodeWire left %q, FixText %q", in, body)
		}
		if wantOrig, errOrig := reference(t, orig); errString(errOrig) != errString(err) ||
			!cmp.Equal(wantOrig, want, viewOpts, cmpopts.IgnoreFields(core.Message{}, "Content", "ToolCalls", "Refusal", "ReasoningContent", "Reasoning"),
				cmpopts.IgnoreFields(wireView{}, "Fallback", "Raw")) {
			t.Fatalf("%q: encoding/json reads the repaired body otherwise than the original", orig)
		}
	} else if err != nil {
		t.Fatalf("fast walk took %q, encoding/json refuses it: %v", body, err)
	}
	if diff := cmp.Diff(want, got, viewOpts); diff != "" {
		t.Fatalf("%q decoded (-encoding/json +decodeWire):\n%s", body, diff)
	}
	if err != nil {
		return
	}
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	gotReq, gotE := decodeChat(r, body, new(reqState), testNames)
	wantReq, wantE := referenceChat(r, body)
	if diff := cmp.Diff(wantE, gotE); diff != "" {
		t.Fatalf("%q error (-reference +decodeChat):\n%s", body, diff)
	}
	if diff := cmp.Diff(wantReq, gotReq, ignoreModelAt); diff != "" {
		t.Fatalf("%q request (-reference +decodeChat):\n%s", body, diff)
	}
	if gotReq != nil {
		checkModelAt(t, gotReq)
		checkKnownMembers(t, gotReq)
		if gotReq.Validated && (!json.Valid(gotReq.Body) || !utf8.Valid(gotReq.Body)) {
			t.Fatalf("Validated set for %q, which is not valid JSON in valid UTF-8", gotReq.Body)
		}
	}
}

// referenceChat is decodeChat over encoding/json alone: the request view as it was built before
// the one-pass walk, with the passed-through fields' kinds checked by a walk of their own
// (passedKinds), to which the one-pass walk's checks are held.
func referenceChat(r *http.Request, body []byte) (*core.Request, *apiError) {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, jsonErrorIn(err, body)
	}
	if isNull(body) {
		return nil, jsonError(errNotObject) // encoding/json decodes null into a struct as nothing
	}
	v := viewOf(&w)
	passedKinds(body, &v)
	var req core.Request
	if e := finishChat(r, body, &v, &req); e != nil {
		return nil, e
	}
	return &req, nil
}

// errReader fails every read with err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// A body that does not arrive in time (the HTTP server's ReadBodyTimeout) is a 408; one cut off by
// the client's leaving a 499; any other failed read a 400.
func TestReadBodyErrors(t *testing.T) {
	for _, tt := range []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("read tcp: %w", os.ErrDeadlineExceeded), http.StatusRequestTimeout, "request_timeout"},
		{errors.New("connection reset"), http.StatusBadRequest, "invalid_body"},
		// The connection ended before the body did: a client gone, not a bad body (TestClientGoneMidBody).
		{io.ErrUnexpectedEOF, 499, "client_closed_request"},
		{fmt.Errorf("read tcp: %w", syscall.ECONNRESET), 499, "client_closed_request"},
	} {
		r := httptest.NewRequest("POST", "/v1/chat/completions", errReader{tt.err})
		_, _, e := readBody(r, 1<<20, nil)
		if e == nil || e.Status != tt.status || e.Code != tt.code {
			t.Errorf("%v: got %+v, want %d %s", tt.err, e, tt.status, tt.code)
		}
	}
}

// TestReusedStateDecodesAlike decodes every body into one reqState, as the server's pool lends
// them: each request must come out as it does from a fresh one, with nothing of the one before.
func TestReusedStateDecodesAlike(t *testing.T) {
	bodies := append(append([]string{}, ordinary...), declined...)
	for i := len(ordinary) - 1; i >= 0; i-- {
		bodies = append(bodies, ordinary[i]) // longer and shorter conversations after each other
	}
	st := new(reqState)
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	for _, b := range bodies {
		want, wantE := decodeChat(r, []byte(b), new(reqState), nil)
		got, gotE := decodeChat(r, []byte(b), st, testNames)
		if diff := cmp.Diff(wantE, gotE); diff != "" {
			t.Errorf("%s: error (-fresh +reused):\n%s", b, diff)
		}
		if diff := cmp.Diff(want, got, viewOpts); diff != "" {
			t.Errorf("%s: request (-fresh +reused):\n%s", b, diff)
		}
	}
}

// A chat request of the usual shape decodes without allocating: the view, the messages and the
// parameters are built in the reqState, and a known model is the server's own string.
func TestDecodeChatAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation allocates")
	}
	body := []byte(`{"model":"saif","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],` +
		`"max_tokens":256,"temperature":0.2,"top_p":1,"seed":7,"stream":true}`)
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	st := new(reqState)
	if n := testing.AllocsPerRun(100, func() {
		if _, e := decodeChat(r, body, st, testNames); e != nil {
			t.Fatal(e)
		}
	}); n != 0 {
		t.Errorf("decodeChat allocates %v times a request, want 0", n)
	}
	req, _ := decodeChat(r, body, st, testNames)
	if unsafe.StringData(req.Model) != unsafe.StringData(testNames["saif"]) {
		t.Error("the model is a copy, not the known name")
	}
}

// headerValue skips canonicalisation, so every key it is given must already be canonical, and
// what a client sends in any case must still be found.
func TestHeaderValueKeys(t *testing.T) {
	for _, k := range []string{hdrOptFallback, hdrOptHint, hdrOptPrivacy, "Authorization", "X-Api-Key"} {
		if c := http.CanonicalHeaderKey(k); c != k {
			t.Errorf("%q is not canonical (%q): headerValue would never find it", k, c)
		}
	}
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	r.Header.Set("x-route-hint", "saif")
	r.Header.Set("x-api-key", " k1 ")
	r.Header.Set("X-HAYULA-PRIVACY", "strict")
	if got := headerValue(field(r, hdrOptHint)); got != "saif" {
		t.Errorf("hint = %q, want saif", got)
	}
	if got, _ := bearer(r); got != "k1" {
		t.Errorf("bearer = %q, want k1", got)
	}
	if got := headerValue(field(r, hdrOptPrivacy)); got != "strict" {
		t.Errorf("privacy = %q, want strict", got)
	}
	if got := headerValue(field(r, hdrOptFallback)); got != "" {
		t.Errorf("absent fallback = %q, want empty", got)
	}
}

// TestNoStreamOptions: the request says its body has no stream_options member only when the fast
// walk saw the body whole and met none, so that the openai adapter's splice of one
// (upstream.usageSplice) can skip its own walk; any other body leaves it to that walk.
func TestNoStreamOptions(t *testing.T) {
	for _, tc := range []struct {
		body string
		want bool
	}{
		{`{"model":"saif","stream":true,"messages":[{"role":"user","content":"hi"}]}`, true},
		{`{"model":"saif","stream":true,"stream_options":null,"messages":[{"role":"user","content":"hi"}]}`, false},
		{`{"model":"saif","stream":true,"stream_options":{"include_usage":false},"messages":[{"role":"user","content":"hi"}]}`, false},
		{`{"model":"saif","stream":true,"stream\u005foptions":{},"messages":[{"role":"user","content":"hi"}]}`, false},
		{`{"model":"saif","model":"saif","stream":true,"messages":[{"role":"user","content":"hi"}]}`, false},
		{`{"model":"saif","stream":true,"x-hayula-privacy":"strict","messages":[{"role":"user","content":"hi"}]}`, false},
	} {
		r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
		req, e := decodeChat(r, []byte(tc.body), new(reqState), testNames)
		if e != nil {
			t.Fatalf("%s: %s", tc.body, e.Message)
		}
		if req.NoStreamOptions != tc.want {
			t.Errorf("%s: NoStreamOptions %v, want %v", tc.body, req.NoStreamOptions, tc.want)
		}
	}
}

// A body of the members the server decodes, and nothing else, says so (core.Request.
// KnownMembers), so that the ollama adapter need not search it for Ollama's own; any other
// member, or a body the fast decode leaves to encoding/json (a key folded or escaped), does not.
func TestKnownMembers(t *testing.T) {
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	const msgs = `"messages":[{"role":"user","content":"options think top_k \"logprobs\":true"}]`
	for b, want := range map[string]bool{
		`{"model":"saif",` + msgs + `}`: true,
		`{"model":"saif",` + msgs + `,"max_tokens":9,"temperature":0.2,"stream":true,"stop":["x"],"tools":null}`: true,
		`{"model":"saif",` + msgs + `,"top_k":40}`:                                                               false,
		`{"model":"saif",` + msgs + `,"logprobs":true}`:                                                          false,
		`{"model":"saif",` + msgs + `,"chat_template_kwargs":{"enable_thinking":false}}`:                         false,
		`{"model":"saif",` + msgs + `,"user":"u"}`:                                                               false,
		`{"model":"saif",` + msgs + `,"Top_K":40}`:                                                               false,
		`{"model":"saif",` + msgs + `,"temp\u0065rature":0.2}`:                                                   false,
	} {
		st := new(reqState)
		st.req.KnownMembers = !want // a pooled state's last request must not carry over
		req, e := decodeChat(r, []byte(b), st, testNames)
		if e != nil {
			t.Fatalf("%s: %v", b, e.Message)
		}
		if req.KnownMembers != want {
			t.Errorf("%s: KnownMembers %v, want %v", b, req.KnownMembers, want)
		}
	}
}

// Every chat body the decode accepts is valid UTF-8, and the request says so
// (core.Request.Validated), whichever way it was decoded, so that a translating adapter need not
// check a message's text again; a body that is not is refused, and says nothing.
func TestValidated(t *testing.T) {
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	const msgs = `"messages":[{"role":"user","content":"ممكن تساعدني؟ \ud83d\ude00"}]`
	for _, b := range []string{
		`{"model":"saif",` + msgs + `}`,       // the fast walk
		`{"Model":"saif",` + msgs + `}`,       // a folded key: encoding/json
		`{"model":"saif",` + msgs + `,"x":1}`, // a member the walk does not decode
	} {
		st := new(reqState)
		req, e := decodeChat(r, []byte(b), st, testNames)
		if e != nil {
			t.Fatalf("%s: %v", b, e.Message)
		}
		if !req.Validated {
			t.Errorf("%s: Validated not set", b)
		}
		if !json.Valid(req.Body) || !utf8.Valid(req.Body) {
			t.Errorf("%s: Validated, but the body is %q", b, req.Body)
		}
	}
	bad := []byte(`{"model":"saif","messages":[{"role":"user","content":"a` + "\xff" + `"}]}`)
	if req, e := decodeChat(r, bad, new(reqState), testNames); e == nil {
		t.Errorf("invalid UTF-8 decoded: %+v", req)
	}
}
