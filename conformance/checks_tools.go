package conformance

import (
	"fmt"
	"sort"
)

func toolCallsOf(x *exchange) ([]map[string]any, bool) {
	v, ok := at(x.json, "choices", 0, "message", "tool_calls")
	return objects(v, ok)
}

// argumentsObject checks the reference's most-missed rule: arguments is a
// string that holds JSON, not the JSON itself.
func argumentsObject(v any, ok bool) string {
	s, isStr := v.(string)
	if !ok || !isStr {
		return "arguments is " + typeOrAbsent(v, ok) + ", not a string: " + showField(v, ok)
	}
	parsed, err := decodeJSON([]byte(s))
	if err != nil {
		return fmt.Sprintf("arguments %q does not parse: %v", clip(s, 80), err)
	}
	if _, isObj := asObject(parsed); !isObj {
		return fmt.Sprintf("arguments %q is JSON %s, not an object", clip(s, 80), typeName(parsed))
	}
	return ""
}

func judgeToolCalls(x *exchange, gate string, f func(i int, tc map[string]any) *verdict) verdict {
	tcs, ok := toolCallsOf(x)
	if !ok || len(tcs) == 0 {
		return skip("no tool calls to judge; see " + gate)
	}
	for i, tc := range tcs {
		if v := f(i, tc); v != nil {
			return *v
		}
	}
	return pass()
}

func judgeArguments(x *exchange, gate string) verdict {
	return judgeToolCalls(x, gate, func(i int, tc map[string]any) *verdict {
		v, ok := at(tc, "function", "arguments")
		if why := argumentsObject(v, ok); why != "" {
			return failp(`function.arguments: a string of JSON, e.g. "{\"city\":\"Paris\"}"`, fmt.Sprintf("tool_calls[%d]: %s", i, why))
		}
		return nil
	})
}

// fragment is one streamed tool-call delta entry.
type fragment struct {
	pos, index int
	hasIndex   bool
	m          map[string]any
}

// toolFragments groups streamed tool-call deltas by index. An entry without
// an integer index is grouped by its position in the array, as lenient
// clients do, so tools.stream.index reports it once instead of every check.
func toolFragments(x *exchange) (frags []fragment, byIndex map[int][]fragment) {
	byIndex = map[int][]fragment{}
	chunks, pos := jsonChunks(x)
	for ci, ch := range chunks {
		cs, _ := objects(ch["choices"], hasKey(ch, "choices"))
		for _, c := range cs {
			raw, ok := at(c, "delta", "tool_calls")
			tcs, isObjs := objects(raw, ok)
			if !isObjs {
				continue
			}
			for k, tc := range tcs {
				f := fragment{pos: pos[ci], index: k, m: tc}
				if n, ok := asInt(tc["index"]); ok {
					f.index, f.hasIndex = int(n), true
				}
				frags = append(frags, f)
				byIndex[f.index] = append(byIndex[f.index], f)
			}
		}
	}
	return frags, byIndex
}

func sortedKeys(m map[int][]fragment) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}

// cutWhileReasoning is the skip reason for an answer with no tool call that
// ran out of max_tokens while the model reasoned (finish_reason "length",
// reasoning shown, no content), or "" for any other answer. Sixty-four
// tokens can all go to a reasoning model's thinking before its call: the
// probe's budget, not the server's fault. An answer in words is no such
// answer, and still fails.
func cutWhileReasoning(x *exchange) string {
	const why = "the answer ran out of max_tokens while reasoning (finish_reason length, reasoning but no content or tool call), so there is no call to judge"
	if x.stream == nil {
		if fr, _ := at(x.json, "choices", 0, "finish_reason"); fr == "length" && noContent(x) {
			return why
		}
		return ""
	}
	spoke, reasoned, finish := false, false, any(nil)
	chunkChoices(x, func(_, _ int, c map[string]any) *verdict {
		d, _ := asObject(c["delta"])
		if s, _ := d["content"].(string); s != "" || d["tool_calls"] != nil {
			spoke = true
		}
		for _, k := range []string{"reasoning_content", "reasoning"} {
			if s, _ := d[k].(string); s != "" {
				reasoned = true
			}
		}
		if fr, ok := c["finish_reason"]; !isNullish(fr, ok) {
			finish = fr
		}
		return nil
	})
	if spoke || !reasoned || finish != "length" {
		return ""
	}
	return why
}

func toolChecks() []*check {
	req := []probeID{"tools.required"}
	named := []probeID{"tools.named"}
	st := []probeID{"tools.stream"}
	return []*check{
		{id: "tools.required.calls", grade: Must, probes: req,
			title: `tool_choice "required" yields message.tool_calls`,
			judge: func(j *judge) verdict {
				if tcs, ok := toolCallsOf(j.x("tools.required")); !ok || len(tcs) == 0 {
					if why := cutWhileReasoning(j.x("tools.required")); why != "" {
						return skip(why)
					}
					v, present := at(j.x("tools.required").json, "choices", 0, "message")
					return fail("choices[0].message.tool_calls: non-empty array", "message: "+showField(v, present))
				}
				return pass()
			}},
		{id: "tools.required.shape", grade: Must, probes: req,
			title: `every tool call has an id, type "function" and a declared function name`,
			judge: func(j *judge) verdict {
				return judgeToolCalls(j.x("tools.required"), "tools.required.calls", func(i int, tc map[string]any) *verdict {
					name, hasName := at(tc, "function", "name")
					s, _ := name.(string)
					id, hasID := tc["id"]
					typ, hasType := tc["type"]
					member := ""
					switch {
					case !nonEmptyString(id):
						member = "id: " + showField(id, hasID)
					case typ != "function":
						member = "type: " + showField(typ, hasType)
					case !oneOf(s, declaredTools()):
						member = "function.name: " + showField(name, hasName)
					default:
						return nil
					}
					return failp(fmt.Sprintf(`{"id": "<non-empty>", "type": "function", "function": {"name": one of %q}}`, declaredTools()),
						fmt.Sprintf("tool_calls[%d].%s in %s", i, member, brief(tc)))
				})
			}},
		{id: "tools.required.arguments", grade: Must, probes: req,
			title: "function.arguments is a string that parses as a JSON object",
			judge: func(j *judge) verdict { return judgeArguments(j.x("tools.required"), "tools.required.calls") }},
		{id: "tools.required.finish_reason", grade: Should, probes: req,
			title: `a forced tool call ends with finish_reason "tool_calls"`,
			judge: func(j *judge) verdict {
				if tcs, _ := toolCallsOf(j.x("tools.required")); len(tcs) == 0 {
					return skip("no tool calls; see tools.required.calls")
				}
				v, ok := at(j.x("tools.required").json, "choices", 0, "finish_reason")
				if v != "tool_calls" {
					return fail(`finish_reason: "tool_calls"`, "finish_reason: "+showField(v, ok))
				}
				return pass()
			}},
		{id: "tools.named.calls", grade: Must, probes: named,
			title: "a named tool_choice yields calls to that function only",
			judge: func(j *judge) verdict {
				tcs, ok := toolCallsOf(j.x("tools.named"))
				if !ok || len(tcs) == 0 {
					if why := cutWhileReasoning(j.x("tools.named")); why != "" {
						return skip(why)
					}
					v, present := at(j.x("tools.named").json, "choices", 0, "message")
					return fail("choices[0].message.tool_calls calling "+namedTool, "message: "+showField(v, present))
				}
				for i, tc := range tcs {
					if name, ok := at(tc, "function", "name"); name != namedTool {
						return fail("function.name: "+namedTool, fmt.Sprintf("tool_calls[%d].function.name: %s", i, showField(name, ok)))
					}
				}
				return pass()
			}},
		{id: "tools.named.arguments", grade: Must, probes: named,
			title: "function.arguments of the named call is a string that parses as a JSON object",
			judge: func(j *judge) verdict { return judgeArguments(j.x("tools.named"), "tools.named.calls") }},
		{id: "tools.stream.first_fragment", grade: Must, probes: st,
			title: `the first streamed fragment of each tool call carries id and the name tool_choice forces, and type "function" if any`,
			judge: func(j *judge) verdict {
				_, by := toolFragments(j.x("tools.stream"))
				if len(by) == 0 {
					if why := cutWhileReasoning(j.x("tools.stream")); why != "" {
						return skip(why)
					}
					return fail("delta.tool_calls fragments", "no tool-call fragments in the stream")
				}
				// The request names the function, as tools.named's does, so
				// a call to any other is as wrong streamed as it is there.
				// The reference's ChatCompletionMessageToolCallChunk requires
				// only index; id and name are what a client cannot assemble
				// the call without, while type has one possible value.
				for _, idx := range sortedKeys(by) {
					f := by[idx][0]
					name, _ := at(f.m, "function", "name")
					// type null is as good as absent, as for every optional member.
					typ, hasType := f.m["type"]
					if !nonEmptyString(f.m["id"]) || (!isNullish(typ, hasType) && typ != "function") || name != namedTool {
						return fail(`first fragment {"index", "id", "function": {"name": "`+namedTool+`"}}, type "function" if present`,
							fmt.Sprintf("chunk %d: %s", f.pos, show(f.m))).at(chunkData(j.x("tools.stream"), f.pos))
					}
				}
				return pass()
			}},
		{id: "tools.stream.index", grade: Must, probes: st,
			title: "every streamed tool-call fragment carries an integer index, and the calls are numbered 0, 1, … as they begin",
			judge: func(j *judge) verdict {
				frags, _ := toolFragments(j.x("tools.stream"))
				if len(frags) == 0 {
					return skip("no fragments; see tools.stream.first_fragment")
				}
				for _, f := range frags {
					if !f.hasIndex {
						return fail("index: integer on every fragment", fmt.Sprintf("chunk %d: %s", f.pos, show(f.m))).at(chunkData(j.x("tools.stream"), f.pos))
					}
				}
				// The index is the call's place in message.tool_calls: openai-go grows the
				// list to index+1 and leaves an empty call before a first call numbered 1,
				// and openai-python inserts each of its fragments as a call of its own.
				begun := map[int]bool{}
				for _, f := range frags {
					if begun[f.index] {
						continue
					}
					if f.index != len(begun) {
						return fail(fmt.Sprintf("the next call to begin numbered %d (calls are numbered 0, 1, … in the order they begin)", len(begun)),
							fmt.Sprintf("chunk %d begins a call numbered %d: %s", f.pos, f.index, show(f.m))).at(chunkData(j.x("tools.stream"), f.pos))
					}
					begun[f.index] = true
				}
				return pass()
			}},
		{id: "tools.stream.later_fragments", grade: Must, probes: st,
			title: "later fragments of a tool call repeat neither id nor name",
			judge: func(j *judge) verdict {
				_, by := toolFragments(j.x("tools.stream"))
				if len(by) == 0 {
					return skip("no fragments; see tools.stream.first_fragment")
				}
				for _, idx := range sortedKeys(by) {
					for _, f := range by[idx][1:] {
						name, _ := at(f.m, "function", "name")
						if nonEmptyString(f.m["id"]) || nonEmptyString(name) {
							return fail("id and function.name only on the first fragment", fmt.Sprintf("chunk %d: %s", f.pos, show(f.m))).at(chunkData(j.x("tools.stream"), f.pos))
						}
					}
				}
				return pass()
			}},
		{id: "tools.stream.arguments", grade: Must, probes: st,
			title: "the argument fragments of each call are strings that concatenate to a JSON object",
			judge: func(j *judge) verdict {
				_, by := toolFragments(j.x("tools.stream"))
				if len(by) == 0 {
					return skip("no fragments; see tools.stream.first_fragment")
				}
				for _, idx := range sortedKeys(by) {
					joined := ""
					for _, f := range by[idx] {
						a, ok := at(f.m, "function", "arguments")
						if isNullish(a, ok) {
							continue
						}
						s, isStr := a.(string)
						if !isStr {
							return fail("function.arguments fragments: strings", fmt.Sprintf("chunk %d arguments: %s (%s)", f.pos, show(a), typeName(a))).at(chunkData(j.x("tools.stream"), f.pos))
						}
						joined += s
					}
					if why := argumentsObject(joined, true); why != "" {
						return fail("concatenated arguments: a JSON object", fmt.Sprintf("tool call %d: %s", idx, why))
					}
				}
				return pass()
			}},
		{id: "tools.stream.finish_reason", grade: Should, probes: st,
			title: `a forced streamed tool call ends with finish_reason "tool_calls"`,
			judge: func(j *judge) verdict {
				frags, _ := toolFragments(j.x("tools.stream"))
				if len(frags) == 0 {
					return skip("no fragments; see tools.stream.first_fragment")
				}
				var last any
				if v := chunkChoices(j.x("tools.stream"), func(pos, idx int, c map[string]any) *verdict {
					if fr, ok := c["finish_reason"]; !isNullish(fr, ok) {
						last = fr
					}
					return nil
				}); v != nil {
					return *v
				}
				if last != "tool_calls" {
					return fail(`finish_reason: "tool_calls"`, "finish_reason: "+show(last))
				}
				return pass()
			}},
	}
}
