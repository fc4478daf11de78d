package conformance

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// chunkData is the raw data of the stream's pos-th data event, the focus
// for an excerpt about that chunk.
func chunkData(x *exchange, pos int) string {
	if evs := x.stream.dataEvents(); pos >= 0 && pos < len(evs) {
		return evs[pos].Data
	}
	return ""
}

// jsonChunks returns the stream's chunks that decoded to JSON objects, with
// their position among data events (for evidence).
func jsonChunks(x *exchange) (chunks []map[string]any, pos []int) {
	for i, c := range x.chunks {
		if m, ok := asObject(c); ok {
			chunks = append(chunks, m)
			pos = append(pos, i)
		}
	}
	return chunks, pos
}

// sameOnEveryChunk checks a field that identifies the completion: it must be
// present, valid, and identical on every chunk.
func sameOnEveryChunk(x *exchange, field string, valid func(any) bool, want string) verdict {
	if v := validOnEveryChunk(x, field, valid, want); v.fail || v.skip != "" {
		return v
	}
	return constantAcrossChunks(x, field)
}

// validOnEveryChunk is sameOnEveryChunk without the sameness.
func validOnEveryChunk(x *exchange, field string, valid func(any) bool, want string) verdict {
	chunks, pos := jsonChunks(x)
	if len(chunks) == 0 {
		return skip("no JSON chunks to judge; see chat.stream.json")
	}
	for i, c := range chunks {
		if v, ok := c[field]; !ok || !valid(v) {
			return fail(field+": "+want+" on every chunk", fmt.Sprintf("chunk %d %s: %s", pos[i], field, showField(v, ok))).at(chunkData(x, pos[i]))
		}
	}
	return pass()
}

// constantAcrossChunks judges that field has one value on every chunk.
func constantAcrossChunks(x *exchange, field string) verdict {
	chunks, pos := jsonChunks(x)
	if len(chunks) == 0 {
		return skip("no JSON chunks to judge; see chat.stream.json")
	}
	first := chunks[0][field]
	for i, c := range chunks[1:] {
		// The values themselves: show clips what it renders, and a long id that changes past
		// the clip is still another id.
		if v := c[field]; !reflect.DeepEqual(v, first) {
			seen := fmt.Sprintf("chunk 0 %s: %s, chunk %d %s: %s", field, show(first), pos[i+1], field, show(v))
			if show(v) == show(first) {
				// Clipped alike: say where they part, first, since the reason is clipped too.
				seen = fmt.Sprintf("chunk %d %s differs from chunk 0's after the first %d bytes: %s", pos[i+1], field, commonPrefix(first, v), show(v))
			}
			return fail(field+" constant across chunks", seen).at(chunkData(x, pos[i+1]))
		}
	}
	return pass()
}

// commonPrefix is how many leading bytes a and b share: of the strings themselves when both are
// strings, of their JSON renderings otherwise.
func commonPrefix(a, b any) int {
	sa, okA := a.(string)
	sb, okB := b.(string)
	if !okA || !okB {
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		sa, sb = string(ja), string(jb)
	}
	n := 0
	for n < len(sa) && n < len(sb) && sa[n] == sb[n] {
		n++
	}
	return n
}

func nonEmptyString(v any) bool { s, _ := v.(string); return s != "" }
func isInteger(v any) bool      { _, ok := asInt(v); return ok }

// chunkChoices yields (chunk position, choice index, choice) for every choice
// of every chunk; a choice without an integer index reports index -1.
func chunkChoices(x *exchange, f func(pos int, index int, c map[string]any) *verdict) *verdict {
	chunks, pos := jsonChunks(x)
	for i, ch := range chunks {
		cs, _ := objects(ch["choices"], hasKey(ch, "choices"))
		for _, c := range cs {
			idx := -1
			if n, ok := asInt(c["index"]); ok {
				idx = int(n)
			}
			if v := f(pos[i], idx, c); v != nil {
				focused := v.at(chunkData(x, pos[i]))
				return &focused
			}
		}
	}
	return nil
}

// The streamed chat requests besides the plain one ("chat.stream"): a server may end a stream
// without [DONE], or change its id, only where tools or include_usage were asked for, so the
// checks about every stream judge these too (see check.also), when they answered.
func otherChatStreams() []probeID { return []probeID{"chat.stream_usage", "tools.stream"} }

// streamName is how a verdict names the stream it quotes.
func streamName(id probeID) string {
	switch id {
	case "chat.stream_usage":
		return "the stream with include_usage"
	case "tools.stream":
		return "the stream with tools"
	}
	return "the plain stream"
}

// eachStream judges with f every stream of ids that the check got, in that order: the first
// failure, its seen naming the stream and its excerpt quoting it; else the first skip, since a
// stream that could not be judged is another check's failure to see; else a pass. A stream
// left out (refused, broken: see check.also) is not in j.ex.
func eachStream(j *judge, ids []probeID, f func(x *exchange) verdict) verdict {
	return eachStreamViewed(j, ids, func(_ probeID, x *exchange) *exchange { return x }, f)
}

// eachStreamApartFromUsage is eachStream judging the include_usage stream without its final
// usage chunk, which is chat.stream.usage.final's to judge: its id, its choices and what a
// choice in it says are faults of that one chunk, reported there once.
func eachStreamApartFromUsage(j *judge, ids []probeID, f func(x *exchange) verdict) verdict {
	return eachStreamViewed(j, ids, func(id probeID, x *exchange) *exchange {
		if id != "chat.stream_usage" {
			return x
		}
		return withoutUsageChunk(x)
	}, f)
}

func eachStreamViewed(j *judge, ids []probeID, view func(probeID, *exchange) *exchange, f func(x *exchange) verdict) verdict {
	var skipped *verdict
	for _, id := range ids {
		x, ok := j.ex[id]
		if !ok {
			continue
		}
		switch v := f(view(id, x)); {
		case v.fail:
			v.seen = streamName(id) + ": " + v.seen
			return v.from(x)
		case v.skip != "" && skipped == nil:
			skipped = &v
		}
	}
	if skipped != nil {
		return *skipped
	}
	return pass()
}

// withoutUsageChunk is x without its last chunk when that chunk carries a usage object.
func withoutUsageChunk(x *exchange) *exchange {
	chunks, _ := jsonChunks(x)
	if len(chunks) == 0 {
		return x
	}
	if _, ok := asObject(chunks[len(chunks)-1]["usage"]); !ok {
		return x
	}
	last := len(x.chunks) - 1
	for ; last >= 0; last-- {
		if _, ok := asObject(x.chunks[last]); ok {
			break
		}
	}
	cut := *x
	cut.chunks = x.chunks[:last]
	return &cut
}

func streamChecks() []*check {
	st := []probeID{"chat.stream"}
	su := []probeID{"chat.stream_usage"}
	// every: the checks that hold for any chat stream judge all three streams.
	every := append(append([]probeID{}, st...), otherChatStreams()...)
	also := otherChatStreams()
	// Without include_usage: the plain stream and the one with tools.
	noUsage := []probeID{"chat.stream", "tools.stream"}
	return []*check{
		{id: "chat.stream.content_type", grade: Must, probes: st, also: also,
			title: "stream: true answers 200 with Content-Type text/event-stream",
			judge: func(j *judge) verdict {
				return eachStream(j, every, func(x *exchange) verdict {
					if ct := x.contentType(); ct != "text/event-stream" {
						return fail("Content-Type: text/event-stream", "Content-Type: "+ct)
					}
					return pass()
				})
			}},
		{id: "chat.stream.json", grade: Must, probes: st, also: also,
			title: "every data line before [DONE] is a JSON object",
			judge: func(j *judge) verdict { return eachStream(j, every, judgeStreamJSON) }},
		{id: "chat.stream.object", grade: Must, probes: st, also: also,
			title: `every chunk has object "chat.completion.chunk"`,
			judge: func(j *judge) verdict {
				return eachStream(j, every, func(x *exchange) verdict {
					return sameOnEveryChunk(x, "object",
						func(v any) bool { return v == "chat.completion.chunk" }, `"chat.completion.chunk"`)
				})
			}},
		{id: "chat.stream.id", grade: Must, probes: st, also: also,
			title: "id is a non-empty string, the same on every chunk",
			judge: func(j *judge) verdict {
				return eachStreamApartFromUsage(j, every, func(x *exchange) verdict {
					return sameOnEveryChunk(x, "id", nonEmptyString, "non-empty string")
				})
			}},
		{id: "chat.stream.created", grade: Must, probes: st, also: also,
			title: "created is an integer Unix time in seconds on every chunk",
			judge: func(j *judge) verdict {
				// The same plausibility as chat.created, so milliseconds
				// are caught on a stream too.
				seconds := func(v any) bool { return plausibleCreated(v, true, j.now) == nil }
				return eachStream(j, every, func(x *exchange) verdict {
					return validOnEveryChunk(x, "created", seconds, "integer Unix seconds between 2020 and now")
				})
			}},
		// Apart from the MUST above: Ollama and llama-server stamp each
		// chunk as they write it, so a server that does fails this only
		// when its stream crosses a second, and a MUST would pass or fail
		// with the clock. No SDK reads it.
		{id: "chat.stream.created.same", grade: Should, probes: st, also: also,
			title: "created is the same on every chunk",
			judge: func(j *judge) verdict {
				seconds := func(v any) bool { return plausibleCreated(v, true, j.now) == nil }
				return eachStream(j, every, func(x *exchange) verdict {
					if v := validOnEveryChunk(x, "created", seconds, ""); v.fail || v.skip != "" {
						return skip("created is not valid on every chunk; see chat.stream.created")
					}
					return constantAcrossChunks(x, "created")
				})
			}},
		// The reference says each chunk has the same id and the same
		// created, but of model only "the model to generate the
		// completion"; a router may name the alias first and the resolved
		// model after it, and no client (openai-go's accumulator included)
		// minds. So sameness is a SHOULD, as for created.
		{id: "chat.stream.model", grade: Must, probes: st, also: also,
			title: "model is a non-empty string on every chunk",
			judge: func(j *judge) verdict {
				return eachStream(j, every, func(x *exchange) verdict {
					return validOnEveryChunk(x, "model", nonEmptyString, "non-empty string")
				})
			}},
		{id: "chat.stream.model.same", grade: Should, probes: st, also: also,
			title: "model is the same on every chunk",
			judge: func(j *judge) verdict {
				return eachStream(j, every, func(x *exchange) verdict {
					if v := validOnEveryChunk(x, "model", nonEmptyString, ""); v.fail || v.skip != "" {
						return skip("model is not a non-empty string on every chunk; see chat.stream.model")
					}
					return constantAcrossChunks(x, "model")
				})
			}},
		{id: "chat.stream.role", grade: Must, probes: st, also: also,
			title: `every delta that carries a role carries "assistant"`,
			judge: func(j *judge) verdict {
				return eachStream(j, every, func(x *exchange) verdict {
					seen := false
					if v := chunkChoices(x, func(pos, idx int, c map[string]any) *verdict {
						seen = true
						if r, ok := at(c, "delta", "role"); ok && r != nil && r != "assistant" {
							return failp(`delta.role "assistant" or absent`, fmt.Sprintf("chunk %d choice %d delta.role: %s", pos, idx, showField(r, ok)))
						}
						return nil
					}); v != nil {
						return *v
					}
					if !seen {
						return fail("at least one chunk with a choice", "none")
					}
					return pass()
				})
			}},
		{id: "chat.stream.role.first", grade: Should, probes: st, also: also,
			title: `the first delta of each choice carries role "assistant"`,
			judge: func(j *judge) verdict {
				return eachStream(j, every, func(x *exchange) verdict {
					seen := map[int]bool{}
					if v := chunkChoices(x, func(pos, idx int, c map[string]any) *verdict {
						if seen[idx] {
							return nil
						}
						seen[idx] = true
						if r, ok := at(c, "delta", "role"); r != "assistant" {
							return failp(`first delta: {"role": "assistant", ...}`, fmt.Sprintf("chunk %d choice %d delta.role: %s", pos, idx, showField(r, ok)))
						}
						return nil
					}); v != nil {
						return *v
					}
					if len(seen) == 0 {
						return fail("at least one chunk with a choice", "none")
					}
					return pass()
				})
			}},
		{id: "chat.stream.delta", grade: Must, probes: st, also: also,
			title: "every chunk has a choices array; every choice has index 0 (n is 1) and a delta whose content is a string or null",
			judge: func(j *judge) verdict { return eachStreamApartFromUsage(j, every, judgeStreamDelta) }},
		// chat.stream.delta lets choices be empty, since servers send a chunk without a choice
		// (Azure OpenAI its prompt filter results first), and openai-go's accumulator takes
		// it. But the reference allows it only for the final usage chunk, and client code
		// indexes choices[0] (openai-python's README does) and breaks on it: a SHOULD.
		{id: "chat.stream.choices", grade: Should, probes: st, also: also,
			title: "every chunk has at least one choice (only the final usage chunk may have none)",
			judge: func(j *judge) verdict {
				return eachStream(j, every, func(x *exchange) verdict {
					chunks, pos := jsonChunks(x)
					for i, ch := range chunks {
						// A usage chunk nobody asked for is chat.stream.usage.absent's to report; one
						// asked for but misplaced, chat.stream.usage.final's.
						if cs, ok := asArray(ch["choices"]); ok && len(cs) == 0 && !isUsageChunk(ch) {
							return fail(`choices: [{...}] on every chunk; [] only on the usage chunk include_usage asks for`,
								fmt.Sprintf("chunk %d of %d choices: [], and no usage", pos[i], len(chunks))).at(chunkData(x, pos[i]))
						}
					}
					return pass()
				})
			}},
		{id: "chat.stream.finish_reason", grade: Must, probes: st, also: also,
			title: "finish_reason is null until one final allowed value per choice, after which the choice is silent",
			judge: func(j *judge) verdict {
				return eachStreamApartFromUsage(j, every, func(x *exchange) verdict { return judgeStreamFinish(x, chatFinishReasons()) })
			}},
		{id: "chat.stream.done", grade: Must, probes: st, also: also,
			title: "the stream ends with data: [DONE], closed by a blank line, and nothing after it",
			judge: func(j *judge) verdict { return eachStream(j, every, judgeDone) }},
		{id: "chat.stream.usage.absent", grade: Should, probes: st, also: []probeID{"tools.stream"},
			title: "without stream_options.include_usage no chunk carries usage",
			judge: func(j *judge) verdict {
				return eachStream(j, noUsage, func(x *exchange) verdict {
					chunks, pos := jsonChunks(x)
					for i, c := range chunks {
						if u, ok := c["usage"]; !isNullish(u, ok) {
							return fail("usage absent or null", fmt.Sprintf("chunk %d usage: %s", pos[i], show(u))).at(chunkData(x, pos[i]))
						}
					}
					return pass()
				})
			}},
		{id: "chat.stream.usage.final", grade: Must, probes: su,
			title: "with include_usage exactly one chunk has empty choices and usage, the last before [DONE], with the id of the chunks before it",
			judge: func(j *judge) verdict {
				x := j.x("chat.stream_usage")
				chunks, pos := jsonChunks(x)
				var usageOnly []int
				for i, c := range chunks {
					if isUsageChunk(c) {
						usageOnly = append(usageOnly, i)
					}
				}
				want := `one last chunk {"choices": [], "usage": {...}}`
				switch {
				case len(chunks) == 0:
					return fail(want, "no chunks")
				case len(usageOnly) == 0:
					// The whole chunk, clipped, would lose its usage (the
					// field servers misplace) behind its choices.
					last := chunks[len(chunks)-1]
					return fail(want, fmt.Sprintf("no such chunk; the last has %s and usage %s",
						describeChoices(last), showField(last["usage"], hasKey(last, "usage")))).at(chunkData(x, pos[len(chunks)-1]))
				case len(usageOnly) > 1:
					return fail(want, fmt.Sprintf("%d such chunks", len(usageOnly))).at(chunkData(x, pos[usageOnly[1]]))
				case usageOnly[0] != len(chunks)-1:
					return fail(want, fmt.Sprintf("usage chunk at %d, followed by %d more", pos[usageOnly[0]], len(chunks)-1-usageOnly[0])).at(chunkData(x, pos[usageOnly[0]]))
				}
				// "Each chunk has the same ID", the usage chunk too: openai-go's accumulator
				// refuses a chunk whose id is not the first chunk's, and the usage with it. The
				// chunk before it is the measure, so that a stream whose id changes earlier is
				// chat.stream.id's failure (judged on the stream without include_usage), not
				// a second one here.
				last, before := chunks[len(chunks)-1], chunks[max(len(chunks)-2, 0)]
				if id, ok := last["id"]; !reflect.DeepEqual(id, before["id"]) {
					return fail(want+" with the id of the chunks before it",
						fmt.Sprintf("usage chunk id %s, the chunk before it %s: openai-go's accumulator refuses the chunk, and its usage is lost",
							showField(id, ok), show(before["id"]))).at(chunkData(x, pos[len(chunks)-1]))
				}
				return pass()
			}},
		{id: "chat.stream.usage.elsewhere", grade: Must, probes: su,
			title: "with include_usage every other chunk's usage is absent or null",
			judge: func(j *judge) verdict {
				chunks, pos := jsonChunks(j.x("chat.stream_usage"))
				for i, c := range chunks {
					if i == len(chunks)-1 && isUsageChunk(c) {
						continue
					}
					if u, ok := c["usage"]; !isNullish(u, ok) {
						return fail("usage absent or null except on the final chunk", fmt.Sprintf("chunk %d usage: %s", pos[i], show(u))).at(chunkData(j.x("chat.stream_usage"), pos[i]))
					}
				}
				return pass()
			}},
		{id: "chat.stream.usage.total", grade: Must, probes: su,
			title: "the streamed usage has integer fields and total_tokens = prompt_tokens + completion_tokens",
			judge: func(j *judge) verdict {
				chunks, _ := jsonChunks(j.x("chat.stream_usage"))
				if len(chunks) == 0 || !isUsageChunk(chunks[len(chunks)-1]) {
					return skip("no final usage chunk; see chat.stream.usage.final")
				}
				p, c, t, seen, ok := usageOf(chunks[len(chunks)-1])
				if !ok {
					return fail("usage with integer prompt_tokens, completion_tokens, total_tokens", seen)
				}
				if p+c != t {
					return fail(fmt.Sprintf("total_tokens = %d + %d = %d", p, c, p+c), fmt.Sprintf("total_tokens: %d", t))
				}
				return pass()
			}},
	}
}

// describeChoices says what a chunk's choices are, in a few words.
func describeChoices(c map[string]any) string {
	raw, ok := c["choices"]
	if arr, isArr := asArray(raw); isArr {
		if len(arr) == 1 {
			return "1 choice"
		}
		return fmt.Sprintf("%d choices", len(arr))
	}
	return "choices " + showField(raw, ok)
}

// isUsageChunk: the reference's final usage chunk has an empty choices array
// (not null, not absent) and a usage object.
func isUsageChunk(c map[string]any) bool {
	cs, ok := c["choices"].([]any)
	_, hasUsage := asObject(c["usage"])
	return ok && len(cs) == 0 && hasUsage
}

func judgeStreamJSON(x *exchange) verdict {
	events := x.stream.dataEvents()
	if len(events) == 0 {
		return fail("at least one data chunk before [DONE]", "none")
	}
	for i, ev := range events {
		if _, ok := asObject(x.chunks[i]); !ok {
			why := ""
			if _, err := decodeJSON([]byte(ev.Data)); err != nil {
				why = " (" + err.Error() + ")"
			}
			return fail("data: <JSON object>", fmt.Sprintf("data line %d%s: %q", i, why, clip(ev.Data, 120))).at(ev.Data)
		}
	}
	return pass()
}

func judgeDone(x *exchange) verdict {
	s := x.stream
	switch {
	case s.ReadErr != nil:
		return fail("data: [DONE] then end of stream", "stream broke: "+s.ReadErr.Error())
	case s.DoneAt < 0:
		n := len(s.Events)
		if n == 0 {
			return fail("data: [DONE] as the last event", "no [DONE]; last event: nothing")
		}
		last := s.Events[n-1].Data
		seen := fmt.Sprintf("no [DONE]; last event: %q", clip(last, 120))
		if _, err := decodeJSON([]byte(last)); err != nil {
			// A near miss (" [DONE]", "[done]"): say why it does not count.
			seen = fmt.Sprintf("no [DONE]; the last event's data %q does not begin with [DONE], so the SDKs decode it as a chunk and fail", clip(last, 60))
		}
		return fail("data: [DONE] as the last event (data beginning with [DONE], which ends the stream in openai-go and openai-python)", seen).at(last)
	case s.AfterDone:
		return fail("nothing after data: [DONE]", fmt.Sprintf("%d more events after [DONE]", len(s.Events)-1-s.DoneAt)).at("[DONE]")
	case s.Truncated:
		// The parser keeps an unterminated last event for the other
		// judges, but an SSE client discards it: to one, this stream has
		// no [DONE].
		return fail("data: [DONE] followed by a blank line", "the stream ends inside the [DONE] event, which an SSE client discards").at("[DONE]")
	}
	return pass()
}

// judgeStreamFinish checks, per choice index, that finish_reason is null until
// exactly one allowed value and that nothing of that choice follows it.
func judgeStreamFinish(x *exchange, allowed []string) verdict {
	finished := map[int]int{} // choice index → chunk position of its finish_reason
	seen := map[int]bool{}
	if v := chunkChoices(x, func(pos, idx int, c map[string]any) *verdict {
		seen[idx] = true
		if at, done := finished[idx]; done {
			return failp("nothing for a choice after its finish_reason",
				fmt.Sprintf("choice %d finished at chunk %d, more at chunk %d: %s", idx, at, pos, show(c)))
		}
		fr, ok := c["finish_reason"]
		if isNullish(fr, ok) {
			return nil
		}
		if s, _ := fr.(string); !oneOf(s, allowed) {
			return failp("finish_reason in "+strings.Join(allowed, ", "), fmt.Sprintf("chunk %d finish_reason: %s", pos, show(fr)))
		}
		finished[idx] = pos
		return nil
	}); v != nil {
		return *v
	}
	if len(seen) == 0 {
		return fail("chunks with choices", "none")
	}
	for idx := range seen {
		if _, ok := finished[idx]; !ok {
			return fail("a final finish_reason for every choice", fmt.Sprintf("choice %d never finished", idx))
		}
	}
	return pass()
}

// judgeStreamDelta: every chunk has a choices array of objects, and every choice has index 0
// and a delta whose content is a string or null.
func judgeStreamDelta(x *exchange) verdict {
	// chunkChoices passes over a chunk whose choices is not an
	// array of objects, so that is judged here first. Empty is
	// no failure here (chat.stream.choices warns): some servers
	// send a choice-less chunk first or last.
	chunks, pos := jsonChunks(x)
	for i, ch := range chunks {
		raw, ok := ch["choices"]
		if _, isObjs := objects(raw, ok); !isObjs {
			return fail("choices: an array of objects on every chunk", fmt.Sprintf("chunk %d choices: %s", pos[i], showField(raw, ok))).at(chunkData(x, pos[i]))
		}
	}
	if v := chunkChoices(x, func(pos, idx int, c map[string]any) *verdict {
		// The request leaves n at 1, so 0 is the only choice; the
		// other judges group by index and would accept a stream
		// whose one choice is numbered 1, or jumps.
		if idx != 0 {
			return failp("choices[].index: 0, the only choice when n is 1", fmt.Sprintf("chunk %d index: %s", pos, showField(c["index"], hasKey(c, "index"))))
		}
		d, ok := c["delta"]
		dm, isObj := asObject(d)
		if !ok || !isObj {
			return failp("choices[].delta: object", fmt.Sprintf("chunk %d delta: %s", pos, showField(d, ok)))
		}
		if content, ok := dm["content"]; ok && content != nil {
			if _, isStr := content.(string); !isStr {
				return failp("delta.content: string or null", fmt.Sprintf("chunk %d delta.content: %s", pos, show(content)))
			}
		}
		return nil
	}); v != nil {
		return *v
	}
	return pass()
}
