package autoroute

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hayula/gateway/core"
)

// benchPrompt is a 1 KB mixed prompt: English and Arabic prose with a code snippet, a few terms of
// each intent and plenty of words that are in no term.
func benchPrompt() string {
	const base = "Hi, I am preparing a short talk for my team. ممكن تساعدني أرتب الأفكار بشكل منطقي؟ " +
		"First I want to compare two approaches to logging in our web application, then explain " +
		"why the old code used strcpy(buf, input) and whether that is a problem. " +
		"بعد ذلك أريد أن أشرح الفرق بين التشفير المتماثل وغير المتماثل بطريقة بسيطة للزملاء الجدد. " +
		"Finally, I would like a few slides about the history of our project, the people who built " +
		"it and what we plan for next year, including the budget and the timeline. "
	var b strings.Builder
	for b.Len() < 1024 {
		b.WriteString(base)
	}
	s := b.String()
	cut := 1024
	for cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut++
	}
	return s[:cut]
}

func BenchmarkClassify1KB(b *testing.B) {
	c, err := New(Rules{})
	if err != nil {
		b.Fatal(err)
	}
	p := benchPrompt()
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		c.Classify("You are a helpful assistant.", p, "")
	}
}

// BenchmarkRoute1KB is BenchmarkClassify1KB through Route, as the server calls it.
func BenchmarkRoute1KB(b *testing.B) {
	c, err := New(Rules{})
	if err != nil {
		b.Fatal(err)
	}
	p := benchPrompt()
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		c.Route("You are a helpful assistant.", p, "")
	}
}

func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := New(Rules{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTexts reads the system prompt and the last user turn of a chat as the server hands it
// over: contents still raw JSON, one of them with escapes.
func BenchmarkTexts(b *testing.B) {
	user, err := json.Marshal(benchPrompt() + "\n\n\"quoted\"")
	if err != nil {
		b.Fatal(err)
	}
	msgs := []core.Message{
		{Role: "system", Content: json.RawMessage(`"You are a helpful assistant."`)},
		{Role: "user", Content: user},
	}
	b.SetBytes(int64(len(user)))
	b.ReportAllocs()
	for b.Loop() {
		Texts(msgs)
	}
}
