package demo

import (
	"encoding/json"
	"hash/fnv"
	"math"
	"strings"
	"unicode"
)

// This file is the simulated model that every simulator shares: it runs no model, but it
// honours what a real server's sampler and decoder honour (stop sequences, a token limit, forced
// tool calls, JSON modes, logprobs), so that the gateway's adapters are exercised end to end and
// `gateway conformance` against the demo grades the gateway rather than the simulators.

// tokens splits text into the simulated model's tokens: each word with the whitespace before
// it, so that the tokens concatenate back to the text exactly (newlines included).
func tokens(text string) []string {
	var out []string
	start := 0
	inWord := false
	for i, r := range text {
		space := unicode.IsSpace(r)
		if inWord && space {
			// A word ended: the token runs to here, the next one starts with this space.
			out = append(out, text[start:i])
			start = i
		}
		inWord = !space
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

// generation is what the simulated model wrote: its tokens (which concatenate to the text) and
// why it stopped, in OpenAI's words ("stop" or "length").
type generation struct {
	tokens []string
	finish string
}

func (g generation) text() string { return strings.Join(g.tokens, "") }

// generate is the model writing text under a sampler's limits: the text ends before the first
// stop sequence (which is not part of the output, as with every server), and after maxTokens
// tokens (0: no limit) with finish "length" when that comes first.
func generate(text string, stop []string, maxTokens int) generation {
	cut := len(text)
	for _, s := range stop {
		if s == "" {
			continue
		}
		if i := strings.Index(text, s); i >= 0 && i < cut {
			cut = i
		}
	}
	ts := tokens(text[:cut])
	if maxTokens > 0 && len(ts) > maxTokens {
		return generation{tokens: ts[:maxTokens], finish: "length"}
	}
	return generation{tokens: ts, finish: "stop"}
}

// simLogprob is one token's entry, in OpenAI's shape, which Ollama (v0.12.11 on) shares.
type simLogprob struct {
	Token       string          `json:"token"`
	Logprob     float64         `json:"logprob"`
	Bytes       []int           `json:"bytes"`
	TopLogprobs []simTopLogprob `json:"top_logprobs"`
}

type simTopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// alternatives are the runner-up tokens of every place: plausible, and never the token itself.
var alternatives = [...]string{" the", " a", ",", ".", " and", " of", " to", " is", " in", " it", " that",
	" for", " on", " with", " as", " was", " be", " at", " by", " this", " or"}

// maxTopLogprobs is OpenAI's bound on top_logprobs.
const maxTopLogprobs = 20

// logprobsOf makes deterministic entries for tokens: the chosen token is the most likely at its
// place, and top alternatives (the chosen one first) follow in falling order.
func logprobsOf(tokens []string, top int) []simLogprob {
	top = min(max(top, 0), maxTopLogprobs)
	out := make([]simLogprob, len(tokens))
	for i, t := range tokens {
		h := fnv.New32a()
		_, _ = h.Write([]byte(t))
		lp := -float64(h.Sum32()%2000) / 1000 // in (-2, 0]
		e := simLogprob{Token: t, Logprob: lp, Bytes: byteInts(t), TopLogprobs: []simTopLogprob{}}
		if top > 0 {
			e.TopLogprobs = append(e.TopLogprobs, simTopLogprob{Token: t, Logprob: lp, Bytes: byteInts(t)})
		}
		for _, alt := range alternatives {
			if len(e.TopLogprobs) >= top {
				break
			}
			if alt == t {
				continue
			}
			k := float64(len(e.TopLogprobs))
			e.TopLogprobs = append(e.TopLogprobs, simTopLogprob{Token: alt, Logprob: lp - 0.75*k, Bytes: byteInts(alt)})
		}
		out[i] = e
	}
	return out
}

func byteInts(s string) []int {
	out := make([]int, len(s))
	for i := range len(s) {
		out[i] = int(s[i])
	}
	return out
}

// simTool is a declared tool, in the OpenAI shape that Ollama shares.
type simTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// toolCall is the call the simulated model makes: a declared function and arguments that fit
// its parameters schema.
type toolCall struct {
	name string
	args json.RawMessage // a JSON object
}

// relevantTool is the tool a model would pick for prompt on its own (tool_choice "auto"): the one
// whose name, description and enum values share the most words with the prompt; -1 when none
// shares any, and the model answers in text.
func relevantTool(tools []simTool, prompt string) int {
	want := map[string]bool{}
	for _, w := range keywords(prompt) {
		want[w] = true
	}
	best, bestScore := -1, 0
	for i, t := range tools {
		seen := map[string]bool{}
		score := 0
		text := t.Function.Name + " " + t.Function.Description + " " + enumWords(t.Function.Parameters)
		for _, w := range keywords(text) {
			if want[w] && !seen[w] {
				seen[w] = true
				score++
			}
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	return best
}

// stopWords are too common to tie a prompt to a tool.
var stopWords = map[string]bool{"the": true, "and": true, "for": true, "you": true, "are": true, "what": true,
	"how": true, "was": true, "can": true, "with": true, "this": true, "that": true, "from": true, "your": true,
	"please": true, "get": true, "set": true, "tell": true}

// keywords are the lower-case words of s (split at anything but letters and digits, "_" too,
// so that get_weather says "weather"), without short and common ones.
func keywords(s string) []string {
	fields := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	out := fields[:0]
	for _, f := range fields {
		if len([]rune(f)) >= 3 && !stopWords[f] {
			out = append(out, f)
		}
	}
	return out
}

// enumWords are the string enum values anywhere in a parameters schema.
func enumWords(schema json.RawMessage) string {
	var v any
	if json.Unmarshal(schema, &v) != nil {
		return ""
	}
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if e, ok := x["enum"].([]any); ok {
				for _, s := range e {
					if s, ok := s.(string); ok {
						b.WriteString(s + " ")
					}
				}
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(v)
	return b.String()
}

// callTool is the call to tools[i], with the simplest arguments that fit its parameters; an
// enum value the prompt mentions is preferred to the first.
func callTool(t simTool, prompt string) toolCall {
	var schema map[string]any
	_ = json.Unmarshal(t.Function.Parameters, &schema)
	args, _ := instanceOf(schema, prompt).(map[string]any)
	if args == nil {
		// A function without parameters (or with a schema that is not an object's) is called
		// with an empty object, as OpenAI's models call it.
		args = map[string]any{}
	}
	b, _ := json.Marshal(args)
	return toolCall{name: t.Function.Name, args: b}
}

// instanceOf is a minimal JSON value that validates against schema: an object with its required
// properties, the first (or the mentioned) enum value, the smallest allowed number, and so on.
// $ref is followed within the schema (#/$defs/… and #/definitions/…).
func instanceOf(schema map[string]any, hint string) any {
	return instance(schema, schema, strings.ToLower(hint), 0)
}

// maxSchemaDepth stops a recursive schema.
const maxSchemaDepth = 16

func instance(s, root map[string]any, hint string, depth int) any {
	if s == nil || depth > maxSchemaDepth {
		return map[string]any{}
	}
	if ref, ok := s["$ref"].(string); ok {
		return instance(resolveRef(root, ref), root, hint, depth+1)
	}
	if c, ok := s["const"]; ok {
		return c
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		for _, v := range e {
			if str, ok := v.(string); ok && str != "" && strings.Contains(hint, strings.ToLower(str)) {
				return v
			}
		}
		return e[0]
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if alts, ok := s[k].([]any); ok && len(alts) > 0 {
			first, _ := alts[0].(map[string]any)
			return instance(first, root, hint, depth+1)
		}
	}
	typ, _ := s["type"].(string)
	if ts, ok := s["type"].([]any); ok {
		for _, t := range ts {
			if t, ok := t.(string); ok && t != "null" {
				typ = t
				break
			}
		}
	}
	if typ == "" && s["properties"] != nil {
		typ = "object"
	}
	switch typ {
	case "object":
		out := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		req, _ := s["required"].([]any)
		for _, name := range req {
			name, ok := name.(string)
			if !ok {
				continue
			}
			p, _ := props[name].(map[string]any)
			out[name] = instance(p, root, hint, depth+1)
		}
		return out
	case "array":
		items, _ := s["items"].(map[string]any)
		out := make([]any, int(number(s, "minItems")))
		for i := range out {
			out[i] = instance(items, root, hint, depth+1)
		}
		return out
	case "string":
		return strings.Repeat("x", int(number(s, "minLength")))
	case "integer", "number":
		n := numberIn(s, typ == "integer")
		if typ == "integer" {
			return int64(n)
		}
		return n
	case "boolean":
		return true
	case "null":
		return nil
	}
	// No type: any value validates; an empty object is the simplest one a client expects.
	return map[string]any{}
}

// number is s[key] when it is a non-negative number, else 0.
func number(s map[string]any, key string) float64 {
	if n, ok := s[key].(float64); ok && n > 0 {
		return n
	}
	return 0
}

// numberIn is 0 when the schema's range allows it, else the allowed value nearest to 0: the
// range's low end when it lies above 0, its high end when it lies below; one past an exclusive
// end, or the middle of a range narrower than that.
func numberIn(s map[string]any, integer bool) float64 {
	lo, hi := math.Inf(-1), math.Inf(1)
	loEx, hiEx := false, false
	if x, ok := s["minimum"].(float64); ok {
		lo = x
	}
	if x, ok := s["exclusiveMinimum"].(float64); ok && x >= lo {
		lo, loEx = x, true
	}
	if b, _ := s["exclusiveMinimum"].(bool); b { // draft 4: the minimum is exclusive
		loEx = true
	}
	if x, ok := s["maximum"].(float64); ok {
		hi = x
	}
	if x, ok := s["exclusiveMaximum"].(float64); ok && x <= hi {
		hi, hiEx = x, true
	}
	if b, _ := s["exclusiveMaximum"].(bool); b {
		hiEx = true
	}
	if integer {
		if c := math.Ceil(lo); c > lo || !loEx {
			lo = c
		} else {
			lo++
		}
		if f := math.Floor(hi); f < hi || !hiEx {
			hi = f
		} else {
			hi--
		}
		loEx, hiEx = false, false
	}
	fits := func(v float64) bool {
		return (v > lo || !loEx && v == lo) && (v < hi || !hiEx && v == hi)
	}
	var v float64
	switch {
	case fits(0):
		return 0
	case lo > 0:
		v = lo
		if loEx {
			v = lo + 1
		}
	default:
		v = hi
		if hiEx {
			v = hi - 1
		}
	}
	if !fits(v) && !math.IsInf(lo, 0) && !math.IsInf(hi, 0) {
		v = lo + (hi-lo)/2
	}
	return v
}

func resolveRef(root map[string]any, ref string) map[string]any {
	for _, prefix := range []string{"#/$defs/", "#/definitions/"} {
		if name, ok := strings.CutPrefix(ref, prefix); ok {
			defs, _ := root[strings.TrimSuffix(strings.TrimPrefix(prefix, "#/"), "/")].(map[string]any)
			d, _ := defs[name].(map[string]any)
			return d
		}
	}
	if ref == "#" {
		return root
	}
	return nil
}

// jsonText is the text a model writes in a JSON mode: for a schema, a minimal instance of it;
// for plain JSON mode (schema nil), an object that carries the reply.
func jsonText(schema map[string]any, reply string) string {
	var v any = map[string]any{"reply": reply}
	if schema != nil {
		v = instanceOf(schema, "")
	}
	// Values decoded from JSON always encode.
	b, _ := json.Marshal(v)
	return string(b)
}
