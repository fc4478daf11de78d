package conformance

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/respjson"
)

// sdkResult is what an SDK-driven probe observed. The SDK checks exist
// because a server can be byte-for-byte plausible and still trip the client
// most Go programs use.
type sdkResult struct {
	err      error
	choices  int
	chunks   int
	rejected int // chunks the accumulator refused
	models   int
}

// sdkClient is the part of openai-go the SDK probes drive.
type sdkClient struct {
	Chat   openai.ChatService
	Models openai.ModelService
}

// sdkClient builds openai-go services aimed at the server under test,
// recording their traffic. Retries are off: a retried request would hide
// the first answer, which is the one being judged. They are built without
// openai.NewClient, whose defaults read the environment: OPENAI_API_KEY,
// OPENAI_ADMIN_KEY, OPENAI_ORG_ID, OPENAI_PROJECT_ID and
// OPENAI_CUSTOM_HEADERS belong to the user's own account, and would go to
// the server under test (a secret leaked, and a request judged that the
// raw probes never sent).
func (r *runner) sdkClient() (sdkClient, *recorder) {
	base := r.o.HTTPClient.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	rec := &recorder{base: base}
	opts := []option.RequestOption{
		option.WithBaseURL(r.c.root + "/"),
		option.WithHTTPClient(&http.Client{Transport: rec}),
		option.WithMaxRetries(0),
		option.WithRequestTimeout(r.o.Timeout),
	}
	if r.o.APIKey != "" {
		opts = append(opts, option.WithAPIKey(r.o.APIKey))
	}
	return sdkClient{Chat: openai.NewChatService(opts...), Models: openai.NewModelService(opts...)}, rec
}

// sdkParams is the SDK probes' request, its limit named max_completion_tokens when mct (see
// sdkLimited).
func (r *runner) sdkParams(model string, mct bool) openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{
		Model:    model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello.")},
	}
	if mct {
		p.MaxCompletionTokens = openai.Int(16)
	} else {
		p.MaxTokens = openai.Int(16)
	}
	return p
}

// sdkCall runs call with the request timeout and, like client.do, once more
// after the server's Retry-After when the answer was transient. It returns
// the exchange the recorder saw last and the call's error.
func (r *runner) sdkCall(ctx context.Context, rec *recorder, call func(ctx context.Context) error) (*exchange, error) {
	attempt := func() error {
		ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
		defer cancel()
		return call(ctx)
	}
	err := attempt()
	x := r.lastExchange(ctx, rec)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || x.header == nil || !transient(apiErr.StatusCode, x.header) {
		return x, r.timedOut(ctx, x, err)
	}
	if r.o.Sleep(ctx, retryWait(x.header, r.o.Now(), r.o.Timeout)) != nil {
		return x, err
	}
	err = attempt()
	again := r.lastExchange(ctx, rec)
	again.throttled = x
	return again, r.timedOut(ctx, again, err)
}

// lastExchange is the exchange rec saw last, its transport error named as the raw probes name
// it: a server that never answers fails the SDK check's gate with that error, and "context
// deadline exceeded" alone names neither --timeout nor what it cut short.
func (r *runner) lastExchange(ctx context.Context, rec *recorder) *exchange {
	x := rec.last()
	if x.err != nil {
		x.err = r.timedOut(ctx, x, x.err)
	}
	return x
}

// timedOut names --timeout in an SDK call's error when the per-request deadline ended it (the
// run's own context still live): before the answer's head came, or while its body was read.
func (r *runner) timedOut(ctx context.Context, x *exchange, err error) error {
	if ctx.Err() != nil {
		return err
	}
	what := "ended"
	if x.status == 0 {
		what = "began"
	}
	return timedOut(err, r.o.Timeout, what)
}

func sdkChat(ctx context.Context, r *runner) *exchange {
	c, rec := r.sdkClient()
	res := &sdkResult{}
	x, err := r.sdkLimited(ctx, rec, r.o.Model, func(ctx context.Context, p openai.ChatCompletionNewParams) error {
		completion, err := c.Chat.Completions.New(ctx, p)
		res.choices = 0
		if completion != nil {
			res.choices = len(completion.Choices)
		}
		return err
	})
	res.err = err
	x.sdk = res
	return x
}

func sdkStream(ctx context.Context, r *runner) *exchange {
	c, rec := r.sdkClient()
	res := &sdkResult{}
	x, err := r.sdkLimited(ctx, rec, r.o.Model, func(ctx context.Context, p openai.ChatCompletionNewParams) error {
		*res = sdkResult{}
		stream := c.Chat.Completions.NewStreaming(ctx, p)
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			res.chunks++
			if !acc.AddChunk(stream.Current()) {
				res.rejected++
			}
		}
		err := stream.Err()
		_ = stream.Close()
		res.choices = len(acc.Choices)
		return err
	})
	res.err = err
	x.sdk = res
	return x
}

func sdkError(ctx context.Context, r *runner) *exchange {
	c, rec := r.sdkClient()
	x, err := r.sdkCall(ctx, rec, func(ctx context.Context) error {
		_, err := c.Chat.Completions.New(ctx, r.sdkParams(noSuchModel, r.mct.Load()))
		return err
	})
	x.sdk = &sdkResult{err: err}
	return x
}

func sdkModels(ctx context.Context, r *runner) *exchange {
	c, rec := r.sdkClient()
	res := &sdkResult{}
	x, err := r.sdkCall(ctx, rec, func(ctx context.Context) error {
		page, err := c.Models.List(ctx)
		res.models = 0
		if page != nil {
			res.models = len(page.Data)
		}
		return err
	})
	res.err = err
	x.sdk = res
	return x
}

// sdkErr describes an SDK error with what *openai.Error knows.
func sdkErr(err error) string {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		return fmt.Sprintf("*openai.Error status %d, message %s, type %s", apiErr.StatusCode, sdkField(apiErr.Message, apiErr.JSON.Message), sdkField(apiErr.Type, apiErr.JSON.Type))
	}
	var te *timeoutError
	if errors.As(err, &te) {
		return te.Error()
	}
	return fmt.Sprintf("%T: %v", err, err)
}

// sdkField shows a string member of *openai.Error: quoted when openai-go found it, else what it
// found instead (absent, null, or the raw JSON it could not read as a string).
func sdkField(v string, f respjson.Field) string {
	switch {
	case f.Valid():
		return strconv.Quote(clip(v, 80))
	case f.Raw() == "":
		return "absent"
	case f.Raw() == "null":
		return "null"
	}
	return "not a string (" + clip(f.Raw(), 60) + ")"
}

func sdkChecks() []*check {
	return []*check{
		{id: "sdk.chat", grade: Must, probes: []probeID{"sdk.chat"},
			title: "openai-go decodes a chat completion with at least one choice",
			judge: func(j *judge) verdict {
				s := j.x("sdk.chat").sdk
				if s.err != nil || s.choices == 0 {
					return fail("a completion with choices", fmt.Sprintf("%d choices, error: %v", s.choices, errOrNone(s.err)))
				}
				return pass()
			}},
		{id: "sdk.stream", grade: Must, probes: []probeID{"sdk.stream"},
			title: "openai-go streams a chat completion: every chunk accumulates and the stream ends cleanly",
			judge: func(j *judge) verdict {
				s := j.x("sdk.stream").sdk
				if s.err != nil || s.chunks == 0 || s.rejected > 0 || s.choices == 0 {
					return fail("chunks that all accumulate into a completion, no stream error",
						fmt.Sprintf("%d chunks, %d refused by the accumulator, %d choices, error: %v", s.chunks, s.rejected, s.choices, errOrNone(s.err)))
				}
				return pass()
			}},
		{id: "sdk.error", grade: Must, probes: []probeID{"sdk.error"},
			title: "an error answer surfaces in openai-go as *openai.Error with status, message and type",
			judge: func(j *judge) verdict {
				s := j.x("sdk.error").sdk
				var apiErr *openai.Error
				if s.err == nil {
					// The error is provoked with an unknown model; a server that
					// serves any name (llama-server) fails errors.unknown_model
					// for that, and a second failure here would say nothing new.
					if j.o.selects("errors.unknown_model") {
						return skip("the server served model " + noSuchModel + ", so there was no error to judge; see errors.unknown_model")
					}
					return fail("an *openai.Error for model "+noSuchModel, "the call succeeded")
				}
				// Presence as openai-go judges it (JSON.X.Valid: there, not null, a string or a
				// number it turns into one), not Type != "": the reference's type is a string
				// with no rule on its value, "" included, as errors.shape reads it. Message
				// must say something, there as here.
				if !errors.As(s.err, &apiErr) || apiErr.StatusCode < 400 ||
					!apiErr.JSON.Message.Valid() || apiErr.Message == "" || !apiErr.JSON.Type.Valid() {
					return fail("*openai.Error with StatusCode ≥ 400, a Message and a Type (which may be empty)", sdkErr(s.err))
				}
				return pass()
			}},
		{id: "sdk.models", grade: Should, probes: []probeID{"sdk.models"},
			title: "openai-go lists the models",
			judge: func(j *judge) verdict {
				s := j.x("sdk.models").sdk
				if s.err != nil || s.models == 0 {
					return fail("at least one model", fmt.Sprintf("%d models, error: %v", s.models, errOrNone(s.err)))
				}
				return pass()
			}},
	}
}

func errOrNone(err error) string {
	if err == nil {
		return "none"
	}
	return sdkErr(err)
}
