package demo

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGenerate(t *testing.T) {
	text := "<think>\nwhy\n</think>\n\nThe sea is wide."
	tests := []struct {
		name      string
		stop      []string
		maxTokens int
		want      generation
	}{
		{"whole", nil, 0, generation{[]string{"<think>", "\nwhy", "\n</think>", "\n\nThe", " sea", " is", " wide."}, "stop"}},
		{"the earliest stop sequence cuts, and is left out", []string{"wide", "sea"}, 0,
			generation{[]string{"<think>", "\nwhy", "\n</think>", "\n\nThe", " "}, "stop"}},
		{"max tokens first", []string{"wide"}, 2, generation{[]string{"<think>", "\nwhy"}, "length"}},
		{"a stop before the limit", []string{"\n"}, 2, generation{[]string{"<think>"}, "stop"}},
		{"an empty stop sequence is none", []string{""}, 0, generation{tokens(text), "stop"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := generate(text, tt.stop, tt.maxTokens)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(generation{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if tt.maxTokens == 0 && tt.stop == nil && got.text() != text {
				t.Errorf("tokens join to %q, want %q", got.text(), text)
			}
		})
	}
}

func TestInstanceOf(t *testing.T) {
	tests := []struct{ name, schema, hint, want string }{
		{"required properties only", `{"type":"object","properties":{"ok":{"type":"boolean"},"x":{"type":"string"}},"required":["ok"]}`, "", `{"ok":true}`},
		{"the enum value the prompt names", `{"type":"object","properties":{"city":{"type":"string","enum":["Paris","Tokyo"]}},"required":["city"]}`,
			"weather in tokyo?", `{"city":"Tokyo"}`},
		{"the first enum value", `{"type":"object","properties":{"city":{"enum":["Paris","Tokyo"]}},"required":["city"]}`, "", `{"city":"Paris"}`},
		{"minimums", `{"type":"object","properties":{"n":{"type":"integer","minimum":3},"s":{"type":"string","minLength":2},
			"a":{"type":"array","items":{"type":"number"},"minItems":1}},"required":["n","s","a"]}`, "", `{"a":[0],"n":3,"s":"xx"}`},
		// The allowed value nearest to 0; it was 0 (or the minimum, past 0), outside these ranges.
		{"negative ranges and maximums", `{"type":"object","properties":{"below":{"type":"integer","maximum":-2},
			"between":{"type":"number","minimum":-10,"exclusiveMaximum":-4},"above":{"type":"integer","exclusiveMinimum":-3},
			"small":{"type":"integer","minimum":-7,"maximum":-5}},"required":["below","between","above","small"]}`, "",
			`{"above":0,"below":-2,"between":-5,"small":-5}`},
		{"exclusive ends, draft 4's too", `{"type":"object","properties":{"a":{"type":"integer","minimum":2,"exclusiveMinimum":true},
			"b":{"type":"integer","exclusiveMinimum":0.5},"c":{"type":"integer","exclusiveMaximum":-3}},"required":["a","b","c"]}`, "",
			`{"a":3,"b":1,"c":-4}`},
		{"refs, nullable types and anyOf", `{"$defs":{"p":{"type":["null","string"],"const":"c"}},"type":"object",
			"properties":{"p":{"$ref":"#/$defs/p"},"q":{"anyOf":[{"type":"null"},{"type":"string"}]}},"required":["p","q"]}`, "", `{"p":"c","q":null}`},
		{"a recursive schema ends", `{"type":"object","properties":{"next":{"$ref":"#"}},"required":["next"]}`, "",
			strings.Repeat(`{"next":`, 9) + `{}` + strings.Repeat(`}`, 9)}, // maxSchemaDepth, two steps a level
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var schema map[string]any
			if err := json.Unmarshal([]byte(tt.schema), &schema); err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(instanceOf(schema, tt.hint))
			if string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestRelevantTool(t *testing.T) {
	var tools []simTool
	if err := json.Unmarshal([]byte(`[
		{"type":"function","function":{"name":"get_weather","description":"Current weather in a city.",
			"parameters":{"type":"object","properties":{"city":{"type":"string","enum":["Paris","Tokyo"]}}}}},
		{"type":"function","function":{"name":"get_time","description":"Current time in a zone.",
			"parameters":{"type":"object","properties":{"zone":{"type":"string","enum":["UTC","CET"]}}}}}]`), &tools); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		prompt string
		want   int
	}{
		{"What is the weather in Paris?", 0},
		{"What time is it in UTC?", 1},
		{"And in CET?", 1},
		{"Write a poem.", -1},
	}
	for _, tt := range tests {
		t.Run(tt.prompt, func(t *testing.T) {
			if got := relevantTool(tools, tt.prompt); got != tt.want {
				t.Errorf("relevantTool = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestLogprobsOf(t *testing.T) {
	for _, top := range []int{0, 2, 25} {
		es := logprobsOf([]string{"Hi", " the"}, top)
		for _, e := range es {
			if e.Logprob > 0 || string(intBytes(e.Bytes)) != e.Token || len(e.TopLogprobs) != min(top, maxTopLogprobs) {
				t.Fatalf("top %d: entry %+v", top, e)
			}
			for i, a := range e.TopLogprobs {
				if (i == 0) != (a.Token == e.Token) || a.Logprob > e.Logprob {
					t.Fatalf("top %d: alternative %d of %q is %+v", top, i, e.Token, a)
				}
			}
		}
	}
}

func intBytes(is []int) []byte {
	b := make([]byte, len(is))
	for i, x := range is {
		b[i] = byte(x)
	}
	return b
}

// TestCompletionsLogprobs: the legacy /v1/completions' logprobs (a number, the alternatives
// wanted at each place) is honoured in its own shape, whole and streamed: tokens that join to
// the text, a logprob and a text offset for each, and the top alternatives as a token → logprob
// object, the chosen token among them. The simulator answered "logprobs": null.
func TestCompletionsLogprobs(t *testing.T) {
	ts := httptest.NewServer(&OpenAISim{Name: "deepseek-r1", Think: true})
	defer ts.Close()
	type lp struct {
		Tokens        []string             `json:"tokens"`
		TokenLogprobs []float64            `json:"token_logprobs"`
		TopLogprobs   []map[string]float64 `json:"top_logprobs"`
		TextOffset    []int                `json:"text_offset"`
	}
	type choice struct {
		Text     string `json:"text"`
		Logprobs *lp    `json:"logprobs"`
	}
	check := func(t *testing.T, text string, got *lp) {
		t.Helper()
		if got == nil || strings.Join(got.Tokens, "") != text || len(got.Tokens) == 0 ||
			len(got.TokenLogprobs) != len(got.Tokens) || len(got.TopLogprobs) != len(got.Tokens) || len(got.TextOffset) != len(got.Tokens) {
			t.Fatalf("text %q, logprobs %+v", text, got)
		}
		off := 0
		for i, tok := range got.Tokens {
			if got.TextOffset[i] != off || len(got.TopLogprobs[i]) != 2 || got.TopLogprobs[i][tok] != got.TokenLogprobs[i] {
				t.Errorf("token %d %q: offset %d (want %d), top %v, logprob %v", i, tok, got.TextOffset[i], off, got.TopLogprobs[i], got.TokenLogprobs[i])
			}
			off += len(tok)
		}
	}
	post := func(t *testing.T, body string) *http.Response {
		t.Helper()
		resp, err := http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	t.Run("whole", func(t *testing.T) {
		var got struct{ Choices []choice }
		if err := json.NewDecoder(post(t, `{"model":"m","prompt":"Say hello","max_tokens":4,"logprobs":2}`).Body).Decode(&got); err != nil {
			t.Fatal(err)
		}
		check(t, got.Choices[0].Text, got.Choices[0].Logprobs)
	})
	t.Run("streamed", func(t *testing.T) {
		sc := bufio.NewScanner(post(t, `{"model":"m","prompt":"Say hello","max_tokens":4,"logprobs":2,"stream":true}`).Body)
		var text strings.Builder
		all := &lp{}
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			var ev struct{ Choices []choice }
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatal(err)
			}
			if len(ev.Choices) == 0 || ev.Choices[0].Text == "" {
				continue
			}
			c := ev.Choices[0]
			if c.Logprobs == nil || strings.Join(c.Logprobs.Tokens, "") != c.Text {
				t.Fatalf("chunk %q has logprobs %+v", c.Text, c.Logprobs)
			}
			text.WriteString(c.Text)
			all.Tokens = append(all.Tokens, c.Logprobs.Tokens...)
			all.TokenLogprobs = append(all.TokenLogprobs, c.Logprobs.TokenLogprobs...)
			all.TopLogprobs = append(all.TopLogprobs, c.Logprobs.TopLogprobs...)
			all.TextOffset = append(all.TextOffset, c.Logprobs.TextOffset...)
		}
		check(t, text.String(), all)
	})
	t.Run("not asked", func(t *testing.T) {
		var got struct{ Choices []map[string]any }
		if err := json.NewDecoder(post(t, `{"model":"m","prompt":"Say hello","max_tokens":2}`).Body).Decode(&got); err != nil {
			t.Fatal(err)
		}
		if v, ok := got.Choices[0]["logprobs"]; !ok || v != nil {
			t.Errorf("logprobs %v, want null", v)
		}
	})
}

// TestThoughtCountsWords: the simulated reasoning says "1 word", not "1 words".
func TestThoughtCountsWords(t *testing.T) {
	for prompt, want := range map[string]string{"hi": "has 1 word.", "Is 91 prime?": "has 3 words.", "": "has 0 words."} {
		if got := Thought(prompt); !strings.Contains(got, want) {
			t.Errorf("Thought(%q) = %q, want it to say %q", prompt, got, want)
		}
	}
}
