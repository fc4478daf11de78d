package server_test

import (
	"strings"
	"testing"
)

// These tests send what JSON decoders read differently and hold the gateway to deciding on what
// the upstream will read: Python's json (vLLM, SGLang) and llama.cpp's nlohmann match member names
// exactly and keep a duplicate's last value; encoding/json, which the gateway and Ollama decode
// with, matches names case-insensitively.

// TestFoldedSpellingRefused: a member that encoding/json reads as a field the gateway decides on,
// spelled in another case, is refused, naming it; the upstream is never asked. Before, the gateway
// window-checked and routed on the folded spelling ("Messages", the last one read) while a Python
// upstream ran the "messages" beside it.
func TestFoldedSpellingRefused(t *testing.T) {
	small := newFake(t, "small")
	g := newGateway(t, target("small", small.url(), "private", "context_window = 64")+
		"[routes.r]\ntargets = [\"small\"]\n", nil)
	long := `"` + strings.Repeat("word ", 200) + `"`
	msgs := func(content string) string { return `[{"role":"user","content":` + content + `}]` }
	for _, tt := range []struct {
		name, path, body, param string
	}{
		{"Messages after messages", "/v1/chat/completions",
			`{"model":"r","messages":` + msgs(long) + `,"Messages":` + msgs(`"hi"`) + `}`, "Messages"},
		{"escaped MESSAGES", "/v1/chat/completions",
			`{"model":"r","messages":` + msgs(long) + `,"MESS\u0041GES":` + msgs(`"hi"`) + `}`, "MESSAGES"},
		{"long s folds to s", "/v1/chat/completions",
			`{"model":"r","messages":` + msgs(long) + `,"me\u017f\u017fages":` + msgs(`"hi"`) + `}`, "me\u017f\u017fages"},
		{"Content in a message", "/v1/chat/completions",
			`{"model":"r","messages":[{"role":"user","content":` + long + `,"Content":"hi"}]}`, "messages[0].Content"},
		{"Reasoning_Content beside reasoning_content", "/v1/chat/completions",
			`{"model":"r","messages":[{"role":"assistant","content":"a","reasoning_content":"x","Reasoning_Content":"y"},{"role":"user","content":"b"}]}`,
			"messages[0].Reasoning_Content"},
		{"ROLE in the second message", "/v1/chat/completions",
			`{"model":"r","messages":[{"role":"user","content":"a"},{"role":"user","ROLE":"user","content":"b"}]}`,
			"messages[1].ROLE"},
		{"Max_Tokens", "/v1/chat/completions",
			`{"model":"r","max_tokens":1000,"Max_Tokens":1,"messages":` + msgs(`"hi"`) + `}`, "Max_Tokens"},
		{"STREAM", "/v1/chat/completions",
			`{"model":"r","stream":true,"STREAM":false,"messages":` + msgs(`"hi"`) + `}`, "STREAM"},
		{"Tools", "/v1/chat/completions",
			`{"model":"r","tools":[{"type":"function","function":{"name":"f"}}],"Tools":[],"messages":` + msgs(`"hi"`) + `}`,
			"Tools"},
		{"Tool_Choice", "/v1/chat/completions",
			`{"model":"r","tool_choice":"auto","Tool_Choice":"none","messages":` + msgs(`"hi"`) + `}`, "Tool_Choice"},
		{"Prompt", "/v1/completions", `{"model":"r","prompt":` + long + `,"Prompt":"hi"}`, "Prompt"},
		{"N", "/v1/completions", `{"model":"r","prompt":"hi","n":3,"N":1}`, "N"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := small.hits.Load()
			rep := g.post(t, tt.path, tt.body)
			if rep.status != 400 || rep.errorField(t, "param") != tt.param || rep.errorField(t, "code") != "unknown_parameter" {
				t.Fatalf("status %d chain %q: %s", rep.status, rep.header.Get("x-hayula-chain"), rep.body)
			}
			if small.hits.Load() != before {
				t.Fatalf("the upstream was asked")
			}
		})
	}
}

// TestFoldedPartRefused: a content part's "Type" or "Text" is refused as "Content" is: the
// gateway read parts case-insensitively, so it judged {"type":"image_url","Type":"text"} to need
// no vision and classified model auto on "Text" while a Python upstream got the image and "text".
func TestFoldedPartRefused(t *testing.T) {
	plain := newFake(t, "plain")
	g := newGateway(t, target("plain", plain.url(), "private", "vision = false")+"[routes.r]\ntargets = [\"plain\"]\n", nil)
	image := `{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}`
	for _, tt := range []struct{ name, parts, param string }{
		{"Type hides an image", `[` + image + `,"Type":"text"}]`, "messages[0].content[0].Type"},
		{"Text beside text", `[{"type":"text","text":"run this","Text":"hello"}]`, "messages[0].content[0].Text"},
		{"escaped TYPE in the second part", `[{"type":"text","text":"a"},` + image + `,"\u0054YPE":"text"}]`,
			"messages[0].content[1].TYPE"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := plain.hits.Load()
			rep := g.post(t, "/v1/chat/completions", `{"model":"r","messages":[{"role":"user","content":`+tt.parts+`}]}`)
			if rep.status != 400 || rep.errorField(t, "param") != tt.param || rep.errorField(t, "code") != "unknown_parameter" {
				t.Fatalf("status %d chain %q: %s", rep.status, rep.header.Get("x-hayula-chain"), rep.body)
			}
			if plain.hits.Load() != before {
				t.Fatalf("the upstream was asked")
			}
		})
	}
	// The ordinary spellings still pass: an image goes to no target without vision.
	rep := g.post(t, "/v1/chat/completions", `{"model":"r","messages":[{"role":"user","content":[`+image+`}]}]}`)
	if rep.status == 200 || plain.hits.Load() != 0 {
		t.Fatalf("an image reached a target without vision: %d %s", rep.status, rep.body)
	}
	rep = g.post(t, "/v1/chat/completions", `{"model":"r","messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`)
	if rep.status != 200 {
		t.Fatalf("a text part: %d %s", rep.status, rep.body)
	}
}

// TestStreamNullAfterTrueRefused: "stream":true then "stream":null streamed (encoding/json leaves
// a bool alone on null) while vLLM and llama.cpp, keeping the last value, answered one JSON object
// to what the gateway relayed as an event stream. Refused, as are its escaped spellings; a single
// null and a true after null stay what they were.
func TestStreamNullAfterTrueRefused(t *testing.T) {
	f := newFake(t, "f")
	g := newGateway(t, target("f", f.url(), "private")+"[routes.r]\ntargets = [\"f\"]\n", nil)
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	for _, tt := range []struct {
		name, members string
		status        int
		stream        bool
	}{
		{"true then null", `"stream":true,"stream":null`, 400, false},
		{"escaped", `"stream":true,"str\u0065am":null`, 400, false},
		{"true, false, null", `"stream":true,"stream":false,"stream":null`, 200, false},
		{"null then true", `"stream":null,"stream":true`, 200, true},
		{"null alone", `"stream":null`, 200, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rep := g.post(t, "/v1/chat/completions", `{"model":"r",`+tt.members+`,`+msgs+`}`)
			if c := g.post(t, "/v1/completions", `{"model":"r",`+tt.members+`,"prompt":"hi"}`); c.status != tt.status {
				t.Fatalf("completions: status %d, want %d: %s", c.status, tt.status, c.body)
			}
			if rep.status != tt.status {
				t.Fatalf("status %d, want %d: %s", rep.status, tt.status, rep.body)
			}
			if tt.status == 400 {
				if rep.errorField(t, "param") != "stream" {
					t.Fatalf("param: %s", rep.body)
				}
				return
			}
			if got := strings.HasPrefix(rep.header.Get("Content-Type"), "text/event-stream"); got != tt.stream {
				t.Fatalf("streamed %v, want %v", got, tt.stream)
			}
		})
	}
}

// TestMaxCompletionTokensOverMaxTokens: beside a max_tokens, max_completion_tokens is the limit
// the window is checked for, as a target reads it. A max_completion_tokens of 0 beside a
// max_tokens of 1000 once gave way to it, as vLLM ("max_completion_tokens or max_tokens") reads
// it, where the gateway had checked the window for none and sent it to a 64-token target; OpenAI
// refuses a 0 (integer_below_min_value), and so does the gateway now, naming it
// (TestTokenLimitBelowOne). Of two limits below 1, max_tokens is named.
func TestMaxCompletionTokensOverMaxTokens(t *testing.T) {
	small, big := newFake(t, "small"), newFake(t, "big")
	g := newGateway(t, target("small", small.url(), "private", "context_window = 64")+
		target("big", big.url(), "private", "context_window = 4096")+"[routes.r]\ntargets = [\"small\", \"big\"]\n", nil)
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	for _, tt := range []struct{ members, chain string }{
		{`"max_completion_tokens":10,"max_tokens":1000`, "small"},
		{`"max_tokens":10,"max_completion_tokens":1000`, "big"},
		{`"max_tokens":1000,"max_completion_tokens":null`, "big"},
	} {
		t.Run(tt.members, func(t *testing.T) {
			rep := g.post(t, "/v1/chat/completions", `{"model":"r",`+tt.members+`,`+msgs+`}`)
			if rep.status != 200 || rep.header.Get("x-hayula-chain") != tt.chain {
				t.Fatalf("status %d chain %q, want %q: %s", rep.status, rep.header.Get("x-hayula-chain"), tt.chain, rep.body)
			}
		})
	}
	for _, tt := range []struct{ members, param string }{
		{`"max_completion_tokens":0,"max_tokens":1000`, "max_completion_tokens"},
		{`"max_completion_tokens":0,"max_tokens":-1`, "max_tokens"},
	} {
		rep := g.post(t, "/v1/chat/completions", `{"model":"r",`+tt.members+`,`+msgs+`}`)
		if rep.status != 400 || rep.errorField(t, "param") != tt.param {
			t.Fatalf("%s: %d %s", tt.members, rep.status, rep.body)
		}
	}
}
