// Package upstream owns talking to upstream LLM services: one adapter per wire protocol, each a
// per-request translator that sends the client's request in the upstream's shape and turns the
// answer back into OpenAI shape (a chat.completion body, or a Stream of chat.completion.chunk
// payloads).
//
// Failures come back as the core error types so that errmap can classify them without knowing
// any protocol: *core.ConnError (could not connect, or the connection dropped before headers),
// *core.TimeoutError (no response headers within Target.Timeout of the request's sending, its
// writing included, on both clients (the sweeper's write and head phases; headTransport for
// net/http's); a body that sent nothing for
// the target's idle timeout is an *IdleTimeoutError wrapping one, inside the *core.StreamError
// that a broken body is), *core.StatusError (a non-2xx
// answer, with the upstream's OpenAI error fields), *core.ProtocolError (an answer the adapter
// could not read), *core.StreamError (a stream that broke off or carried an error event), and the
// caller's own context error (errors.Is(err, context.Canceled) holds) when the caller gave up.
//
// Files are named after the protocols they join, client side first: openai_openai.go relays the
// OpenAI API to an OpenAI-compatible upstream (vLLM, llama-server, LM Studio, OpenRouter…);
// openai_ollama.go translates to Ollama's native /api/chat (NDJSON streaming) and /api/embed;
// openai_saif.go translates to the SAIF protocol (a ChatML prompt with a specialist, SSE text
// events). translate.go holds what the translators share, and reasoning.go the "think-tags" and
// "think-open" reasoning options, which move a leading <think>…</think> block (for think-open, all
// up to the first </think>) into reasoning_content for any adapter, streamed or not. h1client.go is the synchronous HTTP/1.1 client that plain http://
// targets use instead of net/http's Transport (no goroutines per connection; see PERFORMANCE.md):
// h1wire.go its wire format (chunked.go its chunked decoder), h1post.go the adapters' POSTs, and
// h1sweep.go the one goroutine per target that, while requests are in flight, enforces their
// contexts and time limits (at most a 10 ms tick late). idle.go bounds the body reads of the
// targets net/http serves instead.
//
// Streams may also implement BufferedStream, which tells a relay whether the next event is
// already in memory, so that it flushes once per burst rather than once per event.
package upstream
