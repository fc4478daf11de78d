package server

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hayula/gateway/core"
)

// An image by http(s) URL is core.Request.RemoteImages, a field of its own, not a value of
// OpenAIOnly: that one names the first OpenAI-only field the request sets, and an image beside
// one leaves it as it is (TestRemoteImagesField).
func TestRemoteImagesField(t *testing.T) {
	img := func(part string) string {
		return `{"model":"saif","messages":[{"role":"user","content":[{"type":"text","text":"what?"},` + part + `]}]`
	}
	for _, tc := range []struct {
		name           string
		body           string
		images, remote bool
		openaiOnly     string
	}{
		{"text", `{"model":"saif","messages":[{"role":"user","content":"x"}]}`, false, false, ""},
		{"data url", img(`{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}`) + `}`, true, false, ""},
		{"https", img(`{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"low"}}`) + `}`, true, true, ""},
		{"bare string, upper case", img(`{"type":"image_url","image_url":"HTTP://x/y.png"}`) + `}`, true, true, ""},
		{"spaces before the scheme", img(`{"type":"input_image","image_url":{"url":"  https://x/y.png"}}`) + `}`, true, true, ""},
		{"url not a string", img(`{"type":"image_url","image_url":{"url":5}}`) + `}`, true, false, ""},
		{"image_url null", img(`{"type":"image","image_url":null}`) + `}`, true, false, ""},
		{"image_url a number", img(`{"type":"image_url","image_url":7}`) + `}`, true, false, ""},
		{"second image remote", img(`{"type":"image_url","image_url":{"url":"data:x"}},{"type":"image_url","image_url":{"url":"http://x"}}`) + `}`, true, true, ""},
		{"remote beside logit_bias", img(`{"type":"image_url","image_url":{"url":"https://x/y.png"}}`) + `,"logit_bias":{"1":-100}}`, true, true, "logit_bias"},
		{"data url beside logit_bias", img(`{"type":"image_url","image_url":{"url":"data:x"}}`) + `,"logit_bias":{"1":-100}}`, true, false, "logit_bias"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
			req, e := decodeChat(r, []byte(tc.body), new(reqState), testNames)
			if e != nil {
				t.Fatalf("%s: %s", tc.body, e.Message)
			}
			if req.Images != tc.images || req.RemoteImages != tc.remote || req.OpenAIOnly != tc.openaiOnly {
				t.Errorf("Images %v, RemoteImages %v, OpenAIOnly %q; want %v, %v, %q",
					req.Images, req.RemoteImages, req.OpenAIOnly, tc.images, tc.remote, tc.openaiOnly)
			}
		})
	}
}

// The format filter drops a target whose adapter cannot fetch an image by URL with a reason of
// its own, which says how to send the image instead; an OpenAI-only field the request also sets
// is named first, as before.
func TestFormatFilterRemoteImages(t *testing.T) {
	for _, tc := range []struct {
		name    string
		req     core.Request
		adapter core.AdapterKind
		keep    bool
		reason  string
	}{
		{"ollama", core.Request{Images: true, RemoteImages: true}, core.AdapterOllama, false,
			"request has an image_url by http(s) URL, which the ollama adapter cannot fetch: send the image inline as a data: URL (data:image/png;base64,…)"},
		{"saif", core.Request{Images: true, RemoteImages: true}, core.AdapterSAIF, false,
			"request has an image_url by http(s) URL, which the saif adapter cannot fetch: send the image inline as a data: URL (data:image/png;base64,…)"},
		{"openai", core.Request{Images: true, RemoteImages: true}, core.AdapterOpenAI, true, ""},
		{"beside logit_bias", core.Request{Images: true, RemoteImages: true, OpenAIOnly: "logit_bias"}, core.AdapterOllama, false,
			"request asks for logit_bias: the ollama adapter's protocol cannot carry it"},
		{"data url", core.Request{Images: true}, core.AdapterOllama, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keep, reason := formatFilter{}.Keep(&tc.req, &core.Target{Name: "t", Adapter: tc.adapter})
			if keep != tc.keep || reason != tc.reason {
				t.Errorf("Keep = %v, %q; want %v, %q", keep, reason, tc.keep, tc.reason)
			}
		})
	}
}

// referenceRemote is how an image part's image_url was read before imageRef: kept raw, then
// unmarshalled again, as a string and failing that as {"url": …}.
func referenceRemote(v json.RawMessage) bool {
	var url string
	if json.Unmarshal(v, &url) != nil {
		var o struct {
			URL string `json:"url"`
		}
		if json.Unmarshal(v, &o) != nil {
			return false
		}
		url = o.URL
	}
	u := strings.ToLower(strings.TrimSpace(url))
	return strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")
}

var imageRefSeeds = []string{
	`"https://x/y.png"`, `" HTTPS://x"`, `"\u0068ttp://x"`, `"\thttp://x "`, `"\u00a0http://x"`, `"httpſ://x"`,
	`"ftp://x"`, `"data:image/png;base64,AAAA"`, `""`, `"http:/x"`, `"http://"`,
	`{"url":"http://x"}`, `{"URL":"http://x"}`, `{"url":"data:x","detail":"low"}`, `{"detail":"low"}`, `{}`,
	`{"url":5}`, `{"url":null}`, `{"url":"http://x","url":5}`, `{"url":"http://x","url":null}`, `{"url":"data:x","url":"HTTP://x"}`,
	`{"Url":"https://x","url":"data:x"}`, `null`, `7`, `true`, `[]`, `["http://x"]`, `{"url":{"url":"http://x"}}`,
}

// imageRef reads an image_url in one pass as the two unmarshals before it read it.
func TestImageRefMatchesReference(t *testing.T) {
	for _, v := range imageRefSeeds {
		checkImageRef(t, []byte(v))
	}
}

func checkImageRef(t *testing.T, v []byte) {
	t.Helper()
	var parts []struct {
		ImageURL imageRef `json:"image_url"`
	}
	body := append(append([]byte(`[{"image_url":`), v...), "}]"...)
	if err := json.Unmarshal(body, &parts); err != nil {
		t.Fatalf("%s: %v", v, err)
	}
	if want := referenceRemote(v); parts[0].ImageURL.remote != want {
		t.Errorf("%s: remote %v, want %v", v, parts[0].ImageURL.remote, want)
	}
}

func FuzzImageRef(f *testing.F) {
	for _, v := range imageRefSeeds {
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		if !json.Valid(v) {
			return
		}
		checkImageRef(t, v)
	})
}
