package upstream

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hayula/gateway/core"
)

// Two choices streamed side by side (n = 2), each cut at every byte, their chunks interleaved:
// each choice keeps its own split, finishing chunks carry their own choice's held bytes, and the
// usage chunk goes untouched, last.
func TestReviewThinkStreamChoicesApart(t *testing.T) {
	contents := [2]string{"<think>\nα plan </think>\n\nβ answer", " \n<think>γ</th"}
	chunk := func(idx int, s string, finish string) string {
		b, _ := json.Marshal(s)
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return `{"id":"c","object":"chat.completion.chunk","choices":[{"index":` + string(rune('0'+idx)) +
			`,"delta":{"content":` + string(b) + `},"finish_reason":` + f + `}]}`
	}
	const usage = `{"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"total_tokens":7}}`
	for i := 0; i <= len(contents[0]); i++ {
		for j := 0; j <= len(contents[1]); j++ {
			// A JSON string holds whole characters: cut between them only.
			if i < len(contents[0]) && !utf8.RuneStart(contents[0][i]) || j < len(contents[1]) && !utf8.RuneStart(contents[1][j]) {
				continue
			}
			evs := []string{
				chunk(1, contents[1][:j], ""),
				chunk(0, contents[0][:i], ""),
				chunk(1, contents[1][j:], ""),
				chunk(0, contents[0][i:], ""),
				chunk(0, "", "stop"),
				chunk(1, "", "length"),
				usage,
			}
			ts := newThinkStream(&listStream{evs: evs}, core.ReasoningThinkTags)
			var got [2]thinkResult
			var finishes []string
			var last string
			for {
				ev, err := ts.Next()
				if err != nil {
					if !errors.Is(err, io.EOF) {
						t.Fatal(err)
					}
					break
				}
				last = string(ev)
				var c struct {
					Choices []struct {
						Index int
						Delta struct {
							Content   string `json:"content"`
							Reasoning string `json:"reasoning_content"`
						} `json:"delta"`
						FinishReason *string `json:"finish_reason"`
					} `json:"choices"`
				}
				if err := json.Unmarshal(ev, &c); err != nil {
					t.Fatal(err)
				}
				for _, ch := range c.Choices {
					got[ch.Index].Content += ch.Delta.Content
					got[ch.Index].Reasoning += ch.Delta.Reasoning
					if ch.FinishReason != nil {
						finishes = append(finishes, *ch.FinishReason)
					}
				}
			}
			want := [2]thinkResult{thinkSpec(contents[0]), thinkSpec(contents[1])}
			if got != want || len(finishes) != 2 || finishes[0] != "stop" || finishes[1] != "length" || last != usage {
				t.Fatalf("cuts %d, %d: %+v, finishes %v, last %s; want %+v", i, j, got, finishes, last, want)
			}
		}
	}
}

// errStream replays payloads, then fails as a broken upstream does.
type errStream struct {
	listStream
	err error
}

func (e *errStream) Next() ([]byte, error) {
	if len(e.evs) == 0 {
		return nil, e.err
	}
	return e.listStream.Next()
}

// A stream that breaks off after it began gives the client the bytes its splitter held (the
// whitespace and tag prefix that ended the last chunk) before the error, as passthrough would
// have: they were read from the upstream, and the error ends the stream without a finishing
// chunk to carry them. Before anything was relayed, nothing is added: the error alone lets the
// chain move on.
func TestReviewThinkStreamHeldBytesBeforeError(t *testing.T) {
	broken := errors.New("upstream broke off")
	chunk := func(s string) string {
		b, _ := json.Marshal(s)
		return `{"id":"c1","choices":[{"index":0,"delta":{"content":` + string(b) + `},"finish_reason":null}]}`
	}
	for _, tt := range []struct {
		name   string
		evs    []string
		want   thinkResult
		events int
	}{
		{"inside the block", []string{chunk("<think>so the answer is \n</th")}, thinkResult{"", "so the answer is \n</th"}, 2},
		{"a tag in the making after the role", []string{`{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
			chunk(" \n<thi")}, thinkResult{" \n<thi", ""}, 2},
		{"nothing relayed yet", []string{chunk("<thi")}, thinkResult{}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := newThinkStream(&errStream{listStream: listStream{evs: tt.evs}, err: broken}, core.ReasoningThinkTags)
			var got thinkResult
			events := 0
			for {
				ev, err := ts.Next()
				if err != nil {
					if !errors.Is(err, broken) {
						t.Fatalf("end %v, want the upstream's error", err)
					}
					break
				}
				events++
				var c struct {
					Choices []struct {
						Delta struct {
							Content   string `json:"content"`
							Reasoning string `json:"reasoning_content"`
						} `json:"delta"`
					} `json:"choices"`
				}
				if err := json.Unmarshal(ev, &c); err != nil {
					t.Fatal(err)
				}
				for _, ch := range c.Choices {
					got.Content += ch.Delta.Content
					got.Reasoning += ch.Delta.Reasoning
				}
			}
			if got != tt.want || events != tt.events {
				t.Errorf("got %+v in %d events, want %+v in %d", got, events, tt.want, tt.events)
			}
		})
	}
}

// The same for the translated streams: an Ollama or SAIF stream with think-tags that breaks off
// once begun relays what its splitter held, in a chunk of its own before the error.
func TestReviewTranslatedThinkHeldBytesBeforeError(t *testing.T) {
	now := func() time.Time { return time.Unix(1, 0) }
	id := func() string { return "id" }
	for _, tt := range []struct {
		name string
		open func(io.ReadCloser) Stream
		body string
	}{
		{"ollama", func(b io.ReadCloser) Stream {
			a := &openaiOllama{t: &core.Target{Name: "o", Model: "m", Reasoning: core.ReasoningThinkTags}, now: now, newID: id}
			return a.newStream(b, false, a.t.Reasoning)
		}, `{"model":"m","message":{"role":"assistant","content":"<think>a \n</th"},"done":false}` + "\n"},
		{"saif", func(b io.ReadCloser) Stream {
			return &saifStream{target: "s", body: b, sse: newSSEReader(b), out: newChunker("id", 1, "m", core.ReasoningThinkTags),
				header: http.Header{}}
		}, `data: {"text":"<think>a \n</th"}` + "\n\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.open(io.NopCloser(strings.NewReader(tt.body)))
			defer s.Close()
			var reasoning string
			for {
				ev, err := s.Next()
				if err != nil {
					var se *core.StreamError
					if !errors.As(err, &se) {
						t.Fatalf("end %v, want a stream error", err)
					}
					break
				}
				var c struct {
					Choices []struct {
						Delta struct {
							Reasoning string `json:"reasoning_content"`
						} `json:"delta"`
					} `json:"choices"`
				}
				if err := json.Unmarshal(ev, &c); err != nil {
					t.Fatal(err)
				}
				for _, ch := range c.Choices {
					reasoning += ch.Delta.Reasoning
				}
			}
			if want := "a \n</th"; reasoning != want {
				t.Errorf("reasoning %q, want %q", reasoning, want)
			}
		})
	}
}

// FuzzThinkStream checks the stream rewrite as FuzzThinkSplit checks the splitter: the content
// cut into chunks anywhere between characters, then a finishing chunk, gives content and
// reasoning deltas that join into thinkSpec's split, and the finishing chunk keeps its
// finish_reason.
func FuzzThinkStream(f *testing.F) {
	for _, tt := range thinkCases {
		f.Add(tt.in, uint8(len(tt.in)/2), uint8(len(tt.in)/3))
	}
	f.Fuzz(func(t *testing.T, in string, a, b uint8) {
		if !utf8.ValidString(in) {
			return // a JSON string holds characters
		}
		cuts := []int{int(a) % (len(in) + 1), int(b) % (len(in) + 1)}
		slices.Sort(cuts)
		for cuts[0] < len(in) && !utf8.RuneStart(in[cuts[0]]) {
			cuts[0]++
		}
		for cuts[1] < len(in) && !utf8.RuneStart(in[cuts[1]]) {
			cuts[1]++
		}
		chunk := func(s string) string {
			b, _ := json.Marshal(s)
			return `{"id":"c","choices":[{"index":0,"delta":{"content":` + string(b) + `},"finish_reason":null}]}`
		}
		evs := []string{chunk(in[:cuts[0]]), chunk(in[cuts[0]:max(cuts[0], cuts[1])]), chunk(in[max(cuts[0], cuts[1]):]),
			`{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`}
		ts := newThinkStream(&listStream{evs: evs}, core.ReasoningThinkTags)
		var got thinkResult
		finish := ""
		for {
			ev, err := ts.Next()
			if err != nil {
				break
			}
			var c struct {
				Choices []struct {
					Delta struct {
						Content   string `json:"content"`
						Reasoning string `json:"reasoning_content"`
					} `json:"delta"`
					FinishReason *string `json:"finish_reason"`
				} `json:"choices"`
			}
			if err := json.Unmarshal(ev, &c); err != nil {
				t.Fatalf("not JSON: %s", ev)
			}
			for _, ch := range c.Choices {
				got.Content += ch.Delta.Content
				got.Reasoning += ch.Delta.Reasoning
				if ch.FinishReason != nil {
					finish += *ch.FinishReason
				}
			}
		}
		if want := thinkSpec(in); got != want || finish != "stop" {
			t.Fatalf("%q cut at %v: %+v, finish %q; want %+v", in, cuts, got, finish, want)
		}
	})
}
