package server

// The Responses bridge's request translation as it was before it walked items with jsonx and
// wrote the chat body by appending (BenchmarkResponsesRequest), kept as the oracle the new one
// is held to (FuzzResponsesToChatMatchesOld, TestResponsesToChatMatchesOld): the same chat body,
// byte for byte, and the same refusal, for every body.

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hayula/gateway/internal/echo"
	"github.com/hayula/gateway/internal/jsonx"
)

type oldInputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments *string         `json:"arguments"` // nil when absent or null: refused, as OpenAI's API does
	Output    json.RawMessage `json:"output"`
	Summary   json.RawMessage `json:"summary"` // a reasoning item's
}

type oldInputPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Refusal  string `json:"refusal"`
	ImageURL string `json:"image_url"`
	Detail   string `json:"detail"`
	FileID   string `json:"file_id"`
}

func oldToChat(b *responsesWriter, body []byte) ([]byte, *apiError) {
	// As the chat endpoint checks its body: what the bridge passes on is re-encoded, and would
	// otherwise carry a key's invalid UTF-8 as U+FFFD where chat refuses it.
	if e := checkText(body); e != nil {
		return nil, e
	}
	members, top, e := oldMembersOf(body)
	if e != nil {
		return nil, e
	}
	if e := foldedAt(body, "", isResponsesKey); e != nil {
		return nil, e
	}
	// The one change to the old translation: the first refused field in the body's order, as
	// toChat refuses it, where ranging over responsesRefused picked one at random
	// (TestResponsesRefusedFieldsInOrder).
	if e := refusedField(members, top); e != nil {
		return nil, e
	}
	if e := oldDroppedKinds(top); e != nil {
		return nil, e
	}
	if e := oldLogprobsAsked(top); e != nil {
		return nil, e
	}
	// Chat's conversation in a Responses body would be dropped for the one built from "input"
	// (oldChatBody writes its own "messages"), and explain, which reads a body with "messages" as a
	// chat body, would describe a request the bridge does not send.
	if v, ok := top["messages"]; ok && !isNullOr(v) {
		return nil, badRequest("messages", "unknown_parameter",
			"Unknown parameter: 'messages'. A Responses body carries its conversation in 'input'; send 'messages' to POST /v1/chat/completions.")
	}
	if e := oldUnsupportedLeft(top); e != nil {
		return nil, e
	}
	// out holds the members the bridge builds; the others go on in members' order.
	out := make(map[string]json.RawMessage, 8)
	if m, ok := top["model"]; ok {
		out["model"] = m
		_ = json.Unmarshal(m, &b.model)
	}
	var msgs []chatMessage
	if v, ok := top["instructions"]; ok && !isNullOr(v) {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return nil, badRequest("instructions", "invalid_type", "Invalid type for 'instructions': expected a string.")
		}
		b.echo.Instructions = v
		if s != "" {
			msgs = append(msgs, chatMessage{Role: "system", Content: oldQuote(s), item: fromInstructions})
		}
	}
	in, ok := top["input"]
	if !ok || isNullOr(in) {
		return nil, badRequest("input", "missing_required_parameter", "Missing required parameter: 'input'.")
	}
	msgs, e = oldAppendInput(msgs, in)
	if e != nil {
		return nil, e
	}
	msgs = oldMergeLeadingSystem(msgs)
	if len(msgs) == 0 {
		return nil, badRequest("input", "invalid_value", "'input' has no messages the gateway can send.")
	}
	raw, err := json.Marshal(msgs)
	if err != nil {
		return nil, badRequest("input", "invalid_value", "'input' could not be turned into chat messages: "+err.Error())
	}
	out["messages"] = raw
	b.msgs = msgs
	if v, ok := top["max_output_tokens"]; ok && !isNullOr(v) {
		out["max_tokens"] = v
		b.echo.MaxOutputTokens = v
	}
	if v, ok := top["stream"]; ok {
		if e := b.readStream(v, out); e != nil {
			return nil, e
		}
	}
	if v, ok := top["tools"]; ok && !isNullOr(v) {
		tools, e := oldChatTools(v)
		if e != nil {
			return nil, e
		}
		out["tools"] = tools
		b.echo.Tools = v
	}
	if v, ok := top["tool_choice"]; ok && !isNullOr(v) {
		c, e := oldChatToolChoice(v)
		if e != nil {
			return nil, e
		}
		if v[0] == '{' {
			if e := oldUndeclaredChoice(v, top["tools"]); e != nil {
				return nil, e
			}
		}
		out["tool_choice"] = c
		b.echo.ToolChoice = v
	}
	if v, ok := top["text"]; ok && !isNullOr(v) {
		f, e := oldChatResponseFormat(v)
		if e != nil {
			return nil, e
		}
		if f != nil {
			out["response_format"] = f
		}
		b.echo.Text = v
	}
	if v, ok := top["reasoning"]; ok && !isNullOr(v) {
		effort, e := oldChatReasoningEffort(v)
		if e != nil {
			return nil, e
		}
		if effort != nil {
			out["reasoning_effort"] = effort
			b.effort = true
		}
	}
	if v, ok := top["metadata"]; ok && !isNullOr(v) {
		b.echo.Metadata = v
	}
	b.echo.Temperature, b.echo.TopP = top["temperature"], top["top_p"]
	if v, ok := top["parallel_tool_calls"]; ok && !isNullOr(v) {
		b.echo.ParallelToolCalls = v
	}
	if v, ok := top["max_tool_calls"]; ok && !isNullOr(v) {
		// Not sent on (oldUnsupportedLeft), but echoed as OpenAI echoes it (TestResponsesEchoMaxToolCalls).
		b.echo.MaxToolCalls = v
	}
	return oldChatBody(members, out), nil
}

func oldAppendInput(msgs []chatMessage, in json.RawMessage) ([]chatMessage, *apiError) {
	// in is valid JSON (oldMembersOf decoded the body), a value without white space around it: its
	// first byte says its kind, and an array is walked for its items rather than decoded twice
	// (a validating pass, then a copy of every item) by encoding/json, which every item is
	// again below. An agent's input is most of its body, tens of KB and more.
	var text string
	if len(in) > 0 && (in[0] == '"' || in[0] == 'n') && json.Unmarshal(in, &text) == nil {
		return append(msgs, chatMessage{Role: "user", Content: in, item: fromInput}), nil // a string, or null
	}
	if len(in) == 0 || in[0] != '[' {
		return nil, badRequest("input", "invalid_type", "Invalid type for 'input': expected a string or an array of input items.")
	}
	var items []json.RawMessage
	for it := jsonx.Array(in, false); ; {
		_, v, more := it.Next()
		if !more {
			if !it.Done() {
				return nil, badRequest("input", "invalid_type", "Invalid type for 'input': expected a string or an array of input items.")
			}
			break
		}
		items = append(items, v)
	}
	// calls holds the call_ids of the function calls so far, each with its item's index until an
	// output answers it (then -1).
	calls := map[string]int{}
	th := thoughts{at: -1}
	for i, raw := range items {
		if e := foldedAt(raw, fmt.Sprintf("input[%d]", i), isItemKey); e != nil {
			return nil, e
		}
		var it oldInputItem
		if err := json.Unmarshal(raw, &it); err != nil {
			return nil, typeErrorAt(err, fmt.Sprintf("input[%d]", i), "an input item object")
		}
		switch it.Type {
		case "", "message":
			m, e := oldChatMessageOf(it, i)
			if e != nil {
				return nil, e
			}
			m.item = i
			msgs = append(msgs, m)
			if m.Role == "assistant" {
				th.give(msgs, len(msgs)-1)
			} else {
				// The turn the reasoning was for ended without an answer sent back: it has no
				// assistant message to go with.
				th.pending.Reset()
			}
		case "function_call":
			if it.CallID == "" {
				return nil, missingCallID(i)
			}
			// Without them the model would be shown a call of no function, or arguments that are
			// not JSON (TestResponsesItemFieldErrors).
			if it.Name == "" {
				return nil, missingItemField(i, "name")
			}
			if it.Arguments == nil {
				return nil, missingItemField(i, "arguments")
			}
			if at, ok := calls[it.CallID]; ok && at >= 0 {
				// Two calls of one id while the first is unanswered: chat would get two tool calls
				// its outputs cannot be told apart by (TestResponsesDuplicateCallIDs). Once the
				// first has its output the id may come again: servers that number their calls
				// (call_0, call_1, … in each answer) give a later turn's calls the same ids, and
				// a history of them pairs each output with the call just before it
				// (TestResponsesCallIDReusedOnceAnswered).
				return nil, badRequest(fmt.Sprintf("input[%d].call_id", i), "invalid_value", fmt.Sprintf(
					"Duplicate value for 'input[%d].call_id': the function_call at input[%d] has call_id %s and no output yet; each unanswered function call needs a call_id of its own.", i, at, echo.String(it.CallID)))
			}
			calls[it.CallID] = i
			tc := chatToolCall{item: i}
			tc.ID, tc.Type = it.CallID, "function"
			tc.Function.Name, tc.Function.Arguments = it.Name, *it.Arguments
			if n := len(msgs); n > 0 && msgs[n-1].Role == "assistant" {
				msgs[n-1].ToolCalls = append(msgs[n-1].ToolCalls, tc)
			} else {
				msgs = append(msgs, chatMessage{Role: "assistant", Content: json.RawMessage("null"), ToolCalls: []chatToolCall{tc}, item: i})
			}
			th.give(msgs, len(msgs)-1)
		case "function_call_output":
			if it.CallID == "" {
				return nil, missingCallID(i)
			}
			switch at, ok := calls[it.CallID]; {
			case !ok:
				// As OpenAI's API answers a request that stores nothing: the gateway remembers no
				// earlier response whose call this could answer, and a chat template given a tool
				// message without its call fails upstream, or answers a question never asked.
				return nil, badRequest(fmt.Sprintf("input[%d].call_id", i), "invalid_value", fmt.Sprintf(
					"No tool call found for function call output with call_id %s: send the function_call item before its output in 'input'.", echo.String(it.CallID)))
			case at < 0:
				// A second output for one call (none since answered has the id): chat would get
				// two tool messages for it.
				return nil, badRequest(fmt.Sprintf("input[%d].call_id", i), "invalid_value", fmt.Sprintf(
					"Duplicate function_call_output for call_id %s: each function_call takes one output.", echo.String(it.CallID)))
			}
			out, e := oldToolOutput(it.Output, i)
			if e != nil {
				return nil, e
			}
			calls[it.CallID] = -1
			msgs = append(msgs, chatMessage{Role: "tool", ToolCallID: it.CallID, Content: out, item: i})
		case "reasoning":
			// A reasoning item a client sends back (the gateway's own, or OpenAI's with its
			// summary and encrypted_content) is not an item in chat: its text goes with the
			// assistant message the turn's next message or call builds, as its
			// reasoning_content; OpenAI's encrypted_content means nothing to a local model and is
			// passed over. The items around it keep their order; a call after it joins the
			// assistant message before it, as without it (TestResponsesReasoningInputSentBack,
			// TestResponsesReasoningInputRules).
			text, e := oldReasoningOf(it, i)
			if e != nil {
				return nil, e
			}
			th.read(text)
		default:
			return nil, badRequest(fmt.Sprintf("input[%d].type", i), "unsupported_value", fmt.Sprintf(
				"Input items of type '%s' are not supported by the gateway, which bridges Responses onto chat completions: send messages, function_call, function_call_output and reasoning items.", echo.String(it.Type)))
		}
	}
	if e := unanswered(calls); e != nil {
		return nil, e
	}
	th.flush(msgs)
	return msgs, nil
}

func oldChatMessageOf(it oldInputItem, i int) (chatMessage, *apiError) {
	role := it.Role
	switch role {
	case "user", "assistant", "system":
	case "developer":
		role = "system"
	case "":
		return chatMessage{}, badRequest(fmt.Sprintf("input[%d].role", i), "missing_required_parameter",
			fmt.Sprintf("Missing required parameter: 'input[%d].role'.", i))
	default:
		return chatMessage{}, badRequest(fmt.Sprintf("input[%d].role", i), "invalid_value",
			fmt.Sprintf("Invalid value for 'input[%d].role': '%s'.", i, echo.String(role)))
	}
	if len(it.Content) == 0 || isNullOr(it.Content) {
		// No content, or null: an empty text, never chat's null, which its API refuses for a
		// user message and a chat template renders as "None" (TestResponsesMessageWithoutContent).
		return chatMessage{Role: role, Content: json.RawMessage(`""`)}, nil
	}
	if it.Content[0] == '"' {
		return chatMessage{Role: role, Content: it.Content}, nil
	}
	parts, e := oldPartsOf(it.Content, fmt.Sprintf("input[%d].content", i))
	if e != nil {
		return chatMessage{}, e
	}
	type chatPart struct {
		Type     string `json:"type"`
		Text     string `json:"text,omitempty"`
		ImageURL *struct {
			URL    string `json:"url"`
			Detail string `json:"detail,omitempty"`
		} `json:"image_url,omitempty"`
	}
	var out []chatPart
	var joined strings.Builder // not +=, which is quadratic in the parts (TestResponsesInputLinear)
	images := false
	for j, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text":
			out = append(out, chatPart{Type: "text", Text: p.Text})
			joined.WriteString(p.Text)
		case "refusal":
			out = append(out, chatPart{Type: "text", Text: p.Refusal})
			joined.WriteString(p.Refusal)
		case "input_image":
			if p.ImageURL == "" {
				return chatMessage{}, badRequest(fmt.Sprintf("input[%d].content[%d].image_url", i, j), "unsupported_value",
					"The gateway stores no files: send an input_image with an image_url (an https or data: URL), not a file_id.")
			}
			cp := chatPart{Type: "image_url"}
			cp.ImageURL = &struct {
				URL    string `json:"url"`
				Detail string `json:"detail,omitempty"`
			}{URL: p.ImageURL, Detail: p.Detail}
			out = append(out, cp)
			images = true
		default:
			return chatMessage{}, badRequest(fmt.Sprintf("input[%d].content[%d].type", i, j), "unsupported_value",
				fmt.Sprintf("Content parts of type '%s' are not supported by the gateway: send input_text and input_image parts.", echo.String(p.Type)))
		}
	}
	if !images && (role != "user" || len(out) <= 1) {
		// One text, or an assistant's or system message's texts: a string, which every chat
		// template takes.
		return chatMessage{Role: role, Content: oldQuote(joined.String())}, nil
	}
	raw, _ := json.Marshal(out)
	return chatMessage{Role: role, Content: raw}, nil
}

func oldPartsOf(v json.RawMessage, at string) ([]oldInputPart, *apiError) {
	var raws []json.RawMessage
	if json.Unmarshal(v, &raws) != nil {
		return nil, badRequest(at, "invalid_type",
			fmt.Sprintf("Invalid type for '%s': expected a string or an array of content parts.", at))
	}
	parts := make([]oldInputPart, len(raws))
	for j, raw := range raws {
		if e := foldedAt(raw, fmt.Sprintf("%s[%d]", at, j), isInputPartKey); e != nil {
			return nil, e
		}
		if err := json.Unmarshal(raw, &parts[j]); err != nil {
			return nil, typeErrorAt(err, fmt.Sprintf("%s[%d]", at, j), "a content part object")
		}
	}
	return parts, nil
}

func oldToolOutput(v json.RawMessage, i int) (json.RawMessage, *apiError) {
	if len(v) == 0 || isNullOr(v) {
		return json.RawMessage(`""`), nil
	}
	if v[0] == '"' {
		return v, nil
	}
	parts, e := oldPartsOf(v, fmt.Sprintf("input[%d].output", i))
	if e != nil {
		return nil, e
	}
	var s strings.Builder // not +=, which is quadratic in the parts (TestResponsesInputLinear)
	for j, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text":
			s.WriteString(p.Text)
		case "input_image":
			return nil, badRequest(fmt.Sprintf("input[%d].output[%d]", i, j), "unsupported_value",
				"An input_image in a function_call_output is not supported by the gateway, which bridges Responses onto chat completions, whose tool messages take text only: send the tool's text as the output, and the image as an input_image in a user message after it.")
		case "input_file":
			return nil, badRequest(fmt.Sprintf("input[%d].output[%d]", i, j), "unsupported_value",
				"An input_file in a function_call_output is not supported by the gateway, which bridges Responses onto chat completions, whose tool messages take text only: send the file's text as the output.")
		default:
			return nil, badRequest(fmt.Sprintf("input[%d].output[%d].type", i, j), "unsupported_value",
				fmt.Sprintf("Output parts of type '%s' are not supported: send input_text parts.", echo.String(p.Type)))
		}
	}
	return oldQuote(s.String()), nil
}

func oldReasoningOf(it oldInputItem, i int) (string, *apiError) {
	content, e := oldReasoningParts(it.Content, fmt.Sprintf("input[%d].content", i), "reasoning_text", "")
	if e != nil {
		return "", e
	}
	if _, e := oldReasoningParts(it.Summary, fmt.Sprintf("input[%d].summary", i), "summary_text", "\n\n"); e != nil {
		return "", e
	}
	return content, nil
}

func oldReasoningParts(v json.RawMessage, at, kind, sep string) (string, *apiError) {
	if len(v) == 0 || isNullOr(v) {
		return "", nil
	}
	if v[0] != '[' {
		return "", badRequest(at, "invalid_type", fmt.Sprintf("Invalid type for '%s': expected an array of %s parts.", at, kind))
	}
	parts, e := oldPartsOf(v, at)
	if e != nil {
		return "", e
	}
	var s strings.Builder
	for j, p := range parts {
		if p.Type != kind {
			return "", badRequest(fmt.Sprintf("%s[%d].type", at, j), "invalid_value",
				fmt.Sprintf("Invalid value for '%s[%d].type': '%s' (expected \"%s\").", at, j, echo.String(p.Type), kind))
		}
		if p.Text == "" {
			continue
		}
		if s.Len() > 0 {
			s.WriteString(sep)
		}
		s.WriteString(p.Text)
	}
	return s.String(), nil
}

func oldChatTools(v json.RawMessage) (json.RawMessage, *apiError) {
	var tools []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description *string         `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
		Strict      *bool           `json:"strict,omitempty"`
	}
	if json.Unmarshal(v, &tools) != nil {
		return nil, badRequest("tools", "invalid_type", "Invalid type for 'tools': expected an array of tools.")
	}
	if e := foldedIn(v, "tools", isToolKey); e != nil {
		return nil, e
	}
	type function struct {
		Name        string          `json:"name"`
		Description *string         `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
		Strict      *bool           `json:"strict,omitempty"`
	}
	type tool struct {
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	out := make([]tool, 0, len(tools))
	for i, t := range tools {
		if t.Type != "function" {
			return nil, badRequest(fmt.Sprintf("tools[%d].type", i), "unsupported_value", fmt.Sprintf(
				"Tools of type '%s' are not supported by the gateway, whose models run only function tools.", echo.String(t.Type)))
		}
		if t.Name == "" {
			return nil, badRequest(fmt.Sprintf("tools[%d].name", i), "missing_required_parameter",
				fmt.Sprintf("Missing required parameter: 'tools[%d].name'.", i))
		}
		if isNullOr(t.Parameters) {
			t.Parameters = nil
		}
		out = append(out, tool{Type: "function", Function: function{Name: t.Name, Description: t.Description,
			Parameters: t.Parameters, Strict: t.Strict}})
	}
	raw, _ := json.Marshal(out)
	return raw, nil
}

func oldMergeLeadingSystem(msgs []chatMessage) []chatMessage {
	n := 0
	for n < len(msgs) && msgs[n].Role == "system" && len(msgs[n].Content) > 0 && msgs[n].Content[0] == '"' {
		n++
	}
	if n < 2 {
		return msgs
	}
	// A builder, not text += s: many short system messages would copy the text so far each time,
	// work quadratic in their number (TestResponsesInputLinear).
	var text strings.Builder
	for i := range n {
		var s string
		_ = json.Unmarshal(msgs[i].Content, &s)
		if i > 0 {
			text.WriteString("\n\n")
		}
		text.WriteString(s)
	}
	msgs[0].Content = oldQuote(text.String())
	return append(msgs[:1], msgs[n:]...)
}

func oldQuote(s string) json.RawMessage {
	q, _ := json.Marshal(s)
	return q
}

func oldChatBody(members []member, built map[string]json.RawMessage) []byte {
	chat := make([]byte, 0, 512)
	chat = append(chat, '{')
	add := func(k []byte, v json.RawMessage) {
		if len(chat) > 1 {
			chat = append(chat, ',')
		}
		chat = append(append(append(chat, k...), ':'), v...)
	}
	for _, m := range members {
		k, _ := jsonx.Unquote(m.quoted)
		_, refused := responsesRefused[k]
		if _, ok := built[k]; ok || refused || responsesDropped[k] {
			continue
		}
		add(m.quoted, m.value)
	}
	for _, k := range slices.Sorted(maps.Keys(built)) {
		add(oldQuote(k), built[k])
	}
	return append(chat, '}')
}

func oldMembersOf(body []byte) ([]member, map[string]json.RawMessage, *apiError) {
	if jsonx.Valid(body) {
		it := jsonx.Object(body, false)
		var members []member
		top := make(map[string]json.RawMessage, 16)
		for {
			q, v, ok := it.Next()
			if !ok {
				break
			}
			k, ok := jsonx.Unquote(q)
			if !ok {
				break
			}
			members = append(members, member{quoted: q, value: v})
			top[k] = v
		}
		if it.Done() {
			return members, top, nil
		}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, nil, jsonError(err)
	}
	return nil, nil, jsonError(errNotObject) // null: a map takes it without complaint
}

func oldChatToolChoice(v json.RawMessage) (json.RawMessage, *apiError) {
	if v[0] == '"' {
		return v, nil
	}
	var c struct {
		Type  string `json:"type"`
		Name  string `json:"name"`
		Mode  string `json:"mode"`
		Tools []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tools"`
	}
	ok := json.Unmarshal(v, &c) == nil
	if e := foldedAt(v, "tool_choice", isToolChoiceKey); e != nil {
		return nil, e
	}
	var nested struct {
		Tools json.RawMessage `json:"tools"`
	}
	if ok && json.Unmarshal(v, &nested) == nil {
		if e := foldedIn(nested.Tools, "tool_choice.tools", isToolChoiceKey); e != nil {
			return nil, e
		}
	}
	if ok && c.Type == "allowed_tools" {
		return oldChatAllowedTools(c.Mode, c.Tools)
	}
	if !ok || c.Type != "function" || c.Name == "" {
		return nil, badRequest("tool_choice", "unsupported_value",
			"The gateway supports tool_choice \"none\", \"auto\", \"required\", {\"type\": \"function\", \"name\": …} and {\"type\": \"allowed_tools\", \"mode\": …, \"tools\": […]} of function tools.")
	}
	raw, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": c.Name}})
	return raw, nil
}

func oldChatAllowedTools(mode string, tools []struct {
	Type string `json:"type"`
	Name string `json:"name"`
}) (json.RawMessage, *apiError) {
	if mode != "auto" && mode != "required" {
		return nil, badRequest("tool_choice.mode", "invalid_value",
			fmt.Sprintf("Invalid value for 'tool_choice.mode': '%s' (expected \"auto\" or \"required\").", echo.String(mode)))
	}
	// One that lists no tool (an empty list, or none) goes on listing none, which offers none as
	// chat reads it (core.Params.OffersTools): a target without tools serves it, sent no tools,
	// and Ollama, which has no tool_choice, is sent none (TestResponsesAllowedToolsEmpty).
	type named struct {
		Type     string            `json:"type"`
		Function map[string]string `json:"function"`
	}
	out := make([]named, 0, len(tools))
	for i, t := range tools {
		if t.Type != "function" || t.Name == "" {
			return nil, badRequest(fmt.Sprintf("tool_choice.tools[%d]", i), "unsupported_value",
				"The gateway's allowed_tools lists function tools by name: {\"type\": \"function\", \"name\": …}.")
		}
		out = append(out, named{Type: "function", Function: map[string]string{"name": t.Name}})
	}
	raw, _ := json.Marshal(map[string]any{"type": "allowed_tools", "allowed_tools": map[string]any{"mode": mode, "tools": out}})
	return raw, nil
}

func oldUndeclaredChoice(choice, tools json.RawMessage) *apiError {
	var c struct {
		Type  string `json:"type"`
		Name  string `json:"name"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if json.Unmarshal(choice, &c) != nil {
		return nil
	}
	var defs []struct {
		Name string `json:"name"`
	}
	if len(tools) > 0 && !isNullOr(tools) && json.Unmarshal(tools, &defs) != nil {
		return nil // oldChatTools said so first
	}
	declared := make(map[string]bool, len(defs))
	for _, d := range defs {
		declared[d.Name] = true
	}
	notFound := func(name string) *apiError {
		return badRequest("tool_choice", "invalid_value",
			fmt.Sprintf("Tool choice '%s' not found in 'tools' parameter.", echo.String(name)))
	}
	switch c.Type {
	case "function":
		if !declared[c.Name] {
			return notFound(c.Name)
		}
	case "allowed_tools":
		for _, t := range c.Tools {
			if !declared[t.Name] {
				return notFound(t.Name)
			}
		}
	}
	return nil
}

func oldChatResponseFormat(v json.RawMessage) (json.RawMessage, *apiError) {
	var t struct {
		Format *struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Schema      json.RawMessage `json:"schema"`
			Strict      *bool           `json:"strict"`
			Description *string         `json:"description"`
		} `json:"format"`
	}
	if json.Unmarshal(v, &t) != nil {
		return nil, badRequest("text", "invalid_type", "Invalid type for 'text': expected an object.")
	}
	if e := foldedAt(v, "text", func(k string) bool { return k == "format" }); e != nil {
		return nil, e
	}
	if t.Format == nil {
		return nil, nil
	}
	var raw struct {
		Format json.RawMessage `json:"format"`
	}
	_ = json.Unmarshal(v, &raw)
	if e := foldedAt(raw.Format, "text.format", isFormatKey); e != nil {
		return nil, e
	}
	switch t.Format.Type {
	case "text", "":
		return nil, nil
	case "json_object":
		return json.RawMessage(`{"type":"json_object"}`), nil
	case "json_schema":
		js := map[string]any{"name": t.Format.Name}
		if len(t.Format.Schema) > 0 {
			js["schema"] = t.Format.Schema
		}
		if t.Format.Strict != nil {
			js["strict"] = *t.Format.Strict
		}
		if t.Format.Description != nil {
			js["description"] = *t.Format.Description
		}
		raw, _ := json.Marshal(map[string]any{"type": "json_schema", "json_schema": js})
		return raw, nil
	}
	return nil, badRequest("text.format.type", "unsupported_value",
		fmt.Sprintf("Invalid value for 'text.format.type': '%s'.", echo.String(t.Format.Type)))
}

func oldChatReasoningEffort(v json.RawMessage) (json.RawMessage, *apiError) {
	var r struct {
		Effort json.RawMessage `json:"effort"`
	}
	if v[0] != '{' || json.Unmarshal(v, &r) != nil {
		return nil, badRequest("reasoning", "invalid_type", "Invalid type for 'reasoning': expected an object.")
	}
	if e := foldedAt(v, "reasoning", func(k string) bool { return k == "effort" }); e != nil {
		return nil, e
	}
	if len(r.Effort) == 0 || isNullOr(r.Effort) {
		return nil, nil
	}
	if r.Effort[0] != '"' {
		return nil, badRequest("reasoning.effort", "invalid_type", "Invalid type for 'reasoning.effort': expected a string.")
	}
	return r.Effort, nil
}

func oldLogprobsAsked(top map[string]json.RawMessage) *apiError {
	var n float64
	if v, ok := top["top_logprobs"]; ok && json.Unmarshal(v, &n) == nil && n > 0 {
		return badRequest("top_logprobs", "unsupported_parameter",
			"'top_logprobs' is not supported by the gateway, which does not bridge chat's log probabilities into a response's output_text: leave it unset or 0.")
	}
	var include []json.RawMessage
	if v, ok := top["include"]; ok && json.Unmarshal(v, &include) == nil {
		for i, v := range include {
			if s, _ := jsonx.Unquote(v); s == "message.output_text.logprobs" {
				return badRequest(fmt.Sprintf("include[%d]", i), "unsupported_parameter",
					"'message.output_text.logprobs' cannot be included: the gateway does not bridge chat's log probabilities into a response's output_text.")
			}
		}
	}
	return nil
}

func oldUnsupportedLeft(top map[string]json.RawMessage) *apiError {
	if v, ok := top["n"]; ok && !isNullOr(v) {
		return badRequest("n", "unknown_parameter",
			"Unknown parameter: 'n'. A response has one answer: send one request for each, or 'n' to POST /v1/chat/completions.")
	}
	if v, ok := top["truncation"]; ok && !isNullOr(v) {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return badRequest("truncation", "invalid_type", "Invalid type for 'truncation': expected a string.")
		}
		switch s {
		case "disabled":
		case "auto":
			return badRequest("truncation", "unsupported_value",
				"truncation \"auto\" is not supported by the gateway, whose chat upstreams drop no input items to fit their context window (an input too long is refused, as with \"disabled\"): leave 'truncation' unset or \"disabled\", and shorten 'input'.")
		default:
			return badRequest("truncation", "invalid_value", fmt.Sprintf(
				"Invalid value for 'truncation': '%s' (expected \"auto\" or \"disabled\").", echo.String(s)))
		}
	}
	if v, ok := top["max_tool_calls"]; ok && !isNullOr(v) {
		var n int64
		if json.Unmarshal(v, &n) != nil {
			return badRequest("max_tool_calls", "invalid_type", "Invalid type for 'max_tool_calls': expected an integer.")
		}
		if n < 1 {
			// OpenAI's API refuses 0 and below so; a negative one was echoed as if taken.
			return belowMin("max_tool_calls", n, 1)
		}
	}
	return nil
}

func oldDroppedKinds(top map[string]json.RawMessage) *apiError {
	for _, f := range [...]struct {
		name string
		k    kinds
	}{{"store", kBool}, {"metadata", kObject}, {"include", kArray}, {"top_logprobs", kInteger}, {"stream_options", kObject}} {
		v := top[f.name]
		if len(v) == 0 || fits(f.name, f.k, v) {
			continue
		}
		return badRequest(f.name, "invalid_type", fmt.Sprintf("Invalid type for '%s': expected %s, but got %s instead.",
			f.name, expected(f.k), article(kindName(v))))
	}
	// Each element of include, and each value of metadata, is a string.
	for _, f := range [...]struct {
		name string
		it   func([]byte, bool) jsonx.Iter
	}{{"include", jsonx.Array}, {"metadata", jsonx.Object}} {
		v := top[f.name]
		if len(v) == 0 || v[0] == 'n' {
			continue
		}
		it := f.it(v, false)
		for i := 0; ; i++ {
			k, e, ok := it.Next()
			if !ok {
				break
			}
			if e[0] == '"' {
				continue
			}
			at := fmt.Sprintf("%s[%d]", f.name, i)
			if f.name == "metadata" {
				name, _ := jsonx.Unquote(k)
				at = f.name + "." + echo.String(name)
			}
			return badRequest(at, "invalid_type", fmt.Sprintf("Invalid type for '%s': expected a string, but got %s instead.",
				at, article(kindName(e))))
		}
	}
	return nil
}
