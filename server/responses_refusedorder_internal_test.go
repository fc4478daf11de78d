package server

import "testing"

// TestResponsesRefusedFieldsInOrder: a body with several fields that need state the gateway does
// not keep is refused naming the same one every time, the first of them in the body. They were
// looked for by ranging over a map, so that the refusal named one at random.
func TestResponsesRefusedFieldsInOrder(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`{"model":"m","input":"x","background":true,"previous_response_id":"resp_1","conversation":"c","prompt":{"id":"p"}}`, "background"},
		{`{"model":"m","prompt":{"id":"p"},"input":"x","conversation":"c","previous_response_id":"resp_1"}`, "prompt"},
		{`{"model":"m","previous_response_id":null,"conversation":"c","background":true}`, "conversation"},
	} {
		for range 64 {
			_, e := (&responsesWriter{}).toChat([]byte(c.body))
			if e == nil || e.Param != c.want {
				t.Fatalf("%s: refused %+v, want one naming %s", c.body, e, c.want)
			}
		}
	}
}
