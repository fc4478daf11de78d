package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/hayula/gateway/core"
)

// FuzzRawMapMatchesEncoding holds what the think-tags oracle (thinkoracle_test.go) writes
// without an encoder (jsonRawMap, jsonRawMaps, jsonString), and choiceIndex, to what mustJSON and
// json.Unmarshal gave it before, for any object an upstream's chunk may hold: keys in order,
// values compacted, strings escaped alike.
func FuzzRawMapMatchesEncoding(f *testing.F) {
	f.Add([]byte(fmt.Sprintf(r1Chunk, "<think> a\u2028\xff")), "x\x00<&>\u2029")
	f.Add([]byte(`{ "b" : [ 1 , "x \" y" , { "c" : null } ] , "a":"\u00e9\n", "a":1, "":{} }`), "")
	f.Add([]byte(`{"index":1e2,"index2":-0,"index3":99999999999999999999,"k":"\ud800"}`), "\\")
	f.Fuzz(func(t *testing.T, obj []byte, s string) {
		if got, want := jsonString(s), mustJSON(s); !bytes.Equal(got, want) {
			t.Errorf("jsonString(%q) = %s, mustJSON's %s", s, got, want)
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(obj, &m) != nil || m == nil {
			return
		}
		if got, want := jsonRawMap(m), mustJSON(m); !bytes.Equal(got, want) {
			t.Errorf("jsonRawMap of %q:\n got %s\nwant %s", obj, got, want)
		}
		ms := []map[string]json.RawMessage{m, {}, m}
		if got, want := jsonRawMaps(ms), mustJSON(ms); !bytes.Equal(got, want) {
			t.Errorf("jsonRawMaps of %q:\n got %s\nwant %s", obj, got, want)
		}
		for k, v := range m {
			var want int
			_ = json.Unmarshal(v, &want)
			if got := choiceIndex(v); got != want {
				t.Errorf("choiceIndex(%s) (member %q) = %d, json.Unmarshal's %d", v, k, got, want)
			}
		}
	})
}

// TestThinkStreamAllocations holds a DeepSeek R1 token's chunk through think-tags
// (BenchmarkThinkStream's) to the allocations it makes today: rewritten inside the think block,
// passed as it came after it. They were 99 and 64, then 68 and 60 once the rewritten chunk's
// strings and maps were written without an encoder; now the chunk is walked with internal/jsonx
// rather than given to json.Unmarshal, and the rewritten one appended to a buffer the stream
// reuses (thinkchunk.go), as are its scratch lists and the queue of chunks ready to go: none.
// CI runs tests named *Alloc* without -race.
func TestThinkStreamAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	for _, c := range []struct {
		name, open string
		most       float64
	}{
		{"reasoning", "<think>a", 0},
		{"answer", "<think>a</think>", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			chunk := func(s string) []byte { return []byte(fmt.Sprintf(r1Chunk, s)) }
			ts := newThinkStream(&loopStream{event: chunk(c.open), n: 1}, core.ReasoningThinkTags)
			if _, err := ts.Next(); err != nil {
				t.Fatal(err)
			}
			ts.Stream = &loopStream{event: chunk(" token"), n: 1 << 30}
			checkEventAllocs(t, ts, c.most)
		})
	}
}

// TestThinkStreamNullDeltaFinish: a finishing chunk whose delta is null, after a chunk whose
// whitespace the splitter held, gets that whitespace as its content; json.Unmarshal of null had
// left the delta a nil map, and writing the content into it panicked.
func TestThinkStreamNullDeltaFinish(t *testing.T) {
	ts := newThinkStream(&loopStream{end: [][]byte{
		[]byte(`{"id":"c","choices":[{"index":0,"delta":{"content":" "}}]}`),
		[]byte(`{"id":"c","choices":[{"index":0,"delta":null,"finish_reason":"stop"}]}`),
	}}, core.ReasoningThinkTags)
	evs, end := drain(ts)
	want := []string{`{"choices":[{"delta":{"content":" "},"finish_reason":"stop","index":0}],"id":"c"}`}
	if !slices.Equal(evs, want) || end != "EOF" {
		t.Errorf("got %q, %s; want %q, EOF", evs, end, want)
	}
}
