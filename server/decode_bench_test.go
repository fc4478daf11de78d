package server

import (
	"net/http/httptest"
	"testing"
)

// BenchmarkDecodeChat is decodeChat alone on a small chat request: text only, which never reads
// its parts for images, and with a text part and an image, inline (data:) or by URL, in either
// of image_url's shapes.
func BenchmarkDecodeChat(b *testing.B) {
	const head = `{"model":"saif","max_tokens":256,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":`
	for _, bc := range []struct{ name, content string }{
		{"text", `"what is in the picture?"`},
		{"text-parts", `[{"type":"text","text":"what is in the picture?"},{"type":"text","text":"be precise"}]`},
		{"image-data", `[{"type":"text","text":"what is in the picture?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==","detail":"low"}}]`},
		{"image-url", `[{"type":"text","text":"what is in the picture?"},{"type":"image_url","image_url":{"url":"https://example.com/cat.png","detail":"low"}}]`},
		{"image-url-string", `[{"type":"text","text":"what is in the picture?"},{"type":"input_image","image_url":"https://example.com/cat.png"}]`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			body := []byte(head + bc.content + `}]}`)
			r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
			st := new(reqState)
			b.ReportAllocs()
			for b.Loop() {
				if _, e := decodeChat(r, body, st, testNames); e != nil {
					b.Fatal(e.Message)
				}
			}
		})
	}
}
