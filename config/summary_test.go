package config

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestSummaryGolden pins the compiled form of a config that uses every key: a change in what a
// config means shows up here as a diff to review.
func TestSummaryGolden(t *testing.T) {
	const secret = "sk-or-very-secret"
	cfg, err := Load("testdata/full.toml", env("OPENROUTER_API_KEY", secret))
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.Summary()
	if strings.Contains(got, secret) || strings.Contains(got, hashTest) {
		t.Error("Summary shows a secret or a key hash")
	}
	const golden = "testdata/full.summary.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./config -run TestSummaryGolden -update)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("Summary mismatch (-%s +got):\n%s", golden, diff)
	}
}

func TestSummaryOpen(t *testing.T) {
	cfg, err := Parse([]byte(minimal), "min.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Summary(); !strings.Contains(got, "keys: none, the gateway is open") {
		t.Errorf("Summary of an open config does not say so:\n%s", got)
	}
}

// TestWarnsModelsReadiness: a managed openai target probed for readiness on /v1/models (the
// openai default, or spelled out) is warned about, as llama-server answers it while loading; a
// /health probe, an unmanaged target and an ollama one are not.
func TestWarnsModelsReadiness(t *testing.T) {
	const managed = `adapter = "openai"
url = "http://127.0.0.1:{port}/v1"
command = ["llama-server", "--port", "{port}"]
`
	for _, tt := range []struct {
		name, target string
		warn         bool
	}{
		{"default health_path", managed, true},
		{"explicit /models", managed + `health_path = "/models/"` + "\n", true},
		{"absolute /v1/models", managed + `health_path = "http://127.0.0.1:{port}/v1/models"` + "\n", true},
		{"/health", managed + `health_path = "http://127.0.0.1:{port}/health"` + "\n", false},
		{"not managed", "adapter = \"openai\"\nurl = \"http://127.0.0.1:8000/v1\"\n", false},
		{"ollama", "adapter = \"ollama\"\nurl = \"http://127.0.0.1:11434\"\nmodel = \"m\"\ncommand = [\"ollama\", \"serve\"]\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte("[targets.a]\n"+tt.target+"\n[routes.r]\ntargets = [\"a\"]\n"), "w.toml", nil)
			if err != nil {
				t.Fatal(err)
			}
			ws := cfg.Warnings()
			if got := len(ws) == 1 && strings.Contains(ws[0], "target a:") && strings.Contains(ws[0], "/health"); got != tt.warn || len(ws) > 1 {
				t.Errorf("warnings %q, want one: %v", ws, tt.warn)
			}
			if got := strings.Contains(cfg.Summary(), "\nwarnings:\n  target a:"); got != tt.warn {
				t.Errorf("Summary shows the warning: %v, want %v", got, tt.warn)
			}
		})
	}
}

// TestSummaryBrowsers: the summary says which Host and Origin values are served, "*" and none
// named included.
func TestSummaryBrowsers(t *testing.T) {
	for _, tc := range []struct{ extra, want string }{
		{"", "browsers: Host IP literals, localhost only; Origin none, loopback only\n"},
		{"allowed_hosts = [\"*\"]\nallowed_origins = [\"*\"]\n[[keys]]\nname = \"k\"\nsha256 = \"" + hashTest + "\"\n",
			"browsers: Host any (\"*\"); Origin any (\"*\")\n"},
	} {
		cfg, err := Parse([]byte(tc.extra+"[targets.a]\nadapter = \"openai\"\nurl = \"http://127.0.0.1:1/v1\"\n[routes.r]\ntargets = [\"a\"]\n"), "b.toml", nil)
		if err != nil {
			t.Fatal(err)
		}
		if s := cfg.Summary(); !strings.Contains(s, tc.want) {
			t.Errorf("summary has no %q:\n%s", tc.want, s)
		}
	}
}

// TestSummaryStreamUsageAndWindow: check-config shows a target's stream_usage and
// window_counts_max_tokens when they differ from the adapter's default, as it shows specialists
// when set; it showed neither, so a config's effect on the context filter and on a key's tpm
// could not be read from it (this test failed first).
func TestSummaryStreamUsageAndWindow(t *testing.T) {
	const openai = "adapter = \"openai\"\nurl = \"http://127.0.0.1:1/v1\"\n"
	const ollama = "adapter = \"ollama\"\nurl = \"http://127.0.0.1:11434\"\nmodel = \"m\"\n"
	for _, tc := range []struct {
		name, target string
		want         []string // lines the summary has
		not          []string // words it has not
	}{
		{"openai defaults", openai, nil, []string{"stream_usage", "window_counts_max_tokens"}},
		{"ollama defaults", ollama, nil, []string{"stream_usage", "window_counts_max_tokens"}},
		{"openai stream_usage false", openai + "stream_usage = false\n",
			[]string{"\n  a: stream_usage false\n"}, []string{"window_counts_max_tokens"}},
		{"openai stream_usage true (the default)", openai + "stream_usage = true\n", nil, []string{"stream_usage"}},
		{"openai window_counts_max_tokens false", openai + "window_counts_max_tokens = false\n",
			[]string{"\n  a: window_counts_max_tokens false\n"}, []string{"stream_usage"}},
		{"ollama window_counts_max_tokens true", ollama + "window_counts_max_tokens = true\n",
			[]string{"\n  a: window_counts_max_tokens true\n"}, nil},
		{"both", openai + "stream_usage = false\nwindow_counts_max_tokens = false\n",
			[]string{"\n  a: window_counts_max_tokens false, stream_usage false\n"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte("[targets.a]\n"+tc.target+"[routes.r]\ntargets = [\"a\"]\n"), "s.toml", nil)
			if err != nil {
				t.Fatal(err)
			}
			s := cfg.Summary()
			for _, w := range tc.want {
				if !strings.Contains(s, w) {
					t.Errorf("summary has no %q:\n%s", w, s)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(s, n) {
					t.Errorf("summary shows %q, at its default:\n%s", n, s)
				}
			}
		})
	}
}
