package upstream

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/jsonx"
)

// TestOutgoingAsksUsage: the body sent for a stream the gateway asks usage for is the client's
// bytes with "include_usage":true spliced into its stream_options (added, put in place of null,
// added to the client's other members, or in place of false), and the target's model spliced
// too, whichever comes first and whether or not the server noted the model's place. A body that
// asked already, or asked vLLM for continuous_usage_stats (which include_usage would turn on for
// every chunk the client sees), is not asked, unless a key's tpm is charged the stream's usage
// (charged); continuous_usage_stats false is asked as if absent.
func TestOutgoingAsksUsage(t *testing.T) {
	for _, tt := range []struct {
		body, model, want string
		ask, charged      bool
	}{
		{`{"model":"r","stream":true}`, "", `{"model":"r","stream":true,"stream_options":{"include_usage":true}}`, true, false},
		{`{"model":"r","stream":true}`, "m", `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`, true, false},
		{" {\n\"model\" : \"r\" ,\"stream\":true\n}\r\n", "m", " {\n\"model\" : \"m\" ,\"stream\":true,\"stream_options\":{\"include_usage\":true}\n}\r\n", true, false},
		{`{"stream_options":null,"model":"r"}`, "m", `{"stream_options":{"include_usage":true},"model":"m"}`, true, false},
		{`{"model":"r","stream_options":{"x":1} }`, "m", `{"model":"m","stream_options":{"x":1,"include_usage":true} }`, true, false},
		{`{"model":"r","stream_options":{ }}`, "", `{"model":"r","stream_options":{ "include_usage":true}}`, true, false},
		{`{"model":"r","stream_options":{"include_usage":false,"y":[1]}}`, "m", `{"model":"m","stream_options":{"include_usage":true,"y":[1]}}`, true, false},
		{`{"model":"r","stream_options":{"include_usage":true}}`, "m", ``, false, false},
		{`{"model":"r","stream_options":{"continuous_usage_stats":true}}`, "m", ``, false, false},
		{`{"model":"r","stream_options":{"continuous_usage_stats":true}}`, "m", `{"model":"m","stream_options":{"continuous_usage_stats":true,"include_usage":true}}`, true, true},
		{`{"model":"r","stream_options":{"include_usage":false,"continuous_usage_stats":true}}`, "", `{"model":"r","stream_options":{"include_usage":true,"continuous_usage_stats":true}}`, true, true},
		{`{"model":"r","stream_options":{"continuous_usage_stats":false}}`, "m", `{"model":"m","stream_options":{"continuous_usage_stats":false,"include_usage":true}}`, true, false},
		{`{"model":"r","stream_options":{"include_usage":true}}`, "m", ``, false, true},
	} {
		body := []byte(tt.body)
		sp, ask := usageSplice(body, false, tt.charged)
		if !bytes.Contains(body, []byte("stream_options")) {
			// What the decoder says of such a body (core.Request.NoStreamOptions) finds the
			// same place without the walk.
			if sp2, ask2 := usageSplice(body, true, tt.charged); sp2.at != sp.at || sp2.end != sp.end || !bytes.Equal(sp2.ins, sp.ins) || ask2 != ask {
				t.Errorf("%s: absent %+v %v, walked %+v %v", tt.body, sp2, ask2, sp, ask)
			}
		}
		if ask != tt.ask {
			t.Errorf("%s: ask %v, want %v", tt.body, ask, tt.ask)
			continue
		}
		if !ask {
			continue
		}
		a := &openaiOpenAI{t: &core.Target{Model: tt.model}, model: jsonx.Quote(tt.model)}
		at := bytes.Index(body, []byte(`"r"`))
		for _, modelAt := range [][2]int{{at, at + 3}, {}} {
			p := a.outgoing(&core.Request{Body: body, ModelAt: modelAt}, sp, true)
			got := p.owned()
			if string(got) != tt.want || !json.Valid(got) {
				t.Errorf("%s (ModelAt %v): %s, want %s", tt.body, modelAt, got, tt.want)
			}
		}
		if string(body) != tt.body {
			t.Errorf("the client's body changed: %s", body)
		}
	}
}

// TestOutgoingAsksUsageAllocatesNothing: asking for usage costs the request no copy of its body.
func TestOutgoingAsksUsageAllocatesNothing(t *testing.T) {
	body := []byte(`{"model":"r","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	at := bytes.Index(body, []byte(`"r"`))
	a := &openaiOpenAI{t: &core.Target{Model: "m"}, model: jsonx.Quote("m")}
	req := &core.Request{Body: body, ModelAt: [2]int{at, at + 3}}
	var n int
	if allocs := testing.AllocsPerRun(100, func() {
		sp, ask := usageSplice(body, true, false)
		p := a.outgoing(req, sp, ask)
		n = p.len()
	}); allocs != 0 {
		t.Errorf("%v allocations, want 0", allocs)
	}
	if want := len(body) + len(askOptions); n != want {
		t.Errorf("%d bytes, want %d", n, want)
	}
}
