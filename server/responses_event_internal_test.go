package server

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzDecodeChunkMatchesUnmarshal holds decodeChunk to json.Unmarshal, which the Responses bridge
// read every chunk with before: the same fields for any payload, and failing on the same ones.
func FuzzDecodeChunkMatchesUnmarshal(f *testing.F) {
	for _, p := range []string{
		bridgeTextEvent[len("data: ") : len(bridgeTextEvent)-2], bridgeThinkEvent[len("data: ") : len(bridgeThinkEvent)-2],
		bridgeFinishEvent[len("data: ") : len(bridgeFinishEvent)-2], bridgeUsageEvent[len("data: ") : len(bridgeUsageEvent)-2],
		`{"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null,"tool_calls":null},"finish_reason":null}]}`,
		`{"choices":[{"index":1,"delta":{"content":"a"}},{"index":0,"delta":{"content":"b","content":"c"}}]}`,
		`{"choices":[{"delta":{"content":null}}]}`, `{"choices":[{"delta":{"content":[{"type":"text","text":"x"}]}}]}`,
		`{"choices":[{"Index":1,"delta":{"Content":"x"}}]}`, `{"choices":null}`, `{"choices":[null]}`, `{"error":{"message":"x"}}`,
		`{"choices":[{"index":1.0}]}`, `{"choices":[{"index":"0"}]}`, `{"model":"\ud800\u2028<&>"}`, `{"model":null}`,
		`{"choices":[{"delta":{"reasoning_content":"a","reasoning_content":null}}]}`, `{"choices":[],"choices":[{}]}`,
		`{"choices":[{"finish_reason":"stop","finish_reason":null}]} x`, `[DONE]`, `{"choices":[{"message":{"content":"x"}}]}`,
		`{"model":"m"}`, `{"model":"\n"}`, `{"model":"\u006d"}`, `{"model":"m\\"}`, `{"model":"mm"}`, `{"model":""}`,
	} {
		f.Add([]byte(p))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		var want chatAnswer
		wantOK := json.Unmarshal(p, &want) == nil
		got, ok := decodeChunk(p)
		if ok != wantOK {
			t.Fatalf("%q: read %v, json.Unmarshal %v", p, ok, wantOK)
		}
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(chatContent{})); diff != "" {
			t.Errorf("%q (-json.Unmarshal +decodeChunk):\n%s", p, diff)
		}
		// Read again into the room of an earlier chunk's choices, as a stream's bridge reads
		// each: nothing of the earlier chunk shows.
		prev, _ := decodeChunk([]byte(`{"model":"m","choices":[{"index":0,"delta":{"content":"old","reasoning_content":"r","tool_calls":[{"index":0}]},` +
			`"finish_reason":"stop"},{"index":1,"delta":{"refusal":"no"}},{"index":2}]}`))
		again, ok := decodeChunkIn(p, &chunkRoom{choices: prev.Choices[:0], model: prev.Model})
		if ok != wantOK {
			t.Fatalf("%q in an earlier chunk's room: read %v, json.Unmarshal %v", p, ok, wantOK)
		}
		if diff := cmp.Diff(want, again, cmp.AllowUnexported(chatContent{})); diff != "" {
			t.Errorf("%q in an earlier chunk's room (-json.Unmarshal +decodeChunkIn):\n%s", p, diff)
		}
		// A last model with a backslash in it is not what the same bytes, an escape, read as.
		again, _ = decodeChunkIn(p, &chunkRoom{model: `\n`})
		if diff := cmp.Diff(want, again, cmp.AllowUnexported(chatContent{})); diff != "" {
			t.Errorf("%q after a model with a backslash (-json.Unmarshal +decodeChunkIn):\n%s", p, diff)
		}
	})
}

// FuzzDeltaEventMatchesMarshal holds the delta events appendDeltaEvent writes to json.Marshal's
// bytes, which the bridge sent before, for any text.
func FuzzDeltaEventMatchesMarshal(f *testing.F) {
	f.Add("response.output_text.delta", "msg_1", " token", 3, 0, uint8(7))
	f.Add("response.reasoning_text.delta", "rs_<&>", "a\u2028\xff\x00\b\f\n\r\t\"\\<>&", -1, 1<<40, uint8(3))
	f.Fuzz(func(t *testing.T, typ, item, delta string, seq, index int, flags uint8) {
		ev := streamEvent{Type: typ, SequenceNumber: seq, ItemID: item}
		if flags&1 != 0 {
			ev.OutputIndex = &index
		}
		if flags&2 != 0 {
			ev.ContentIndex = &seq
		}
		if flags&4 != 0 {
			ev.Delta = &delta
		}
		if flags&8 != 0 {
			ev.Logprobs = emptyList
		}
		want, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendDeltaEvent([]byte("x"), &ev)
		if !ok {
			t.Fatal("a delta event went to json.Marshal")
		}
		if string(got[1:]) != string(want) {
			t.Errorf("\n got %s\nwant %s", got[1:], want)
		}
	})
}

// TestResponsesStreamAllocations holds a token's chat chunk through the Responses bridge
// (BenchmarkResponsesStreamEvent's) to the allocations it makes today: the chunk walked rather
// than given to json.Unmarshal (decodeChunk), its delta event appended rather than given to
// json.Marshal (appendDeltaEvent) into a buffer kept for the next (send). It was 20 for text and
// 19 for reasoning. What is left: the choices, the content and its text, the delta and the two
// indexes the event points at. CI runs tests named *Alloc* without -race.
func TestResponsesStreamAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	for _, c := range []struct{ name, event string }{
		{"text", bridgeTextEvent},
		{"reasoning", bridgeThinkEvent},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, w := bridgeStream(t, c.event)
			event := []byte(c.event)
			write := func() {
				if _, err := b.Write(event); err != nil {
					t.Fatal(err)
				}
			}
			write()
			if got := testing.AllocsPerRun(1000, write); got > 7 {
				t.Errorf("%.1f allocations a chunk, want at most 7", got)
			}
			if b.ended || w.n == 0 {
				t.Fatalf("the stream ended (%v) or wrote nothing (%d bytes)", b.ended, w.n)
			}
		})
	}
}
