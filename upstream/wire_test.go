package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/jsonx"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata/wire")

// A wire case is a recorded exchange: what the client sent, which target it went to, and what
// the upstream answered; the want sections are what went out on the wire and what the caller of
// Chat saw. Sections are "-- name --" lines followed by their bytes, like txtar.
type wireCase struct {
	comment  string
	names    []string
	sections map[string][]byte
}

func readWireCase(t *testing.T, path string) *wireCase {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := &wireCase{sections: map[string][]byte{}}
	cur := ""
	for len(raw) > 0 {
		line, rest, _ := bytes.Cut(raw, []byte("\n"))
		raw = rest
		if s := string(line); strings.HasPrefix(s, "-- ") && strings.HasSuffix(s, " --") {
			cur = strings.TrimSuffix(strings.TrimPrefix(s, "-- "), " --")
			c.names = append(c.names, cur)
			c.sections[cur] = []byte{}
			continue
		}
		line = append(line, '\n')
		if cur == "" {
			c.comment += string(line)
		} else {
			c.sections[cur] = append(c.sections[cur], line...)
		}
	}
	return c
}

func (c *wireCase) write(t *testing.T, path string) {
	t.Helper()
	var b bytes.Buffer
	b.WriteString(c.comment)
	for _, n := range c.names {
		fmt.Fprintf(&b, "-- %s --\n", n)
		b.Write(c.sections[n])
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (c *wireCase) set(name string, content []byte) {
	if _, ok := c.sections[name]; !ok {
		c.names = append(c.names, name)
	}
	c.sections[name] = content
}

// recorded is an upstream answer parsed from an upstream.http section.
type recorded struct {
	status int
	header http.Header
	body   []byte
}

func parseRecorded(t *testing.T, raw []byte) recorded {
	t.Helper()
	r := recorded{header: http.Header{}}
	statusLine, rest, _ := bytes.Cut(raw, []byte("\n"))
	fields := strings.Fields(string(statusLine))
	if len(fields) < 2 {
		t.Fatalf("bad status line %q", statusLine)
	}
	r.status, _ = strconv.Atoi(fields[1])
	for {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 {
			break
		}
		k, v, _ := strings.Cut(string(line), ":")
		r.header.Add(k, strings.TrimSpace(v))
	}
	r.body = rest
	return r
}

// parseTarget reads the target section: model, api_key, adapter (openai by default; ollama and
// saif URLs have no /v1), reasoning (think-tags, think-open) and specialists (comma-separated).
// A key or value it does not know fails the test: read as the default, a misspelt case would
// test the default's behaviour under the name of another.
func parseTarget(t testing.TB, raw []byte, url string) *core.Target {
	t.Helper()
	tg := target(url)
	tg.Model = ""
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "model":
			tg.Model = v
		case "api_key":
			tg.APIKey = core.Secret(v)
		case "adapter":
			switch v {
			case "ollama":
				tg.Adapter, tg.URL = core.AdapterOllama, url
			case "saif":
				tg.Adapter, tg.URL = core.AdapterSAIF, url
			case "openai":
			default:
				t.Fatalf("target section: unknown adapter %q", v)
			}
		case "reasoning":
			switch v {
			case "passthrough":
			case "think-tags":
				tg.Reasoning = core.ReasoningThinkTags
			case "think-open":
				tg.Reasoning = core.ReasoningThinkOpen
			default:
				t.Fatalf("target section: unknown reasoning %q", v)
			}
		case "specialists":
			for _, sp := range strings.Split(v, ",") {
				tg.Specialists = append(tg.Specialists, strings.TrimSpace(sp))
			}
		default:
			t.Fatalf("target section: unknown key in %q", line)
		}
	}
	return tg
}

// clientRequest decodes client.json the way the server does (the fields adapters read). The
// gateway's own fields are read and stripped: "x-route-hint" becomes RouteHint, "x-op" (a test
// device) picks the endpoint.
func clientRequest(t testing.TB, client []byte) *core.Request {
	t.Helper()
	var w struct {
		Model         string `json:"model"`
		Stream        bool   `json:"stream"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		Messages  []core.Message `json:"messages"`
		MaxTokens *int           `json:"max_tokens"`
		MaxCompl  *int           `json:"max_completion_tokens"`
		Hint      string         `json:"x-route-hint"`
		Op        string         `json:"x-op"`
		core.Params
	}
	if err := json.Unmarshal(client, &w); err != nil {
		t.Fatal(err)
	}
	req := &core.Request{Model: w.Model, Stream: w.Stream, IncludeUsage: w.StreamOptions.IncludeUsage,
		Messages: w.Messages, Params: w.Params, RouteHint: w.Hint,
		Body:  jsonx.Delete(client, "x-route-hint", "x-op"),
		Tools: w.Params.OffersTools() || w.Params.OffersFunctions()}
	switch w.Op {
	case "completions":
		req.Op = core.OpCompletions
	case "embeddings":
		req.Op = core.OpEmbeddings
	}
	if w.MaxCompl != nil {
		req.MaxTokens = *w.MaxCompl
	} else if w.MaxTokens != nil {
		req.MaxTokens = *w.MaxTokens
	}
	return req
}

// renderRequest is the upstream request as the golden file shows it.
func renderRequest(r *http.Request, body []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s\n", r.Method, r.URL.RequestURI())
	var keys []string
	for k := range r.Header {
		if k != "Content-Length" && k != "Accept-Encoding" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(r.Header[k], ", "))
	}
	b.WriteString("\n")
	b.Write(body)
	if len(body) > 0 && body[len(body)-1] != '\n' {
		b.WriteString("\n") // so that the next section header starts its own line
	}
	return b.Bytes()
}

// renderResult is what the caller of Chat saw, as the golden file shows it.
func renderResult(resp *Response, err error) []byte {
	var b bytes.Buffer
	if err != nil {
		renderError(&b, err)
		return b.Bytes()
	}
	if resp.Stream == nil {
		renderHeader(&b, resp.Header)
		fmt.Fprintf(&b, "body: %s\n", resp.Body)
		return b.Bytes()
	}
	defer resp.Stream.Close()
	events, end := drain(resp.Stream)
	renderHeader(&b, resp.Header) // a stream's headers may be filled by its first event
	for _, e := range events {
		fmt.Fprintf(&b, "event: %s\n", e)
	}
	fmt.Fprintf(&b, "end: %s\n", end)
	return b.Bytes()
}

func renderHeader(b *bytes.Buffer, h http.Header) {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(b, "header: %s: %s\n", k, strings.Join(h[k], ", "))
	}
}

func renderError(b *bytes.Buffer, err error) {
	var (
		se *core.StatusError
		pe *core.ProtocolError
	)
	switch {
	case errors.As(err, &se):
		fmt.Fprintf(b, "error: *core.StatusError\nstatus: %d\nmessage: %s\ntype: %s\ncode: %s\nparam: %s\nretry_after: %s\n",
			se.Status, se.Message, se.Type, se.Code, se.Param, se.RetryAfter)
	case errors.As(err, &pe):
		fmt.Fprintf(b, "error: *core.ProtocolError\ncause: %T\nmessage: %s\n", pe.Err, pe.Err)
	default:
		fmt.Fprintf(b, "error: %T\nmessage: %v\n", err, err)
	}
}

func TestWireGolden(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "wire", "*.txt"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no wire cases: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			c := readWireCase(t, path)
			rec := parseRecorded(t, c.sections["upstream.http"])
			client := c.sections["client.json"]
			var seen []byte
			srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				seen = renderRequest(r, body)
				for k, vs := range rec.header {
					w.Header()[k] = vs
				}
				w.WriteHeader(rec.status)
				_, _ = w.Write(rec.body)
			})
			tg := parseTarget(t, c.sections["target"], srv.URL)
			req := clientRequest(t, client)
			got := renderResult(newSet(t, tg).Chat(context.Background(), tg, req))
			if *update {
				c.set("want.request", seen)
				c.set("want.result", got)
				c.write(t, path)
				return
			}
			if diff := cmp.Diff(string(c.sections["want.request"]), string(seen)); diff != "" {
				t.Errorf("upstream request mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(string(c.sections["want.result"]), string(got)); diff != "" {
				t.Errorf("result mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
