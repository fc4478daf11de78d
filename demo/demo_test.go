package demo_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"go.uber.org/goleak"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/demo"
	"github.com/hayula/gateway/server"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startDemo runs the demo topology: the simulators and the gateway in front of them.
func startDemo(t *testing.T) openai.Client {
	t.Helper()
	return openai.NewClient(option.WithBaseURL(startDemoURL(t)+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
}

// startDemoURL runs the demo topology and returns the gateway's URL.
func startDemoURL(t *testing.T) string {
	t.Helper()
	b, err := demo.StartBackends(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	cfg, err := config.Parse([]byte(demo.Config("127.0.0.1:8000", b.URLs)), "demo.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

// TestDemoEndToEnd talks to the demo with the official SDK, through each adapter. The subtests
// share one gateway and run in order: the loading one comes last, because health then holds
// saif back for its Retry-After.
func TestDemoEndToEnd(t *testing.T) {
	c := startDemo(t)
	ctx := context.Background()
	user := func(s string) []openai.ChatCompletionMessageParamUnion {
		return []openai.ChatCompletionMessageParamUnion{openai.UserMessage(s)}
	}

	t.Run("auto routes the paper's three questions", func(t *testing.T) {
		tests := []struct {
			question, route, chain, intent, from string
		}{
			{"How do I exploit a buffer overflow in CVE-2021-3156?", "saif", "saif", "security", "simulated saif/exploit"},
			{"ما هي نقاط الضعف في تطبيقات الويب؟", "saif", "saif", "security", "simulated saif/webapp"},
			{"Explain step by step why the sum of two odd numbers is even.", "deepseek-r1", "deepseek-r1", "reasoning",
				"simulated deepseek-r1"},
			{"اكتب قصيدة قصيرة عن البحر", "averroes-q", "averroes-q", "general", "simulated averroes-q"},
		}
		for _, tt := range tests {
			var resp *http.Response
			got, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "auto", Messages: user(tt.question)},
				option.WithResponseInto(&resp))
			if err != nil {
				t.Fatalf("%s: %v", tt.question, err)
			}
			h := resp.Header
			if h.Get("x-hayula-route") != tt.route || h.Get("x-hayula-chain") != tt.chain || h.Get("x-hayula-intent") != tt.intent {
				t.Errorf("%s: route %q chain %q intent %q, want %s %s %s", tt.question, h.Get("x-hayula-route"),
					h.Get("x-hayula-chain"), h.Get("x-hayula-intent"), tt.route, tt.chain, tt.intent)
			}
			if !strings.Contains(got.Choices[0].Message.Content, tt.from) {
				t.Errorf("%s: content %q", tt.question, got.Choices[0].Message.Content)
			}
		}
	})

	t.Run("saif honours a hint and says who answered", func(t *testing.T) {
		var resp *http.Response
		got, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "saif", Messages: user("Look at this")},
			option.WithHeader("x-route-hint", "forensics"), option.WithResponseInto(&resp))
		if err != nil {
			t.Fatal(err)
		}
		raw := got.RawJSON()
		if resp.Header.Get("x-hayula-specialist") != "forensics" || field(raw, "hayula", "routed_by") != "hint" ||
			field(raw, "hayula", "specialist") != "forensics" {
			t.Fatalf("header %q, body %s", resp.Header.Get("x-hayula-specialist"), raw)
		}
	})

	t.Run("saif streams with its router's choice", func(t *testing.T) {
		st := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "saif",
			Messages:      user("Is this ransomware?"),
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
		var acc openai.ChatCompletionAccumulator
		specialist := ""
		for st.Next() {
			ch := st.Current()
			acc.AddChunk(ch)
			if s := field(ch.RawJSON(), "hayula", "specialist"); s != "" {
				specialist = s
			}
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		if specialist != "malware" || !strings.Contains(acc.Choices[0].Message.Content, "simulated saif/malware") ||
			acc.Usage.CompletionTokens == 0 {
			t.Fatalf("specialist %q, content %q, usage %+v", specialist, acc.Choices[0].Message.Content, acc.Usage)
		}
	})

	t.Run("an unknown specialist is the client's mistake", func(t *testing.T) {
		_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "saif", Messages: user("hi")},
			option.WithHeader("x-route-hint", "gardening"))
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "unknown_specialist" ||
			!strings.Contains(apiErr.Message, "rev_eng") {
			t.Fatalf("error %v", err)
		}
	})

	t.Run("averroes-q streams through ollama", func(t *testing.T) {
		st := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "averroes-q", Messages: user("مرحبا")})
		var acc openai.ChatCompletionAccumulator
		for st.Next() {
			acc.AddChunk(st.Current())
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(acc.Choices[0].Message.Content, "simulated averroes-q") || acc.Choices[0].FinishReason != "stop" {
			t.Fatalf("streamed %+v", acc.Choices[0])
		}
	})

	t.Run("deepseek-r1 streams its reasoning apart", func(t *testing.T) {
		st := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "deepseek-r1", Messages: user("Prove it")})
		var acc openai.ChatCompletionAccumulator
		var reasoning strings.Builder
		for st.Next() {
			ch := st.Current()
			acc.AddChunk(ch)
			reasoning.WriteString(field(ch.RawJSON(), "choices", "0", "delta", "reasoning_content"))
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		content := acc.Choices[0].Message.Content
		if strings.Contains(content, "think>") || !strings.HasPrefix(content, "[simulated deepseek-r1]") ||
			!strings.HasPrefix(reasoning.String(), "[simulated reasoning]") {
			t.Fatalf("content %q, reasoning %q", content, reasoning.String())
		}
	})

	t.Run("embeddings through ollama", func(t *testing.T) {
		got, err := c.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "embed",
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", "b"}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Data) != 2 || len(got.Data[1].Embedding) != 8 {
			t.Fatalf("embeddings %+v", got.Data)
		}
	})

	// Ollama cuts a vector to dimensions when the model's is wider (CONFIG.md); the simulator
	// ignored it, as an old Ollama does, and the gateway refused 4 of 8 as a width the model
	// "cannot give".
	t.Run("embeddings through ollama, cut to dimensions", func(t *testing.T) {
		got, err := c.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "embed", Dimensions: openai.Int(4),
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", "b"}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Data) != 2 || len(got.Data[0].Embedding) != 4 || len(got.Data[1].Embedding) != 4 {
			t.Fatalf("embeddings %+v", got.Data)
		}
		norm := 0.0
		for _, x := range got.Data[0].Embedding {
			norm += x * x
		}
		if math.Abs(norm-1) > 1e-6 {
			t.Errorf("a cut vector has squared norm %v, want 1 (Ollama normalises it)", norm)
		}
	})

	t.Run("the public tail only after an overflow", func(t *testing.T) {
		var resp *http.Response
		_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "deepseek-r1",
			Messages: user("[overflow:deepseek-r1] a very long document")}, option.WithResponseInto(&resp))
		if err != nil {
			t.Fatal(err)
		}
		if chain := resp.Header.Get("x-hayula-chain"); chain != "deepseek-r1→openrouter (served by openrouter)" {
			t.Fatalf("chain %q", chain)
		}
	})

	t.Run("saif down falls through to deepseek-r1", func(t *testing.T) {
		var resp *http.Response
		got, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "saif", Messages: user("[fail:saif] what is XSS?")},
			option.WithResponseInto(&resp))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(got.Choices[0].Message.Content, "simulated deepseek-r1") {
			t.Fatalf("content %q", got.Choices[0].Message.Content)
		}
		if chain := resp.Header.Get("x-hayula-chain"); chain != "saif→deepseek-r1 (served by deepseek-r1)" {
			t.Fatalf("chain %q", chain)
		}
	})

	t.Run("saif loading falls through to deepseek-r1", func(t *testing.T) {
		var resp *http.Response
		_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "saif", Messages: user("[loading:saif] scan ports")},
			option.WithResponseInto(&resp))
		if err != nil {
			t.Fatal(err)
		}
		if chain := resp.Header.Get("x-hayula-chain"); chain != "saif→deepseek-r1 (served by deepseek-r1)" {
			t.Fatalf("chain %q", chain)
		}
	})
}

// field reads a string at a path of object keys and array indexes; "" when absent.
func field(raw string, path ...string) string {
	var v any
	if json.Unmarshal([]byte(raw), &v) != nil {
		return ""
	}
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i := 0
			for _, c := range p {
				i = i*10 + int(c-'0')
			}
			if i >= len(x) {
				return ""
			}
			v = x[i]
		default:
			return ""
		}
	}
	s, _ := v.(string)
	return s
}

func TestRoute(t *testing.T) {
	tests := []struct{ question, want string }{
		{"How do I unpack a UPX binary in Ghidra?", "rev_eng"},
		{"Prevent XSS and CSRF in my web app", "webapp"},
		{"ما هي نقاط الضعف في تطبيقات الويب؟", "webapp"},
		{"Is this dropper ransomware?", "malware"},
		{"Which nmap port scan is quietest?", "network"},
		{"Read a memory dump with Volatility", "forensics"},
		{"Is MD5 fine for a password hash?", "crypto"},
		{"Lock down an S3 bucket and IAM roles on AWS", "cloud"},
		{"Write a PoC for CVE-2021-44228", "exploit"},
		{"Hello there", "exploit"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got, _ := demo.Route(tt.question); got != tt.want {
				t.Errorf("Route(%q) = %s, want %s", tt.question, got, tt.want)
			}
		})
	}
}

// TestSAIFSimLoadingEvery checks the deterministic "occasional loading": every n-th completion
// answers 503 loading with a Retry-After, the others answer.
func TestSAIFSimLoadingEvery(t *testing.T) {
	ts := httptest.NewServer(&demo.SAIFSim{LoadingEvery: 3, RetryAfter: 5})
	defer ts.Close()
	var got []string
	for i := 0; i < 6; i++ {
		resp, err := http.Post(ts.URL+"/v1/completions", "application/json",
			strings.NewReader(`{"prompt":"<|im_start|>user\nnmap this host<|im_end|>\n<|im_start|>assistant\n","specialist":null}`))
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Status     string `json:"status"`
			Specialist string `json:"specialist"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		got = append(got, resp.Status[:3]+" "+body.Status+body.Specialist+" "+resp.Header.Get("Retry-After"))
	}
	want := []string{"200 network ", "200 network ", "503 loading 5", "200 network ", "200 network ", "503 loading 5"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

// TestSAIFSimWritesCONFIGOrder: the simulated SAIF writes its answer's and its text events'
// members in the order CONFIG.md gives SAIF's, as the bench's fake and the real service do, so
// that the demo's streams take the saif adapter's fixed-order read of a text event, not its
// general one (a map, encoded, came in sorted order: specialist before text).
func TestSAIFSimWritesCONFIGOrder(t *testing.T) {
	ts := httptest.NewServer(&demo.SAIFSim{})
	defer ts.Close()
	post := func(stream bool) string {
		t.Helper()
		body := `{"prompt":"<|im_start|>user\nnmap this host<|im_end|>\n<|im_start|>assistant\n","specialist":null,"stream":` +
			strconv.FormatBool(stream) + `}`
		resp, err := http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if whole := post(false); !strings.HasPrefix(whole, `{"id":"saif-`) ||
		!regexp.MustCompile(`^\{"id":"[^"]*","specialist":"[^"]*","routed_by":"[^"]*","confidence":[0-9.]+,"text":".*","finish_reason":"[a-z]+","usage":\{"prompt_tokens":\d+,"completion_tokens":\d+\}\}\n$`).MatchString(whole) {
		t.Errorf("whole answer not in CONFIG.md's order: %s", whole)
	}
	stream := post(true)
	events := strings.Split(strings.TrimSpace(stream), "\n\n")
	if len(events) < 3 {
		t.Fatalf("%d events: %s", len(events), stream)
	}
	if last := events[len(events)-1]; !regexp.MustCompile(`^data: \{"done":true,"finish_reason":"[a-z]+","usage":\{"prompt_tokens":\d+,"completion_tokens":\d+\}\}$`).MatchString(last) {
		t.Errorf("done event not in CONFIG.md's order: %s", last)
	}
	for _, ev := range events[:len(events)-1] {
		if !regexp.MustCompile(`^data: \{"text":"(?:[^"\\]|\\.)*","specialist":"[a-z_]+"\}$`).MatchString(ev) {
			t.Errorf("text event not in CONFIG.md's order: %s", ev)
		}
	}
}
