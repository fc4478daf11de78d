package litellm_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/config/litellm"
)

// FuzzConvert: whatever the YAML, Convert returns an *Error or a file that loads, with every
// variable it names set; and a value written as an api_key never reaches the file.
func FuzzConvert(f *testing.F) {
	for _, name := range []string{"homelab.yaml", "docs.yaml", "hosted.yaml"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("model_list:\n  - model_name: \"a\\nb\"\n    litellm_params: {model: \"ollama/x\\n[y]\", api_base: \"http://h:1/a b\"}\n"))
	f.Add([]byte("x: &m {b: [a]}\nmodel_list:\n  - model_name: a\n    litellm_params: {model: ollama/a}\n  - model_name: b\n    litellm_params: {model: ollama/b}\n" +
		"router_settings:\n  fallbacks: [{<<: [*m, *m], a: [b], \"*\": [a]}, {a: []}, {\"*\": [b]}, {}]\n  default_fallbacks: [a]\n" +
		"litellm_settings:\n  fallbacks: [{b: [a]}]\n  context_window_fallbacks: [{\"*\": [a]}, {b: [a]}, {b: [b]}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := litellm.Convert(data, "fuzz.yaml")
		if err != nil {
			var e *litellm.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is no *litellm.Error", err)
			}
			return
		}
		if _, err := config.Parse(res.TOML, "fuzz.toml", func(string) string { return "x" }); err != nil {
			t.Fatalf("the converted file does not load:\n%v\n%s", err, res.TOML)
		}
		if strings.Contains(string(res.TOML), "SENTINEL-7f3a") {
			t.Fatalf("a key reached the file:\n%s", res.TOML)
		}
	})
}
