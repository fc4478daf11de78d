package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/core"
)

// chatRequestOf decodes a client body as the server would, for the translation tests.
func chatRequestOf(t *testing.T, body string) *core.Request {
	t.Helper()
	return clientRequest(t, []byte(body))
}

func ollamaTarget(url string) *core.Target {
	return &core.Target{Name: "ol", Adapter: core.AdapterOllama, URL: url, Model: "llama3.2", Stats: &core.Stats{}}
}

func saifTarget(url string) *core.Target {
	return &core.Target{Name: "saif", Adapter: core.AdapterSAIF, URL: url, Model: "saif-7b", Stats: &core.Stats{},
		Specialists: []string{"rev_eng", "webapp"}}
}

// TestOllamaTranslateErrors covers the requests the ollama adapter refuses before sending
// anything, and what each refusal says.
func TestOllamaTranslateErrors(t *testing.T) {
	tests := []struct {
		name, body string
		code       string
		param      string
	}{
		{"http image", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":"http://x/y.png"}]}]}`,
			"image_url_not_supported", "messages[0].content[0].image_url"},
		{"http image after a text part names its own part", `{"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"what is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},{"type":"image_url","image_url":{"url":"https://example.com/cat.png","detail":"low"}}]}]}`,
			"image_url_not_supported", "messages[1].content[2].image_url"},
		{"image part without a url", `{"messages":[{"role":"user","content":[{"type":"text","text":"t"},{"type":"image_url","image_url":{"detail":"low"}}]}]}`,
			"invalid_image_url", "messages[0].content[1].image_url"},
		{"bad base64", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,@@@"}}]}]}`,
			"invalid_image_url", "messages[0].content[0].image_url"},
		{"audio part", `{"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{}}]}]}`,
			"unsupported_content", "messages[0].content"},
		{"arguments not an object", `{"messages":[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`,
			"invalid_value", "messages[0].tool_calls[0].function.arguments"},
		{"arguments null", `{"messages":[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"null"}}]}]}`,
			"invalid_value", "messages[0].tool_calls[0].function.arguments"},
		{"arguments not JSON", `{"messages":[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{city: Fes}"}}]}]}`,
			"invalid_value", "messages[0].tool_calls[0].function.arguments"},
		{"arguments a JSON string", `{"messages":[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"\"Fes\""}}]}]}`,
			"invalid_value", "messages[0].tool_calls[0].function.arguments"},
		{"legacy functions", `{"messages":[{"role":"user","content":"x"}],"functions":[{"name":"f","parameters":{"type":"object"}}]}`,
			"unsupported_value", "functions"},
		{"unknown response_format", `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"grammar"}}`,
			"invalid_value", "response_format.type"},
		{"schema missing", `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"n"}}}`,
			"invalid_value", "response_format.json_schema.schema"},
		{"tool_choice names no tool", `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"g"}}}`,
			"invalid_value", "tool_choice"},
		{"tool_choice names a nameless tool", `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"parameters":{}}}],"tool_choice":{"type":"function","function":{"name":""}}}`,
			"invalid_value", "tool_choice"},
		{"allowed_tools names no tool", `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"g"}}]}}}`,
			"invalid_value", "tool_choice.allowed_tools.tools"},
		{"allowed_tools in the Responses shape names no tool", `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"g"}]}}`,
			"invalid_value", "tool_choice.tools"},
		{"reasoning_content not a string", `{"messages":[{"role":"assistant","content":"a","reasoning_content":{"text":"x"}}]}`,
			"invalid_type", "messages[0].reasoning_content"},
		{"reasoning not a string", `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a","reasoning":["x"]}]}`,
			"invalid_type", "messages[1].reasoning"},
		{"a Responses-shaped tool_choice names no tool", `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","name":"g"}}`,
			"invalid_value", "tool_choice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &openaiOllama{t: ollamaTarget("http://127.0.0.1:1"), newID: func() string { return "x" }}
			_, err := a.translate(chatRequestOf(t, tt.body))
			var se *core.StatusError
			if !errors.As(err, &se) || se.Status != 400 || se.Code != tt.code || se.Param != tt.param {
				t.Fatalf("error %#v, want 400 %s at %s", err, tt.code, tt.param)
			}
		})
	}
}

func TestOllamaTranslate(t *testing.T) {
	tests := []struct {
		name, body string
		want       string // the /api/chat body
	}{
		{"tool_choice none drops the tools",
			`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none"}`,
			`{"model":"llama3.2","messages":[{"role":"user","content":"x"}],"stream":false,"truncate":false}`},
		{"a named tool_choice offers that tool alone",
			`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"g","parameters":{"type":"object"}}}],"tool_choice":{"type":"function","function":{"name":"g"}}}`,
			`{"model":"llama3.2","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"g","parameters":{"type":"object"}}}],"stream":false,"truncate":false}`},
		{"allowed_tools offers the tools it lists",
			`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"g"}},{"type":"function","function":{"name":"h"}}],"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"function","function":{"name":"h"}},{"type":"function","function":{"name":"f"}}]}}}`,
			`{"model":"llama3.2","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"h"}},{"type":"function","function":{"name":"f"}}],"stream":false,"truncate":false}`},
		{"allowed_tools in the Responses shape (names at the top level) offers the tools it lists",
			`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"g"}},{"type":"function","function":{"name":"h"}}],"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"h"},{"type":"function","name":"f"}]}}`,
			`{"model":"llama3.2","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"h"}},{"type":"function","function":{"name":"f"}}],"stream":false,"truncate":false}`},
		{"allowed_tools naming a tool twice offers it once",
			`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"g"}}],"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"g"},{"type":"function","name":"g"}]}}`,
			`{"model":"llama3.2","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"g"}}],"stream":false,"truncate":false}`},
		{"allowed_tools listing no function tool offers none",
			`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[]}}}`,
			`{"model":"llama3.2","messages":[{"role":"user","content":"x"}],"stream":false,"truncate":false}`},
		{"allowed_tools listing only a custom tool offers none",
			`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"custom","custom":{"name":"c"}}]}}}`,
			`{"model":"llama3.2","messages":[{"role":"user","content":"x"}],"stream":false,"truncate":false}`},
		{"a Responses-shaped named tool_choice offers that tool alone",
			`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"g"}}],"tool_choice":{"type":"function","name":"g"}}`,
			`{"model":"llama3.2","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"g"}}],"stream":false,"truncate":false}`},
		{"tool_choice required offers every tool",
			`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"g"}}],"tool_choice":"required"}`,
			`{"model":"llama3.2","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"g"}}],"stream":false,"truncate":false}`},
		{"plain data URL is base64-encoded, text parts joined",
			`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"},{"type":"image_url","image_url":{"url":"data:text/plain,hi%21"}}]}]}`,
			`{"model":"llama3.2","messages":[{"role":"user","content":"a\nb","images":["aGkh"]}],"stream":false,"truncate":false}`},
		{"empty arguments are an empty object; tool result falls back to its name, its tool_call_id sent as written",
			`{"messages":[{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"now","arguments":""}}]},{"role":"tool","tool_call_id":"other","name":"clock","content":"12:00"}]}`,
			`{"model":"llama3.2","messages":[{"role":"assistant","content":"","tool_calls":[{"id":"c1","function":{"name":"now","arguments":{}}}]},{"role":"tool","content":"12:00","tool_name":"clock","tool_call_id":"other"}],"stream":false,"truncate":false}`},
		{"two calls go back as objects, keys in order; each result finds its tool by tool_call_id and goes in its call's place",
			`{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"z\":1,\"a\":\"Fès \\u003c\"}"}},{"id":"c2","type":"function","function":{"name":"g","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c2","content":"G"},{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"F"}]}]}`,
			`{"model":"llama3.2","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"","tool_calls":[{"id":"c1","function":{"name":"f","arguments":{"z":1,"a":"Fès \u003c"}}},{"id":"c2","function":{"name":"g","arguments":{}}}]},{"role":"tool","content":"F","tool_name":"f","tool_call_id":"c1"},{"role":"tool","content":"G","tool_name":"g","tool_call_id":"c2"}],"stream":false,"truncate":false}`},
		{"system and developer content parts are joined text; data URL images go to images",
			`{"messages":[{"role":"system","content":[{"type":"text","text":"be brief"},{"type":"text","text":"be kind"}]},{"role":"developer","content":[{"type":"text","text":"dev"}]},{"role":"user","content":[{"type":"text","text":"what?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo=","detail":"high"}},{"type":"image_url","image_url":"data:image/jpeg;base64,/9j/4AAQ"}]}]}`,
			`{"model":"llama3.2","messages":[{"role":"system","content":"be brief\nbe kind"},{"role":"system","content":"dev"},{"role":"user","content":"what?","images":["iVBORw0KGgo=","/9j/4AAQ"]}],"stream":false,"truncate":false}`},
		{"the penalties are options",
			`{"messages":[{"role":"user","content":"x"}],"frequency_penalty":0.5,"presence_penalty":-1}`,
			`{"model":"llama3.2","messages":[{"role":"user","content":"x"}],"options":{"frequency_penalty":0.5,"presence_penalty":-1},"stream":false,"truncate":false}`},
		// A client that replays the reasoning it was answered with (DeepSeek's reasoning_content, as
		// the gateway answers it, or reasoning, as vLLM and Ollama's own OpenAI endpoint answer it)
		// has it sent back as the assistant message's thinking, which Ollama's template for the
		// model renders or leaves out (TestOllamaReplaysReasoning).
		{"an assistant's reasoning_content is its thinking",
			`{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"42","reasoning_content":"6 times 7"},{"role":"user","content":"why?"}]}`,
			`{"model":"llama3.2","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"42","thinking":"6 times 7"},{"role":"user","content":"why?"}],"stream":false,"truncate":false}`},
		{"an assistant's reasoning is its thinking, beside tool calls too",
			`{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":null,"reasoning":"look it up","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"F"}]}`,
			`{"model":"llama3.2","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"","thinking":"look it up","tool_calls":[{"id":"c1","function":{"name":"f","arguments":{}}}]},{"role":"tool","content":"F","tool_name":"f","tool_call_id":"c1"}],"stream":false,"truncate":false}`},
		{"reasoning_content wins over reasoning",
			`{"messages":[{"role":"assistant","content":"a","reasoning":"R","reasoning_content":"RC"},{"role":"assistant","content":"b","reasoning_content":"RC2","reasoning":"R2"}]}`,
			`{"model":"llama3.2","messages":[{"role":"assistant","content":"a","thinking":"RC"},{"role":"assistant","content":"b","thinking":"RC2"}],"stream":false,"truncate":false}`},
		{"null or empty reasoning is none; an empty reasoning_content gives way to reasoning",
			`{"messages":[{"role":"assistant","content":"a","reasoning_content":null},{"role":"assistant","content":"b","reasoning":""},{"role":"assistant","content":"c","reasoning_content":"","reasoning":"R"}]}`,
			`{"model":"llama3.2","messages":[{"role":"assistant","content":"a"},{"role":"assistant","content":"b"},{"role":"assistant","content":"c","thinking":"R"}],"stream":false,"truncate":false}`},
		{"reasoning on a message that is not the assistant's is not sent",
			`{"messages":[{"role":"system","content":"s","reasoning_content":"x"},{"role":"user","content":"u","reasoning":"y"}]}`,
			`{"model":"llama3.2","messages":[{"role":"system","content":"s"},{"role":"user","content":"u"}],"stream":false,"truncate":false}`},
		{"text response_format is no format; seed 0 is kept",
			`{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"text"},"seed":0}`,
			`{"model":"llama3.2","messages":[{"role":"user","content":"x"}],"options":{"seed":0},"stream":false,"truncate":false}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &openaiOllama{t: ollamaTarget("http://127.0.0.1:1"), newID: func() string { return "x" }}
			out, err := a.translate(chatRequestOf(t, tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(appendOllamaRequest(nil, out))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestSAIFSpecialist(t *testing.T) {
	tests := []struct {
		name, model, hint string
		want              string // "" for null
		wantErr           bool
	}{
		{"no hint lets the router choose", "saif", "", "", false},
		{"case-insensitive, canonical name sent", "saif", "Rev_Eng", "rev_eng", false},
		{"unknown hint is the client's mistake", "saif", "cooking", "", true},
		{"under auto a specialist hint still names it", "auto", "webapp", "webapp", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &openaiSAIF{t: saifTarget("http://127.0.0.1:1")}
			got, err := a.specialist(&core.Request{Model: tt.model, RouteHint: tt.hint})
			if tt.wantErr {
				var se *core.StatusError
				if !errors.As(err, &se) || se.Code != "unknown_specialist" || !strings.Contains(se.Message, "rev_eng, webapp") {
					t.Fatalf("error %v, want unknown_specialist naming the valid ones", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := ""
			if got != nil {
				s = *got
			}
			if s != tt.want {
				t.Fatalf("specialist %q, want %q", s, tt.want)
			}
		})
	}
}

func TestSAIFEndpoint(t *testing.T) {
	for base, want := range map[string]string{
		"http://127.0.0.1:8443":    "http://127.0.0.1:8443/v1/completions",
		"http://127.0.0.1:8443/v1": "http://127.0.0.1:8443/v1/completions",
		"https://saif.lan/api":     "https://saif.lan/api/v1/completions",
		"https://saif.lan/api/v1":  "https://saif.lan/api/v1/completions",
		"https://saif.lan/api/v1x": "https://saif.lan/api/v1x/v1/completions",
	} {
		if got := base + saifPath(base); got != want {
			t.Errorf("base + saifPath(%q) = %q, want %q", base, got, want)
		}
	}
}

func TestUnsupportedOps(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { t.Errorf("asked %s", r.URL.Path) })
	tests := []struct {
		tg *core.Target
		op core.Op
	}{
		{ollamaTarget(srv.URL), core.OpCompletions},
		{saifTarget(srv.URL), core.OpEmbeddings},
	}
	for _, tt := range tests {
		t.Run(tt.tg.Adapter.String()+tt.op.Path(), func(t *testing.T) {
			_, err := newSet(t, tt.tg).Chat(context.Background(), tt.tg, &core.Request{Op: tt.op, Body: []byte(`{}`)})
			var se *core.StatusError
			if !errors.As(err, &se) || se.Status != 404 || se.Code != "unsupported_endpoint" {
				t.Fatalf("error %v, want 404 unsupported_endpoint", err)
			}
		})
	}
}

func TestOllamaEmbeddingsBase64(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"model":"m","embeddings":[[1,-2]],"prompt_eval_count":1}`)
	})
	tg := ollamaTarget(srv.URL)
	resp, err := newSet(t, tg).Chat(context.Background(), tg, &core.Request{Op: core.OpEmbeddings,
		Body: []byte(`{"model":"e","input":"x","encoding_format":"base64"}`)})
	if err != nil {
		t.Fatal(err)
	}
	// 1.0 and -2.0 as little-endian float32.
	if !bytes.Contains(resp.Body, []byte(`"embedding":"AACAPwAAAMA="`)) {
		t.Fatalf("body %s", resp.Body)
	}
	// A decimal just above halfway between two float32s is the upper one, as a float32 parse
	// gives it; read as a float64 first, it landed on the halfway point and rounded to even,
	// the lower one.
	srv2 := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"model":"m","embeddings":[[1.00000017881393432617187499]],"prompt_eval_count":1}`)
	})
	tg2 := ollamaTarget(srv2.URL)
	resp, err = newSet(t, tg2).Chat(context.Background(), tg2, &core.Request{Op: core.OpEmbeddings,
		Body: []byte(`{"model":"e","input":"x","encoding_format":"base64"}`)})
	if err != nil {
		t.Fatal(err)
	}
	// 0x3F800001, the float32 after 1.0, little-endian.
	if !bytes.Contains(resp.Body, []byte(`"embedding":"AQCAPw=="`)) {
		t.Fatalf("body %s", resp.Body)
	}
	_, err = newSet(t, tg).Chat(context.Background(), tg, &core.Request{Op: core.OpEmbeddings,
		Body: []byte(`{"model":"e","input":[1,2,3]}`)})
	var se *core.StatusError
	if !errors.As(err, &se) || se.Code != "unsupported_input" {
		t.Fatalf("token input: %v", err)
	}
}

// TestOllamaStreamThinkTags checks that reasoning = "think-tags" applies to a translated stream
// too, with the tag split across NDJSON lines and a held tag prefix flushed at the end.
func TestOllamaStreamThinkTags(t *testing.T) {
	lines := []string{"<thi", "nk>why</th", "ink>\n\nbecause <th"}
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		for _, l := range lines {
			b, _ := json.Marshal(map[string]any{"message": map[string]string{"role": "assistant", "content": l}, "done": false})
			_, _ = w.Write(append(b, '\n'))
		}
		_, _ = io.WriteString(w, `{"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"}`+"\n")
	})
	tg := ollamaTarget(srv.URL)
	tg.Reasoning = core.ReasoningThinkTags
	resp, err := newSet(t, tg).Chat(context.Background(), tg, &core.Request{Stream: true,
		Messages: []core.Message{{Role: "user", Content: json.RawMessage(`"q"`)}}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Stream.Close()
	events, end := drain(resp.Stream)
	var got thinkResult
	for _, e := range events {
		var c chunkJSON
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatal(err)
		}
		if c.Choices[0].Delta.Content != nil {
			got.Content += *c.Choices[0].Delta.Content
		}
		got.Reasoning += c.Choices[0].Delta.ReasoningContent
	}
	if want := (thinkResult{"because <th", "why"}); got != want || end != "EOF" {
		t.Fatalf("got %+v, end %s; want %+v", got, end, want)
	}
}

func TestLineReaderCut(t *testing.T) {
	l := newLineReader(strings.NewReader("\n{\"a\":1}\r\n\n  \n{\"b\""))
	var got []string
	var cuts []bool
	for {
		line, cut, err := l.next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
		got, cuts = append(got, string(line)), append(cuts, cut)
	}
	if diff := cmp.Diff([]string{`{"a":1}`, `{"b"`}, got); diff != "" {
		t.Fatal(diff)
	}
	if diff := cmp.Diff([]bool{false, true}, cuts); diff != "" {
		t.Fatal(diff)
	}
}

func TestTranslatedStreamsCloseTwice(t *testing.T) {
	for _, s := range []Stream{
		&ollamaStream{body: io.NopCloser(strings.NewReader("")), lines: newLineReader(strings.NewReader(""))},
		&saifStream{body: io.NopCloser(strings.NewReader("")), sse: newSSEReader(strings.NewReader(""))},
	} {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		_ = s.Close()
		if _, err := s.Next(); !errors.Is(err, errStreamClosed) {
			t.Fatalf("%T: Next after Close = %v", s, err)
		}
	}
}

// checkStream drains a translated stream and checks what every parser must hold: each event is
// one line of JSON, and the end is a clean EOF or a *core.StreamError.
func checkStream(t *testing.T, s Stream) {
	t.Helper()
	defer s.Close()
	for i := 0; ; i++ {
		ev, err := s.Next()
		if err != nil {
			var se *core.StreamError
			if !errors.Is(err, io.EOF) && !errors.As(err, &se) {
				t.Fatalf("stream ended with %T %v", err, err)
			}
			return
		}
		if !json.Valid(ev) || bytes.IndexByte(ev, '\n') >= 0 {
			t.Fatalf("event %d is not one line of JSON: %q", i, ev)
		}
		if i > 1<<16 {
			t.Fatal("runaway stream")
		}
	}
}

func FuzzOllamaStream(f *testing.F) {
	f.Add([]byte(`{"model":"m","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":"hi"},"done":false}` + "\n" +
		`{"message":{"role":"assistant","content":""},"done":true,"done_reason":"length","prompt_eval_count":1,"eval_count":2}` + "\n"))
	f.Add([]byte(`{"message":{"tool_calls":[{"function":{"name":"f","arguments":{"a":[1]}}}]},"done":true}`))
	f.Add([]byte(`{"error":"boom"}` + "\n"))
	f.Add([]byte(`{"message":{"content":"<think>a</th"},"done":false}` + "\n" + `{"done":true}`))
	f.Add([]byte("\r\n\n{\"done\":tr"))
	f.Fuzz(func(t *testing.T, body []byte) {
		a := &openaiOllama{t: &core.Target{Name: "f", Model: "m", Reasoning: core.Reasoning(len(body) % 2)},
			now: fixedNow, newID: func() string { return "x" }}
		checkStream(t, a.newStream(io.NopCloser(bytes.NewReader(body)), len(body)%3 == 0, a.t.Reasoning))
	})
}

func FuzzSAIFStream(f *testing.F) {
	f.Add([]byte("data: {\"text\":\"a\",\"specialist\":\"webapp\"}\n\ndata: {\"done\":true,\"finish_reason\":\"stop\",\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}\n\n"))
	f.Add([]byte("event: error\ndata: {\"error\":\"x\"}\n\n"))
	f.Add([]byte("data: {\"text\":\"<think>\"}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: {\"te"))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, op := range []core.Op{core.OpChat, core.OpCompletions} {
			tg := &core.Target{Name: "f", Model: "m", Reasoning: core.Reasoning(len(body) % 2)}
			a := &openaiSAIF{t: tg, now: fixedNow, newID: func() string { return "x" }}
			resp := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}},
				Body: io.NopCloser(bytes.NewReader(body))}
			r, err := a.stream(resp, &core.Request{Op: op, Stream: true, IncludeUsage: len(body)%3 == 0})
			if err != nil {
				t.Fatal(err)
			}
			checkStream(t, r.Stream)
		}
	})
}

// A line is refused once it is longer than maxEvent, however its bytes fall into the reader's
// buffer: the check ran only before each further read, so the read that ended the line let it
// past by up to the buffer's size.
func TestLineReaderLimit(t *testing.T) {
	tests := []struct {
		name    string
		n       int // the line's length without its ending
		tooLong bool
	}{
		{"at the limit", maxEvent, false},
		{"one byte over", maxEvent + 1, true},
		{"just under a buffer over", maxEvent + 4000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// bytes.Repeat, not a loop byte by byte: under -race each of 32 Mi stores was
			// instrumented, 6 s of the package's run.
			l := newLineReader(bytes.NewReader(append(bytes.Repeat([]byte("x"), tt.n), "\r\n{}\n"...)))
			got, _, err := l.next()
			if tt.tooLong {
				if !errors.Is(err, errEventTooLarge) {
					t.Fatalf("next = %d bytes, %v; want errEventTooLarge", len(got), err)
				}
				return
			}
			if err != nil || len(got) != tt.n {
				t.Fatalf("next = %d bytes, %v; want the line", len(got), err)
			}
		})
	}
}

// TestSAIFStreamSpecialistNamedLate: SAIF's router may send text before it names the specialist.
// The chunk of the first event that names one carries it in "hayula", once; the header only
// when the first event names it (the head has gone to the client after that).
func TestSAIFStreamSpecialistNamedLate(t *testing.T) {
	for _, tc := range []struct {
		name, input, header string
		hayula              []int // the chunks that carry a hayula member
	}{
		{"named first", `data: {"text":"a","specialist":"webapp"}` + "\n\n" + `data: {"text":"b","specialist":"webapp"}` + "\n\n",
			"webapp", []int{0}},
		{"named late", `data: {"text":"a"}` + "\n\n" + `data: {"text":"b","specialist":"malware"}` + "\n\n" +
			`data: {"text":"c","specialist":"crypto"}` + "\n\n", "", []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.input + `data: {"done":true,"finish_reason":"stop"}` + "\n\n"
			b := io.NopCloser(strings.NewReader(in))
			h := http.Header{}
			s := &saifStream{target: "s", body: b, sse: newSSEReader(b), out: newChunker("id", 1, "m", 0), header: h}
			var got []int
			var names []string
			for i := 0; ; i++ {
				c, err := s.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("Next: %v", err)
				}
				var v struct {
					Hayula *struct{ Specialist string } `json:"hayula"`
				}
				if err := json.Unmarshal(bytes.TrimSuffix(bytes.TrimPrefix(c, []byte("data: ")), []byte("\n\n")), &v); err != nil {
					t.Fatalf("chunk %d %q: %v", i, c, err)
				}
				if v.Hayula != nil {
					got, names = append(got, i), append(names, v.Hayula.Specialist)
				}
			}
			if diff := cmp.Diff(tc.hayula, got); diff != "" {
				t.Errorf("chunks with hayula (-want +got):\n%s (names %v)", diff, names)
			}
			if tc.header == "" && len(names) > 0 && names[0] != "malware" {
				t.Errorf("late specialist %v, want malware, the first one named", names)
			}
			if g := h.Get(HeaderSpecialist); g != tc.header {
				t.Errorf("header %q, want %q", g, tc.header)
			}
		})
	}
}

// TestSAIFUnknownSpecialistNotEchoed: the adapter's unknown_specialist (the server's specialist
// filter keeps such a hint from reaching it) does not repeat the client's hint, of any length.
func TestSAIFUnknownSpecialistNotEchoed(t *testing.T) {
	a := &openaiSAIF{t: saifTarget("http://127.0.0.1:1")}
	_, err := a.specialist(&core.Request{RouteHint: strings.Repeat("x", 5000)})
	var se *core.StatusError
	if !errors.As(err, &se) || se.Code != "unknown_specialist" || len(se.Message) > 500 {
		t.Fatalf("error %v", err)
	}
}

// TestSAIFAnswerSpecialistHeader: a whole answer's X-Hayula-Specialist is the name the router
// gave, whether or not the target lists it; for a listed one (spelt as listed) it is the one
// map the target built, shared read only by its answers; a name that cannot go in a head gets
// none.
func TestSAIFAnswerSpecialistHeader(t *testing.T) {
	a := &openaiSAIF{t: saifTarget("http://127.0.0.1:1"), headers: specialistHeaders([]string{"webapp", "rev_eng", "bad\nname"})}
	if len(a.headers) != 2 {
		t.Fatalf("%d shared headers, want 2 (a name with a newline has none)", len(a.headers))
	}
	for _, tc := range []struct {
		name, want string
		shared     bool
	}{
		{"webapp", "webapp", true},
		{"rev_eng", "rev_eng", true},
		{"Webapp", "Webapp", false}, // the router's own spelling, not the list's
		{"forensics", "forensics", false},
		{"", "", false},
		{"bad\nname", "", false},
		{strings.Repeat("x", maxSpecialistHeader+1), "", false},
	} {
		h := a.header(tc.name)
		if got := h.Get(HeaderSpecialist); got != tc.want {
			t.Errorf("header(%.20q): %q, want %q", tc.name, got, tc.want)
		}
		if again := a.header(tc.name); (reflect.ValueOf(again).UnsafePointer() == reflect.ValueOf(h).UnsafePointer()) != tc.shared {
			t.Errorf("header(%.20q) shared between answers: %v, want %v", tc.name, !tc.shared, tc.shared)
		}
	}
}

// TestSAIFAnswerFieldsOutliveItsBody: a whole answer's id, specialist and routed_by are read as
// views of its body (decodeSAIFAnswer), which the connection's next answer reads into once the
// first is released. What is kept of them (the chat.completion's bytes, the header value of a
// specialist the target does not list) is a copy: unchanged after the next answer.
func TestSAIFAnswerFieldsOutliveItsBody(t *testing.T) {
	names := []string{"forensics-one", "zzzzzzzz-two!"} // of one length, unlisted
	var n atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		i := n.Add(1) - 1
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"saif-`+names[i%2]+`","specialist":"`+names[i%2]+`","routed_by":"router-`+names[i%2]+
			`","text":"hello","finish_reason":"stop"}`)
	}))
	t.Cleanup(up.Close)
	tg := saifTarget(up.URL)
	s := NewSet([]*core.Target{tg}, Options{})
	t.Cleanup(s.Close)
	req := clientRequest(t, []byte(`{"model":"saif","messages":[{"role":"user","content":"hi"}]}`))
	// What the server keeps of a Response past its Release: the header's values, put in the
	// client's header map before the answer is written and the Response released.
	var kept [][]string
	var bodies []string
	for range 16 {
		r, err := s.ChatID(context.Background(), tg, req, "")
		if err != nil {
			t.Fatal(err)
		}
		kept, bodies = append(kept, r.Header[HeaderSpecialist]), append(bodies, string(r.Body))
		r.Release()
	}
	for i, vs := range kept {
		name := names[i%2]
		if len(vs) != 1 || vs[0] != name {
			t.Errorf("answer %d's header %q after the answers after it, want %q", i, vs, name)
		}
		for _, want := range []string{`"id":"saif-` + name + `"`, `"specialist":"` + name + `"`, `"routed_by":"router-` + name + `"`} {
			if !strings.Contains(bodies[i], want) {
				t.Errorf("answer %d, %s, lacks %s", i, bodies[i], want)
			}
		}
	}
}

// TestOllamaAnswerFieldsOutliveItsBody: a whole /api/chat answer's model, created_at and
// done_reason are read as views of its body (decodeOllamaLine), which the connection's next
// answer reads into once the first is released; each answer's chat.completion is its own.
func TestOllamaAnswerFieldsOutliveItsBody(t *testing.T) {
	models := []string{"model-one:7b", "model-two:9b"} // of one length
	var n atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		i := n.Add(1) - 1
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = io.WriteString(w, `{"model":"`+models[i%2]+`","created_at":"2025-11-30T00:00:0`+strconv.Itoa(int(i%2))+`Z",`+
			`"message":{"role":"assistant","content":"hello"},"done":true,"done_reason":"`+[]string{"stop", "length"}[i%2]+
			`","prompt_eval_count":3,"eval_count":1}`)
	}))
	t.Cleanup(up.Close)
	tg := ollamaTarget(up.URL)
	s := NewSet([]*core.Target{tg}, Options{})
	t.Cleanup(s.Close)
	req := clientRequest(t, []byte(`{"model":"ol","messages":[{"role":"user","content":"hi"}]}`))
	var bodies []string
	for range 16 {
		r, err := s.ChatID(context.Background(), tg, req, "")
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, string(r.Body))
		r.Release()
	}
	for i, b := range bodies {
		var c struct {
			Model   string
			Created int64
			Choices []struct {
				FinishReason string `json:"finish_reason"`
			}
		}
		if err := json.Unmarshal([]byte(b), &c); err != nil {
			t.Fatalf("answer %d %s: %v", i, b, err)
		}
		if want := []string{"stop", "length"}[i%2]; c.Model != models[i%2] || c.Created != 1764460800+int64(i%2) ||
			len(c.Choices) != 1 || c.Choices[0].FinishReason != want {
			t.Errorf("answer %d: %s, want model %s, created %d, finish_reason %s", i, b, models[i%2], 1764460800+i%2, want)
		}
	}
}
