package config

import (
	"testing"
	"time"
)

// TestPublicTargetNotPolledByDefault: a public target (a third party's, a paid cloud tail) is not
// asked for its health every 30 s with the gateway's key unless health_interval says so; a
// private one is, as before.
func TestPublicTargetNotPolledByDefault(t *testing.T) {
	src := `
[targets.local]
adapter = "openai"
url = "http://127.0.0.1:8080/v1"

[targets.cloud]
adapter = "openai"
url = "https://openrouter.ai/api/v1"
class = "public"

[targets.cloud-checked]
adapter = "openai"
url = "https://api.openai.com/v1"
class = "public"
health_interval = "1m"

[routes.r]
targets = ["local", "cloud", "cloud-checked"]
`
	cfg, err := Parse([]byte(src), "t.toml", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]time.Duration{"local": DefaultHealthInterval, "cloud": 0, "cloud-checked": time.Minute} {
		tg, _ := cfg.Target(name)
		if tg.HealthInterval != want {
			t.Errorf("%s: health_interval %s, want %s", name, tg.HealthInterval, want)
		}
	}
}
