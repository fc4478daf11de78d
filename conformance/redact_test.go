package conformance

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// numericKey is a key of digits that the fake's every "created" (1750000000) holds.
const numericKey = "17500000"

// keyAs serves next as if every request had carried fake's key where it carries key.
type keyAs struct {
	key  string
	next http.Handler
}

func (k keyAs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") == "Bearer "+k.key {
		r.Header.Set("Authorization", "Bearer "+fakeKey)
	}
	k.next.ServeHTTP(w, r)
}

// TestNumericKeyInsideANumberStays: the key is removed where it stands as itself, not where its
// characters are part of a longer run of the same class. A key of digits that a longer number
// holds ("created": 1750000000, a logprob's decimals, an id) is a coincidence, not the key: cut
// there, the answer was no longer JSON and a conforming server failed most checks, and the
// report showed numbers that the server never sent. Where the server quotes the key itself (a
// flat error body, so that errors.shape quotes it back), it is still removed.
func TestNumericKeyInsideANumberStays(t *testing.T) {
	_, srv := newWrappedFake(t, func(h http.Handler) http.Handler {
		quoting := errorAnswer{next: h, status: http.StatusNotFound, ct: "application/json",
			body: `{"message":"no such model for API key ` + numericKey + `","type":"invalid_request_error"}`}
		return keyAs{key: numericKey, next: quoting}
	}, faultWrongObject)
	o := fakeOptions(t, srv)
	o.APIKey = numericKey
	rep := runAgainst(t, o)
	want := baseline()
	want["chat.object"] = Fail
	want["errors.shape"] = Fail
	want["sdk.error"] = Fail
	if diff := cmp.Diff(want, notPassing(rep)); diff != "" {
		t.Errorf("checks that did not pass (-want +got):\n%s", diff)
	}
	var b bytes.Buffer
	if err := rep.Write(&b, FormatTable); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"created":1750000000`) {
		t.Errorf("the report should quote created 1750000000 whole:\n%s", b.String())
	}
	if strings.Contains(b.String(), numericKey+`"`) || !strings.Contains(b.String(), "API key [redacted]") {
		t.Errorf("the report should hold the quoted key as [redacted]:\n%s", b.String())
	}
}

// TestKeyRedactedWhereItStandsAlone: hideKeyIn and hideKey cut the key wherever it is not part
// of a longer run of digits (a number, its decimals included); a key's letters are cut even
// inside a longer word, where the word is more likely the key echoed than a coincidence.
func TestKeyRedactedWhereItStandsAlone(t *testing.T) {
	tests := []struct {
		name, key, in, want string
	}{
		{"alone", numericKey, "Received API Key = 17500000", "Received API Key = [redacted]"},
		{"quoted", numericKey, `{"key":"17500000"}`, `{"key":"[redacted]"}`},
		{"after Bearer", numericKey, "Bearer 17500000.", "Bearer [redacted]."},
		{"beside letters", numericKey, "key17500000x", "key[redacted]x"},
		{"twice", numericKey, "17500000,17500000", "[redacted],[redacted]"},
		{"the start of a number", numericKey, `"created":1750000000`, `"created":1750000000`},
		{"the end of a number", numericKey, `"id":917500000`, `"id":917500000`},
		{"decimals", numericKey, `"logprob":-0.17500000`, `"logprob":-0.17500000`},
		{"before decimals", numericKey, `"x":17500000.5`, `"x":17500000.5`},
		{"a sentence's end", numericKey, "the key is 17500000.", "the key is [redacted]."},
		{"twice in one run", numericKey, "1750000017500000", "1750000017500000"},
		{"one in a run, one alone", numericKey, "1750000000 17500000", "1750000000 [redacted]"},
		{"letters in a word", "abcdefgh", "xabcdefghy abcdefgh", "x[redacted]y [redacted]"},
		{"a key echoed with a letter after it", "sk-secret-abcdefgh", "Bearer sk-secret-abcdefghX", "Bearer [redacted]X"},
		{"letters beside digits", "abcdefgh", "1abcdefgh2", "1[redacted]2"},
		{"a key with a dash", "sk-secret-7f3a", "Bearer sk-secret-7f3a", "Bearer [redacted]"},
		{"short keys stay", "1750", "1750", "1750"},
		{"after a minus sign", numericKey, `"logprob":-17500000,`, `"logprob":-17500000,`},
		{"after a minus sign in an array", numericKey, `[-17500000]`, `[-17500000]`},
		{"after a minus sign at the start", numericKey, `-17500000`, `-17500000`},
		{"an exponent", numericKey, `[1e-17500000,2E17500000]`, `[1e-17500000,2E17500000]`},
		{"a hyphen after a word", numericKey, "sk-17500000 key-17500000", "sk-[redacted] key-[redacted]"},
		{"a number inside a string", numericKey, `{"id":"chatcmpl-1750000000"}`, `{"id":"chatcmpl-[redacted]00"}`},
		{"after a minus sign inside a string", numericKey, `{"message":"bad key -17500000"}`, `{"message":"bad key -[redacted]"}`},
		{"after an escaped quote inside a string", numericKey, `{"m":"say \"x\" 1750000000","n":1750000000}`, `{"m":"say \"x\" [redacted]00","n":1750000000}`},
		{"a string on an earlier line", numericKey, "{\"m\":\"a\"}\n-17500000", "{\"m\":\"a\"}\n-17500000"},
		{"a key with letters inside a number", "1234abcd5678", "91234abcd56789", "9[redacted]9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(hideKeyIn([]byte(tt.in), tt.key)); got != tt.want {
				t.Errorf("hideKeyIn(%q, %q) = %q, want %q", tt.in, tt.key, got, tt.want)
			}
			rep := &Report{Checks: []CheckResult{{Reason: tt.in, Evidence: &Evidence{Seen: tt.in}}}}
			ue := &UsageError{Msg: tt.in}
			hideKey(rep, ue, tt.key)
			if rep.Checks[0].Reason != tt.want || rep.Checks[0].Evidence.Seen != tt.want || ue.Msg != tt.want {
				t.Errorf("hideKey(%q, %q) = %q, %q, %q; want %q", tt.in, tt.key, rep.Checks[0].Reason, rep.Checks[0].Evidence.Seen, ue.Msg, tt.want)
			}
		})
	}
}

// TestKeyBesideAMinusSignStays: a numeric key that an answer holds as a negative number outside
// any string (a logprob, a member of the server's own) is that number, not the key; cut after
// its minus sign, the answer was no longer JSON and the conforming server failed every check
// that reads it. The same digits inside a string are cut.
func TestKeyBesideAMinusSignStays(t *testing.T) {
	_, srv := newWrappedFake(t, func(h http.Handler) http.Handler {
		return keyAs{key: numericKey, next: streamRewrite{next: h, editJSON: func(req string, _ http.Header, b string) string {
			return strings.Replace(b, `{"choices":`, `{"x_score":-`+numericKey+`,"x_note":"-`+numericKey+`","choices":`, 1)
		}}}
	})
	o := fakeOptions(t, srv)
	o.APIKey = numericKey
	o.Only = []string{"chat.*"}
	rep := runAgainst(t, o)
	if got := notPassing(rep); len(got) != 0 {
		for _, c := range rep.Checks {
			if c.Evidence != nil {
				t.Logf("%s: expected %s; seen %s", c.ID, c.Evidence.Expected, c.Evidence.Seen)
			}
		}
		t.Errorf("checks that did not pass: %v", got)
	}
}
