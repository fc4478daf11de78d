package upstream

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/jsonx"
)

// errNoWidth is an embedding whose width cannot be told: neither an array of numbers nor a
// base64 string of float32s.
var errNoWidth = errors.New("an embedding that is neither an array nor a base64 string of float32s")

// embeddingWidth is how many values the embedding v (raw JSON) holds: an array's elements, or
// the float32s a base64 string (encoding_format "base64") encodes. It counts without decoding:
// the elements are only skipped, and the string's length and padding give its bytes.
func embeddingWidth(v []byte) (int, error) {
	v = bytes.TrimSpace(v)
	switch {
	case len(v) > 0 && v[0] == '[':
		it := jsonx.Array(v, false)
		n := 0
		for _, e, ok := it.Next(); ok; _, e, ok = it.Next() {
			if !isNumber(e) {
				return 0, errNoWidth
			}
			n++
		}
		if !it.Done() {
			return 0, errNoWidth
		}
		return n, nil
	case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
		s := v[1 : len(v)-1]
		if bytes.IndexByte(s, '\\') >= 0 {
			// "\/" from an encoder that escapes slashes; base64 has nothing else to escape.
			u, ok := jsonx.AppendUnquote(nil, v)
			if !ok {
				return 0, errNoWidth
			}
			s = u
		}
		n, ok := base64Len(s)
		if !ok || n%4 != 0 {
			return 0, errNoWidth
		}
		return n / 4, nil
	}
	return 0, errNoWidth
}

// isNumber reports whether the JSON value e (validated or not) is a number: an element of a
// vector. An array of anything else (strings, nulls, a vector per token as a server without
// pooling answers) has no width however many elements it has.
func isNumber(e []byte) bool {
	return len(e) > 0 && (e[0] == '-' || e[0] >= '0' && e[0] <= '9')
}

// base64Len is how many bytes the standard base64 text s (padded or not) encodes, found from
// its length and padding, with every character checked against the alphabet so that a string
// that is no base64 is not given a width. ok is false for a character outside it, padding
// anywhere but at the end or more than two of it, or a length no encoding has.
func base64Len(s []byte) (n int, ok bool) {
	pad := 0
	for len(s) > 0 && s[len(s)-1] == '=' {
		s, pad = s[:len(s)-1], pad+1
	}
	if pad > 2 || len(s)%4 == 1 || pad > 0 && (len(s)+pad)%4 != 0 {
		return 0, false
	}
	for _, c := range s {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/') {
			return 0, false
		}
	}
	return len(s) * 6 / 8, true
}

// widthError is the failure of an answer whose embeddings are width wide where the request asked
// for dims: the target's, not the request's (core.UnmetError), so that the chain moves on to a
// target that gives the width; the client, when nothing else answers, gets what OpenAI answers
// dimensions a model cannot give, a 400 unsupported_value naming dimensions, with the width the
// target gives and why (how).
func widthError(t *core.Target, dims, width int, how string) error {
	return &core.UnmetError{Err: requestError(t, "unsupported_value", "dimensions", fmt.Sprintf(
		"Invalid 'dimensions': %d cannot be given by this model, whose embeddings have %d dimensions (%s).", dims, width, how))}
}

// checkEmbeddings holds an OpenAI embeddings answer to its request: its data must hold one
// embedding per input the request sent (inputs; 0 for not known), each one a client can read
// (usableEmbedding: an array of numbers, or a base64 string when the request asked for base64),
// and, when the request asked for dimensions (dims > 0), every embedding must have dims values. A
// server that embeds the first input of a batch alone, or drops one, answers fewer, and a client
// pairing its inputs with data by index would pair texts with the wrong vectors
// (TestEmbeddingsOpenAICountMismatch); one that answers null for an input it could not embed
// hands the client's SDK nothing to read (TestEmbeddingsOpenAIUnusableEmbedding). A server that
// does not read dimensions (llama-server; vLLM and TEI for a model without Matryoshka training
// answer 400, older builds ignore it) answers at the model's own width, which passed on would be
// taken for what was asked (a vector store sized for 256 fed 768). The answer is walked, not
// decoded: each item's members are skipped to their ends once, an embedding's first element
// alone is looked at (all of them are counted only for dimensions), and nothing is allocated; it
// is relayed as it came when it passes.
func checkEmbeddings(t *core.Target, body []byte, inputs, dims int, base64 bool) error {
	if inputs <= 0 && dims <= 0 {
		return nil
	}
	data, ok := jsonx.Last(body, "data")
	if !ok {
		return &core.ProtocolError{Target: t.Name, Err: &EmptyAnswerError{Key: "data"}}
	}
	unreadable := func() error {
		return &core.ProtocolError{Target: t.Name, Err: errors.New("an embeddings answer whose data cannot be read")}
	}
	// data's elements are walked here rather than by a jsonx.Array, which would skip each one
	// whole before its members could be looked at: each item's object walk finds its end.
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return unreadable()
	}
	n := 0
	for i = skipSpace(data, i+1); ; n++ {
		if i < len(data) && data[i] == ']' {
			break
		}
		if n > 0 {
			if i >= len(data) || data[i] != ',' {
				return unreadable()
			}
			i = skipSpace(data, i+1)
		}
		if i >= len(data) {
			return unreadable()
		}
		if data[i] != '{' {
			return unusableError(t, "data", n, "is not an object", openaiEmbedding)
		}
		item := jsonx.Object(data[i:], false)
		var emb []byte
		for k, v, more := item.Next(); more; k, v, more = item.Next() {
			if len(k) == len("embedding")+2 && string(k[1:len(k)-1]) == "embedding" {
				emb = v // the last, as a decoder keeps it
			}
		}
		if !item.Done() {
			return unreadable()
		}
		i = skipSpace(data, i+item.Offset())
		if why := usableEmbedding(emb, base64); why != "" {
			return unusableError(t, "data", n, why, openaiEmbedding)
		}
		if dims <= 0 {
			continue
		}
		width, err := vectorWidth(t, "data", n, emb, openaiEmbedding)
		if err != nil {
			return err
		}
		if width != dims {
			return widthError(t, dims, width, "the upstream answered another width: it ignores dimensions, or cannot give that many")
		}
	}
	if inputs > 0 && n != inputs {
		return countError(t, n, inputs)
	}
	return nil
}

// skipSpace is the index of the first byte of b from i that is not JSON white space (isSpace).
func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// usableEmbedding says why emb, an answer item's embedding (nil when it has none), is no
// embedding a client can read, or "" when it is one: an array whose first element is a number
// (the rest are not read: a vector per token, an array of arrays, is caught by its first), or,
// when base64 is true (an openai target's answer to a request for base64, which openai-python
// and openai-node ask by default), a non-empty string. An array answers a base64 request too:
// openai-python reads either. Ollama's vectors are arrays whatever the request asked (the
// gateway encodes base64 itself), so its adapter passes false.
func usableEmbedding(emb []byte, base64 bool) string {
	emb = bytes.TrimSpace(emb)
	switch {
	case emb == nil:
		return "has no embedding"
	case emb[0] == '[':
		if first := skipSpace(emb, 1); first < len(emb) && isNumber(emb[first:]) {
			return ""
		} else if first < len(emb) && emb[first] == ']' {
			return "has an empty embedding"
		}
		return "has an embedding that is not an array of numbers"
	case emb[0] == '"' && base64:
		if len(emb) > 2 {
			return ""
		}
		return "has an empty embedding"
	case emb[0] == '"':
		return "has a string for its embedding where an array of floats was due"
	case emb[0] == 'n':
		return "has a null embedding"
	}
	return "has an embedding that is not an array of numbers"
}

// What an embedding must be, said in an unusableError: an openai target's is relayed as it came,
// an ollama target's is an array the gateway relays or encodes.
const (
	openaiEmbedding = `an embedding is an array of numbers, or a base64 string when encoding_format is "base64"`
	ollamaEmbedding = "an embedding is an array of numbers"
)

// unusableError is the failure of an embeddings answer whose item n of its member list ("data"
// for an openai target, "embeddings" for Ollama's /api/embed) holds no embedding a client can
// read (why says what it holds; rule what it should): the target's, not the request's
// (core.UnmetError, class endpoint, as a wrong count is), so that the chain moves on without
// retrying or benching a target that answers the same each time (a model that cannot embed that
// input, a server without pooling); the client, when nothing else answers, gets a 502 saying
// which item and what it held. Both adapters judge their answers by it
// (TestEmbeddingsOpenAIUnusableEmbedding, TestEmbeddingsOllamaUnusableEmbedding).
func unusableError(t *core.Target, list string, n int, why, rule string) error {
	return &core.UnmetError{Err: &core.StatusError{Target: t.Name, Status: http.StatusBadGateway,
		Type: "upstream_error", Code: "bad_upstream_response", Message: fmt.Sprintf(
			"upstream %s answered embeddings whose %s[%d] %s: %s", t.Name, list, n, why, rule)}}
}

// vectorWidth is embeddingWidth of item n of list (as unusableError names it) with every
// element looked at, or, when emb has no width (an element that is no number, text that is no
// base64), that item's unusableError.
func vectorWidth(t *core.Target, list string, n int, emb []byte, rule string) (int, error) {
	width, err := embeddingWidth(emb)
	if err != nil {
		return 0, unusableError(t, list, n, "holds "+err.Error(), rule)
	}
	return width, nil
}

// countError is the failure of an embeddings answer with n embeddings for a request of inputs
// inputs: the target's, not the request's (core.UnmetError, class endpoint, as a wrong width
// is), so that the chain moves on without retrying or benching a target that may serve one input
// at a time; the client, when nothing else answers, gets a 502 saying what the answer held.
func countError(t *core.Target, n, inputs int) error {
	noun := "embeddings"
	if n == 1 {
		noun = "embedding"
	}
	return &core.UnmetError{Err: &core.StatusError{Target: t.Name, Status: http.StatusBadGateway,
		Type: "upstream_error", Code: "bad_upstream_response", Message: fmt.Sprintf(
			"upstream %s answered %d %s for %d inputs: which input each belongs to cannot be told", t.Name, n, noun, inputs)}}
}
