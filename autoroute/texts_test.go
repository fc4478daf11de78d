package autoroute

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hayula/gateway/core"
)

func TestTexts(t *testing.T) {
	msg := func(role, content string) core.Message {
		return core.Message{Role: role, Content: json.RawMessage(content)}
	}
	tests := []struct {
		name             string
		msgs             []core.Message
		system, lastUser string
	}{
		{"plain", []core.Message{msg("system", `"be brief"`), msg("user", `"hello"`)}, "be brief", "hello"},
		{"last user wins", []core.Message{msg("user", `"CVE-2021-44228?"`), msg("assistant", `"it is Log4Shell"`),
			msg("user", `"thanks, now a poem"`)}, "", "thanks, now a poem"},
		{"parts", []core.Message{msg("developer", `[{"type":"text","text":"a"},{"type":"text","text":"b"}]`),
			msg("user", `[{"type":"image_url","image_url":{"url":"data:"}},{"type":"text","text":"what is this?"}]`)},
			"a\nb", "what is this?"},
		{"two system messages", []core.Message{msg("system", `"one"`), msg("system", `"two"`), msg("user", `"x"`)}, "one\ntwo", "x"},
		{"no user", []core.Message{msg("system", `"s"`), msg("assistant", `"a"`)}, "s", ""},
		{"null and junk content", []core.Message{msg("system", `null`), msg("user", `{"oops":1}`)}, "", ""},
		{"empty", nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, u := Texts(tt.msgs)
			if diff := cmp.Diff([2]string{tt.system, tt.lastUser}, [2]string{s, u}); diff != "" {
				t.Errorf("Texts (-want +got):\n%s", diff)
			}
		})
	}
}
