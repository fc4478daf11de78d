package upstream

import (
	"bytes"
	"math"
	"testing"
)

// FuzzSAIFRequestMatchesEncoding holds appendSAIFRequest to mustJSON's bytes for the same
// request, which the adapter sent before: every member, omission and escape, and the
// temperature as encoding/json writes a float.
func FuzzSAIFRequestMatchesEncoding(f *testing.F) {
	f.Add("<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n", "webapp", "\n\n", 256, 0.2, uint8(0xff))
	f.Add("a\u2028b\"\\\x00\x1f\xff <&> \u200b", "m<&>\xfe", "", -3, 1e-7, uint8(0x55))
	f.Add("", "", "END", 0, 1e21, uint8(0xaa))
	f.Add("ممكن تساعدني؟ 😀", "exploit", "\u2029", math.MaxInt, -0.0, uint8(0x0f))
	f.Fuzz(func(t *testing.T, prompt, specialist, stop string, maxTokens int, temp float64, flags uint8) {
		if math.IsNaN(temp) || math.IsInf(temp, 0) {
			return // not JSON: no client sends them
		}
		on := func(bit uint) bool { return flags&(1<<bit) != 0 }
		r := &saifRequest{Prompt: prompt, MaxTokens: maxTokens, Stream: on(0)}
		if on(1) {
			r.Specialist = &specialist
		}
		if on(2) {
			r.Temperature = &temp
		}
		switch {
		case on(3):
			r.Stop = []string{stop, prompt}
		case on(4):
			r.Stop = []string{}
		case on(5):
			r.Stop = []string{stop}
		}
		got := appendSAIFRequest([]byte("x"), r)[1:]
		if want := mustJSON(r); !bytes.Equal(got, want) {
			t.Errorf("\n got %s\nwant %s", got, want)
		}
	})
}
