package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/filter"
)

// TestKeyTPMChargesTextRelayedBeforeHangUp: a client that hangs up a stream after its text and
// before its usage chunk (which its upstream sends last) is charged, besides its prompt's lower
// bound, the lower bound of the text it was sent: one token a word here. Charged the prompt's
// bound alone, as it was, a key that always hung up just before the end had its completions
// free against its tpm: the next request was admitted.
func TestKeyTPMChargesTextRelayedBeforeHangUp(t *testing.T) {
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon")
	prompt := filter.PromptTokensMin([]core.Message{{Role: "user", Content: json.RawMessage(`"hi"`)}})
	const tpm = 10
	hold := make(chan struct{})
	defer close(hold)
	up := newFake(t, "up")
	up.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta string) {
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", delta)
		}
		chunk(`{"role":"assistant","content":""}`)
		for _, wd := range words {
			chunk(`{"content":` + strconv.Quote(" "+wd) + `}`)
		}
		w.(http.Flusher).Flush()
		select { // the usage chunk would come now: the client is gone first
		case <-r.Context().Done():
		case <-hold:
		}
	})
	g := newGateway(t, keyBlock("slow", "hk-slow", fmt.Sprintf("tpm = %d", tpm))+
		target("up", up.url(), "private")+"[routes.r]\ntargets = [\"up\"]\n", nil)
	slow := []string{"Authorization", "Bearer hk-slow"}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := sdkClient(g, "hk-slow")
	st := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:         "r",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var text strings.Builder
	for text.Len() < len(" "+strings.Join(words, " ")) && st.Next() {
		if ch := st.Current(); len(ch.Choices) > 0 {
			text.WriteString(ch.Choices[0].Delta.Content)
		}
	}
	if got, want := text.String(), " "+strings.Join(words, " "); got != want {
		t.Fatalf("the stream's text %q (%v), want %q", got, st.Err(), want)
	}
	cancel() // hung up before the usage chunk
	_ = st.Close()
	left := `hayula_stream_ends_total{endpoint="chat",route="r",target="up",end="client_left"} 1`
	var lines map[string]bool
	settles(func() bool { _, lines = scrape(t, g, slow...); return lines[left] })
	if !lines[left] {
		t.Fatalf("no line %q: the relay did not see the client go", left)
	}

	// Charged prompt + 20 of tpm = 10: the bucket is 11 in debt, and holds a token again once
	// 12 have come back, at 10 a minute.
	up.set(usageHandler(1, 1, false, false))
	charged := prompt + len(words)
	wait := 60 * (charged - tpm + 1) / tpm
	tpmRefused(t, g.chat(t, "r", slow...), "slow", tpm, strconv.Itoa(wait))
	g.clock.Advance(time.Duration(wait)*time.Second - time.Millisecond)
	tpmRefused(t, g.chat(t, "r", slow...), "slow", tpm, "1")
	g.clock.Advance(time.Millisecond)
	if rep := g.chat(t, "r", slow...); rep.status != http.StatusOK {
		t.Errorf("after %d s: %d %s, want 200", wait, rep.status, rep.body)
	}
}
