// Package errmap owns the meaning of a failed upstream attempt: Classify turns the typed error an
// adapter returned into a Decision (its Class, the status it would give the client, whether a
// same-target retry may help, whether it counts toward the target's cooldown), and Restore turns
// the attempts of a request that nothing answered into the one OpenAI-shaped error the client gets.
//
// # Classification
//
//	context.Canceled                      client_gone   499  not retried, not penalized
//	  (ClassifyFor: while the request's context is live, connection 502 instead)
//	*core.TimeoutError, DeadlineExceeded  timeout       504  retried, penalized
//	*core.ConnError                       connection    502  retried, penalized
//	  (a connect that did not complete within the dial's own bound wraps a DeadlineExceeded:
//	  connection still)
//	*core.StatusError 503 "loading"       loading       503  not retried, not penalized
//	*core.StatusError 5xx                 server_error  its status, retried, penalized
//	                                      (the model does not fit the upstream's memory, as
//	                                      Ollama says it: not retried, still penalized)
//	*core.StatusError 429                 rate_limit    429  retried, penalized, Retry-After kept
//	                                      (or, without the header, the reset its body relays,
//	                                      or its x-ratelimit-reset-* headers: LimitReset)
//	                                      (insufficient_quota, OpenRouter's free-models-per-day:
//	                                      not retried, Quota: benched at once)
//	*core.StatusError 498                 rate_limit    429  retried, penalized (Groq's flex tier
//	                                      at capacity)
//	*core.StatusError of a retried class with x-should-retry: false
//	                                      its class     not retried
//	*core.StatusError 413                 overflow      413
//	*core.StatusError 400, 422 or 500 naming a context overflow
//	                                      overflow      its status
//	*core.StatusError 424                 server_error  424  retried, penalized (TGI's failed generation)
//	*core.StatusError 408                 server_error  408  retried, penalized (the upstream's own
//	                                      timeout: OpenRouter's, LiteLLM's Timeout)
//	*core.StreamError the upstream sent (no transport error under it) naming a context overflow
//	                                      overflow      400  (an error event inside a 200 stream)
//	*core.StatusError 401/402/403/404/405/410
//	                                      endpoint      its status
//	*core.StatusError 501                 endpoint      501  (a server that does not serve the
//	                                      endpoint: llama-server without --embeddings)
//	*core.UnmetError                      endpoint      its StatusError's (a 2xx that does not
//	                                      give what was asked, e.g. embeddings of another width
//	                                      than dimensions, or not one per input (502); Ollama's
//	                                      400 saying its model lacks a capability: "does not
//	                                      support tools")
//	*core.StatusError other 4xx           request       its status
//	*core.StatusError other non-2xx       server_error  502 (a redirect or 1xx is not an answer)
//	*lifecycle.LoadTimeoutError           loading       503  not retried, not penalized
//	                                      (a managed target's process did not become healthy in time,
//	                                      or its group had no free slot in that time: Group)
//	lifecycle.ErrStopping                 loading       503  not retried, not penalized
//	                                      (the gateway is stopping: a process not ready will not start)
//	lifecycle.ErrRemoved                  loading       503  not retried, not penalized
//	                                      (a reload removed the target a request waited for)
//	*lifecycle.ProcessError               connection    502  retried, penalized
//	                                      (a managed target's process could not start, or died)
//	*core.StreamError, *core.ProtocolError (a malformed answer head too), anything else
//	                                      server_error  502  retried, penalized
//
// Cancellation is tested first, so a StreamError or ConnError wrapping context.Canceled is the
// client's doing, not the upstream's.
//
// "Not retried, still penalized" is for a failure of a retried class that another try within
// the request would meet again (an account out of credit, a daily cap, a model that does not fit
// the machine): the chain moves on at once, whatever the target's max_retries, and the failure
// counts toward the target's cooldown, which keeps the next requests off it.
//
// # Restore: nothing answered, restore the meaningful upstream error
//
// A failure that ended the chain by its class (Attempt.Stopped: a request error, a class the
// route's fallback_on leaves out, or any failure once the request turned fallback off) is
// answered as it is, restored as below, whatever failed before it: a 400 naming the request's bad
// parameter stays that 400 after an earlier target's 500, rather than a 503 a client would retry.
//
// When every attempt failed with the same class and the same status, the failure is a fact about
// the request or the upstreams, and the client is told exactly that: the first attempt is
// restored as-is. A *core.StatusError keeps its status, message, type, code and param (a 401 from
// the only target stays a 401 with the upstream's message); a connection failure becomes 502
// upstream_unreachable, a timeout 504 upstream_timeout, a loading model 503, a client that went
// away 499. Its Retry-After is the soonest any of the attempts carried (every target's 429: the
// client may come back as soon as one of them takes requests again). A connection failure's message is the target's name and a short
// cause chosen by the error's type ("connection refused", "name not resolved", "TLS handshake
// failed", …), never the error's text, which names the upstream's address, host or binary path;
// a stream broken by its connection, and an error of no known type, are worded the same way. An
// overflow is a 400 context_length_exceeded (type invalid_request_error) with the first
// upstream's words, whatever status each overflow came with (a 413, TGI's 422, Ollama's 500, or
// inside a stream): overflows of different statuses are the same failure, not a mix. The server
// logs each failed attempt's whole error.
//
// When the attempts disagree, no single upstream error is the truth, so the client gets 503
// all_targets_failed with every attempt listed in order as "target: class (status)" (the status
// followed by the upstream's error code when that is a plain identifier: "rate_limit (429
// insufficient_quota)"), and the smallest positive Retry-After any attempt carried. No attempts at
// all is 503 "no target could serve".
//
// The answer's x-should-retry (ClientError.ShouldRetry), which OpenAI's SDKs read before retrying
// a 408, 409, 429 or 5xx on their own: an error restored from one upstream's keeps the header that
// upstream sent, when it keeps that upstream's status (an overflow answered 400 does not); otherwise a status the SDKs retry after which every attempt was futile (an
// endpoint failure, or a failure of a retried class that Classify found no retry helps: a bill
// or a daily cap, a model too big for its machine, x-should-retry: false) says "false", and
// anything else says nothing. Restore sees only the attempts: the server takes the "false" back
// when a target of the route was left untried (health set it aside, or the chain stopped before
// it), which a retry may reach.
package errmap
