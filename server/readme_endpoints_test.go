package server_test

import (
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEEndpointsServed holds the first column of README's Endpoints table to the router:
// every "METHOD /path" it names ({id} as a route's name) is served under that method, neither
// 404 unknown_url nor 405.
func TestREADMEEndpointsServed(t *testing.T) {
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## Endpoints\n")
	if !ok {
		t.Fatal("README has no Endpoints section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	endpoint := regexp.MustCompile("`(GET|POST|DELETE|HEAD) (/[^`]*)`")
	g, _ := keyed(t)
	n := 0
	for _, l := range strings.Split(section, "\n") {
		if !strings.HasPrefix(l, "| `") {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(l, "| "), " | ")
		for _, m := range endpoint.FindAllStringSubmatch(first, -1) {
			n++
			method, path := m[1], strings.ReplaceAll(m[2], "{id}", "saif")
			t.Run(method+" "+path, func(t *testing.T) {
				body := ""
				if method == http.MethodPost {
					body = `{"model":"saif","messages":[{"role":"user","content":"hi"}]}`
				}
				rep := g.do(t, method, path, body, "Authorization", "Bearer "+laptopKey, "Content-Type", "application/json")
				if rep.status == http.StatusMethodNotAllowed ||
					rep.status == http.StatusNotFound && rep.errorField(t, "code") == "unknown_url" {
					t.Errorf("README names %s %s; the gateway answers %d: %s", method, path, rep.status, rep.body)
				}
			})
		}
	}
	if n < 8 {
		t.Errorf("read %d endpoints from README's Endpoints table; it names at least 8", n)
	}
}
