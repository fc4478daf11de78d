package conformance

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
)

// contentJSON extracts and parses the first choice's content. A truncated
// answer cannot be judged: constrained decoding that ran out of tokens is
// not a format violation. Nor can a refusal: structured outputs answer one in
// message.refusal, with no content.
func contentJSON(x *exchange) (any, *verdict) {
	if fr, _ := at(x.json, "choices", 0, "finish_reason"); fr == "length" {
		v := skip("output cut at max_tokens (finish_reason length); nothing complete to judge")
		return nil, &v
	}
	c, ok := at(x.json, "choices", 0, "message", "content")
	if r, _ := at(x.json, "choices", 0, "message", "refusal"); nonEmptyString(r) && (c == nil || c == "") {
		v := skip(fmt.Sprintf("the model refused (message.refusal %s, no content); nothing to judge", clip(show(r), 80)))
		return nil, &v
	}
	s, isStr := c.(string)
	if !isStr {
		return nil, failp("message.content: a JSON document", "content: "+showField(c, ok))
	}
	v, err := decodeJSON([]byte(strings.TrimSpace(s)))
	if err != nil {
		return nil, failp("message.content: a JSON document", fmt.Sprintf("content %q: %v", clip(s, 120), err))
	}
	return v, nil
}

func formatChecks() []*check {
	return []*check{
		{id: "format.json_object", grade: Must, probes: []probeID{"format.json_object"},
			title: "response_format json_object yields content that parses as a JSON object",
			judge: func(j *judge) verdict {
				v, bad := contentJSON(j.x("format.json_object"))
				if bad != nil {
					return *bad
				}
				if _, ok := asObject(v); !ok {
					return fail("a JSON object", "JSON "+typeName(v))
				}
				return pass()
			}},
		{id: "format.json_schema", grade: Must, probes: []probeID{"format.json_schema"},
			title: "response_format json_schema yields content that parses and validates against the schema",
			judge: func(j *judge) verdict {
				v, bad := contentJSON(j.x("format.json_schema"))
				if bad != nil {
					return *bad
				}
				if err := validateSchema(answerSchema(), v); err != nil {
					return fail("content valid against "+show(answerSchema()), err.Error())
				}
				return pass()
			}},
	}
}

// noContent reports an answer whose first choice's message has empty or null content because its
// tokens went to reasoning: a message with no tool calls, and reasoning to show for it (its
// reasoning_content or reasoning text, or reasoning tokens counted in usage). An answer without
// a message, or with nothing at all in it, is no such answer: a server that loses the content
// (and so its logprobs) is to fail logprobs.content, not skip it.
func noContent(x *exchange) bool {
	msg, ok := at(x.json, "choices", 0, "message")
	m, isObj := msg.(map[string]any)
	if !ok || !isObj {
		return false
	}
	c := m["content"]
	if s, isString := c.(string); c != nil && (!isString || s != "") {
		return false
	}
	if calls, ok := m["tool_calls"].([]any); ok && len(calls) > 0 {
		return false
	}
	for _, k := range []string{"reasoning_content", "reasoning"} {
		if s, ok := m[k].(string); ok && s != "" {
			return true
		}
	}
	// Numbers are json.Number here (decodeJSON), never float64.
	n, _ := at(x.json, "usage", "completion_tokens_details", "reasoning_tokens")
	f, _ := asNumber(n)
	return f > 0
}

func logprobChecks() []*check {
	lp := []probeID{"logprobs"}
	entries := func(x *exchange) ([]map[string]any, any, bool) {
		raw, ok := at(x.json, "choices", 0, "logprobs", "content")
		es, isObjs := objects(raw, ok)
		return es, raw, ok && isObjs
	}
	return []*check{
		{id: "logprobs.content", grade: Must, probes: lp,
			title: "logprobs: true yields logprobs.content entries with token, logprob ≤ 0, bytes and top_logprobs",
			judge: func(j *judge) verdict {
				x := j.x("logprobs")
				es, raw, ok := entries(x)
				if ok && len(es) == 0 && noContent(x) {
					// A reasoning model spends a small max_tokens on its reasoning, and
					// logprobs.content covers the content's tokens: there are none to show.
					return skip("the answer has no content (its tokens went to reasoning), so logprobs.content is rightly empty")
				}
				if !ok || len(es) == 0 {
					return fail("choices[0].logprobs.content: non-empty array of objects", "content: "+clip(show(raw), 120))
				}
				for i, e := range es {
					if why := logprobEntry(e, true); why != "" {
						return fail(`{"token": string, "logprob": number ≤ 0, "bytes": [int] or null, "top_logprobs": [...]}`,
							fmt.Sprintf("content[%d]: %s: %s", i, why, show(e)))
					}
				}
				return pass()
			}},
		// The reference: "The number of entries may be fewer than the requested top_logprobs."
		// So an entry with fewer is no fault; more is, and so is no entry with as many, a
		// server that ignores top_logprobs.
		{id: "logprobs.top_count", grade: Should, probes: lp,
			title: "no entry carries more than top_logprobs (2) alternatives, and some entry carries 2",
			judge: func(j *judge) verdict {
				es, _, ok := entries(j.x("logprobs"))
				if !ok || len(es) == 0 {
					return skip("no logprobs entries; see logprobs.content")
				}
				const want = 2
				var counts []int
				full := false
				for i, e := range es {
					top, _ := asArray(e["top_logprobs"])
					if len(top) > want {
						return fail(fmt.Sprintf("at most %d top_logprobs per entry", want), fmt.Sprintf("content[%d] has %d", i, len(top)))
					}
					full = full || len(top) == want
					counts = append(counts, len(top))
				}
				if !full {
					return fail(fmt.Sprintf("%d top_logprobs on some entry (fewer only where fewer are possible)", want),
						fmt.Sprintf("top_logprobs per entry: %v", counts))
				}
				return pass()
			}},
		// "logprobs must be set to true if this parameter is used" is the client's rule: a
		// server that tolerates the request is lenient, not wrong (as errors.strict.*).
		{id: "logprobs.top_requires_logprobs", grade: Strict, probes: []probeID{"logprobs.unpaired"},
			title: "top_logprobs without logprobs: true is rejected with 400",
			judge: func(j *judge) verdict { return wantStatus(j.x("logprobs.unpaired"), 400) }},
	}
}

// logprobEntry judges one token entry (top-level when top is true, or an
// alternative inside top_logprobs).
func logprobEntry(e map[string]any, top bool) string {
	if _, ok := e["token"].(string); !ok {
		return "token is not a string"
	}
	lp, ok := asNumber(e["logprob"])
	if !ok || lp > 0 {
		return "logprob is not a number ≤ 0"
	}
	if b, present := e["bytes"]; present && b != nil {
		arr, isArr := asArray(b)
		if !isArr {
			return "bytes is neither an array nor null"
		}
		for _, x := range arr {
			if n, ok := asInt(x); !ok || n < 0 || n > 255 {
				return "bytes holds a non-byte"
			}
		}
	}
	if !top {
		return ""
	}
	alts, ok := objects(e["top_logprobs"], hasKey(e, "top_logprobs"))
	if !ok {
		return "top_logprobs is not an array of objects"
	}
	for _, a := range alts {
		if why := logprobEntry(a, false); why != "" {
			return "top_logprobs: " + why
		}
	}
	return ""
}

func wantStatus(x *exchange, code int) verdict {
	if x.status != code {
		return fail(fmt.Sprintf("HTTP %d", code), x.statusLine())
	}
	return pass()
}

func completionChecks() []*check {
	c := []probeID{"completions"}
	cs := []probeID{"completions.stream"}
	return []*check{
		{id: "completions.status", grade: Must, probes: c,
			title: "POST /v1/completions answers 200 with a JSON body",
			judge: func(j *judge) verdict { return pass() }},
		{id: "completions.object", grade: Must, probes: c,
			title: `the completion has object "text_completion", a string id, integer created and string model`,
			judge: func(j *judge) verdict {
				m, _ := asObject(j.x("completions").json)
				if m["object"] != "text_completion" || !nonEmptyString(m["id"]) || !nonEmptyString(m["model"]) {
					return fail(`{"object": "text_completion", "id": "...", "model": "..."}`,
						fmt.Sprintf("object: %s, id: %s, model: %s", showField(m["object"], hasKey(m, "object")),
							showField(m["id"], hasKey(m, "id")), showField(m["model"], hasKey(m, "model"))))
				}
				if f := plausibleCreated(m["created"], hasKey(m, "created"), j.now); f != nil {
					return *f
				}
				return pass()
			}},
		{id: "completions.choices", grade: Must, probes: c,
			title: "every completion choice has string text, an integer index and finish_reason stop, length or content_filter",
			judge: func(j *judge) verdict {
				raw, ok := at(j.x("completions").json, "choices")
				ch, isObjs := objects(raw, ok)
				if !isObjs || len(ch) == 0 {
					return fail("choices: non-empty array of objects", "choices: "+showField(raw, ok))
				}
				if f := indexesDense(ch); f != nil {
					return *f
				}
				for i, c := range ch {
					text, hasText := c["text"]
					fr, hasFR := c["finish_reason"]
					member := ""
					if _, isStr := text.(string); !isStr {
						member = "text: " + showField(text, hasText)
					} else if s, _ := fr.(string); !oneOf(s, completionFinishReasons()) {
						member = "finish_reason: " + showField(fr, hasFR)
					} else {
						continue
					}
					return fail(`{"text": string, "finish_reason": stop|length|content_filter}`,
						fmt.Sprintf("choices[%d].%s in %s", i, member, brief(c)))
				}
				return pass()
			}},
		// As chat.usage: the reference does not require usage; one that is there must add up.
		{id: "completions.usage", grade: Should, probes: c,
			title: "completion usage carries integer prompt_tokens, completion_tokens and total_tokens",
			judge: func(j *judge) verdict {
				if _, _, _, seen, ok := usageOf(j.x("completions").json); !ok {
					return fail("usage: {prompt_tokens, completion_tokens, total_tokens} as integers", seen)
				}
				return pass()
			}},
		{id: "completions.usage.total", grade: Must, probes: c,
			title: "completion usage.total_tokens equals prompt_tokens + completion_tokens",
			judge: func(j *judge) verdict {
				p, c, t, _, ok := usageOf(j.x("completions").json)
				if !ok {
					return skip("no usage to judge; see completions.usage")
				}
				if p+c != t {
					return fail(fmt.Sprintf("total_tokens = %d", p+c), fmt.Sprintf("total_tokens: %d", t))
				}
				return pass()
			}},
		{id: "completions.stream.chunks", grade: Must, probes: cs,
			title: `stream: true answers text/event-stream chunks with object "text_completion" and a choices array whose entries have string text`,
			judge: func(j *judge) verdict {
				x := j.x("completions.stream")
				if ct := x.contentType(); ct != "text/event-stream" {
					return fail("Content-Type: text/event-stream", "Content-Type: "+ct)
				}
				if v := judgeStreamJSON(x); v.fail {
					return v
				}
				chunks, pos := jsonChunks(x)
				for i, ch := range chunks {
					// An object, null or absent choices read as "no
					// choices" here and passed; so did every entry after
					// the first, whatever its text.
					cs, isObjs := objects(ch["choices"], hasKey(ch, "choices"))
					ok := ch["object"] == "text_completion" && isObjs
					for _, c := range cs {
						_, isStr := c["text"].(string)
						ok = ok && isStr
					}
					if !ok {
						return fail(`{"object": "text_completion", "choices": [{"text": string, ...}]}`, fmt.Sprintf("chunk %d: %s", pos[i], show(ch))).at(chunkData(x, pos[i]))
					}
				}
				return pass()
			}},
		{id: "completions.stream.done", grade: Must, probes: cs,
			title: "the completions stream ends with data: [DONE]",
			judge: func(j *judge) verdict { return judgeDone(j.x("completions.stream")) }},
	}
}

// vectors are the data items of an embeddings answer.
func vectors(x *exchange) ([]map[string]any, bool) {
	d, ok := at(x.json, "data")
	return objects(d, ok)
}

func embeddingChecks() []*check {
	e := []probeID{"embeddings"}
	return []*check{
		{id: "embeddings.status", grade: Must, probes: e,
			title: "POST /v1/embeddings answers 200 with a JSON body",
			judge: func(j *judge) verdict { return pass() }},
		{id: "embeddings.object", grade: Must, probes: e,
			title: `the answer has object "list", a data array and a string model`,
			judge: func(j *judge) verdict {
				m, _ := asObject(j.x("embeddings").json)
				if _, isArr := asArray(m["data"]); m["object"] != "list" || !isArr || !nonEmptyString(m["model"]) {
					return fail(`{"object": "list", "data": [...], "model": "..."}`, clip(show(m), 160))
				}
				return pass()
			}},
		{id: "embeddings.entries", grade: Must, probes: e,
			title: `every item has object "embedding", an integer index and a non-empty number array of one common length`,
			judge: func(j *judge) verdict {
				ds, ok := vectors(j.x("embeddings"))
				if !ok || len(ds) == 0 {
					return skip("no data items; see embeddings.object")
				}
				dim := -1
				for i, d := range ds {
					obj, hasObj := d["object"]
					idx, hasIdx := d["index"]
					emb, hasEmb := d["embedding"]
					vec, isArr := asArray(emb)
					member := ""
					switch {
					case obj != "embedding":
						member = "object: " + showField(obj, hasObj)
					case !isInteger(idx):
						member = "index: " + showField(idx, hasIdx)
					case !isArr && hasEmb && emb != nil:
						// A base64 string (or an object) would be quoted at length.
						member = "embedding: a " + typeName(emb) + ", not an array of numbers"
					case !isArr || len(vec) == 0:
						member = "embedding: " + showField(emb, hasEmb)
					}
					if member != "" {
						return fail(`{"object": "embedding", "index": int, "embedding": [number...]}`,
							fmt.Sprintf("data[%d].%s in %s", i, member, brief(d)))
					}
					for k, n := range vec {
						if _, isNum := asNumber(n); !isNum {
							return fail("embedding: numbers", fmt.Sprintf("data[%d].embedding[%d]: %s in %s", i, k, show(n), brief(d)))
						}
					}
					if dim >= 0 && len(vec) != dim {
						return fail("one common dimension", fmt.Sprintf("data[0] has %d, data[%d] has %d", dim, i, len(vec)))
					}
					dim = len(vec)
				}
				return pass()
			}},
		// The float request first, as for embeddings.base64: its skip is this check's too.
		{id: "embeddings.order", grade: Must, probes: []probeID{"embeddings", "embeddings.reversed"},
			title: "an input array of three yields three items with index 0, 1, 2, each the vector of the input at its place",
			judge: func(j *judge) verdict {
				for _, id := range []probeID{"embeddings", "embeddings.reversed"} {
					ds, ok := vectors(j.x(id))
					if !ok {
						return skip("no data items; see embeddings.object").from(j.x(id))
					}
					var got []string
					good := len(ds) == len(embeddingInput())
					for i, d := range ds {
						n, _ := asInt(d["index"])
						got = append(got, show(d["index"]))
						good = good && int(n) == i && isInteger(d["index"])
					}
					if !good {
						return fail("indexes [0 1 2]", fmt.Sprintf("indexes %v", got)).from(j.x(id))
					}
				}
				return judgeVectorOrder(j)
			}},
		{id: "embeddings.usage", grade: Should, probes: e,
			title: "usage has integer prompt_tokens and total_tokens",
			judge: func(j *judge) verdict {
				u, ok := at(j.x("embeddings").json, "usage")
				m, _ := asObject(u)
				_, p := asInt(m["prompt_tokens"])
				_, t := asInt(m["total_tokens"])
				if !p || !t {
					return fail(`usage: {"prompt_tokens": int, "total_tokens": int}`, "usage: "+showField(u, ok))
				}
				return pass()
			}},
		// The float request first: its skip (the model does not embed, the endpoint is not
		// there) is this check's too, before the base64 request's answer is judged.
		{id: "embeddings.base64", grade: Must, probes: []probeID{"embeddings", "embeddings.base64"},
			title: "encoding_format base64 yields little-endian float32 vectors equal to the float ones",
			judge: func(j *judge) verdict { return judgeBase64(j).from(j.x("embeddings.base64")) }},
	}
}

// judgeBase64 compares the base64 answer's vectors with the float answer's.
func judgeBase64(j *judge) verdict {
	floats, ok1 := vectors(j.x("embeddings"))
	b64, ok2 := vectors(j.x("embeddings.base64"))
	if !ok1 || !ok2 || len(floats) != len(b64) || len(b64) == 0 {
		return fail("as many base64 items as float items", fmt.Sprintf("%d float items, %d base64 items", len(floats), len(b64)))
	}
	for i := range b64 {
		s, isStr := b64[i]["embedding"].(string)
		if !isStr {
			return fail("embedding: base64 string", fmt.Sprintf("data[%d].embedding: %s", i, typeName(b64[i]["embedding"])))
		}
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(raw)%4 != 0 {
			return fail("base64 of float32 values", fmt.Sprintf("data[%d]: %d bytes, err %v", i, len(raw), err))
		}
		want, _ := asArray(floats[i]["embedding"])
		if len(raw)/4 != len(want) {
			return fail(fmt.Sprintf("%d float32 values", len(want)), fmt.Sprintf("data[%d]: %d", i, len(raw)/4))
		}
		for k := range want {
			got := float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*k:])))
			w, _ := asNumber(want[k])
			// Two forward passes may differ in the last bits on a GPU.
			if math.Abs(got-w) > 1e-3*math.Max(1, math.Abs(w)) {
				return fail(fmt.Sprintf("data[%d][%d] = %g", i, k, w), fmt.Sprintf("decoded %g", got))
			}
		}
	}
	return pass()
}

// numberVectors reads an embeddings answer's vectors as numbers, or false when any is not an
// array of numbers (embeddings.entries says which).
func numberVectors(x *exchange) ([][]float64, bool) {
	ds, ok := vectors(x)
	if !ok {
		return nil, false
	}
	out := make([][]float64, len(ds))
	for i, d := range ds {
		arr, isArr := asArray(d["embedding"])
		if !isArr || len(arr) == 0 {
			return nil, false
		}
		for _, n := range arr {
			f, isNum := asNumber(n)
			if !isNum {
				return nil, false
			}
			out[i] = append(out[i], f)
		}
	}
	return out, true
}

// judgeVectorOrder holds each vector of the first answer to be the vector of the same input in
// the answer to the reversed inputs: nearer to it than to any other input's. Nearest, not equal,
// because two forward passes in another batch order may differ in the last bits on a GPU, while
// the vectors of two different inputs differ by far more. A vector that is as near to another
// input's is one vector answered for two inputs.
func judgeVectorOrder(j *judge) verdict {
	in := embeddingInput()
	fwd, ok1 := numberVectors(j.x("embeddings"))
	rev, ok2 := numberVectors(j.x("embeddings.reversed"))
	if !ok1 || !ok2 {
		return skip("not every item is an array of numbers; see embeddings.entries")
	}
	n := len(in)
	for a := 0; a < n; a++ {
		for b := a + 1; b < n; b++ {
			if distance(fwd[a], fwd[b]) == 0 {
				return fail("a vector of its own for each input",
					fmt.Sprintf("data[%d] (%q) and data[%d] (%q) are the same vector", a, in[a], b, in[b]))
			}
		}
	}
	for i := range n {
		want := n - 1 - i // where input i stands among the reversed inputs
		nearest := want
		for k := range n {
			if k != want && distance(fwd[i], rev[k]) <= distance(fwd[i], rev[nearest]) {
				nearest = k
			}
		}
		if nearest != want {
			return fail(fmt.Sprintf("data[%d] (%q) nearest data[%d] of the answer to the inputs sent last to first, the same input's vector", i, in[i], want),
				fmt.Sprintf("data[%d] (%q) is nearest data[%d] of the answer to the inputs sent last to first, which stands for %q: the vectors are not in the order of their inputs",
					i, in[i], nearest, in[n-1-nearest])).from(j.x("embeddings.reversed"))
		}
	}
	return pass()
}

// distance is the squared Euclidean distance between two vectors, +Inf when their lengths
// differ.
func distance(a, b []float64) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range a {
		d += (a[i] - b[i]) * (a[i] - b[i])
	}
	return d
}
