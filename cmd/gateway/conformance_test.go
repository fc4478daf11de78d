package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/conformance"
	"github.com/hayula/gateway/conformance/conformancetest"
	"github.com/hayula/gateway/server"
)

// Route names differ from the upstream model names, so a pass also proves that the gateway
// splices the target's model into the body instead of forwarding the client's.
const (
	confChat  = "hayula-chat"
	confEmbed = "hayula-embed"
	confKey   = "hk-conformance-client-key"
)

// conformanceGateway serves a gateway whose two routes lead to the reference fake (with the given
// faults), and returns its URL. With keyed, the gateway requires confKey.
func conformanceGateway(t *testing.T, keyed bool, faults ...conformancetest.Fault) string {
	t.Helper()
	return conformanceGatewayTo(t, keyed, conformancetest.NewHandler(faults...))
}

// conformanceGatewayTo is conformanceGateway in front of upstream.
func conformanceGatewayTo(t *testing.T, keyed bool, upstream http.Handler) string {
	t.Helper()
	up := httptest.NewServer(upstream)
	t.Cleanup(up.Close)
	var b strings.Builder
	if keyed {
		sum := sha256.Sum256([]byte(confKey))
		fmt.Fprintf(&b, "[[keys]]\nname = \"conformance\"\nsha256 = %q\n\n", hex.EncodeToString(sum[:]))
	}
	for _, tg := range []struct{ name, model string }{{"chat", conformancetest.Model}, {"embed", conformancetest.EmbeddingModel}} {
		fmt.Fprintf(&b, "[targets.%s]\nadapter = \"openai\"\nurl = %q\nmodel = %q\napi_key_env = \"FAKE_UPSTREAM_KEY\"\n\n",
			tg.name, up.URL+"/v1", tg.model)
	}
	fmt.Fprintf(&b, "[routes.%s]\ntargets = [\"chat\"]\n\n[routes.%s]\ntargets = [\"embed\"]\n", confChat, confEmbed)
	env := map[string]string{"FAKE_UPSTREAM_KEY": conformancetest.APIKey}
	cfg, err := config.Parse([]byte(b.String()), "conformance.toml", func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("config: %v\n%s", err, b.String())
	}
	srv, err := server.New(server.Options{Config: cfg})
	if err != nil {
		t.Fatalf("server: %v", err)
	}
	gw := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		gw.Close()
		srv.Close()
	})
	return gw.URL
}

// TestConformanceCommandAgainstGateway: `gateway conformance` against the gateway over the
// reference fake exits 0.
func TestConformanceCommandAgainstGateway(t *testing.T) {
	url := conformanceGateway(t, true)
	code, out, errOut := runCmd(t, "conformance", "--base-url", url, "--api-key", confKey,
		"--model", confChat, "--embedding-model", confEmbed)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "chat.stream.done") {
		t.Errorf("stdout has no report:\n%s", out)
	}
}

// TestConformanceCommandIsWired: the subcommand reaches conformance.Main (its own usage errors
// exit 2) and the usage text names it.
func TestConformanceCommandIsWired(t *testing.T) {
	code, _, errOut := runCmd(t, "conformance")
	if code != 2 || !strings.Contains(errOut, "--base-url is required") {
		t.Errorf("no flags: exit %d, stderr %q", code, errOut)
	}
	if _, out, _ := runCmd(t, "help"); !strings.Contains(out, "gateway conformance --base-url URL") {
		t.Errorf("usage lacks the conformance line:\n%s", out)
	}
}

// TestGatewayPassesEveryMust is issue 4's "against the gateway over fake upstreams: every MUST
// passes", open and with an API key (which is what lets errors.bad_key run). Every check that
// does not PASS is listed, so a check that starts skipping, say because the gateway began
// answering 404 to tools, fails here as loudly as a MUST failure. The faulty upstreams show that
// the test can fail, and pin what the gateway does with a non-conforming upstream: it relays the
// body as it is, but ends every stream with [DONE] itself.
func TestGatewayPassesEveryMust(t *testing.T) {
	// Nothing answers 429, so there is no Retry-After to judge.
	always := map[string]conformance.Result{
		"errors.retry_after": conformance.Skip,
	}
	tests := []struct {
		name   string
		keyed  bool
		faults []conformancetest.Fault
		// notPassing is every check beyond always that is not PASS, with its result.
		notPassing map[string]conformance.Result
	}{
		{"open gateway", false, nil, map[string]conformance.Result{
			"errors.bad_key": conformance.Skip, // without a key the suite cannot send a bad one
		}},
		{"keyed gateway", true, nil, nil},
		{"upstream without [DONE]", true, []conformancetest.Fault{conformancetest.FaultNoDone}, nil},
		{"upstream with a wrong object", true, []conformancetest.Fault{conformancetest.FaultWrongObject},
			map[string]conformance.Result{"chat.object": conformance.Fail}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := maps.Clone(always)
			maps.Copy(want, tt.notPassing)
			url := conformanceGateway(t, tt.keyed, tt.faults...)
			tr := &http.Transport{}
			t.Cleanup(tr.CloseIdleConnections)
			o := conformance.Options{
				BaseURL:        url,
				Model:          confChat,
				EmbeddingModel: confEmbed,
				Now:            conformancetest.Now,
				HTTPClient:     &http.Client{Transport: tr},
			}
			if tt.keyed {
				o.APIKey = confKey
			}
			rep, err := conformance.Run(context.Background(), o)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			got := map[string]conformance.Result{}
			for _, c := range rep.Checks {
				if c.Result != conformance.Pass {
					got[c.ID] = c.Result
				}
				if c.Grade == conformance.Must && c.Result != conformance.Pass && c.Result != conformance.Skip && want[c.ID] != c.Result {
					t.Errorf("MUST %s: %s (%s)%s", c.ID, c.Result, c.Reason, evidence(c))
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				for _, c := range rep.Checks {
					if c.Result != conformance.Pass {
						t.Logf("%s %s: %s%s", c.Result, c.ID, c.Reason, evidence(c))
					}
				}
				t.Errorf("checks that did not pass (-want +got):\n%s", diff)
			}
			wantExit := 0
			if slices.Contains(slices.Collect(maps.Values(want)), conformance.Fail) {
				wantExit = 1
			}
			if rep.ExitCode() != wantExit {
				var md bytes.Buffer
				_ = rep.Write(&md, conformance.FormatMarkdown)
				t.Errorf("exit code %d, want %d\n%s", rep.ExitCode(), wantExit, md.String())
			}
		})
	}
}

func evidence(c conformance.CheckResult) string {
	if c.Evidence == nil {
		return ""
	}
	return fmt.Sprintf("; expected %s; seen %s; excerpt %s", c.Evidence.Expected, c.Evidence.Seen, c.Evidence.Excerpt)
}

// TestGatewayRelaysReasoningRefusals: in front of a model that refuses max_tokens, stop and
// logprobs as OpenAI's reasoning models do, the gateway relays each refusal as it came (param
// and code), so the suite sends max_completion_tokens and skips what the model does not take:
// no check fails.
func TestGatewayRelaysReasoningRefusals(t *testing.T) {
	url := conformanceGatewayTo(t, true, conformancetest.NewReasoningHandler())
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	rep, err := conformance.Run(context.Background(), conformance.Options{
		BaseURL: url, Model: confChat, EmbeddingModel: confEmbed, APIKey: confKey,
		Now: conformancetest.Now, HTTPClient: &http.Client{Transport: tr},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := map[string]conformance.Result{"errors.retry_after": conformance.Skip}
	for _, id := range []string{"chat.max_tokens.length", "chat.max_tokens.respected", "chat.stop.excluded",
		"logprobs.content", "logprobs.top_count"} {
		want[id] = conformance.Skip
	}
	got := map[string]conformance.Result{}
	for _, c := range rep.Checks {
		if c.Result != conformance.Pass {
			got[c.ID] = c.Result
			t.Logf("%s %s: %s%s", c.Result, c.ID, c.Reason, evidence(c))
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("checks that did not pass (-want +got):\n%s", diff)
	}
}
