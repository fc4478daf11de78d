package server_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/openai/openai-go/v3"
)

// TestModelsAreWhatAKeyMaySend: GET /v1/models lists, in OpenAI's shape, exactly the names a key
// may put in "model" ("auto" when configured, and route names with the characters a route name
// may hold, "/" and "+" among them), each of which GET /v1/models/{id} answers and a request
// resolves; a key limited to some routes sees only those, and every other id is a 404 in
// OpenAI's shape, the same whether the route does not exist or the key may not use it.
func TestModelsAreWhatAKeyMaySend(t *testing.T) {
	up := newFake(t, "up")
	cfg := target("t", up.url(), "private") +
		"[routes.saif]\ntargets = [\"t\"]\n\n[routes.deepseek-r1]\ntargets = [\"t\"]\n\n[routes.averroes-q]\ntargets = [\"t\"]\n\n[routes.\"org/model:8b\"]\ntargets = [\"t\"]\n\n[routes.\"a+b@v1\"]\ntargets = [\"t\"]\n\n" +
		"[auto]\n\n" +
		"[[keys]]\nname = \"all\"\nsha256 = \"" + sha256hex("hk-all") + "\"\n\n" +
		"[[keys]]\nname = \"one\"\nsha256 = \"" + sha256hex("hk-one") + "\"\nroutes = [\"org/model:8b\"]\n\n" +
		"[[keys]]\nname = \"auto\"\nsha256 = \"" + sha256hex("hk-auto") + "\"\nroutes = [\"auto\"]\n"
	g := newGateway(t, cfg, nil)
	ctx := context.Background()
	all := []string{"auto", "a+b@v1", "averroes-q", "deepseek-r1", "org/model:8b", "saif"}
	for _, tc := range []struct {
		key  string
		want []string
	}{
		{"hk-all", all},
		{"hk-one", []string{"org/model:8b"}},
		{"hk-auto", []string{"auto"}},
	} {
		t.Run(tc.key, func(t *testing.T) {
			c := sdkClient(g, tc.key)
			page, err := c.Models.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range page.Data {
				got = append(got, m.ID)
				if m.Object != "model" || m.Created <= 0 || m.OwnedBy == "" {
					t.Errorf("entry %s", m.RawJSON())
				}
				one, err := c.Models.Get(ctx, m.ID)
				if err != nil || one.ID != m.ID || one.Object != "model" || one.Created != m.Created || one.OwnedBy != m.OwnedBy {
					t.Errorf("retrieve %q: %v %+v", m.ID, err, one)
				}
				rep := g.post(t, "/v1/chat/completions", `{"model":"`+m.ID+`","messages":[{"role":"user","content":"hi"}]}`,
					"Authorization", "Bearer "+tc.key)
				if rep.status != http.StatusOK {
					t.Errorf("listed %q, but a request for it: %d %s", m.ID, rep.status, rep.body)
				}
			}
			if page.Object != "list" || !slices.Equal(got, tc.want) {
				t.Errorf("listed %q (object %q), want %q", got, page.Object, tc.want)
			}
			for _, id := range append(slices.Clone(all), "nope", "Saif", "llama3.1:8b") {
				if slices.Contains(tc.want, id) {
					continue
				}
				_, err := c.Models.Get(ctx, id)
				var ae *openai.Error
				if !errors.As(err, &ae) || ae.StatusCode != 404 || ae.Code != "model_not_found" ||
					ae.Type != "invalid_request_error" || ae.Param != "model" {
					t.Errorf("retrieve %q: %v", id, err)
				}
			}
		})
	}
	t.Run("HEAD", func(t *testing.T) {
		for _, p := range []string{"/v1/models", "/v1/models/saif"} {
			if rep := g.do(t, http.MethodHead, p, "", "Authorization", "Bearer hk-all"); rep.status != 200 {
				t.Errorf("%s: %d", p, rep.status)
			}
		}
	})
}
