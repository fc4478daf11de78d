package netclass

import "testing"

func TestLocal(t *testing.T) {
	for _, tc := range []struct {
		host  string
		local bool
	}{
		{"127.0.0.1", true}, {"::1", true}, {"[::1]", true}, {"0.0.0.0", true}, {"10.1.2.3", true},
		{"172.16.0.1", true}, {"192.168.1.20", true}, {"fd00::1", true}, {"169.254.1.1", true},
		{"fe80::1", true}, {"100.64.0.1", true}, {"100.127.255.254", true}, {"::ffff:192.168.1.1", true},
		{"localhost", true}, {"LOCALHOST.", true}, {"a.localhost", true}, {"printer.local", true},
		{"gpu-box.lan", true}, {"nas.home", true}, {"box.home.arpa", true}, {"llm.internal", true},
		{"x.localdomain", true}, {"x.test", true}, {"gpu.tail1234.ts.net", true}, {"ollama", true},
		{"100.128.0.1", false}, {"8.8.8.8", false}, {"2001:4860::8888", false}, {"openrouter.ai", false},
		{"api.openai.com", false}, {"home.example.com", false}, {"notlan", true},
	} {
		if got, why := Local(tc.host); got != tc.local || why == "" {
			t.Errorf("Local(%q) = %v %q, want %v", tc.host, got, why, tc.local)
		}
	}
}
