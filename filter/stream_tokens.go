package filter

import "github.com/hayula/gateway/internal/jsonx"

// TextTokens is a lower bound of the tokens of a text that arrives in pieces, a stream's text as
// it is relayed: PromptTokensMin's count (see there why it is a bound) of the pieces joined with
// nothing between, counted as they come, so that nothing is kept but the count's state. A model's
// tokens decode to the text, each within one of the pre-tokens the bound counts, so the count of
// what a client was sent bounds the tokens generated for it; several texts interleaved (the
// choices of n > 1) are counted as one, which only merges what joins and never counts more. The
// zero value is ready and counts nothing.
type TextTokens struct {
	c       counter
	started bool
}

// AddLiteral counts the text of q, a JSON string literal (its quotes included), as the
// continuation of the text counted so far. Anything that is not a literal counts nothing, and so
// does an escape this does not read (a surrogate, which is never a letter or a number): taking a
// character other than whitespace out of a text never raises its count.
func (t *TextTokens) AddLiteral(q []byte) {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return
	}
	if !t.started {
		// The text follows the template's header: a punctuation pre-token it may run on from.
		t.c, t.started = counter{tally: tally{absorb: true}}, true
	}
	body := q[1 : len(q)-1]
	for len(body) > 0 {
		i := jsonx.TextEnd(body)
		textRunes(&t.c, body[:i])
		body = body[i:]
		if len(body) == 0 {
			return
		}
		if body[0] != '\\' || len(body) < 2 {
			body = body[1:] // not valid in a literal: counted as nothing
			continue
		}
		r, size := unescape(body)
		if size == 0 {
			size = 2
			if body[1] == 'u' {
				size = min(6, len(body))
			}
			body = body[size:]
			continue
		}
		t.c.add(r)
		body = body[size:]
	}
}

// Min is the bound of the text counted so far.
func (t *TextTokens) Min() int {
	c := t.c
	return c.end()
}
