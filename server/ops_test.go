package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func TestCompletionsAndEmbeddingsPassThrough(t *testing.T) {
	up := newFake(t, "vllm")
	up.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/completions":
			if strings.Contains(fmt.Sprint(r.Header), "event-stream") {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"hi\",\"finish_reason\":null}]}\n\n")
				fmt.Fprint(w, "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
				return
			}
			fmt.Fprint(w, `{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"hi","finish_reason":"stop"}]}`)
		case "/v1/embeddings":
			fmt.Fprint(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,0.25]}],"model":"m","usage":{"prompt_tokens":1,"total_tokens":1}}`)
		default:
			errHandler(404, "unknown_url", "no "+r.URL.Path)(w, r)
		}
	})
	g := newGateway(t, target("vllm", up.url(), "private", `model = "m"`)+"[routes.local]\ntargets = [\"vllm\"]\n", nil)

	rep := g.post(t, "/v1/completions", `{"model":"local","prompt":"say hi","x-route-hint":"x"}`)
	if rep.status != 200 || rep.json(t)["object"] != "text_completion" || rep.header.Get("x-hayula-chain") != "vllm" {
		t.Fatalf("completions: %d %s", rep.status, rep.body)
	}
	if b := up.lastBody(t); b["model"] != "m" || b["prompt"] != "say hi" || b["x-route-hint"] != nil {
		t.Errorf("forwarded %v", b)
	}

	rep = g.post(t, "/v1/completions", `{"model":"local","prompt":"say hi","stream":true}`)
	if rep.status != 200 || !strings.HasSuffix(string(rep.body), "data: [DONE]\n\n") || !strings.Contains(string(rep.body), `"text":"hi"`) {
		t.Fatalf("streamed completions: %d %q", rep.status, rep.body)
	}

	rep = g.post(t, "/v1/embeddings", `{"model":"local","input":["a"]}`)
	if rep.status != 200 || rep.json(t)["object"] != "list" {
		t.Fatalf("embeddings: %d %s", rep.status, rep.body)
	}

	for _, tc := range []struct{ path, body, param string }{
		{"/v1/completions", `{"model":"local"}`, "prompt"},
		{"/v1/embeddings", `{"model":"local"}`, "input"},
		{"/v1/embeddings", `{"model":"local","input":"a","stream":true}`, "stream"},
		{"/v1/embeddings", `{"input":"a"}`, "model"},
	} {
		rep := g.post(t, tc.path, tc.body)
		if rep.status != 400 || rep.errorField(t, "param") != tc.param {
			t.Errorf("%s %s: %d %s", tc.path, tc.body, rep.status, rep.body)
		}
	}
}
