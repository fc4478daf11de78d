package upstream

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/hayula/gateway/core"
)

func TestEmbeddingWidth(t *testing.T) {
	b64 := func(floats int) string { return `"` + base64.StdEncoding.EncodeToString(make([]byte, 4*floats)) + `"` }
	tests := []struct {
		in   string
		want int // -1: no width
	}{
		{`[0.5, -1e-3, 2]`, 3},
		{` [ ] `, 0},
		{`[1e5, -2E-3, 0.5e+2, 0]`, 4},
		// Not a vector: elements that are no numbers (a per-token array of vectors, as a server
		// without pooling answers; strings; nulls) count nothing, however many there are.
		{`[[1],[2]]`, -1},
		{`["a","b"]`, -1},
		{`[1,null]`, -1},
		{`[true]`, -1},
		{b64(1), 1},
		{b64(2), 2},
		{b64(3), 3},
		{b64(1536), 1536},
		{strings.TrimRight(b64(2), `="`) + `"`, 2}, // unpadded
		{`"AACAPwAAAMA="`, 2},
		{`"AAC\/PwAAAMA="`, 2}, // an escaped slash
		{`""`, 0},
		{`"AAAA"`, -1}, // 3 bytes: not float32s
		// Not base64: a length no encoding has (17 characters), a character outside the
		// alphabet, padding before the end or too much of it.
		{`"AAAAAAAAAAAAAAAAA"`, -1},
		{`"AAAA!AAAAAAAAAAA"`, -1},
		{`"AAA-AAA_AAAAAAAA"`, -1},
		{`"AA==AAAAAAAAAAAA"`, -1},
		{`"AAAAAAAAAAAAAAAA===="`, -1},
		{`"AAAAAAAAAAAAAAAAAAAAA"`, -1}, // 21 characters, a length no encoding has, padded or not
		{`"AAAAAAAAAAAAAAAAAAAAA="`, -1},
		{`null`, -1},
		{`4`, -1},
		{`{"a":1}`, -1},
		{`[1, 2`, -1},
		{`"\u00"`, -1},
	}
	for _, tt := range tests {
		got, err := embeddingWidth([]byte(tt.in))
		if tt.want < 0 {
			if !errors.Is(err, errNoWidth) {
				t.Errorf("embeddingWidth(%s) = %d, %v; want errNoWidth", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("embeddingWidth(%s) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestCheckWidths(t *testing.T) {
	tg := &core.Target{Name: "e"}
	tests := []struct {
		name, body string
		want       string // "ok", "unmet" or "protocol"
	}{
		{"all of the width", `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[1,2]},{"index":1,"embedding":"AACAPwAAAMA="}],"model":"m"}`, "ok"},
		{"one narrower", `{"data":[{"embedding":[1,2]},{"embedding":[1]}]}`, "unmet"},
		{"wider", `{"data":[{"embedding":[1,2,3]}]}`, "unmet"},
		{"the last data counts", `{"data":[{"embedding":[1]}],"data":[{"embedding":[1,2]}]}`, "ok"},
		{"the last embedding counts", `{"data":[{"embedding":[1],"embedding":[1,2]}]}`, "ok"},
		{"data nested elsewhere is not it", `{"x":{"data":[{"embedding":[1]}]},"data":[{"embedding":[3,4]}]}`, "ok"},
		{"no embedding", `{"data":[{"index":0}]}`, "unmet"},
		{"an embedding of no width", `{"data":[{"embedding":null}]}`, "unmet"},
		{"a vector per token is no embedding", `{"data":[{"embedding":[[1,2],[3,4]]}]}`, "unmet"},
		{"a string of the width that is no base64", `{"data":[{"embedding":"AAAA!AAAAAA="}]}`, "unmet"},
		{"data cut short", `{"data":[{"embedding":[1,2]},`, "protocol"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkEmbeddings(tg, []byte(tt.body), 0, 2, true)
			_, unmet := errors.AsType[*core.UnmetError](err)
			_, protocol := errors.AsType[*core.ProtocolError](err)
			got := map[bool]string{true: "ok"}[err == nil]
			if unmet {
				got = "unmet"
			} else if protocol {
				got = "protocol"
			}
			if got != tt.want {
				t.Errorf("checkEmbeddings = %v (%s), want %s", err, got, tt.want)
			}
		})
	}
	err := checkEmbeddings(tg, []byte(`{"data":[{"embedding":[1,2,3,4,5,6,7,8]}]}`), 0, 2, false)
	if ue, ok := errors.AsType[*core.UnmetError](err); !ok || ue.Err.Status != 400 || ue.Err.Param != "dimensions" ||
		ue.Err.Code != "unsupported_value" || !strings.Contains(ue.Err.Message, "8 dimensions") {
		t.Errorf("the refusal: %#v", err)
	}
}

// TestCheckEmbeddingsCount: data must hold one embedding per input, counted as its top-level
// elements (the last data, as a decoder keeps it), with or without dimensions; a mismatch is the
// target's failure (UnmetError, a 502 for the client), and 0 inputs (not known) checks nothing.
func TestCheckEmbeddingsCount(t *testing.T) {
	tg := &core.Target{Name: "e"}
	const two = `{"object":"list","data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":"AACAPwAAAMA="}],"model":"m"}`
	tests := []struct {
		name, body   string
		inputs, dims int
		want         string // "ok", "unmet" or "protocol"
	}{
		{"as many", two, 2, 0, "ok"},
		{"as many, of the width", two, 2, 2, "ok"},
		{"fewer", two, 3, 0, "unmet"},
		{"fewer, of the width", two, 3, 2, "unmet"},
		{"more", two, 1, 0, "unmet"},
		{"not known", two, 0, 0, "ok"},
		{"the last data counts", `{"data":[{"embedding":[1]}],"data":[{"embedding":[1]},{"embedding":[2]}]}`, 2, 0, "ok"},
		{"nested arrays are one element", `{"data":[{"x":[[1,2],[3,4]],"embedding":[1]}]}`, 1, 0, "ok"},
		{"a vector per token is no embedding", `{"data":[{"embedding":[[1,2],[3,4]]}]}`, 1, 0, "unmet"},
		{"null is no embedding", `{"data":[{"embedding":null},{"embedding":null}]}`, 2, 0, "unmet"},
		{"an item without one", `{"data":[{"embedding":[1]},{"index":1}]}`, 2, 0, "unmet"},
		{"data cut short", `{"data":[{"embedding":[1,2]},`, 2, 0, "protocol"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkEmbeddings(tg, []byte(tt.body), tt.inputs, tt.dims, true)
			_, unmet := errors.AsType[*core.UnmetError](err)
			_, protocol := errors.AsType[*core.ProtocolError](err)
			got := map[bool]string{true: "ok"}[err == nil]
			if unmet {
				got = "unmet"
			} else if protocol {
				got = "protocol"
			}
			if got != tt.want {
				t.Errorf("checkEmbeddings = %v (%s), want %s", err, got, tt.want)
			}
		})
	}
	err := checkEmbeddings(tg, []byte(two), 3, 0, true)
	if ue, ok := errors.AsType[*core.UnmetError](err); !ok || ue.Err.Status != 502 || ue.Err.Code != "bad_upstream_response" ||
		!strings.Contains(ue.Err.Message, "2 embeddings for 3 inputs") {
		t.Errorf("the failure: %#v", err)
	}
}

// embeddingsAnswer is an OpenAI embeddings answer of n vectors of width floats each.
func embeddingsAnswer(n, width int) []byte {
	var b strings.Builder
	b.WriteString(`{"object":"list","data":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"object":"embedding","index":0,"embedding":[`)
		for j := range width {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString("-0.0123456789")
		}
		b.WriteString(`]}`)
	}
	b.WriteString(`],"model":"text-embedding-3-small","usage":{"prompt_tokens":8,"total_tokens":8}}`)
	return []byte(b.String())
}

// The walk that holds an answer to its inputs and dimensions allocates nothing.
func TestCheckWidthsAllocatesNothing(t *testing.T) {
	tg, body := &core.Target{Name: "e"}, embeddingsAnswer(4, 256)
	for _, dims := range []int{0, 256} {
		if n := testing.AllocsPerRun(100, func() {
			if checkEmbeddings(tg, body, 4, dims, false) != nil {
				t.Fatal("refused")
			}
		}); n != 0 {
			t.Errorf("checkEmbeddings with dimensions %d allocates %v times", dims, n)
		}
	}
}

// BenchmarkCheckWidths is what a request with dimensions pays for the check: one walk over an
// answer of 8 vectors of 1536 floats (about 200 KB). A request without dimensions pays a walk
// that skips each element whole, to count them.
func BenchmarkCheckWidths(b *testing.B) {
	tg, body := &core.Target{Name: "e"}, embeddingsAnswer(8, 1536)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if checkEmbeddings(tg, body, 8, 1536, false) != nil {
			b.Fatal("refused")
		}
	}
}
