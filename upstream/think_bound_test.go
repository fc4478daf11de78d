package upstream

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hayula/gateway/core"
)

// TestThinkStreamWhitespaceBounded: a stream that had been whitespace alone (a model looping on
// "\n") was held whole until something else came or the stream ended: 4 MiB of it sat in the
// splitter and went out in one chunk at the end. Now no more than maxHeldSpace is held, and past
// it the run goes where the end of the stream would have sent it: at think-tags' start the
// answer's, in chunks as the stream goes on; at think-open's start nowhere (whitespace just
// inside the block is dropped whatever follows it); inside the block the reasoning's, in chunks.
// What follows the run is read as before.
func TestThinkStreamWhitespaceBounded(t *testing.T) {
	const total = 4 << 20
	unit := strings.Repeat(" \n\t ", 256) // 1 KiB a chunk
	for _, c := range []struct {
		name           string
		mode           core.Reasoning
		open, last     string
		early          string // where the whitespace goes before the stream ends: content, reasoning, or nowhere
		answer, reason string // the rest of the answer and reasoning, the whitespace trimmed off
	}{
		{"think-tags start", core.ReasoningThinkTags, "", "<think>r</think>a", "content", "a", "r"},
		{"think-open start", core.ReasoningThinkOpen, "", "r</think>a", "", "a", "r"},
		{"inside the block", core.ReasoningThinkTags, "<think>r", "s</think>a", "reasoning", "a", "r s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			chunk := func(s string) []byte { return []byte(fmt.Sprintf(r1Chunk, s)) }
			var evs [][]byte
			if c.open != "" {
				evs = append(evs, chunk(c.open))
			}
			ws := chunk(unit)
			for range total / len(unit) {
				evs = append(evs, ws)
			}
			evs = append(evs, chunk(c.last), []byte(r1Finish))
			up := &eventsStream{events: evs}
			var ts *thinkStream
			held := 0 // the most the splitter held, looked at as each event is read
			ts = newThinkStream(&onNext{Stream: up, f: func() {
				if sp := ts.split[0]; sp != nil {
					held = max(held, len(sp.ws))
				}
			}}, c.mode)
			var content, reasoning strings.Builder
			early := map[string]int{}
			for {
				ev, err := ts.Next()
				if err != nil {
					break
				}
				var ch struct {
					Choices []struct {
						Delta struct {
							Content          string `json:"content"`
							ReasoningContent string `json:"reasoning_content"`
						} `json:"delta"`
					} `json:"choices"`
				}
				if err := json.Unmarshal(ev, &ch); err != nil || len(ch.Choices) != 1 {
					t.Fatalf("chunk %.80q: %v", ev, err)
				}
				d := ch.Choices[0].Delta
				content.WriteString(d.Content)
				reasoning.WriteString(d.ReasoningContent)
				if len(up.events) > 2 { // the last two events not read yet
					early["content"] += len(d.Content)
					early["reasoning"] += len(d.ReasoningContent)
				}
			}
			if held > maxHeldSpace {
				t.Errorf("the splitter held %d bytes of whitespace, want at most %d", held, maxHeldSpace)
			}
			for _, side := range []string{"content", "reasoning"} {
				want := 0
				if side == c.early {
					want = total - maxHeldSpace - len(unit) // all but what may still be held
				}
				if got := early[side]; got < want || want == 0 && got > len("r") {
					t.Errorf("%d bytes of %s before the stream ended, want %s", got, side,
						map[bool]string{true: fmt.Sprintf("at least %d", want), false: "none"}[want > 0])
				}
			}
			squeeze := func(s string) string { return strings.Join(strings.Fields(s), " ") }
			if got, got2 := squeeze(content.String()), squeeze(reasoning.String()); got != c.answer || got2 != c.reason {
				t.Errorf("answer %q, reasoning %q (whitespace squeezed); want %q, %q", got, got2, c.answer, c.reason)
			}
		})
	}
}

// onNext calls f before each Next of the stream it wraps.
type onNext struct {
	Stream
	f func()
}

func (o *onNext) Next() ([]byte, error) {
	o.f()
	return o.Stream.Next()
}
