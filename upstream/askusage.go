package upstream

import (
	"bytes"
	"errors"
	"net/http"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/jsonx"
)

// An OpenAI-compatible server (OpenAI, vLLM, SGLang, LM Studio) sends a stream's usage only when
// asked, in a chunk of its own with no choices after the finishing one; a stream whose client did
// not ask would be counted its prompt's lower bound by a key's tpm and nothing by the metrics. So
// the openai adapter asks for it itself (as LiteLLM does) when the gateway counts the stream
// (core.Request.CountsUsage) and the target allows it (core.Target.StreamUsage), splicing
// "include_usage":true into the client's bytes, and says so (Response.UsageAsked): the server then
// counts the usage-only chunk and does not relay it, so the client gets what it asked for.

// splice is body[:at], ins, body[end:]: ins in place of body[at:end].
type splice struct {
	at, end int
	ins     []byte
}

var (
	askOptions = []byte(`,"stream_options":{"include_usage":true}`) // a new last member
	askObject  = []byte(`{"include_usage":true}`)                   // in place of stream_options' null
	askMember  = []byte(`,"include_usage":true`)                    // a new last member of stream_options
	askTrue    = []byte(`true`)                                     // in place of include_usage's false or null
)

// asksUsage reports whether the adapter asks t for the usage of req's answer that its client did
// not ask for: a chat or completions stream (both take stream_options) whose usage the gateway
// counts.
func asksUsage(t *core.Target, req *core.Request) bool {
	return req.Stream && !req.IncludeUsage && req.CountsUsage && t.StreamUsage &&
		(req.Op == core.OpChat || req.Op == core.OpCompletions)
}

// usageSplice is the splice that makes body's stream_options.include_usage true while keeping
// the client's other stream_options members; false when body is not an object whose
// stream_options is absent, null or an object (the server refused anything else), and when the
// client's stream_options has continuous_usage_stats true: with include_usage vLLM then puts usage
// on every chunk, which the client would see. charged (core.Request.ChargesUsage) asks all the
// same: a key's tpm must not be escaped by a member its client adds (TestKeyTPMNotEscapedByContinuousUsageStats),
// and a client that sent continuous_usage_stats wanted vLLM's usage. absent says the decoder saw
// no stream_options member (core.Request.NoStreamOptions), the usual case: the new member then
// goes before the closing brace without a walk over the members.
func usageSplice(body []byte, absent, charged bool) (splice, bool) {
	var p jsonx.Place
	ok := false
	if absent {
		p, ok = jsonx.LocateEnd(body)
	}
	if !ok {
		p, ok = jsonx.Locate(body, "stream_options")
	}
	switch {
	case !ok:
		return splice{}, false
	case !p.Found && p.Empty:
		return splice{p.Start, p.End, askOptions[1:]}, true
	case !p.Found:
		return splice{p.Start, p.End, askOptions}, true
	}
	v := body[p.Start:p.End]
	if string(v) == "null" {
		return splice{p.Start, p.End, askObject}, true
	}
	q, ok := jsonx.Locate(v, "include_usage")
	if !ok {
		return splice{}, false
	}
	if c, _ := jsonx.Locate(v, "continuous_usage_stats"); c.Found && !charged && string(v[c.Start:c.End]) != "false" &&
		string(v[c.Start:c.End]) != "null" {
		return splice{}, false
	}
	ins := askTrue
	if q.Found && string(v[q.Start:q.End]) == "true" {
		return splice{}, false // asked already (core.Request.IncludeUsage says so when the server decoded it)
	}
	if !q.Found {
		ins = askMember
		if q.Empty {
			ins = askMember[1:]
		}
	}
	return splice{p.Start + q.Start, p.Start + q.End, ins}, true
}

// outgoing is the body sent for req: the client's bytes with the target's model (withModel) and,
// with ask, sp spliced in. Both splices are made without copying the body, unless the model's
// place was not noted (req.ModelAt), which copies it once.
func (a *openaiOpenAI) outgoing(req *core.Request, sp splice, ask bool) payload {
	b := req.Body
	switch {
	case !ask && a.t.Model == "":
		return whole(b)
	case !ask:
		return a.withModel(req)
	case a.t.Model == "":
		return payload{b[:sp.at:sp.at], sp.ins[:len(sp.ins):len(sp.ins)], b[sp.end:]}
	}
	s, e := req.ModelAt[0], req.ModelAt[1]
	if !(0 < s && s+2 <= e && e <= len(b) && b[s] == '"' && b[e-1] == '"') || (s < sp.end && sp.at < e) {
		// The model's place is not known: the spliced body is walked for it.
		spliced := payload{b[:sp.at], sp.ins, b[sp.end:]}
		r := *req
		r.Body, r.ModelAt = spliced.owned(), [2]int{}
		return a.withModel(&r)
	}
	model, ins := a.model[:len(a.model):len(a.model)], sp.ins[:len(sp.ins):len(sp.ins)]
	if s < sp.at {
		return payload{b[:s:s], model, b[e:sp.at:sp.at], ins, b[sp.end:]}
	}
	return payload{b[:sp.at:sp.at], ins, b[sp.end:s:s], model, b[e:]}
}

// refusedAsk reports whether err is a target's 400 that names the field the adapter added, as a
// strict OpenAI-compatible server refuses a member it does not know ("Unrecognized request
// argument supplied: stream_options", pydantic's "Extra inputs are not permitted" with the
// member's name in its loc): the request is then sent again as the client wrote it, so that the
// gateway's asking never costs the client an answer. A 400 that does not name it (a prompt too
// long, a bad parameter of the client's) is the client's answer as it is, with no second try.
func refusedAsk(err error) bool {
	var se *core.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusBadRequest {
		return false
	}
	for _, s := range [...][]byte{[]byte(se.Message), se.Body} {
		if bytes.Contains(s, askedKey) || bytes.Contains(s, askedMember) {
			return true
		}
	}
	return false
}

var (
	askedKey    = []byte("stream_options")
	askedMember = []byte("include_usage")
)
