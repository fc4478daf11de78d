package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/server"
	"github.com/hayula/gateway/upstream"
)

const laptopKey = "hk-test-laptop-key"

// keyed has two keys: laptop (routes saif only) and ci (all routes, strict).
func keyed(t *testing.T) (*gateway, *fake) {
	t.Helper()
	up := newFake(t, "saif")
	cfg := `max_body_bytes = 2048
` + target("saif", up.url(), "private") + target("cloud", up.url(), "public") + `
[routes.saif]
targets = ["saif"]

[routes.cloud]
targets = ["cloud", "saif"]

[[keys]]
name = "laptop"
sha256 = "` + sha256hex(laptopKey) + `"
routes = ["saif"]

[[keys]]
name = "ci"
sha256 = "` + sha256hex("hk-ci") + `"
strict = true
`
	return newGateway(t, cfg, nil), up
}

func TestBadInputs(t *testing.T) {
	g, _ := keyed(t)
	auth := []string{"Authorization", "Bearer " + laptopKey}
	tests := []struct {
		name   string
		body   string
		hdr    []string
		status int
		code   string
		param  any
	}{
		{"invalid JSON", `{"model":`, auth, 400, "invalid_json", nil},
		{"not an object", `[1,2]`, auth, 400, "invalid_type", nil},
		{"missing model", `{"messages":[{"role":"user","content":"x"}]}`, auth, 400, "missing_required_parameter", "model"},
		{"missing messages", `{"model":"saif"}`, auth, 400, "missing_required_parameter", "messages"},
		{"empty messages", `{"model":"saif","messages":[]}`, auth, 400, "empty_array", "messages"},
		{"empty messages, slow decoder", `{"model":"saif","messages":[],"stop":"\ud800"}`, auth, 400, "empty_array", "messages"},
		{"null messages", `{"model":"saif","messages":null}`, auth, 400, "missing_required_parameter", "messages"},
		{"messages wrong type", `{"model":"saif","messages":"hi"}`, auth, 400, "invalid_type", "messages"},
		{"unknown model", `{"model":"gpt-9","messages":[{"role":"user","content":"x"}]}`, auth, 404, "model_not_found", "model"},
		{"route not allowed", `{"model":"cloud","messages":[{"role":"user","content":"x"}]}`, auth, 404, "model_not_found", "model"},
		{"no key", `{"model":"saif","messages":[{"role":"user","content":"x"}]}`, nil, 401, "invalid_api_key", nil},
		{"bad key", `{"model":"saif","messages":[{"role":"user","content":"x"}]}`, []string{"Authorization", "Bearer nope"}, 401, "invalid_api_key", nil},
		{"too large", `{"model":"saif","messages":[{"role":"user","content":"` + strings.Repeat("x", 4096) + `"}]}`, auth, 413, "request_too_large", nil},
		{"bad fallback option", `{"model":"saif","messages":[{"role":"user","content":"x"}]}`, append([]string{"x-fallback-on", "maybe"}, auth...), 400, "invalid_value", "x-fallback-on"},
		{"bad privacy option", `{"model":"saif","x-hayula-privacy":"public","messages":[{"role":"user","content":"x"}]}`, auth, 400, "invalid_value", "x-hayula-privacy"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := g.post(t, "/v1/chat/completions", tc.body, tc.hdr...)
			if rep.status != tc.status {
				t.Fatalf("status %d, want %d: %s", rep.status, tc.status, rep.body)
			}
			if got := rep.errorField(t, "code"); got != tc.code {
				t.Errorf("code %v, want %v", got, tc.code)
			}
			if got := rep.errorField(t, "param"); got != tc.param {
				t.Errorf("param %v, want %v", got, tc.param)
			}
			if msg, _ := rep.errorField(t, "message").(string); msg == "" {
				t.Error("empty message")
			}
		})
	}
	t.Run("a route the key may not use is answered as one that does not exist", func(t *testing.T) {
		// Byte for byte but for the name: a different answer would tell the key the route exists.
		denied := g.post(t, "/v1/chat/completions", `{"model":"cloud","messages":[{"role":"user","content":"x"}]}`, auth...)
		unknown := g.post(t, "/v1/chat/completions", `{"model":"clouq","messages":[{"role":"user","content":"x"}]}`, auth...)
		if denied.status != unknown.status || strings.ReplaceAll(string(denied.body), "cloud", "clouq") != string(unknown.body) {
			t.Fatalf("denied %d %s\nunknown %d %s", denied.status, denied.body, unknown.status, unknown.body)
		}
	})
	t.Run("x-api-key works too", func(t *testing.T) {
		if rep := g.chat(t, "saif", "x-api-key", laptopKey); rep.status != 200 {
			t.Fatalf("status %d: %s", rep.status, rep.body)
		}
	})
	t.Run("unknown path", func(t *testing.T) {
		rep := g.post(t, "/v1/nope", "{}")
		if rep.status != 404 || rep.errorField(t, "code") != "unknown_url" {
			t.Fatalf("status %d: %s", rep.status, rep.body)
		}
	})
}

func TestStrictKeyNeverReachesPublic(t *testing.T) {
	g, up := keyed(t)
	rep := g.chat(t, "cloud", "Authorization", "Bearer hk-ci")
	if rep.status != 200 || rep.header.Get("x-hayula-chain") != "saif" {
		t.Fatalf("status %d chain %q", rep.status, rep.header.Get("x-hayula-chain"))
	}
	if up.hits.Load() != 1 {
		t.Fatalf("hits %d", up.hits.Load())
	}
}

func TestModelsListsAllowedRoutes(t *testing.T) {
	g, _ := keyed(t)
	req, _ := http.NewRequest(http.MethodGet, g.ts.URL+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+laptopKey)
	resp, err := g.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID, Object string
		} `json:"data"`
	}
	if err := decodeJSON(resp, &list); err != nil {
		t.Fatal(err)
	}
	if list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != "saif" || list.Data[0].Object != "model" {
		t.Fatalf("models %+v", list)
	}
}

// panicky is an Upstream that panics, to prove a panic never escapes.
type panicky struct{}

func (panicky) Chat(context.Context, *core.Target, *core.Request) (*upstream.Response, error) {
	panic("adapter bug")
}

func TestPanicBecomes500(t *testing.T) {
	up := newFake(t, "solo")
	g := newGateway(t, target("solo", up.url(), "private")+"[routes.solo]\ntargets = [\"solo\"]\n", nil,
		func(o *server.Options) { o.Upstream = panicky{} })
	rep := g.chat(t, "solo")
	if rep.status != 500 || rep.errorField(t, "code") != "internal_error" {
		t.Fatalf("status %d: %s", rep.status, rep.body)
	}
	// The server still serves after a panic.
	if rep := g.chat(t, "solo"); rep.status != 500 {
		t.Fatalf("second request status %d", rep.status)
	}
}

func TestModelRetrieve(t *testing.T) {
	g, _ := keyed(t)
	get := func(path, key string) int {
		req, _ := http.NewRequest(http.MethodGet, g.ts.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := g.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m struct{ ID, Object string }
		_ = decodeJSON(resp, &m)
		if resp.StatusCode == 200 && (m.ID != path[len("/v1/models/"):] || m.Object != "model") {
			t.Errorf("%s: %+v", path, m)
		}
		return resp.StatusCode
	}
	if c := get("/v1/models/saif", laptopKey); c != 200 {
		t.Errorf("allowed route: %d", c)
	}
	if c := get("/v1/models/cloud", laptopKey); c != 404 {
		t.Errorf("route not allowed for the key: %d", c)
	}
	if c := get("/v1/models/nope", "hk-ci"); c != 404 {
		t.Errorf("unknown route: %d", c)
	}
	if c := get("/v1/models/saif", "wrong"); c != 401 {
		t.Errorf("bad key: %d", c)
	}
}

// TestWrongTypeNamesField: a field of the wrong type is answered with the field's name as the
// client sent it (not the Go path through an embedded struct) and the JSON type it must have (not
// a Go type name such as []core.Message).
func TestWrongTypeNamesField(t *testing.T) {
	g, _ := keyed(t)
	auth := []string{"Authorization", "Bearer " + laptopKey}
	msgs := `"messages":[{"role":"user","content":"x"}]`
	tests := []struct {
		name, body, param, message string
	}{
		{"temperature", `{"model":"saif","temperature":"hot",` + msgs + `}`, "temperature",
			"invalid type for 'temperature': expected number"},
		{"top_p", `{"model":"saif","top_p":true,` + msgs + `}`, "top_p",
			"invalid type for 'top_p': expected number"},
		{"seed", `{"model":"saif","seed":1.5,` + msgs + `}`, "seed",
			"invalid type for 'seed': expected integer"},
		{"messages", `{"model":"saif","messages":{}}`, "messages",
			"invalid type for 'messages': expected array"},
		{"message", `{"model":"saif","messages":["hi"]}`, "messages",
			"invalid type for 'messages': expected object"},
		{"role", `{"model":"saif","messages":[{"role":5,"content":"x"}]}`, "messages[0].role",
			"invalid type for 'messages[0].role': expected string"},
		{"second message", `{"model":"saif","messages":[{"role":"system","content":"x"},{"role":"user","content":"y","name":7}]}`,
			"messages[1].name", "invalid type for 'messages[1].name': expected string"},
		{"stream", `{"model":"saif","stream":"yes",` + msgs + `}`, "stream",
			"invalid type for 'stream': expected boolean"},
		{"stream_options", `{"model":"saif","stream":true,"stream_options":"x",` + msgs + `}`, "stream_options",
			"invalid type for 'stream_options': expected object"},
		{"max_tokens", `{"model":"saif","max_tokens":"5",` + msgs + `}`, "max_tokens",
			"invalid type for 'max_tokens': expected integer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := g.post(t, "/v1/chat/completions", tc.body, auth...)
			if rep.status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", rep.status, rep.body)
			}
			got := []any{rep.errorField(t, "code"), rep.errorField(t, "param"), rep.errorField(t, "message")}
			if diff := cmp.Diff([]any{"invalid_type", tc.param, tc.message}, got); diff != "" {
				t.Errorf("code, param, message (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHeadServesGetEndpoints: HEAD on a GET endpoint is answered as GET would be, without the body
// (RFC 9110 9.3.2: a general-purpose server supports HEAD wherever it supports GET), not 405.
func TestHeadServesGetEndpoints(t *testing.T) {
	g, _ := keyed(t)
	do := func(method, path string) (int, string, []byte) {
		t.Helper()
		rep := g.do(t, method, path, "", "Authorization", "Bearer "+laptopKey)
		return rep.status, rep.header.Get("Content-Type"), rep.body
	}
	for _, path := range []string{"/v1/models", "/v1/models/saif", "/v1/models/nope", "/healthz"} {
		t.Run(path, func(t *testing.T) {
			getStatus, getType, _ := do(http.MethodGet, path)
			status, ctype, body := do(http.MethodHead, path)
			if diff := cmp.Diff([]any{getStatus, getType, ""}, []any{status, ctype, string(body)}); diff != "" {
				t.Errorf("HEAD status, content type, body (-GET's +HEAD's):\n%s", diff)
			}
		})
	}
}

// A body of JSON null is no more an object than [1,2] is: it was answered "you must provide a
// model parameter" on chat, completions, embeddings and explain (encoding/json decodes null into
// a struct as nothing), and with code invalid_json on responses.
func TestNullBodyIsNotAnObject(t *testing.T) {
	g, _ := keyed(t)
	auth := []string{"Authorization", "Bearer " + laptopKey}
	for _, path := range []string{"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/responses", "/v1/route/explain"} {
		for _, body := range []string{"null", " null\n", "[1,2]"} {
			t.Run(path+" "+strings.TrimSpace(body), func(t *testing.T) {
				rep := g.post(t, path, body, auth...)
				if rep.status != http.StatusBadRequest || rep.errorField(t, "code") != "invalid_type" ||
					rep.errorField(t, "message") != "the request body must be a JSON object" {
					t.Fatalf("status %d: %s", rep.status, rep.body)
				}
			})
		}
	}
}
