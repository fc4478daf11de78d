package demo

import (
	"encoding/json"
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
