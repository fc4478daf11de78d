package conformance

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Grade says how strongly a check is required.
type Grade string

const (
	// Must checks follow from the API reference; a failure fails the run.
	Must Grade = "MUST"
	// Should checks are common practice clients rely on; a failure warns.
	Should Grade = "SHOULD"
	// Strict checks are informational (a failure warns) unless
	// Options.Strict is set, when they count like MUST.
	Strict Grade = "STRICT"
)

// Result is the outcome of one check.
type Result string

const (
	Pass Result = "PASS"
	Fail Result = "FAIL"
	// Warn is a SHOULD (or non-strict STRICT) check that did not hold.
	Warn Result = "WARN"
	// Skip means the check could not be judged; Reason says why.
	Skip Result = "SKIP"
)

// Evidence is what a failed or warned check saw, for a human to verify.
type Evidence struct {
	Expected string `json:"expected"`
	Seen     string `json:"seen"`
	// Excerpt is a short, truncated copy of the raw exchange.
	Excerpt string `json:"excerpt,omitempty"`
}

// CheckResult is one line of a report.
type CheckResult struct {
	ID     string `json:"id"`
	Grade  Grade  `json:"grade"`
	Title  string `json:"title"`
	Result Result `json:"result"`
	// Reason is set for SKIP (why it was not judged) and for FAIL/WARN (a
	// one-line summary of the evidence).
	Reason   string    `json:"reason,omitempty"`
	Evidence *Evidence `json:"evidence,omitempty"`
}

// Report is the outcome of a run, checks in catalogue order.
type Report struct {
	BaseURL string `json:"base_url"`
	Model   string `json:"model"`
	// ModelChoice says why Model was tested: given by --model, or which id of /v1/models was
	// taken and which were passed over (named like embedding models, or refusing chat).
	ModelChoice    string `json:"model_choice,omitempty"`
	EmbeddingModel string `json:"embedding_model"`
	// EmbeddingChoice says why EmbeddingModel was sent the embeddings requests: given by
	// --embedding-model, the first id of /v1/models named like an embedding model, or the chat
	// model.
	EmbeddingChoice string        `json:"embedding_model_choice,omitempty"`
	Strict          bool          `json:"strict"`
	Started         time.Time     `json:"started"`
	Duration        time.Duration `json:"-"`
	Checks          []CheckResult `json:"checks"`
}

// Summary counts results.
type Summary struct {
	Total int `json:"total"`
	Pass  int `json:"pass"`
	Fail  int `json:"fail"`
	Warn  int `json:"warn"`
	Skip  int `json:"skip"`
}

// Summary counts the report's results.
func (r *Report) Summary() Summary {
	s := Summary{Total: len(r.Checks)}
	for _, c := range r.Checks {
		switch c.Result {
		case Pass:
			s.Pass++
		case Fail:
			s.Fail++
		case Warn:
			s.Warn++
		case Skip:
			s.Skip++
		}
	}
	return s
}

// ExitCode is 0 when every MUST (and, with --strict, STRICT) check passed or
// was skipped, and 1 otherwise. Only such checks can produce FAIL, and a
// check that reports the failure of a MUST gate --only left out.
func (r *Report) ExitCode() int {
	for _, c := range r.Checks {
		if c.Result == Fail {
			return 1
		}
	}
	return 0
}

// Result returns the result for id, or false when id was not run.
func (r *Report) Result(id string) (CheckResult, bool) {
	for _, c := range r.Checks {
		if c.ID == id {
			return c, true
		}
	}
	return CheckResult{}, false
}

// UsageError reports wrong arguments or options; the command exits 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return "conformance: " + e.Msg }

// UnreachableError reports that the server could not be reached at all; the
// command exits 2 because nothing about conformance can be said.
type UnreachableError struct {
	URL string
	Err error
	// Timeout is the per-request timeout that ran out, when that is what
	// ended the request (Err then wraps context.DeadlineExceeded).
	Timeout time.Duration
}

func (e *UnreachableError) Error() string {
	// A server that took the request and stayed silent (busy, still
	// loading a model) is not unreachable, and "context deadline exceeded"
	// does not name the flag that ran out.
	if errors.Is(e.Err, context.DeadlineExceeded) && e.Timeout > 0 {
		return fmt.Sprintf("conformance: no answer from GET %s/models within --timeout %v", e.URL, e.Timeout)
	}
	return fmt.Sprintf("conformance: server unreachable at %s: %v", e.URL, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }
