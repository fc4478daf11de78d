package autoroute

import (
	"encoding/json"
	"strings"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/jsonx"
)

// Texts picks from a chat what Classify reads: the system prompt (every "system" or "developer"
// message, joined by newlines) and the last "user" message. Content may be a string or an array of
// parts; text parts are joined by newlines and other parts (images, audio) are skipped. Content that
// is neither reads as empty.
func Texts(msgs []core.Message) (system, lastUser string) {
	var sys []string
	for _, m := range msgs {
		if m.Role == "system" || m.Role == "developer" {
			if t := contentText(m.Content); t != "" {
				sys = append(sys, t)
			}
		}
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			lastUser = contentText(msgs[i].Content)
			break
		}
	}
	return strings.Join(sys, "\n"), lastUser
}

func contentText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		// Read in place: json.Unmarshal validated and copied the literal a second time after the
		// server had, about a third of what model "auto" cost over an explicit route.
		if s, ok := jsonx.Unquote(raw); ok {
			return s
		}
		return decodedText(raw)
	}
	return partsText(raw)
}

// decodedText is contentText through encoding/json: the definition jsonx.Unquote is held to
// (FuzzContentText), and the answer for what it does not take whole.
func decodedText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if raw[0] == '"' {
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		return ""
	}
	return partsText(raw)
}

func partsText(raw json.RawMessage) string {
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		if (p.Type == "text" || p.Type == "input_text") && p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}
