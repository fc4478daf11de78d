//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// gatewayProcess is the gateway run as its own process: this test binary, which runs the command
// line by main (gatewayHelper), with env added to the test's environment.
func gatewayProcess(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), gatewayHelper+"="+strings.Join(args, "\n")), env...)
	return cmd
}

// runGateway runs the gateway's command to its end and returns its exit status, stdout and stderr.
func runGateway(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := gatewayProcess(env, args...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%q: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// TestImportJourney is the homelab user who replaces LiteLLM's proxy with the gateway, by the
// commands CONFIG.md's LiteLLM section gives, each run as its own process: `gateway import
// litellm config.yaml --out gateway.toml`, `gateway check-config`, `gateway serve`, and a SIGTERM
// to stop it. The config.yaml is a LiteLLM one as written for LiteLLM: Ollama on the desktop and a
// vLLM server as two deployments of llama3.1 (hosted_vllm's api_base without /v1), OpenRouter as
// the paid fallback with its key from the environment (os.environ/), and LiteLLM's master key,
// which the clients still send. Every URL points at a fake on loopback; the official SDK is the
// client.
func TestImportJourney(t *testing.T) {
	desktop := newJourneyUpstream(t, "ollama", "desktop")
	vllm := newJourneyUpstream(t, "openai", "vllm")
	openrouter := newJourneyUpstream(t, "openai", "openrouter")
	const orKey, masterKey = "sk-or-v1-journey-from-env", "sk-1234"
	dir := t.TempDir()
	yamlPath, out := filepath.Join(dir, "config.yaml"), filepath.Join(dir, "gateway.toml")
	writeFile(t, yamlPath, fmt.Sprintf(`model_list:
  - model_name: llama3.1
    litellm_params:
      model: ollama_chat/llama3.1:8b
      api_base: %s
      num_ctx: 8192
  - model_name: llama3.1
    litellm_params:
      model: hosted_vllm/meta-llama/Llama-3.1-8B-Instruct
      api_base: %s
  - model_name: gpt-4o-mini
    litellm_params:
      model: openrouter/openai/gpt-4o-mini
      api_base: %s/v1
      api_key: os.environ/OPENROUTER_API_KEY

router_settings:
  routing_strategy: simple-shuffle
  fallbacks: [{"llama3.1": ["gpt-4o-mini"]}]
  allowed_fails: 3
  num_retries: 0
  timeout: 30

litellm_settings:
  drop_params: true

general_settings:
  master_key: %s
`, desktop.URL, vllm.URL, openrouter.URL, masterKey))

	// Import: the file written, what to export said, nothing secret carried.
	code, stdout, stderr := runGateway(t, nil, "import", "litellm", yamlPath, "--out", out)
	if code != 0 || stdout != "" || !strings.Contains(stderr, "wrote "+out) ||
		!strings.Contains(stderr, "export OPENROUTER_API_KEY; then gateway check-config "+out) {
		t.Fatalf("import: exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	toml, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"[targets.\"llama3.1-1\"]\n", "url = \"" + desktop.URL + "\"\n", "model = \"llama3.1:8b\"\n", "context_window = 8192\n",
		"[targets.\"llama3.1-2\"]\n", "url = \"" + vllm.URL + "/v1\"\n", "model = \"meta-llama/Llama-3.1-8B-Instruct\"\n",
		"[targets.\"gpt-4o-mini\"]\n", "url = \"" + openrouter.URL + "/v1\"\n", "api_key_env = \"OPENROUTER_API_KEY\"\n",
		"[routes.\"llama3.1\"]\n", "targets = [\"llama3.1-1\", \"llama3.1-2\", \"gpt-4o-mini\"]\n",
		"general_settings: master_key",
	} {
		if !strings.Contains(string(toml), want) {
			t.Errorf("the imported file lacks %q:\n%s", want, toml)
		}
	}
	if strings.Contains(string(toml), masterKey) || strings.Count(string(toml), "api_key_env") != 1 {
		t.Errorf("the imported file carries the master key, or a key for a local server:\n%s", toml)
	}
	if t.Failed() {
		t.FailNow()
	}

	// check-config: without the variable it says which one; with it, the routes.
	if code, stdout, stderr := runGateway(t, []string{"OPENROUTER_API_KEY="}, "check-config", out); code != 1 ||
		!strings.Contains(stderr, "OPENROUTER_API_KEY") {
		t.Errorf("check-config with OPENROUTER_API_KEY empty: exit %d, stdout %q, stderr %q; want 1 naming it", code, stdout, stderr)
	}
	env := []string{"OPENROUTER_API_KEY=" + orKey}
	if code, stdout, stderr := runGateway(t, env, "check-config", out); code != 0 ||
		!regexp.MustCompile(`route llama3\.1\b.*`).MatchString(stdout) || !strings.Contains(stdout, "gpt-4o-mini") {
		t.Fatalf("check-config: exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	// Serve, on a free port of loopback.
	srv := gatewayProcess(env, "serve", "--config", out, "--listen", "127.0.0.1:0")
	logs := &syncBuffer{}
	srv.Stdout, srv.Stderr = logs, logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{}) // closed once serve has ended, waitErr set
	go func() { waitErr = srv.Wait(); close(exited) }()
	defer func() {
		select {
		case <-exited:
		default:
			_ = srv.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs)
		}
	}()
	addrRE := regexp.MustCompile(`hayula gateway listening"? addr=(\S+)`)
	var base string
	waitFor(t, "the gateway to listen", func() bool {
		if m := addrRE.FindStringSubmatch(logs.String()); m != nil {
			base = "http://" + m[1]
		}
		select {
		case <-exited:
			return true
		default:
			return base != ""
		}
	})
	if base == "" {
		t.Fatalf("serve ended before it listened")
	}
	// The clients keep LiteLLM's master key: the imported file has no [[keys]], and takes it.
	c := journeyClient(base, masterKey)
	ctx := context.Background()

	page, err := c.Models.List(ctx)
	if err != nil {
		t.Fatalf("models: %v", err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if got := strings.Join(ids, " "); got != "gpt-4o-mini llama3.1" {
		t.Errorf("models: %q, want the two model_names", got)
	}

	// chat asks route for a whole answer or a stream, and returns its text and x-hayula-chain.
	chat := func(route string, stream bool) (string, string, error) {
		t.Helper()
		var resp *http.Response
		if !stream {
			got, err := c.Chat.Completions.New(ctx, hello(route), option.WithResponseInto(&resp))
			if err != nil {
				return "", "", err
			}
			if len(got.Choices) != 1 {
				return "", "", fmt.Errorf("%d choices", len(got.Choices))
			}
			return got.Choices[0].Message.Content, resp.Header.Get("X-Hayula-Chain"), nil
		}
		st := c.Chat.Completions.NewStreaming(ctx, hello(route), option.WithResponseInto(&resp))
		var acc openai.ChatCompletionAccumulator
		for st.Next() {
			acc.AddChunk(st.Current())
		}
		if err := st.Err(); err != nil {
			return "", "", err
		}
		if len(acc.Choices) != 1 {
			return "", "", fmt.Errorf("%d choices streamed", len(acc.Choices))
		}
		return acc.Choices[0].Message.Content, resp.Header.Get("X-Hayula-Chain"), nil
	}
	for _, tt := range []struct {
		route, text, chain string
		up                 *journeyUpstream
		want               journeyChat // the request the upstream is sent, but for stream
	}{
		{"llama3.1", "hi from desktop", "llama3.1-1", desktop,
			journeyChat{model: "llama3.1:8b", numCtx: 8192}},
		{"gpt-4o-mini", "hi from openrouter", "gpt-4o-mini", openrouter,
			journeyChat{auth: "Bearer " + orKey, model: "openai/gpt-4o-mini"}},
	} {
		for _, stream := range []bool{false, true} {
			text, chain, err := chat(tt.route, stream)
			if err != nil || text != tt.text || chain != tt.chain {
				t.Errorf("%s (stream %v): %q, chain %q, %v; want %q from %q", tt.route, stream, text, chain, err, tt.text, tt.chain)
			}
			sent := tt.up.chatList()
			want := tt.want
			want.stream = stream
			if len(sent) == 0 || sent[len(sent)-1] != want {
				t.Errorf("%s (stream %v): %s was sent %+v, want last %+v", tt.route, stream, tt.up.name, sent, want)
			}
		}
	}

	// The desktop's Ollama fails: the second deployment answers, whole and streamed; then vLLM
	// fails too, and the fallback, OpenRouter, answers with the key from the environment.
	desktop.failing.Store(true)
	for _, stream := range []bool{false, true} {
		text, chain, err := chat("llama3.1", stream)
		if err != nil || text != "hi from vllm" || chain != "llama3.1-1→llama3.1-2 (served by llama3.1-2)" {
			t.Errorf("llama3.1 (stream %v) with the desktop failing: %q, chain %q, %v", stream, text, chain, err)
		}
	}
	if sent := vllm.chatList(); len(sent) != 2 || sent[0] != (journeyChat{model: "meta-llama/Llama-3.1-8B-Instruct"}) ||
		sent[1] != (journeyChat{model: "meta-llama/Llama-3.1-8B-Instruct", stream: true}) {
		t.Errorf("vLLM was sent %+v; want the whole request then the streamed one, with its model and no key", sent)
	}
	vllm.failing.Store(true)
	before := len(openrouter.chatList())
	text, chain, err := chat("llama3.1", false)
	if err != nil || text != "hi from openrouter" || chain != "llama3.1-1→llama3.1-2→gpt-4o-mini (served by gpt-4o-mini)" {
		t.Errorf("llama3.1 with both deployments failing: %q, chain %q, %v", text, chain, err)
	}
	if sent := openrouter.chatList(); len(sent) != before+1 ||
		sent[before] != (journeyChat{auth: "Bearer " + orKey, model: "openai/gpt-4o-mini"}) {
		t.Errorf("OpenRouter was sent %+v; want one more request, with the key from the environment", sent[before:])
	}
	// Nothing failing answers: a 500, each failure said.
	openrouter.failing.Store(true)
	_, _, err = chat("llama3.1", false)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusInternalServerError {
		t.Errorf("llama3.1 with every target failing: %v; want a 500", err)
	}

	// No upstream was sent the clients' key, nor a local one the OpenRouter key.
	for _, up := range []*journeyUpstream{desktop, vllm, openrouter} {
		for _, sent := range up.chatList() {
			if up != openrouter && sent.auth != "" || up == openrouter && sent.auth != "Bearer "+orKey {
				t.Errorf("%s was sent Authorization %q", up.name, sent.auth)
			}
		}
	}

	// Stopped as systemd or docker stop does: exit 0, the stop logged, no key in the log.
	if err := srv.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("serve after SIGTERM: %v, want exit 0", waitErr)
		}
	case <-time.After(time.Minute):
		t.Fatal("serve did not stop after SIGTERM")
	}
	if got := logs.String(); !strings.Contains(got, "msg=stopped") || strings.Contains(got, orKey) || strings.Contains(got, masterKey) {
		t.Errorf("the log does not end with the stop, or shows a key:\n%s", got)
	}
}
