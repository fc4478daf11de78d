package conformance

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// catalogue is every check in report order. Ids are stable: reports, CI
// filters and CONFORMANCE.md refer to them.
func catalogue() []*check {
	var all []*check
	for _, group := range [][]*check{
		modelChecks(), chatChecks(), streamChecks(), toolChecks(), formatChecks(),
		logprobChecks(), completionChecks(), embeddingChecks(), errorChecks(), sdkChecks(),
	} {
		all = append(all, group...)
	}
	return all
}

func chatFinishReasons() []string {
	return []string{"stop", "length", "tool_calls", "content_filter", "function_call"}
}

func completionFinishReasons() []string { return []string{"stop", "length", "content_filter"} }

func oneOf(s string, set []string) bool {
	for _, v := range set {
		if s == v {
			return true
		}
	}
	return false
}

// objects returns v as an array of objects, or false when it is not one.
func objects(v any, ok bool) ([]map[string]any, bool) {
	if !ok {
		return nil, false
	}
	arr, isArr := asArray(v)
	if !isArr {
		return nil, false
	}
	out := make([]map[string]any, 0, len(arr))
	for _, e := range arr {
		m, isObj := asObject(e)
		if !isObj {
			return nil, false
		}
		out = append(out, m)
	}
	return out, true
}

func choicesOf(v any) ([]map[string]any, bool) {
	c, ok := at(v, "choices")
	return objects(c, ok)
}

// withChoices runs f over a response's choices, or skips when there are none
// (chat.choices reports that).
func withChoices(x *exchange, gate string, f func(i int, c map[string]any) *verdict) verdict {
	cs, ok := choicesOf(x.json)
	if !ok || len(cs) == 0 {
		return skip("no choices to judge; see " + gate)
	}
	for i, c := range cs {
		if v := f(i, c); v != nil {
			return *v
		}
	}
	return pass()
}

func failp(expected, seen string) *verdict { v := fail(expected, seen); return &v }

// plausibleCreated judges a Unix-seconds timestamp: milliseconds and floats
// are the usual mistakes.
func plausibleCreated(v any, ok bool, now time.Time) *verdict {
	n, isInt := asInt(v)
	if !ok || !isInt {
		return failp("created: integer Unix seconds", "created: "+showField(v, ok))
	}
	earliest := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	latest := now.Add(48 * time.Hour).Unix()
	if n < earliest || n > latest {
		hint := ""
		if n > latest*100 {
			hint = " (looks like milliseconds)"
		}
		return failp("created: Unix seconds between 2020 and now", fmt.Sprintf("created: %d%s", n, hint))
	}
	return nil
}

// usageOf reads a usage object; ok is false when it is absent or malformed.
func usageOf(v any) (prompt, completion, total int64, seen string, ok bool) {
	u, present := at(v, "usage")
	m, isObj := asObject(u)
	if !present || !isObj {
		return 0, 0, 0, "usage: " + showField(u, present), false
	}
	p, ok1 := asInt(m["prompt_tokens"])
	c, ok2 := asInt(m["completion_tokens"])
	t, ok3 := asInt(m["total_tokens"])
	if !ok1 || !ok2 || !ok3 {
		return 0, 0, 0, "usage: " + show(m), false
	}
	return p, c, t, "", true
}

func modelChecks() []*check {
	list := []probeID{"models.list"}
	return []*check{
		{id: "models.list.status", grade: Must, probes: list,
			title: "GET /v1/models answers 200 with a JSON body",
			judge: func(j *judge) verdict { return pass() }},
		{id: "models.list.object", grade: Must, probes: list,
			title: `the model list has object "list" and a data array`,
			judge: func(j *judge) verdict {
				x := j.x("models.list")
				obj, ok := at(x.json, "object")
				data, dok := at(x.json, "data")
				if _, isArr := asArray(data); obj != "list" || !dok || !isArr {
					return fail(`{"object": "list", "data": [...]}`,
						"object: "+showField(obj, ok)+", data: "+typeOrAbsent(data, dok))
				}
				return pass()
			}},
		{id: "models.list.entries", grade: Must, probes: list,
			title: `every listed model has a non-empty string id and object "model"`,
			judge: func(j *judge) verdict {
				d, ok := at(j.x("models.list").json, "data")
				ms, isObjs := objects(d, ok)
				if !isObjs {
					return skip("no data array of objects; see models.list.object")
				}
				if len(ms) == 0 {
					return fail("at least one model", "data: []")
				}
				for i, m := range ms {
					id, hasID := m["id"]
					obj, hasObj := m["object"]
					switch {
					case !nonEmptyString(id):
						return fail(`{"id": "<non-empty>", "object": "model"}`, fmt.Sprintf("data[%d].id: %s in %s", i, showField(id, hasID), brief(m)))
					case obj != "model":
						return fail(`{"id": "<non-empty>", "object": "model"}`, fmt.Sprintf("data[%d].object: %s in %s", i, showField(obj, hasObj), brief(m)))
					}
				}
				return pass()
			}},
		{id: "models.list.fields", grade: Should, probes: list,
			title: "every listed model has created (integer) and owned_by (string)",
			judge: func(j *judge) verdict {
				d, ok := at(j.x("models.list").json, "data")
				ms, isObjs := objects(d, ok)
				if !isObjs || len(ms) == 0 {
					return skip("no models to judge; see models.list.entries")
				}
				for i, m := range ms {
					created, hasCreated := m["created"]
					owner, hasOwner := m["owned_by"]
					if _, ok := asInt(created); !ok {
						return fail("created: integer, owned_by: string", fmt.Sprintf("data[%d].created: %s in %s", i, showField(created, hasCreated), brief(m)))
					}
					if _, ok := owner.(string); !ok {
						return fail("created: integer, owned_by: string", fmt.Sprintf("data[%d].owned_by: %s in %s", i, showField(owner, hasOwner), brief(m)))
					}
				}
				return pass()
			}},
		{id: "models.retrieve", grade: Should, probes: []probeID{"models.get"},
			title: "GET /v1/models/{id} answers that model's object",
			judge: func(j *judge) verdict {
				x := j.x("models.get")
				id, _ := at(x.json, "id")
				obj, _ := at(x.json, "object")
				if id != j.o.Model || obj != "model" {
					return fail(fmt.Sprintf(`{"id": %q, "object": "model"}`, j.o.Model), clip(string(x.body), 200))
				}
				return pass()
			}},
	}
}

func typeOrAbsent(v any, ok bool) string {
	if !ok {
		return "absent"
	}
	return typeName(v)
}

func chatChecks() []*check {
	basic := []probeID{"chat.basic"}
	return []*check{
		{id: "chat.status", grade: Must, probes: basic,
			title: "POST /v1/chat/completions answers 200 with a JSON body",
			judge: func(j *judge) verdict { return pass() }},
		{id: "chat.content_type", grade: Should, probes: basic,
			title: "the completion is labelled Content-Type application/json",
			judge: func(j *judge) verdict {
				if ct := j.x("chat.basic").contentType(); ct != "application/json" {
					return fail("Content-Type: application/json", "Content-Type: "+ct)
				}
				return pass()
			}},
		{id: "chat.id", grade: Must, probes: basic,
			title: "id is a non-empty string",
			judge: func(j *judge) verdict {
				v, ok := at(j.x("chat.basic").json, "id")
				if s, _ := v.(string); s == "" {
					return fail("id: non-empty string", "id: "+showField(v, ok))
				}
				return pass()
			}},
		{id: "chat.object", grade: Must, probes: basic,
			title: `object is "chat.completion"`,
			judge: func(j *judge) verdict {
				v, ok := at(j.x("chat.basic").json, "object")
				if v != "chat.completion" {
					return fail(`object: "chat.completion"`, "object: "+showField(v, ok))
				}
				return pass()
			}},
		{id: "chat.created", grade: Must, probes: basic,
			title: "created is an integer Unix time in seconds",
			judge: func(j *judge) verdict {
				v, ok := at(j.x("chat.basic").json, "created")
				if f := plausibleCreated(v, ok, j.now); f != nil {
					return *f
				}
				return pass()
			}},
		{id: "chat.model", grade: Must, probes: basic,
			title: "model is a non-empty string",
			judge: func(j *judge) verdict {
				v, ok := at(j.x("chat.basic").json, "model")
				if s, _ := v.(string); s == "" {
					return fail("model: non-empty string", "model: "+showField(v, ok))
				}
				return pass()
			}},
		{id: "chat.choices", grade: Must, probes: basic,
			title: "choices is a non-empty array of objects with integer indexes 0..n-1",
			judge: func(j *judge) verdict {
				x := j.x("chat.basic")
				raw, ok := at(x.json, "choices")
				cs, isObjs := objects(raw, ok)
				if !isObjs || len(cs) == 0 {
					return fail("choices: non-empty array of objects", "choices: "+showField(raw, ok))
				}
				if f := indexesDense(cs); f != nil {
					return *f
				}
				return pass()
			}},
		{id: "chat.message.role", grade: Must, probes: basic,
			title: `every choice's message has role "assistant"`,
			judge: func(j *judge) verdict {
				return withChoices(j.x("chat.basic"), "chat.choices", func(i int, c map[string]any) *verdict {
					if r, ok := at(c, "message", "role"); r != "assistant" {
						return failp(`message.role: "assistant"`, fmt.Sprintf("choices[%d].message.role: %s", i, showField(r, ok)))
					}
					return nil
				})
			}},
		{id: "chat.message.content", grade: Must, probes: basic,
			title: "every message's content is present as a string or null",
			judge: func(j *judge) verdict {
				return withChoices(j.x("chat.basic"), "chat.choices", func(i int, c map[string]any) *verdict {
					v, ok := at(c, "message", "content")
					if _, isStr := v.(string); !ok || (v != nil && !isStr) {
						return failp("message.content: string or null", fmt.Sprintf("choices[%d].message.content: %s", i, showField(v, ok)))
					}
					return nil
				})
			}},
		{id: "chat.finish_reason", grade: Must, probes: basic,
			title: "every finish_reason is one of stop, length, tool_calls, content_filter, function_call",
			judge: func(j *judge) verdict {
				return withChoices(j.x("chat.basic"), "chat.choices", func(i int, c map[string]any) *verdict {
					v, ok := c["finish_reason"]
					if s, _ := v.(string); !oneOf(s, chatFinishReasons()) {
						return failp("finish_reason in "+strings.Join(chatFinishReasons(), ", "),
							fmt.Sprintf("choices[%d].finish_reason: %s", i, showField(v, ok)))
					}
					return nil
				})
			}},
		// The reference does not require usage (CreateChatCompletionResponse's required
		// members are id, object, created, model and choices); clients that count tokens rely on
		// it. A usage that is there is held to its sum as a MUST (chat.usage.total).
		{id: "chat.usage", grade: Should, probes: basic,
			title: "usage carries integer prompt_tokens, completion_tokens and total_tokens",
			judge: func(j *judge) verdict {
				if _, _, _, seen, ok := usageOf(j.x("chat.basic").json); !ok {
					return fail("usage: {prompt_tokens, completion_tokens, total_tokens} as integers", seen)
				}
				if why := uncounted(j.x("chat.basic")); why != "" {
					return fail("usage.completion_tokens counting the tokens of the answer", why)
				}
				return pass()
			}},
		{id: "chat.usage.total", grade: Must, probes: basic,
			title: "usage.total_tokens equals prompt_tokens + completion_tokens",
			judge: func(j *judge) verdict {
				p, c, t, _, ok := usageOf(j.x("chat.basic").json)
				if !ok {
					return skip("no usage to judge; see chat.usage")
				}
				if p+c != t {
					return fail(fmt.Sprintf("total_tokens = %d + %d = %d", p, c, p+c), fmt.Sprintf("total_tokens: %d", t))
				}
				return pass()
			}},
		{id: "chat.max_tokens.length", grade: Must, probes: []probeID{"chat.length"},
			title: `max_tokens 1 ends the completion with finish_reason "length"`,
			judge: func(j *judge) verdict {
				v, ok := at(j.x("chat.length").json, "choices", 0, "finish_reason")
				if v != "length" {
					return fail(`finish_reason: "length"`, "finish_reason: "+showField(v, ok))
				}
				return pass()
			}},
		{id: "chat.max_tokens.respected", grade: Must, probes: []probeID{"chat.length"},
			title: "max_tokens 1 yields at most one completion token",
			judge: func(j *judge) verdict {
				_, c, _, _, ok := usageOf(j.x("chat.length").json)
				if !ok {
					return skip("no usage to count tokens with; see chat.usage")
				}
				if why := uncounted(j.x("chat.length")); why != "" {
					return skip(why + ", so it cannot show the limit held; see chat.usage")
				}
				if c > 1 {
					return fail("completion_tokens ≤ 1", fmt.Sprintf("completion_tokens: %d", c))
				}
				return pass()
			}},
		{id: "chat.stop.excluded", grade: Must, probes: []probeID{"chat.stop"},
			title: "stop sequences never appear in the output",
			judge: func(j *judge) verdict {
				return withChoices(j.x("chat.stop"), "chat.choices", func(i int, c map[string]any) *verdict {
					content, _ := at(c, "message", "content")
					s, _ := content.(string)
					for _, stop := range stopSequences() {
						if strings.Contains(s, stop) {
							return failp(fmt.Sprintf("content without any of %q", stopSequences()),
								fmt.Sprintf("choices[%d].message.content %q contains %q", i, clip(s, 80), stop))
						}
					}
					return nil
				})
			}},
		{id: "chat.max_completion_tokens.accepted", grade: Must, probes: []probeID{"chat.mct"},
			title: "max_completion_tokens is accepted",
			judge: func(j *judge) verdict { return pass() }},
		{id: "chat.max_completion_tokens.respected", grade: Must, probes: []probeID{"chat.mct"},
			title: "max_completion_tokens 4 yields at most four completion tokens",
			judge: func(j *judge) verdict {
				_, c, _, _, ok := usageOf(j.x("chat.mct").json)
				if !ok {
					return skip("no usage to count tokens with; see chat.usage")
				}
				if why := uncounted(j.x("chat.mct")); why != "" {
					return skip(why + ", so it cannot show the limit held; see chat.usage")
				}
				if c > 4 {
					return fail("completion_tokens ≤ 4", fmt.Sprintf("completion_tokens: %d", c))
				}
				return pass()
			}},
		// n itself is optional (Ollama documents it unsupported): a server that refuses it skips,
		// one that answers a single choice warns. The choices it does answer are chat choices
		// all the same, each held to what the reference requires of every choice (index,
		// message, finish_reason), so a malformed one fails as chat.choices and chat.message.*
		// fail the plain request's (TestOneDeviationOneVerdict's n rows).
		{id: "chat.n.choices", grade: Should, probes: []probeID{"chat.n"},
			title: "n 2 yields two choices, indexes 0 and 1 each once, each a complete assistant choice",
			judge: func(j *judge) verdict {
				raw, ok := at(j.x("chat.n").json, "choices")
				cs, isObjs := objects(raw, ok)
				if !isObjs || len(cs) == 0 {
					return mustFail("choices: non-empty array of objects", "choices: "+clip(showField(raw, ok), 120))
				}
				if f := indexesDense(cs); f != nil {
					return asMust(*f)
				}
				for i, c := range cs {
					if f := completeChoice(i, c); f != nil {
						return asMust(*f)
					}
				}
				if len(cs) != 2 {
					return fail("two choices", fmt.Sprintf("%d choice(s): %s", len(cs), clip(showField(raw, ok), 120)))
				}
				return pass()
			}},
	}
}

// completeChoice judges one chat choice as the reference defines it: a message with role
// "assistant" whose content is present as a string or null (null beside tool calls or a
// refusal, or when nothing was said) and whose tool_calls, if any, are an array, and an allowed
// finish_reason. chat.message.role, chat.message.content and chat.finish_reason judge the
// plain request's choices one requirement each; this is all of them for another request's.
func completeChoice(i int, c map[string]any) *verdict {
	const want = `{"index": i, "message": {"role": "assistant", "content": string or null}, "finish_reason": ...}`
	m, hasMsg := c["message"]
	msg, isObj := asObject(m)
	if !isObj {
		return failp(want, fmt.Sprintf("choices[%d].message: %s in %s", i, showField(m, hasMsg), brief(c)))
	}
	if r, ok := msg["role"]; r != "assistant" {
		return failp(want, fmt.Sprintf("choices[%d].message.role: %s", i, showField(r, ok)))
	}
	content, hasContent := msg["content"]
	if _, isStr := content.(string); !hasContent || (content != nil && !isStr) {
		return failp(want, fmt.Sprintf("choices[%d].message.content: %s in %s", i, showField(content, hasContent), brief(msg)))
	}
	if calls, ok := msg["tool_calls"]; calls != nil {
		if _, isArr := asArray(calls); !isArr {
			return failp(want+" (tool_calls an array)", fmt.Sprintf("choices[%d].message.tool_calls: %s", i, showField(calls, ok)))
		}
	}
	if v, ok := c["finish_reason"]; !oneOf(stringOf(v), chatFinishReasons()) {
		return failp(want+" (finish_reason in "+strings.Join(chatFinishReasons(), ", ")+")",
			fmt.Sprintf("choices[%d].finish_reason: %s", i, showField(v, ok)))
	}
	return nil
}

func stringOf(v any) string { s, _ := v.(string); return s }

// uncounted says why a usage that adds up counts nothing: completion_tokens 0 beside a first
// choice with content, the placeholder usage of hand-written servers and proxies. Under it
// every token limit would seem to hold. "" for any other answer; prompt_tokens 0 is no sign,
// since Ollama reports it so for a prompt served from its cache.
func uncounted(x *exchange) string {
	if _, c, _, _, ok := usageOf(x.json); !ok || c != 0 {
		return ""
	}
	content, _ := at(x.json, "choices", 0, "message", "content")
	if s, _ := content.(string); s != "" {
		return fmt.Sprintf("usage.completion_tokens is 0 beside %d bytes of content", len(s))
	}
	return ""
}

// mustFail is a failure graded MUST whatever the check's own grade: a check whose feature is
// optional (a SHOULD) still fails what the reference requires of every answer.
func mustFail(expected, seen string) verdict { return asMust(fail(expected, seen)) }

func asMust(v verdict) verdict { v.grade = Must; return v }

// indexesDense checks that choices carry integer indexes forming 0..n-1.
func indexesDense(cs []map[string]any) *verdict {
	var idx []int
	for i, c := range cs {
		n, ok := asInt(c["index"])
		if !ok {
			return failp("choices[].index: integer", fmt.Sprintf("choices[%d].index: %s", i, showField(c["index"], hasKey(c, "index"))))
		}
		idx = append(idx, int(n))
	}
	sort.Ints(idx)
	for i, n := range idx {
		if n != i {
			return failp(fmt.Sprintf("indexes 0..%d", len(cs)-1), fmt.Sprintf("indexes %v", idx))
		}
	}
	return nil
}

func hasKey(m map[string]any, k string) bool { _, ok := m[k]; return ok }
