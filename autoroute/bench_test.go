package autoroute

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

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

// BenchmarkRoute1KBCold is BenchmarkRoute1KB with the CPU caches emptied before every call, as
// they are on a gateway serving one request at a time on a machine it shares: the live harness
// measures more for "auto" than the warm benchmarks do. Each call is timed on its own and ns/op
// is the median call (p90-ns/op the 90th percentile), so that the eviction between calls is not
// counted; the timer's own cost (two clock reads, tens of ns) is in every case alike.
//
//   - warm: no eviction, the same timing as the other cases (compare with BenchmarkRoute1KB).
//   - L2: 1 MiB read before each call, twice the per-core L2: the classifier's data and code
//     come back from L3, as after a short run of the other processes.
//   - L3: 32 MiB read before each call, four times the L3: everything comes back from memory.
//
// The prompt itself is read again after the eviction: in the server, Texts has just produced
// it (or the body was just read), so it is warm whatever else is not.
func BenchmarkRoute1KBCold(b *testing.B) {
	c, err := New(Rules{})
	if err != nil {
		b.Fatal(err)
	}
	p := benchPrompt()
	const system = "You are a helpful assistant."
	coldBench(b, func() { c.Route(system, p, "") }, func() { touch(p); touch(system) })
}

// BenchmarkChat1KB is the server's part of an "auto" request's cost in autoroute, for the chat of
// BenchmarkTexts: Texts then Route, as server.resolve calls them, against RouteMessagesFor.
func BenchmarkChat1KB(b *testing.B) {
	c, msgs := benchChat(b)
	b.Run("texts+route", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sys, user := Texts(msgs)
			c.Route(sys, user, "")
		}
	})
	b.Run("messages", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c.RouteMessagesFor(0, msgs, "")
		}
	})
}

// BenchmarkChat1KBCold is BenchmarkChat1KB in the cases of BenchmarkRoute1KBCold; the request's
// contents are read again after each eviction, as the server has just decoded them.
func BenchmarkChat1KBCold(b *testing.B) {
	c, msgs := benchChat(b)
	rewarm := func() {
		for _, m := range msgs {
			touch(m.Content)
		}
	}
	b.Run("texts+route", func(b *testing.B) {
		coldBench(b, func() {
			sys, user := Texts(msgs)
			c.Route(sys, user, "")
		}, rewarm)
	})
	b.Run("messages", func(b *testing.B) {
		coldBench(b, func() { c.RouteMessagesFor(0, msgs, "") }, rewarm)
	})
}

func benchChat(b *testing.B) (*Classifier, []core.Message) {
	c, err := New(Rules{})
	if err != nil {
		b.Fatal(err)
	}
	user, err := json.Marshal(benchPrompt() + "\n\n\"quoted\"")
	if err != nil {
		b.Fatal(err)
	}
	return c, []core.Message{
		{Role: "system", Content: json.RawMessage(`"You are a helpful assistant."`)},
		{Role: "user", Content: user},
	}
}

// coldBench runs call in the three cases of BenchmarkRoute1KBCold, calling rewarm after each
// eviction.
func coldBench(b *testing.B, call func(), rewarm func()) {
	for _, tc := range []struct {
		name  string
		bytes int
	}{{"warm", 0}, {"L2", 1 << 20}, {"L3", 32 << 20}} {
		b.Run(tc.name, func(b *testing.B) {
			junk := make([]byte, tc.bytes)
			for i := range junk {
				// Written once: pages never written all read as the one shared zero page.
				junk[i] = byte(i)
			}
			// The last calls' times, in a ring allocated up front: the loop allocates nothing
			// of its own, so B/op and allocs/op are the call's.
			times, n := make([]time.Duration, 1<<14), 0
			for b.Loop() {
				evict(junk)
				rewarm()
				t0 := time.Now()
				call()
				times[n%len(times)] = time.Since(t0)
				n++
			}
			times = times[:min(n, len(times))]
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2]), "ns/op")
			b.ReportMetric(float64(times[len(times)*9/10]), "p90-ns/op")
		})
	}
}

// evict reads one byte of every cache line of junk.
func evict(junk []byte) (sum byte) {
	for i := 0; i < len(junk); i += 64 {
		sum += junk[i]
	}
	return sum
}

// touch reads one byte of every cache line of s.
func touch[T ~string | ~[]byte](s T) (sum byte) {
	for i := 0; i < len(s); i += 64 {
		sum += s[i]
	}
	return sum
}

// BenchmarkRoute100KB is Route on 100 KB prompts: the 1 KB prompt repeated; Russian prose, whose
// Cyrillic letters drawn like Latin ones make scan look ahead for a Latin letter; one word of
// 100 KB of lookalikes, where that look-ahead is bounded by maxWordBytes; and text strewn with
// zero-width characters. Time and allocations should grow with the length, no faster: compare
// ns/op with BenchmarkRoute1KB's times 100.
func BenchmarkRoute100KB(b *testing.B) {
	c, err := New(Rules{})
	if err != nil {
		b.Fatal(err)
	}
	fill := func(unit string) string {
		return strings.Repeat(unit, 100<<10/len(unit)+1)[:100<<10]
	}
	prompts := []struct{ name, text string }{
		{"mixed", strings.ToValidUTF8(fill(benchPrompt()), "")},
		{"russian", strings.ToValidUTF8(fill("Сервер опять упал сегодня ночью, посмотри логи и скажи, что случилось. "), "")},
		{"one-lookalike-word", strings.ToValidUTF8(fill("\u0435\u0440\u043e"), "")},
		{"zero-width", strings.ToValidUTF8(fill("ex\u200bploit \u062b\u063a\u200c\u0631\u0629 "), "")},
	}
	for _, p := range prompts {
		b.Run(p.name, func(b *testing.B) {
			b.SetBytes(int64(len(p.text)))
			b.ReportAllocs()
			for b.Loop() {
				c.Route("You are a helpful assistant.", p.text, "")
			}
		})
	}
}

// longProse are the texts of BenchmarkRoute64KB, each repeated to 64 KiB: the bench's chat prose
// (bench/env.go chatBody), English and Arabic, its English sentences alone, its Arabic ones alone,
// and Chinese, which has no term and which scan should pass over cheaply.
var longProse = []struct{ name, unit string }{
	{"mixed", "I am preparing a short talk for my team about how we ship our web application. " +
		"ممكن تساعدني أرتب الأفكار بشكل منطقي؟ First I want to compare two ways of logging, then explain " +
		"why the old code called strcpy(buf, input) and whether that matters today. " +
		"بعد ذلك أريد أن أشرح الفرق بين الطريقتين بطريقة بسيطة للزملاء الجدد. Finally a few slides on " +
		"the history of the project, the people who built it, the budget and the timeline for next year. "},
	{"english", "I am preparing a short talk for my team about how we ship our web application. " +
		"First I want to compare two ways of logging, then explain why the old code called " +
		"strcpy(buf, input) and whether that matters today. Finally a few slides on the history of " +
		"the project, the people who built it, the budget and the timeline for next year. "},
	{"arabic", "ممكن تساعدني أرتب الأفكار بشكل منطقي؟ بعد ذلك أريد أن أشرح الفرق بين الطريقتين " +
		"بطريقة بسيطة للزملاء الجدد. أحضّر عرضاً قصيراً لفريقي عن كيفية نشر تطبيقنا على الويب، " +
		"وفي النهاية بعض الشرائح عن تاريخ المشروع والأشخاص الذين بنوه والميزانية والجدول الزمني للعام القادم. "},
	{"chinese", "我正在为我的团队准备一个简短的演讲，介绍我们如何发布网络应用程序。首先我想比较两种记录日志的方法，" +
		"然后解释为什么旧代码调用了这个函数，以及这在今天是否重要。最后是关于项目历史、构建它的人、预算和明年时间表的几张幻灯片。"},
}

// longText is unit repeated to n bytes, cut at a character boundary.
func longText(unit string, n int) string {
	s := strings.Repeat(unit, n/len(unit)+1)[:n]
	return strings.ToValidUTF8(s, "")
}

// BenchmarkRoute64KB is Route on a 64 KiB user message of each of longProse's texts, as a pasted
// document or a retrieved context makes it: the classifier's cost a byte of a long prompt.
// Counted under callgrind (instructions an op) rather than timed, see PERFORMANCE.md.
func BenchmarkRoute64KB(b *testing.B) {
	c, err := New(Rules{})
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range longProse {
		text := longText(p.unit, 64<<10)
		b.Run(p.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				c.Route("You are a helpful assistant.", text, "")
			}
		})
	}
}

// BenchmarkRouteLongSystem is an "auto" chat as an agent sends it: a system prompt of 16 KiB
// (longProse's English, as the same on every request as an application's instructions are) and
// a user turn of one line. "read" reads the system prompt on every call, as every call did
// before systems; "kept" finds it kept, as the server's RouteMessagesFor does from its third
// request with that prompt.
func BenchmarkRouteLongSystem(b *testing.B) {
	c, err := New(Rules{})
	if err != nil {
		b.Fatal(err)
	}
	system := longText(longProse[1].unit, 16<<10)
	quoted, err := json.Marshal(system)
	if err != nil {
		b.Fatal(err)
	}
	msgs := []core.Message{{Role: "system", Content: quoted}, {Role: "user", Content: []byte(`"why does the build fail on the release branch?"`)}}
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c.Route(system, "why does the build fail on the release branch?", "")
		}
	})
	b.Run("kept", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c.RouteMessagesFor(1, msgs, "")
		}
	})
}
