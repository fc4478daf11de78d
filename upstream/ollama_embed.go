package upstream

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/hayula/gateway/internal/jsonx"
)

// ollamaEmbedAnswer is what the ollama adapter reads of an /api/embed answer: each embedding as
// it came (json.RawMessage).
type ollamaEmbedAnswer struct {
	Model           string            `json:"model"`
	Embeddings      []json.RawMessage `json:"embeddings"`
	PromptEvalCount *int              `json:"prompt_eval_count"`
}

// decodeOllamaEmbed reads an /api/embed answer as json.Unmarshal reads it into an
// ollamaEmbedAnswer, error included. An answer is most of a batch's bytes (16 vectors of 768
// numbers are about 150 KB), and encoding/json read it twice (its validating pass, then the
// decoder, copying every vector): an answer of the usual members is walked once by
// readOllamaEmbed, each vector a slice of raw; any other goes to json.Unmarshal
// (FuzzOllamaEmbedMatchesUnmarshal).
func decodeOllamaEmbed(raw []byte) (ollamaEmbedAnswer, error) {
	var m ollamaEmbedAnswer
	if readOllamaEmbed(raw, &m) {
		return m, nil
	}
	var v ollamaEmbedAnswer
	err := json.Unmarshal(raw, &v)
	return v, err
}

// readOllamaEmbed fills m from raw when raw is a well-formed object whose every member it reads
// as json.Unmarshal would; false sends raw to json.Unmarshal, whatever m holds by then.
func readOllamaEmbed(raw []byte, m *ollamaEmbedAnswer) bool {
	return jsonx.Members(raw, true, func(name, v []byte) bool {
		switch string(name) {
		case "model":
			return readString(v, true, &m.Model)
		case "prompt_eval_count":
			return readCount(v, &m.PromptEvalCount)
		case "embeddings":
			if v[0] != '[' {
				return false // null, and every other kind, are json.Unmarshal's
			}
			// A second member replaces the first's elements, as json.Unmarshal reuses the
			// slice; a fresh one is what it leaves.
			list := m.Embeddings[:0]
			if list == nil {
				list = []json.RawMessage{}
			}
			it := jsonx.Array(v, false) // validated with the answer
			for {
				_, e, more := it.Next()
				if !more {
					break
				}
				list = append(list, e)
			}
			m.Embeddings = list
			return it.Done()
		}
		switch string(name) {
		case "total_duration", "load_duration":
			return true // Ollama's timings: not read, and a folding of no name read (as readOllamaLine's)
		}
		return !jsonx.Folds(name, "model", "embeddings", "prompt_eval_count")
	})
}

// embeddingItem is one element of an embeddings list's data, as mustJSON wrote it.
type embeddingItem struct {
	Object    string          `json:"object"`
	Index     int             `json:"index"`
	Embedding json.RawMessage `json:"embedding"`
}

// embeddingsUsage is an embeddings list's usage.
type embeddingsUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// appendEmbeddingsList appends the embeddings list of data, model and u (omitted when nil) as
// mustJSON writes it, byte for byte (FuzzEmbeddingsListMatchesEncoding): each embedding compacted,
// as encoding/json writes a json.RawMessage, which for a vector written without white space, as
// every server writes one, is the vector as it came, copied rather than scanned.
func appendEmbeddingsList(dst []byte, data []embeddingItem, model string, u *embeddingsUsage) []byte {
	dst = append(dst, `{"object":"list","data":`...)
	if data == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range data {
			if i > 0 {
				dst = append(dst, ',')
			}
			d := &data[i]
			dst = append(dst, `{"object":`...)
			dst = appendJSONString(dst, d.Object)
			dst = strconv.AppendInt(append(dst, `,"index":`...), int64(d.Index), 10)
			dst = append(dst, `,"embedding":`...)
			switch e := d.Embedding; {
			case len(e) == 0:
				dst = append(dst, "null"...) // encoding/json writes an empty RawMessage so
			case !hasSpace(e) && (e[0] == '[' || e[0] == '"' && bytes.IndexByte(e, '\\') < 0):
				dst = append(dst, e...) // compact already: numbers, or a base64 string
			default:
				dst = append(dst, mustJSON(e)...)
			}
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"model":`...)
	dst = appendJSONString(dst, model)
	if u != nil {
		dst = strconv.AppendInt(append(dst, `,"usage":{"prompt_tokens":`...), int64(u.PromptTokens), 10)
		dst = strconv.AppendInt(append(dst, `,"total_tokens":`...), int64(u.TotalTokens), 10)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// hasSpace reports whether b holds a byte JSON takes for white space, looked for one at a time
// by the runtime's vector search (bytes.IndexAny goes byte by byte for a set).
func hasSpace(b []byte) bool {
	return bytes.IndexByte(b, ' ') >= 0 || bytes.IndexByte(b, '\n') >= 0 || bytes.IndexByte(b, '\t') >= 0 ||
		bytes.IndexByte(b, '\r') >= 0
}
