package server

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/jsonx"
)

// The walk of a chat body before its messages were walked once (the twenty-ninth session): the
// body's walk scanned the messages array whole, then oldFastMessages skipped each message whole
// and oldFastMessage each member's value. It is the oracle walkWire is held to
// (sameAsOldWalk): the same bodies taken, and the same view of each.

// oldWalkWire is fastWire with it, a walk over the body, as its walk.
func oldWalkWire(it jsonx.Iter, w *wireView, msgs []core.Message, names map[string]string) bool {
	messages := false
	w.known = true // until a member it does not decode comes
	for {
		q, v, ok := it.Next()
		if !ok {
			return it.Done()
		}
		name, plain := jsonx.PlainKey(q)
		if !plain {
			return false
		}
		switch string(name) {
		case "model":
			ok = setModel(&w.Model, v, names)
			w.models++
			w.modelAt = [2]int{it.Offset() - len(v), it.Offset()}
		case "stream":
			w.noteStream(v)
			ok = setBool(&w.Stream, v)
		case "stream_options":
			// Rare and small; encoding/json also reuses an earlier value's struct, as it would.
			ok = json.Unmarshal(v, &w.StreamOptions) == nil
			w.optionsMember = true
		case "messages":
			if messages {
				return false // a second array merges into the first in encoding/json
			}
			messages = true
			w.Messages, ok = oldFastMessages(v, msgs)
		case "functions":
			w.Raw.Functions = v
			w.checkPassed(name, v)
		case "function_call":
			w.Raw.FunctionCall = v
			w.checkPassed(name, v)
		case "max_tokens":
			ok = setOptInt(&w.MaxTokens, v)
		case "max_completion_tokens":
			ok = setOptInt(&w.MaxCompletion, v)
		case optFallback:
			w.Fallback, w.options = v, true
		case optHint:
			ok, w.options = setOptString(&w.Hint, v), true
		case optPrivacy:
			ok, w.options = setOptString(&w.Privacy, v), true
		case "temperature":
			ok = setOptFloat(&w.Temperature, v)
		case "top_p":
			ok = setOptFloat(&w.TopP, v)
		case "seed":
			ok = setOptInt64(&w.Seed, v)
		case "frequency_penalty":
			ok = setOptFloat(&w.FreqPenalty, v)
		case "presence_penalty":
			ok = setOptFloat(&w.PresPenalty, v)
		case "stop":
			w.Raw.Stop = v
			w.checkPassed(name, v)
		case "response_format":
			w.Raw.ResponseFormat = v
			w.checkPassed(name, v)
		case "tools":
			w.Raw.ToolsRaw = v
			w.checkPassed(name, v)
		case "tool_choice":
			w.Raw.ToolChoice = v
			w.checkPassed(name, v)
		default:
			w.known = false
			w.noteAsked(name, v)
			if !w.checkPassed(name, v) {
				ok = !foldsTo(name, isWireKey)
			}
		}
		if !ok {
			return false
		}
	}
}

// oldFastMessages reads the (validated) messages array with contents and tool calls in place, into
// buf's array (nil: a new one).
func oldFastMessages(v []byte, buf []core.Message) ([]core.Message, bool) {
	switch v[0] {
	case 'n':
		return nil, true
	case '[':
	default:
		return nil, false
	}
	msgs := buf[:0]
	if msgs == nil {
		msgs = make([]core.Message, 0, 4) // non-nil even when empty, as encoding/json decodes []
	}
	it := jsonx.Array(v, false)
	for {
		_, e, ok := it.Next()
		if !ok {
			return msgs, it.Done()
		}
		var m core.Message
		switch e[0] {
		case 'n': // null decodes to the zero message, which then lacks a role
		case '{':
			if !oldFastMessage(e, &m) {
				return nil, false
			}
		default:
			return nil, false
		}
		msgs = append(msgs, m)
	}
}

func oldFastMessage(e []byte, m *core.Message) bool {
	it := jsonx.Object(e, false)
	for {
		q, v, ok := it.Next()
		if !ok {
			return it.Done()
		}
		name, plain := jsonx.PlainKey(q)
		if !plain {
			return false
		}
		switch string(name) {
		case "role":
			ok = setString(&m.Role, v)
		case "content":
			m.Content = v
		case "name":
			ok = setString(&m.Name, v)
		case "tool_calls":
			m.ToolCalls = v
		case "tool_call_id":
			ok = setString(&m.ToolCallID, v)
		case "refusal":
			m.Refusal = v
		case "reasoning_content":
			m.ReasoningContent = v
		case "reasoning":
			m.Reasoning = v
		default:
			ok = !foldsTo(name, isMessageKey)
		}
		if !ok {
			return false
		}
	}
}

// messageSeeds are chat bodies whose messages hold what the walk must validate member by member
// as the whole-array scan did: nesting at and around maxBodyDepth inside a message (a content
// part array, a tool_calls value, a message's unknown member), invalid UTF-8 and lone
// surrogates inside a content, keys escaped, case-folded or not ASCII inside a message,
// messages that are not objects, "messages" twice, and malformed arrays and messages.
func messageSeeds() []string {
	// The body, the messages array and a message open 3 levels: a member's value may nest
	// maxBodyDepth-3 more.
	var seeds []string
	for n := maxBodyDepth - 5; n <= maxBodyDepth-1; n++ {
		seeds = append(seeds,
			`{"model":"saif","messages":[{"role":"user","content":[{"type":"text","text":"x","extra":`+nested(n-2)+`}]}]}`,
			`{"model":"saif","messages":[{"role":"user","content":`+nested(n)+`}]}`,
			`{"model":"saif","messages":[{"role":"assistant","content":null,"tool_calls":`+nested(n)+`},{"role":"user","content":"y"}]}`,
			`{"model":"saif","messages":[{"role":"user","content":"x","unknown":`+deep(n)+`}],"stream":true}`,
			`{"messages":[{"role":"user","content":"x"},`+nested(n+1)+`]}`,
		)
	}
	return append(seeds,
		`{"model":"saif","messages":[{"role":"user","content":"a\xffb"}]}`,
		`{"model":"saif","messages":[{"role":"user","content":"é\xc3"}]}`,
		`{"model":"saif","messages":[{"role":"user","content":[{"type":"text","text":"\xed\xa0\x80"}]}]}`,
		`{"model":"saif","messages":[{"role":"user","content":"\ud800"}]}`,
		`{"model":"saif","messages":[{"role":"user","content":"\udc00\ud800x"}]}`,
		`{"model":"saif","messages":[{"role":"user","content":"\ud83d\ude00"}]}`,
		`{"model":"saif","messages":[{"role":"user","tool_calls":[{"function":{"arguments":"\ud83d"}}]}]}`,
		`{"model":"saif","messages":[{"role":"user","name":"\ud83dx"}]}`,
		`{"model":"saif","messages":[{"rol\u0065":"user","content":"x"}]}`,
		`{"model":"saif","messages":[{"role":"user","Content":"x"}]}`,
		`{"model":"saif","messages":[{"role":"user","CONTENT":"x","TOOL_CALLS":[]}]}`,
		"{\"model\":\"saif\",\"messages\":[{\"role\":\"user\",\"\u212aey\":\"x\",\"content\":\"y\"}]}",
		`{"model":"saif","messages":[{"role":"user","content":"x","\u00e9":1}]}`,
		`{"model":"saif","messages":["hi"]}`, `{"model":"saif","messages":[1]}`, `{"model":"saif","messages":[[]]}`,
		`{"model":"saif","messages":[true]}`, `{"model":"saif","messages":[null,{"role":"user"},null]}`,
		`{"model":"saif","messages":[{"role":"user","content":"x"}],"messages":[{"role":"user","content":"y"}]}`,
		`{"model":"saif","messages":null,"messages":[]}`,
		`{"model":"saif","messages":{"role":"user"}}`, `{"model":"saif","messages":"x"}`, `{"messages":nul}`,
		`{"model":"saif","messages":[{"role":"user","content":"x"},]}`,
		`{"model":"saif","messages":[{"role":"user","content":"x",}]}`,
		`{"model":"saif","messages":[{"role":"user","content":"x"}`, `{"model":"saif","messages":[{"role":"user","content":"x"`,
		`{"model":"saif","messages":[{"role":"user","content":"x"]}`, `{"model":"saif","messages":[{"role":"user","content":"x"}}}`,
		`{"model":"saif","messages":[{"role":"user" "content":"x"}]}`, `{"model":"saif","messages":[{"role":"user","content":01}]}`,
		`{"model":"saif","messages":[{"role":"user","content":"x\u00"}]}`, `{"model":"saif","messages":[{"role":"user","content":"a`+"\n"+`b"}]}`,
		`{"model":"saif","messages":[{"role":"user","content":"x"}]}x`, `{"model":"saif","messages":[ { "role" : "user" , "content" : [ ] } , null ] }`,
		`{"model":"saif","messages":[{}],"max_tokens":5}`, `{"messages":[]}`, `{"messages":[{"role":"user","content":{"a":[1,{"b":null}]}}]}`,
	)
}

// sameAsOldWalk fails tb unless walkWire, over the walk Text and (for a text Written is for)
// Written start on body, takes body exactly when the old walk does, and fills the same view.
func sameAsOldWalk(tb testing.TB, body []byte) {
	tb.Helper()
	fixed := bytes.Clone(body)
	text := json.Valid(body) && jsonx.FixText(fixed, 1<<30) == nil && bytes.Equal(fixed, body)
	for _, written := range []bool{false, true} {
		if written && !text {
			continue
		}
		walk := func() jsonx.Iter {
			if written {
				return jsonx.Written(body, maxBodyDepth)
			}
			return jsonx.Text(body, maxBodyDepth)
		}
		var got, want wireView
		ok := walkWire(walk(), &got, nil, testNames)
		wantOK := oldWalkWire(walk(), &want, nil, testNames)
		if ok != wantOK {
			tb.Fatalf("%q (Written %v): walkWire took it %v, the old walk %v", body, written, ok, wantOK)
		}
		if !ok {
			continue
		}
		if diff := cmp.Diff(want, got, cmp.Exporter(func(reflect.Type) bool { return true })); diff != "" {
			tb.Fatalf("%q (Written %v): view (-old +walkWire):\n%s", body, written, diff)
		}
	}
}

// TestMessagesWalkedOnce holds the walk that reads messages member by member to the old walk,
// and (decodeWireAgrees) to FixText and encoding/json, on messageSeeds and the bodies
// FuzzDecodeWire starts from; and shows that the depth limit inside a message holds exactly:
// a content nested to maxBodyDepth is taken, one level more is refused as too deep.
func TestMessagesWalkedOnce(t *testing.T) {
	for _, b := range append(messageSeeds(), decodeSeeds()...) {
		sameAsOldWalk(t, []byte(b))
		decodeWireAgrees(t, []byte(b))
	}
	for _, tt := range []struct {
		n    int
		take bool
	}{{maxBodyDepth - 3, true}, {maxBodyDepth - 2, false}} {
		for _, tmpl := range []string{
			`{"model":"saif","messages":[{"role":"user","content":%s}]}`,
			`{"model":"saif","messages":[{"role":"assistant","tool_calls":%s}]}`,
		} {
			body := []byte(strings.Replace(tmpl, "%s", nested(tt.n), 1))
			var w wireView
			if got := fastWire(body, &w, nil, testNames); got != tt.take {
				t.Errorf("value nesting %d in %.60q: taken %v, want %v", tt.n, body, got, tt.take)
			}
			w = wireView{}
			err := decodeWire(body, &w, nil, testNames)
			if deep := err != nil && strings.Contains(err.Error(), "deeper than"); deep == tt.take {
				t.Errorf("value nesting %d in %.60q: decodeWire error %v", tt.n, body, err)
			}
		}
	}
}
