package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// translatorsBeforeOpenAI is a gateway with a SAIF target, an Ollama target and an openai one:
// route "all" tries them in that order, "saif" and "oll" have one each. The openai target
// answers completions and embeddings in OpenAI's shape (an embedding per input); the others
// answer in theirs.
func translatorsBeforeOpenAI(t *testing.T) (g *gateway, saif, oll, oai *fake) {
	t.Helper()
	saif, oll, oai = newFake(t, "saif"), newFake(t, "oll"), newFake(t, "oai")
	saif.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"s1","specialist":"webapp","routed_by":"router","confidence":0.5,"text":"X","finish_reason":"stop","usage":{"prompt_tokens":1,"completion_tokens":1}}`)
	})
	oll.set(ollamaEmbedder{width: 2}.handler())
	oai.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/completions" {
			fmt.Fprint(w, `{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"hi","finish_reason":"stop"}]}`)
			return
		}
		// One embedding per input, as the gateway holds an answer to (a flat array of token ids
		// is one input).
		var req struct {
			Input json.RawMessage `json:"input"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		var many []json.RawMessage
		if json.Unmarshal(req.Input, &many) != nil || len(many) == 0 || many[0][0] != '[' && many[0][0] != '"' {
			many = []json.RawMessage{req.Input}
		}
		data := make([]string, len(many))
		for i := range many {
			data[i] = fmt.Sprintf(`{"object":"embedding","index":%d,"embedding":[0.5,0.25]}`, i)
		}
		fmt.Fprintf(w, `{"object":"list","data":[%s],"model":"m","usage":{"prompt_tokens":1,"total_tokens":1}}`, strings.Join(data, ","))
	})
	cfg := "[targets.saif]\nadapter = \"saif\"\nurl = \"" + saif.srv.URL + "\"\nclass = \"private\"\nmodel = \"saif\"\ntools = false\nvision = false\n\n" +
		"[targets.oll]\nadapter = \"ollama\"\nurl = \"" + oll.srv.URL + "\"\nclass = \"private\"\nmodel = \"nomic\"\n\n" +
		target("oai", oai.url(), "private", `model = "m"`) +
		"[routes.all]\ntargets = [\"saif\", \"oll\", \"oai\"]\n\n[routes.saif]\ntargets = [\"saif\"]\n\n[routes.oll]\ntargets = [\"oll\"]\n"
	return newGateway(t, cfg, nil), saif, oll, oai
}

// TestUntranslatableSkipsTranslators: what the saif adapter cannot send (echo, a suffix, a batch
// of prompts or token ids; a logit_bias, which it dropped without a word) and what the ollama adapter cannot (token ids to embed) skips the
// target, as n above 1 and logprobs do, so that the route's openai target serves it. The
// adapters refused it with a 400 of class request, which stopped the chain at the first target
// although the next one served the request; a route with nothing else still answers 400,
// naming the field, and the translating target is never asked.
func TestUntranslatableSkipsTranslators(t *testing.T) {
	g, saif, oll, oai := translatorsBeforeOpenAI(t)
	for _, tc := range []struct{ path, alone, members, field string }{
		{"/v1/completions", "saif", `"prompt":"x","echo":true`, "echo"},
		{"/v1/completions", "saif", `"prompt":"x","suffix":"}"`, "suffix"},
		{"/v1/completions", "saif", `"prompt":"x","logit_bias":{"50256":-100}`, "logit_bias"},
		{"/v1/completions", "saif", `"prompt":["x","y"]`, "prompt"},
		{"/v1/completions", "saif", `"prompt":[1,2,3]`, "prompt"},
		{"/v1/completions", "saif", `"prompt":[[1,2,3]]`, "prompt"},
		{"/v1/embeddings", "oll", `"input":[1,2,3]`, "input"},
		{"/v1/embeddings", "oll", `"input":[[1,2],[3]]`, "input"},
	} {
		t.Run(tc.path+" "+tc.members, func(t *testing.T) {
			before := oai.hits.Load()
			rep := g.post(t, tc.path, `{"model":"all",`+tc.members+`}`)
			if rep.status != 200 || rep.header.Get("x-hayula-chain") != "oai" || oai.hits.Load() != before+1 {
				t.Errorf("route all: %d chain %q: %s", rep.status, rep.header.Get("x-hayula-chain"), rep.body)
			}
			rep = g.post(t, tc.path, `{"model":"`+tc.alone+`",`+tc.members+`}`)
			msg, _ := rep.errorField(t, "message").(string)
			if rep.status != 400 || rep.errorField(t, "code") != "unsupported_request" || !strings.Contains(msg, tc.field) {
				t.Errorf("route %s: %d %s", tc.alone, rep.status, rep.body)
			}
		})
	}
	if n := saif.hits.Load() + oll.hits.Load(); n != 0 {
		t.Fatalf("the translating targets were asked %d times", n)
	}
	// A case variant decides nothing here and nothing upstream: refused, as for chat's fields.
	for _, folded := range []string{`"ECHO":true`, `"Suffix":"x"`, `"Logit_Bias":{"1":1}`, `"STOP":"x"`, `"Temperature":2`} {
		rep := g.post(t, "/v1/completions", `{"model":"all","prompt":"x",`+folded+`}`)
		if rep.status != 400 || rep.errorField(t, "code") != "unknown_parameter" {
			t.Errorf("%s: %d %s", folded, rep.status, rep.body)
		}
	}
	// What they can send still reaches them.
	for _, tc := range []struct {
		path, members string
		f             *fake
	}{
		{"/v1/completions", `"prompt":"x","echo":false,"suffix":"","logit_bias":{}`, saif},
		{"/v1/completions", `"prompt":["x"],"echo":null,"suffix":null`, saif},
		{"/v1/embeddings", `"input":"a"`, oll},
		{"/v1/embeddings", `"input":["a","b"]`, oll},
	} {
		before := tc.f.hits.Load()
		rep := g.post(t, tc.path, `{"model":"all",`+tc.members+`}`)
		if rep.status != 200 || tc.f.hits.Load() != before+1 {
			t.Errorf("%s %s: %d chain %q: %s", tc.path, tc.members, rep.status, rep.header.Get("x-hayula-chain"), rep.body)
		}
	}
}

// TestEmbeddingsInputShape: OpenAI's input is a string, or an array of strings, of token ids, or
// of token arrays; anything else is a 400 invalid_type naming input, before any target is asked
// (the ollama adapter read ["a", null] as two texts and sent the null on; an openai target got
// whatever came). Each accepted shape reaches the openai target.
func TestEmbeddingsInputShape(t *testing.T) {
	g, _, oll, oai := translatorsBeforeOpenAI(t)
	for _, in := range []string{`5`, `true`, `{"text":"a"}`, `["a",null]`, `["a",1]`, `[1,"a"]`, `[1,2.5]`,
		`[["a"]]`, `[[1],["a"]]`, `[[1],2]`, `[null]`, `[{"text":"a"}]`} {
		rep := g.post(t, "/v1/embeddings", `{"model":"all","input":`+in+`}`)
		if rep.status != 400 || rep.errorField(t, "param") != "input" || rep.errorField(t, "code") != "invalid_type" {
			t.Errorf("%s: %d %s", in, rep.status, rep.body)
		}
	}
	if n := oll.hits.Load() + oai.hits.Load(); n != 0 {
		t.Fatalf("targets were asked %d times", n)
	}
	for _, in := range []string{`"a"`, `["a","b"]`, `[1,2]`, `[[1,2],[3]]`, `[-1]`} {
		if rep := g.post(t, "/v1/embeddings", `{"model":"all","input":`+in+`}`); rep.status != 200 {
			t.Errorf("%s: %d %s", in, rep.status, rep.body)
		}
	}
}

// TestCompletionsNegativeMaxTokens: a negative max_tokens is refused, as chat refuses it and as
// OpenAI does (integer_below_min_value); the decoder read it as 0, which the saif adapter sends as no limit at all (and an
// openai target got the -1 to refuse or read as it would).
func TestCompletionsNegativeMaxTokens(t *testing.T) {
	g, saif, _, oai := translatorsBeforeOpenAI(t)
	for _, route := range []string{"saif", "all"} {
		rep := g.post(t, "/v1/completions", `{"model":"`+route+`","prompt":"x","max_tokens":-1}`)
		if rep.status != 400 || rep.errorField(t, "param") != "max_tokens" || rep.errorField(t, "code") != "integer_below_min_value" {
			t.Errorf("route %s: %d %s", route, rep.status, rep.body)
		}
	}
	if n := saif.hits.Load() + oai.hits.Load(); n != 0 {
		t.Fatalf("targets were asked %d times", n)
	}
	if rep := g.post(t, "/v1/completions", `{"model":"saif","prompt":"x","max_tokens":7}`); rep.status != 200 {
		t.Fatalf("%d %s", rep.status, rep.body)
	}
	if got := saif.lastBody(t)["max_tokens"]; got != 7.0 {
		t.Errorf("max_tokens sent %v", got)
	}
}

// TestEmbeddingsOllamaBrokenVector: an /api/embed answer whose embedding is no vector (null, an
// empty array, an array of anything but numbers, a number too large for a float32) is the
// target's failure (class endpoint since TestEmbeddingsOllamaUnusableEmbedding): the chain moves on. It reached the client as "embedding": null or
// [] (float), or as an empty base64 string, an embedding of no dimensions.
func TestEmbeddingsOllamaBrokenVector(t *testing.T) {
	g, _, oll, oai := translatorsBeforeOpenAI(t)
	for _, vec := range []string{`null`, `[]`, `["0.5"]`, `[[0.5]]`, `[0.5,null]`, `{"v":[0.5]}`, `"AAAAPw=="`, `[1e39]`} {
		for _, format := range []string{"float", "base64"} {
			if vec == `[1e39]` && format == "float" {
				continue // a number, passed on as written: only a float32 it must become can overflow
			}
			oll.set(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"model":"nomic","embeddings":[%s],"prompt_eval_count":1}`, vec)
			})
			before := oai.hits.Load()
			rep := g.post(t, "/v1/embeddings", `{"model":"all","input":"a","encoding_format":"`+format+`"}`)
			if rep.status != 200 || rep.header.Get("x-hayula-target") != "oai" || oai.hits.Load() != before+1 {
				t.Errorf("%s %s: %d chain %q: %s", vec, format, rep.status, rep.header.Get("x-hayula-chain"), rep.body)
			}
			if rep := g.post(t, "/v1/embeddings", `{"model":"oll","input":"a","encoding_format":"`+format+`"}`); rep.status != http.StatusBadGateway {
				t.Errorf("%s %s alone: %d %s", vec, format, rep.status, rep.body)
			}
		}
	}
}

// TestCompletionsFieldKinds: the completions fields the gateway or the saif adapter read (echo,
// suffix, logit_bias, stop, temperature) are held to their kinds before any target, as chat's
// are: the saif adapter answered a valid body with "the request body is not valid JSON" (param
// none), or served a stop of 5 or a logit_bias of [1] as if they were absent.
func TestCompletionsFieldKinds(t *testing.T) {
	g, saif, _, _ := translatorsBeforeOpenAI(t)
	for _, tc := range []struct{ field, value string }{
		{"echo", `"yes"`}, {"echo", `1`}, {"suffix", `5`}, {"suffix", `["a"]`}, {"logit_bias", `[1]`},
		{"stop", `5`}, {"stop", `{"a":1}`}, {"stop", `[5]`}, {"temperature", `"hot"`},
	} {
		rep := g.post(t, "/v1/completions", `{"model":"saif","prompt":"x","`+tc.field+`":`+tc.value+`}`)
		param, _ := rep.errorField(t, "param").(string)
		if rep.status != 400 || param != tc.field && param != tc.field+"[0]" || rep.errorField(t, "code") != "invalid_type" {
			t.Errorf("%s %s: %d %s", tc.field, tc.value, rep.status, rep.body)
		}
	}
	if n := saif.hits.Load(); n != 0 {
		t.Fatalf("saif was asked %d times", n)
	}
	for _, ok := range []string{`"echo":null`, `"suffix":null`, `"stop":"\n"`, `"stop":["a","b"]`, `"stop":null`, `"temperature":0.5`, `"logit_bias":null`} {
		if rep := g.post(t, "/v1/completions", `{"model":"saif","prompt":"x",`+ok+`}`); rep.status != 200 {
			t.Errorf("%s: %d %s", ok, rep.status, rep.body)
		}
	}
}

// TestEmbeddingsLargeBatch: an embeddings answer to a batch OpenAI's API takes is larger than
// the 32 MiB a chat answer may be: 1100 inputs of 1536 dimensions written as OpenAI writes them
// (-0.0230642551234567 and a comma, 20 bytes a value) is 34 MB, and 2048 inputs of a 3072-wide
// model near 130 MB. Such an answer failed the attempt as a server_error (which also counted
// toward the target's cooldown), through an openai target and through Ollama alike.
func TestEmbeddingsLargeBatch(t *testing.T) {
	t.Parallel()
	const inputs, width = 1100, 1536
	value := "-0.0230642551234567"
	vector := "[" + strings.TrimSuffix(strings.Repeat(value+",", width), ",") + "]"
	// Each answer is built in one allocation of its whole size, and without fmt: under -race,
	// growing a builder by doubling and formatting 34 MB through Fprintf took seconds.
	var oaiAnswer, ollAnswer strings.Builder
	oaiAnswer.Grow(inputs*(len(vector)+64) + 128)
	ollAnswer.Grow(inputs*(len(vector)+1) + 64)
	oaiAnswer.WriteString(`{"object":"list","data":[`)
	ollAnswer.WriteString(`{"model":"nomic","embeddings":[`)
	for i := range inputs {
		if i > 0 {
			oaiAnswer.WriteByte(',')
			ollAnswer.WriteByte(',')
		}
		oaiAnswer.WriteString(`{"object":"embedding","index":` + strconv.Itoa(i) + `,"embedding":`)
		oaiAnswer.WriteString(vector)
		oaiAnswer.WriteByte('}')
		ollAnswer.WriteString(vector)
	}
	oaiAnswer.WriteString(`],"model":"m","usage":{"prompt_tokens":1100,"total_tokens":1100}}`)
	ollAnswer.WriteString(`],"prompt_eval_count":1100}`)
	if oaiAnswer.Len() <= 32<<20 {
		t.Fatalf("the answer is only %d bytes", oaiAnswer.Len())
	}
	body := `{"model":"%s","input":[` + strings.TrimSuffix(strings.Repeat(`"a",`, inputs), ",") + `]}`
	// Each route on a gateway of its own, the two at once: each takes some 10 s under -race,
	// which one after another made this the package's longest test to wait for.
	for _, route := range []string{"oll", "all"} { // all: the openai target, once Ollama is left out
		t.Run(route, func(t *testing.T) {
			t.Parallel()
			g, _, oll, oai := translatorsBeforeOpenAI(t)
			oai.set(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, oaiAnswer.String())
			})
			oll.set(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, ollAnswer.String())
			})
			b := fmt.Sprintf(body, route)
			if route == "all" {
				b = strings.Replace(b, `"input":[`, `"input":[[1],`, 1)
				b = strings.Replace(b, `"a",`, ``, 1)
				b = strings.ReplaceAll(b, `"a"`, `[1]`)
			}
			rep := g.post(t, "/v1/embeddings", b)
			var res struct {
				Data []struct {
					Index     int       `json:"index"`
					Embedding []float64 `json:"embedding"`
				} `json:"data"`
			}
			if rep.status != 200 || json.Unmarshal(rep.body, &res) != nil || len(res.Data) != inputs {
				t.Fatalf("route %s: %d %.300s", route, rep.status, rep.body)
			}
			if d := res.Data[inputs-1]; d.Index != inputs-1 || len(d.Embedding) != width {
				t.Errorf("route %s: last item index %d width %d", route, d.Index, len(d.Embedding))
			}
		})
	}
}

// TestNotImplementedBenchesNothing: llama-server started without --embeddings answers
// /v1/embeddings 501 (not_supported_error, "This server does not support embeddings"), as
// servers answer an endpoint they do not serve. That is the endpoint's failure, as a 404 is
// (class endpoint): the chain moves on to a target that embeds, nothing is retried, and the
// target is not benched. As a server_error, three embeddings requests sent to a chat route by
// mistake benched its chat target for everyone, and each was retried.
func TestNotImplementedBenchesNothing(t *testing.T) {
	llama, emb := newFake(t, "llama"), newFake(t, "emb")
	llama.set(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/embeddings" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotImplemented)
			fmt.Fprint(w, `{"error":{"code":501,"message":"This server does not support embeddings. Start it with `+"`--embeddings`"+`","type":"not_supported_error"}}`)
			return
		}
		okHandler("llama")(w, r)
	})
	g := newGateway(t, target("llama", llama.url(), "private", `model = "q"`, "max_retries = 2")+
		target("emb", emb.url(), "private", `model = "e"`)+
		"[routes.chat]\ntargets = [\"llama\"]\n\n[routes.both]\ntargets = [\"llama\", \"emb\"]\n", nil)
	for range 4 {
		rep := g.post(t, "/v1/embeddings", `{"model":"chat","input":"a"}`)
		if rep.status != http.StatusNotImplemented && rep.status != 404 && rep.status != 400 {
			t.Errorf("chat route: %d %s", rep.status, rep.body)
		}
	}
	if n := llama.hits.Load(); n != 4 {
		t.Errorf("llama was asked %d times for 4 requests", n)
	}
	rep := g.post(t, "/v1/embeddings", `{"model":"both","input":"a"}`)
	if rep.status != 200 || rep.header.Get("x-hayula-chain") != "llama→emb (served by emb)" {
		t.Errorf("both: %d chain %q: %s", rep.status, rep.header.Get("x-hayula-chain"), rep.body)
	}
	rep = g.post(t, "/v1/chat/completions", `{"model":"both","messages":[{"role":"user","content":"hi"}]}`)
	if rep.status != 200 || rep.header.Get("x-hayula-chain") != "llama" {
		t.Errorf("chat after the 501s: %d chain %q: %s", rep.status, rep.header.Get("x-hayula-chain"), rep.body)
	}
}
