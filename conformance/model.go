package conformance

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// maxModelTries bounds the chat requests spent choosing a model: a server that refuses every
// chat request (one broken for all models, or one that serves embeddings only) must not cost
// one request per listed model before the suite starts.
const maxModelTries = 3

// modelChoice is the chat model a run without --model tests, and why that one.
type modelChoice struct {
	model string
	why   string
	// basic is the answer to chat.basic's request for model when choosing sent it, so that it is
	// not sent twice; nil when none was sent.
	basic *exchange
	// embedding is the first id passed over as named like an embedding model that is no
	// reranker: the model the embeddings checks are sent without --embedding-model (see
	// chooseEmbedding). Empty when none was listed.
	embedding string
}

// chooseModel picks the chat model from the answer to /v1/models. The first listed id is
// often no chat model (Ollama lists nomic-embed-text, OpenAI lists text-embedding-3-small or
// dall-e-2), and every chat check would then fail against a server that is fine. So ids named
// like embedding models are passed over (see embeddingName), and when several ids remain, the
// first is sent chat.basic's request; one refused with a 4xx (or 501) gives way to the next, as
// far as maxModelTries. A refusal by every one tried leaves the first, whose refusal chat.status
// then reports.
func (r *runner) chooseModel(ctx context.Context, models *exchange) (modelChoice, error) {
	var chat, embed []string
	data, _ := at(models.json, "data")
	items, _ := asArray(data)
	for _, it := range items {
		id, _ := at(it, "id")
		s, _ := id.(string)
		switch {
		case s == "":
		case embeddingName(s):
			embed = append(embed, s)
		default:
			chat = append(chat, s)
		}
	}
	choice, err := r.chooseChat(ctx, models, chat, embed)
	for _, id := range embed {
		if !rerankerName(id) {
			choice.embedding = id
			break
		}
	}
	return choice, err
}

// chooseChat is chooseModel's choice among the ids listed: chat, those not named like an
// embedding model, and embed, those that are.
func (r *runner) chooseChat(ctx context.Context, models *exchange, chat, embed []string) (modelChoice, error) {
	passedOver := ""
	if len(embed) > 0 {
		passedOver = fmt.Sprintf(" (passed over, named like embedding models: %s)", strings.Join(embed, ", "))
	}
	switch {
	case len(chat) == 0 && len(embed) == 0:
		return modelChoice{}, &UsageError{Msg: "no --model given and /v1/models names none (" + models.statusLine() + ")"}
	case len(chat) == 0:
		return modelChoice{model: embed[0], why: "the first id of /v1/models; every listed id is named like an embedding model, so give --model"}, nil
	case len(chat) == 1 && len(embed) == 0:
		return modelChoice{model: chat[0], why: "the only id of /v1/models"}, nil
	case len(chat) == 1:
		return modelChoice{model: chat[0], why: "the first id of /v1/models not named like an embedding model" + passedOver}, nil
	}
	var refusals []string
	var first *exchange
	for i, id := range chat[:min(len(chat), maxModelTries)] {
		x := r.chatBasic(id).run(ctx, r)
		if ctx.Err() != nil {
			return modelChoice{}, ctx.Err()
		}
		if i == 0 {
			first = x
		}
		if !refusesChat(x) {
			why := "the first id of /v1/models not refusing a chat request"
			if len(refusals) > 0 {
				why += "; " + strings.Join(refusals, "; ")
			}
			return modelChoice{model: id, why: why + passedOver, basic: x}, nil
		}
		refusals = append(refusals, fmt.Sprintf("%s refused it: %s", id, refusal(x)))
	}
	return modelChoice{model: chat[0], basic: first,
		why: "the first id of /v1/models; every one tried refused a chat request: " + strings.Join(refusals, "; ") + passedOver}, nil
}

// chatBasic is chat.basic's probe for model, which it makes the run's model: the run has not
// begun, and Run sets the one chosen.
func (r *runner) chatBasic(model string) *probe {
	r.o.Model = model
	for _, p := range r.probes() {
		if p.id == "chat.basic" {
			return p
		}
	}
	panic("conformance: no chat.basic probe")
}

// refusesChat: the server answered, and said no to the request itself rather than failing at
// it: 400, 404, 405, 422 or 501. Ollama answers 400 "\"nomic-embed-text\" does not support
// chat", OpenAI 404 "This is not a chat model", vLLM 400 "The model does not support Chat
// Completions API". A 401, 403 or 429 is the server's for every model, and a 5xx or no answer
// is a failure chat.status reports, not a reason to test another model.
func refusesChat(x *exchange) bool {
	if x.err != nil {
		return false
	}
	switch x.status {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed,
		http.StatusUnprocessableEntity, http.StatusNotImplemented:
		return true
	}
	return false
}

// refusal is a refused answer in a few words: its status and the server's message.
func refusal(x *exchange) string { return clip(x.statusLine(), 160) }

// chooseEmbedding is the model the embeddings checks are sent, and why: --embedding-model
// when given; else the first id passed over as named like an embedding model, since the chat
// model it was passed over for is no embedding model (Ollama lists nomic-embed-text beside
// llama3.1, and refuses llama3.1 embeddings or answers with its hidden state); else the chat
// model, which may embed too. Either way a 400 to the float request of a model the suite chose
// means "not supported" (the embeddings probe is refusable): a name is a guess, and a server
// whose chat model refuses embeddings must not fail for it.
func (r *runner) chooseEmbedding(chat modelChoice, modelGiven bool) (model, why string) {
	const guessed = " (no --embedding-model given: a 400 to its float request means embeddings are not supported)"
	switch {
	case r.o.EmbeddingModel != "":
		return r.o.EmbeddingModel, "given by --embedding-model"
	case chat.embedding != "":
		return chat.embedding, "the first id of /v1/models named like an embedding model" + guessed
	case modelGiven:
		return r.o.Model, "the chat model, given by --model" + guessed
	}
	return r.o.Model, "the chat model, as /v1/models names no embedding model" + guessed
}

// embeddingName reports whether a model id names an embedding or reranking model by the words
// such ids are made of: nomic-embed-text, mxbai-embed-large, text-embedding-3-small,
// jina-embeddings-v3, all-minilm, bge-m3, multilingual-e5-large, gte-qwen2, bge-reranker. A
// word is what lies between the separators of "org/name:tag-v1.5_x".
func embeddingName(id string) bool {
	for _, w := range modelWords(id) {
		switch {
		case strings.Contains(w, "embed"), strings.HasPrefix(w, "rerank"),
			w == "bge", w == "minilm", w == "e5", w == "gte":
			return true
		}
	}
	return false
}

// rerankerName reports whether an id embeddingName matches names a reranking model
// (bge-reranker-v2-m3, jina-reranker-v2): one that scores pairs and embeds nothing, so the
// embeddings checks are not sent it.
func rerankerName(id string) bool {
	for _, w := range modelWords(id) {
		if strings.HasPrefix(w, "rerank") {
			return true
		}
	}
	return false
}

// modelWords are the words of a model id, lower-cased: what lies between the separators of
// "org/name:tag-v1.5_x".
func modelWords(id string) []string {
	return strings.FieldsFunc(strings.ToLower(id), func(r rune) bool {
		return r == '/' || r == ':' || r == '-' || r == '_' || r == '.' || r == ' ' || r == '@'
	})
}
