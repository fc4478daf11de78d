package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/errmap"
	"github.com/hayula/gateway/filter"
	"github.com/hayula/gateway/internal/echo"
	"github.com/hayula/gateway/internal/httpwire"
	"github.com/hayula/gateway/internal/logfmt"
	"github.com/hayula/gateway/metrics"
	"github.com/hayula/gateway/upstream"
)

// Header values the server assigns (canonical key, prebuilt value) rather than Sets: Set builds
// a one-element slice per call. Never modified; a handler that appends to one copies it.
var (
	jsonContentType = []string{"application/json"}
	sseContentType  = []string{"text/event-stream"}
	noCache         = []string{"no-cache"}
	noBuffering     = []string{"no"}
)

// maxSharedLength bounds the answer lengths whose Content-Length value the server keeps
// (Server.lengths): most answers are shorter than a few KB.
const maxSharedLength = 8 << 10

// lengthValue is []string{strconv.Itoa(n)}, the Content-Length header's value for an answer of n
// bytes: built the first time an answer of that length goes out and shared after, for n below
// maxSharedLength. The slice and its string were two allocations on every answer.
func (s *Server) lengthValue(n int) []string {
	if n < 0 || n >= len(s.lengths) {
		return []string{strconv.Itoa(n)}
	}
	if v := s.lengths[n].Load(); v != nil {
		return *v
	}
	v := []string{strconv.Itoa(n)}
	s.lengths[n].Store(&v) // a concurrent first answer of the same length may store its own equal value
	return v
}

// targetValue is []string{t.Name}: built once for a configured target.
func (s *Server) targetValue(t *core.Target) []string {
	if t.Index >= 0 && t.Index < len(s.targetValues) && s.targetValues[t.Index] != nil &&
		s.targetValues[t.Index][0] == t.Name {
		return s.targetValues[t.Index]
	}
	return []string{t.Name}
}

// fielder is internal/h1's ResponseWriter: header lines built once and a body length, handed
// over without the header map (each entry a map assignment, and on the way out a walk of the
// map checking every name and value, on every answer).
type fielder interface {
	AddFields(lines []byte)
	SetContentLength(n int64)
	// WriteWhole is Write and Flush of a whole body, the head and the body sent together
	// without copying the body.
	WriteWhole(p []byte) (int, error)
}

// fielderOf is w's fielder, looking through the recoverer's trackingWriter; nil when the
// server behind w is another (net/http, a test's recorder).
func fielderOf(w http.ResponseWriter) fielder {
	if f, ok := w.(fielder); ok {
		return f
	}
	if u, ok := w.(interface{ Unwrap() http.ResponseWriter }); ok {
		f, _ := u.Unwrap().(fielder)
		return f
	}
	return nil
}

// headerLines is "k: v\r\n" for each pair kv, or nil when a value could not go in a head as it
// is (config's names never fail this; the check keeps the lines' promise to internal/h1).
func headerLines(kv ...string) []byte {
	var b []byte
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" || !httpwire.ValidValue(kv[i+1]) || !httpwire.IsToken(kv[i]) {
			return nil
		}
		b = append(append(append(append(b, kv[i]...), ": "...), kv[i+1]...), "\r\n"...)
	}
	return b
}

var (
	jsonContentTypeLine = headerLines("Content-Type", "application/json")
	// sseLines are a stream's own fields, as relay puts them in the header map otherwise.
	sseLines = headerLines("Content-Type", sseContentType[0], "Cache-Control", noCache[0],
		"X-Accel-Buffering", noBuffering[0])
)

// prebuilt reports whether k is a field the prebuilt lines write (prebuiltFields, sseLines), in
// any case. A name of another length is none of them: each is ASCII without a k or an s, the
// only letters whose Unicode case folds (K, ſ) are of another length, so EqualFold is asked
// only of names of the same length (a saif answer's X-Hayula-Specialist shares its first nine
// bytes with three of them, and every answer of a saif target asked all seven).
func prebuilt(k string) bool {
	for _, p := range [...]string{"Content-Type", "Content-Length", hdrRoute, hdrChain, hdrTarget,
		"Cache-Control", "X-Accel-Buffering"} {
		if len(k) == len(p) && strings.EqualFold(k, p) {
			return true
		}
	}
	return false
}

// prebuiltFields readies the head of an answer that one target served at the first try for
// internal/h1's fielder: the route's, chain's and target's lines built once, with the adapter's
// own fields (res.resp.Header) in the header map. It returns nil, having added nothing, when it
// cannot (another server behind w, a name that is no header value, a chain longer than its
// target, an adapter's value for a field the lines write); the caller then goes through the
// header map, with the same fields. Each map entry would be an assignment, and on the way out a
// walk of the map checking every name and value, on every answer.
func (s *Server) prebuiltFields(w http.ResponseWriter, rs *routeState, res *result) fielder {
	t := res.target
	if len(res.chain) != 1 || res.chain[0] != t.Name || rs.routeLine == nil ||
		t.Index < 0 || t.Index >= len(s.targetLines) || s.targetLines[t.Index] == nil ||
		s.targetValues[t.Index][0] != t.Name {
		return nil
	}
	for k := range res.resp.Header {
		if prebuilt(k) {
			return nil // the adapter's own value for a field of ours: the map decides, as before
		}
	}
	f := fielderOf(w)
	if f == nil {
		return nil
	}
	if len(res.resp.Header) > 0 {
		h := w.Header()
		for k, vs := range res.resp.Header {
			h[k] = vs
		}
	}
	f.AddFields(rs.routeLine)
	f.AddFields(s.targetLines[t.Index])
	return f
}

// writeWhole sends a whole answer that one target served at the first try through internal/h1's
// fielder (prebuiltFields), with the content type's line and the length without a header value.
// It reports false, having written nothing, when it cannot; write then goes through the header
// map, with the same fields. err is the write's failure: the client is gone.
func (s *Server) writeWhole(w http.ResponseWriter, rs *routeState, res *result) (done bool, err error) {
	f := s.prebuiltFields(w, rs, res)
	if f == nil {
		return false, nil
	}
	f.AddFields(jsonContentTypeLine)
	f.SetContentLength(int64(len(res.resp.Body)))
	w.WriteHeader(http.StatusOK)
	// Out now, with its length, in one write: what is left of the request (the target's
	// release, the log line) is not the client's wait.
	n, err := f.WriteWhole(res.resp.Body)
	return true, cutAfter(n, len(res.resp.Body), err)
}

// statusClientGone is the status a request is counted and logged with when its client was gone
// before the answer's head reached it (nginx's 499, "client closed request"): no status went out.
const statusClientGone = 499

// sentStatus is the status of a whole answer whose write (and flush) ended with err, and how an
// answer its client left ended (streamClientLeft; "" otherwise): 200 when it went out; 200 and
// streamClientLeft when the client left after the head and part of the body reached it
// (headSent), as a stream its client leaves after its head keeps its 200; statusClientGone when
// nothing is known to have reached it; or the status a wrapping writer sent instead of the answer
// (sentInstead). A write the kernel took counts as sent: a client that left after it is not seen.
func sentStatus(err error) (int, string) {
	if err == nil {
		return http.StatusOK, "" // without a pointer for errors.As to take, which would cost every answer an allocation
	}
	if instead, ok := errors.AsType[sentInstead](err); ok {
		return int(instead), ""
	}
	if _, ok := errors.AsType[headSent](err); ok {
		return http.StatusOK, streamClientLeft
	}
	return statusClientGone, ""
}

// sentInstead is what a writer wrapping the client's (the Responses bridge) reports from its
// flush when it answered with this status instead of the answer it was given: an error it wrote
// itself, which is the status counted and logged (TestResponsesUnreadableAnswerStatus).
type sentInstead int

func (s sentInstead) Error() string { return "answered " + strconv.Itoa(int(s)) + " instead" }

// headSent is the failure of a whole answer's write after its head and part of its body reached
// the kernel: the client was sent its 200 and left during the body (TestWholeAnswerCutAfterHead).
type headSent struct{ err error }

func (e headSent) Error() string { return "the client left during the answer's body: " + e.err.Error() }
func (e headSent) Unwrap() error { return e.err }

// cutAfter is the error of a whole answer's write of size bytes that wrote n of them and ended
// with err: headSent when part of it went out, which only internal/h1's WriteWhole, whose head
// and body go out in one write or writev, counts as n; err as it is otherwise. n = size with an
// error is WriteWhole's own fallback having copied the body into its buffers and failed to flush
// it: nothing is known to have gone out.
func cutAfter(n, size int, err error) error {
	if err != nil && n > 0 && n < size {
		return headSent{err}
	}
	return err
}

// sendWhole writes body, the whole answer, after WriteHeader, and flushes it: through
// internal/h1's WriteWhole when w is its writer (behind the recoverer's), which says how much of
// body went out before a failure (cutAfter) and does not copy body; through Write and a flush
// otherwise, whose error is taken as it is (the Responses bridge's flush reports headSent itself).
func sendWhole(w http.ResponseWriter, body []byte) error {
	if f := fielderOf(w); f != nil {
		n, err := f.WriteWhole(body)
		return cutAfter(n, len(body), err)
	}
	_, err := w.Write(body)
	if ferr := flushWhole(w); err == nil {
		err = ferr
	}
	return err
}

// flushWhole flushes what was written to w and reports the flush's failure; a writer that cannot
// flush (a test's recorder) has nothing to report.
func flushWhole(w http.ResponseWriter) error {
	if err := http.NewResponseController(w).Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

var (
	sseData = []byte("data: ")
	sseEnd  = []byte("\n\n")
	sseDone = []byte("data: [DONE]\n\n")
)

// maxEventData is the longest payload the gateway writes in a "data: " line. openai-go reads a
// stream with a bufio.Scanner whose buffer grows to bufio.MaxScanTokenSize<<9 bytes (32 MiB,
// packages/ssestream) and must hold the line with its LF: a longer line fails the client's stream
// with "token too long", and the error event after it is never read. The gateway's own reader
// takes an upstream event of up to 32 MiB, and a Responses stream's events, the bridge's own
// JSON, can be longer than the chunk they came from (an escaped "<" is six bytes, a .done event
// holds the whole text), so the bound is kept where lines are written: one length compare an
// event (TestSSELinesWithinSDKLimit).
const maxEventData = bufio.MaxScanTokenSize<<9 - 1 - len("data: ")

// eventTooLong is the failure of a stream whose next event is longer than maxEventData: before
// the first event went out the chain moves on, after it the stream ends with an error event.
func eventTooLong(target string, n int) error {
	return &core.StreamError{Target: target, Message: "upstream sent an event of " + strconv.Itoa(n) +
		" bytes, longer than a client's SSE reader takes (" + strconv.Itoa(maxEventData) + ")"}
}

// bridgeTooLong is the failure of a Responses stream the bridge ended because one of its events
// would be longer than maxEventData (responsesWriter.tooLong).
func bridgeTooLong(target string) error {
	return &core.StreamError{Target: target, Message: "the Responses bridge ended the stream: one of its events would be longer than a client's SSE reader takes (" +
		strconv.Itoa(maxEventData) + " bytes)"}
}

// How a stream that went out did not end with its [DONE], as the request's log line says it
// (requestLog.stream): "" for one that did, and for a whole answer.
const (
	streamClientLeft = "client_left" // the client went away: no fault of the target's
	streamBrokeOff   = "broke_off"   // the upstream failed after the first event; the client got an error event
	// streamAborted: the upstream ended the answer with finish_reason "abort" (upstream.AbortedError)
	// after it began, relayed as it came; a whole answer's cut= says it too (upstream.Response.Aborted).
	streamAborted = "aborted"
)

// streamEndOf is how hayula_stream_ends_total names the end of a stream whose head went out, from
// what write returned for it.
func streamEndOf(ended string) int {
	switch ended {
	case streamClientLeft:
		return metrics.StreamClientLeft
	case streamBrokeOff:
		return metrics.StreamBrokeOff
	case streamAborted:
		return metrics.StreamAborted
	}
	return metrics.StreamDone
}

// write sends the attempt loop's outcome to the client and returns the status it used, and for an
// answer that did not end as sent (a stream without its [DONE], a whole answer cut short), how it
// ended (streamClientLeft, streamBrokeOff). The status is statusClientGone for a client gone
// before the answer's head reached it: gone during the attempt loop, or when the write of a whole
// answer failed before any of its body went out, or that of a stream's head and first event. An
// answer its client leaves later keeps its 200 (see relay, sentStatus). The key's
// concurrency slot st holds is given back, and the answer charged to its tpm, before the
// answer's end goes out: a client that sends its next request as soon as it has the answer (the
// SDK stops reading a stream at [DONE]) must find the slot free and the tokens spent, and
// serveOp's work after the write (or a stream's drained tail) is not its. A stream's usage
// (streamUsage) counts as st's key's tokens. An error answer is charged nothing.
func (s *Server) write(ctx context.Context, w http.ResponseWriter, rs *routeState, req *core.Request, res *result, st *reqState) (int, string) {
	if res.gone || res.err != nil {
		return s.writeFailed(w, rs, res, st)
	}
	defer res.flight.end()
	if res.resp.Stream == nil {
		if st.tpm != nil {
			s.chargeWhole(st, req, res)
		}
		s.unbusy(st)
		if done, err := s.writeWhole(w, rs, res); done {
			return sentStatus(err)
		}
	} else if f := s.prebuiltFields(w, rs, res); f != nil {
		f.AddFields(sseLines)
		return s.relay(ctx, w, s.usageTo(rs, st), req, res, st, true)
	}
	return s.writeMapped(ctx, w, rs, req, res, st)
}

// write's other cases are functions of their own so that what they hold (a header map's
// iteration, a token count, error answers) is not a part of write's frame, on the stack of every
// stream while it is relayed.

// writeFailed answers a request that nothing served: its client gone (res.gone), or res.err.
//
//go:noinline
func (s *Server) writeFailed(w http.ResponseWriter, rs *routeState, res *result, st *reqState) (int, string) {
	// Header values are assigned, not Set: Set builds a one-element slice per call, and the
	// route's and target's values are built once. Nothing appends to them in place (a slice of
	// length 1 and capacity 1 is copied by append).
	h := w.Header()
	if res.gone {
		// Written, not left out: a handler that writes nothing is answered 200 with an empty
		// body by the HTTP server, which a client that only half-closed its side reads as a
		// success (TestHalfClosedClientNotToldOK).
		h[hdrRoute] = rs.nameValue // what goes out is the map's: the route's field as before writeWhole
		if len(res.chain) > 0 {
			h.Set(hdrChain, chainHeader(res.chain, ""))
		}
		s.unbusy(st)
		writeError(w, clientClosed())
		return statusClientGone, ""
	}
	h[hdrRoute] = rs.nameValue
	if len(res.chain) > 0 {
		h.Set(hdrChain, chainHeader(res.chain, ""))
	}
	s.unbusy(st)
	writeError(w, res.err)
	return res.err.Status, ""
}

// chargeWhole charges a whole answer's tokens to st's key's tpm: the usage it reports, or
// without one, the lower bound of the text it answered, as a stream is charged the bound of what
// it relayed (TestKeyTPMStream's "no usage").
//
//go:noinline
func (s *Server) chargeWhole(st *reqState, req *core.Request, res *result) {
	p, c, ok := answerUsage(res.resp)
	if !ok {
		var text filter.TextTokens
		answerText(&text, res.resp.Body)
		c = uint64(text.Min())
	}
	s.chargeTPM(st, req, p, c, ok)
}

// writeMapped writes the answer through the header map, where the writer takes no prebuilt
// fields (prebuiltFields, writeWhole). Its values are assigned, not Set, as writeFailed's are.
//
//go:noinline
func (s *Server) writeMapped(ctx context.Context, w http.ResponseWriter, rs *routeState, req *core.Request, res *result, st *reqState) (int, string) {
	h := w.Header()
	h[hdrRoute] = rs.nameValue
	target := s.targetValue(res.target)
	if len(res.chain) == 1 && res.chain[0] == res.target.Name {
		h[hdrChain] = target
	} else {
		h.Set(hdrChain, chainHeader(res.chain, res.target.Name))
	}
	h[hdrTarget] = target
	for k, vs := range res.resp.Header {
		h[k] = vs
	}
	if res.resp.Stream == nil {
		h["Content-Type"] = jsonContentType
		h["Content-Length"] = s.lengthValue(len(res.resp.Body))
		w.WriteHeader(http.StatusOK)
		// Out now, with its length, in one write: what is left of the request (the target's
		// release, the log line) is not the client's wait.
		return sentStatus(sendWhole(w, res.resp.Body))
	}
	return s.relay(ctx, w, s.usageTo(rs, st), req, res, st, false)
}

// usageTo is where a stream's usage is counted: nowhere without metrics.
func (s *Server) usageTo(rs *routeState, st *reqState) usageTo {
	if s.metrics == nil {
		return usageTo{route: -1} // no metrics: nothing counted
	}
	return st.usageTo(rs)
}

// relay streams events to the client. Past this point nothing falls through: a failure ends the
// stream with an error event. An event is flushed as soon as it is written unless the stream
// says its next event is already in memory: then the next write follows at once and one flush
// carries both, so a burst costs one write to the socket while an event never waits for the
// upstream (TestStreamFlushesEachEvent). The first event is flushed with the head regardless.
//
// The stream's usage (streamUsage: what its upstream reported, asked for or not) is charged to
// the key's tpm, and the key's slot rq holds given back, before the stream's last event ([DONE]
// or an error) goes out; a stream whose client left is charged when the relay ends, with what it
// reported so far (or, when it reported none, the lower bound of req's prompt: chargeTPM). With
// usage.route 0 or more, the same usage is counted once as that route's (and key's) tokens when
// the relay ends, however the stream did. When the adapter asked for the usage the client did
// not (upstream.Response.UsageAsked), the chunk that carries only it (no choices) is counted and
// not written (TestStreamUsageAskedByGateway); a Responses stream's bridge is handed it, and at
// the stream's end the usage counted when no event it was written carried one (a translating
// adapter's, which puts its server's counts in no chunk unasked): response.completed carries it
// (TestResponsesStreamUsage). fields says the head's fields are in the fielder's lines already
// (prebuiltFields and sseLines), not to be put in the header map. It returns the stream's status
// and how a stream that did not end with its [DONE] ended (see write): 200, or statusClientGone
// when the head and the first event, which go out together, could not be written. A client that
// leaves after them had the answer's head and start (a chat UI's stop button ends a stream so):
// its 200 stands, as nginx keeps the status of an answer it had begun to send, and
// streamClientLeft tells the rest.
func (s *Server) relay(ctx context.Context, w http.ResponseWriter, usage usageTo, req *core.Request, res *result, rq *reqState, fields bool) (int, string) {
	st := res.resp.Stream
	defer st.Close()
	// A usage chunk the adapter asked for unasked by the client is counted, not relayed. The
	// Responses bridge, whose response.completed carries the usage, is handed it instead.
	hide, bridge := res.resp.UsageAsked, rq.bridge
	var su streamUsage
	su.start(st, usage.route >= 0 || rq.tpm != nil || hide || bridge != nil, rq.tpm != nil)
	defer s.countStream(usage, res.target, req, rq, &su)
	buffered, _ := st.(upstream.BufferedStream)
	// An event the upstream framed as the client is sent it goes out as it came, in one write;
	// through the Responses bridge, which rewrites every event, as the others.
	var framed upstream.FramedStream
	if bridge == nil {
		framed, _ = st.(upstream.FramedStream)
	}
	if !fields { // else the head's fields are lines already (prebuiltFields, sseLines)
		h := w.Header()
		h["Content-Type"] = sseContentType
		h["Cache-Control"] = noCache
		h["X-Accel-Buffering"] = noBuffering
	}
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	s.relaying.Add(1)
	defer s.relaying.Add(-1)
	ev, err := res.first, error(nil)
	// The head and the first event always go out at once: the time to the first token is what a
	// chat client shows, and waiting to coalesce it with a burst behind it cost the bench's
	// streams ~80 µs to first byte. For the same reason the first flush is followed by a yield
	// of the CPU, so that a client woken on it reads the event before the burst is relayed (see
	// Options.Yield), when this is the only stream being relayed: with others in flight the
	// gateway has their events to relay, and yielding for each one's first event held back
	// events of 1,000 streams opened at once (2–23 in five runs, against 0–16 without it).
	first := true
	left := func() (int, string) {
		// The client went away; closing the stream cancels the upstream.
		if first {
			return statusClientGone, s.clientLeft(res, w)
		}
		return http.StatusOK, s.clientLeft(res, w)
	}
	if len(res.lead) > 0 {
		// The chunks with nothing in them held before the first event (firstEvent), with it:
		// they carry no usage, and the head, they and the first event go out in one flush.
		if _, werr := w.Write(res.lead); werr != nil {
			return left()
		}
	}
	for err == nil {
		// Before Buffered, which may invalidate ev (TestStreamUsageReadBeforeBuffered). Only an
		// event with usage (once a stream, in general) is looked at for choices.
		if su.see(ev) && hide && usageOnly(ev) {
			if bridge != nil {
				bridge.keptUsage(ev)
			}
		} else if werr := writeFramed(w, upstream.FramedEvent(framed, ev), ev); werr != nil {
			return left()
		} else {
			su.relayed(ev)
		}
		if (first || buffered == nil || !buffered.Buffered()) && rc.Flush() != nil {
			return left()
		}
		if first && s.relaying.Load() == 1 {
			s.yield()
		}
		first = false
		if bridge != nil && bridge.overLong {
			// The Responses bridge ended the stream in the event's place (its error event and
			// response.failed went out): a stream that broke off (TestResponsesOverLongEventIsBrokeOff).
			err = bridgeTooLong(res.target.Name)
			break
		}
		if ev, err = st.Next(); err == nil && len(ev) > maxEventData {
			err = eventTooLong(res.target.Name, len(ev))
		}
	}
	if errors.Is(err, io.EOF) {
		return s.relayDone(w, rc, req, res, rq, &su, err)
	}
	return s.relayBroke(ctx, w, rc, req, res, rq, &su, err)
}

// relayDone ends a stream its upstream ended (err wraps io.EOF): its [DONE], after its usage is
// charged and its key's slot given back. It and relayBroke are functions of their own so that
// what they build (log lines, error events) is not a part of relay's frame, on the stack of every
// stream while it waits for its next event.
//
//go:noinline
func (s *Server) relayDone(w http.ResponseWriter, rc *http.ResponseController, req *core.Request, res *result, rq *reqState,
	su *streamUsage, err error) (int, string) {
	bridge := rq.bridge
	// Flushed now, not left for the end of the chunked body when the handler returns:
	// closing the stream (deferred in relay) drains the upstream's tail for up to drainWait,
	// and the client's [DONE] must not wait for that (TestStreamDoneNotHeldForUpstreamTail).
	s.chargeStream(rq, req, su)
	s.unbusy(rq)
	if bridge != nil {
		bridge.countedUsage(su.usage()) // before [DONE], on which it sends response.completed
	}
	_, _ = w.Write(sseDone)
	_ = rc.Flush()
	if bridge != nil && bridge.overLong {
		// The bridge's last events (the .done ones and the response, which repeat the whole
		// text) were too long: it ended the stream with an error event in their place.
		s.log.Warn("stream broke off", "target", res.target.Name, "error", errmap.LogText(bridgeTooLong(res.target.Name)),
			"request_id", requestIDOf(w))
		return http.StatusOK, streamBrokeOff
	}
	if _, ok := errors.AsType[*upstream.AbortedError](err); ok {
		// Relayed as it came, the abort chunk and [DONE] (the Responses bridge fails it), but
		// the engine gave the answer up: not a whole one (TestAbortAfterContentIsCut).
		s.log.Warn("stream aborted", "target", res.target.Name, "error", errmap.LogText(err), "request_id", requestIDOf(w))
		return http.StatusOK, streamAborted
	}
	return http.StatusOK, ""
}

// relayBroke ends a stream whose upstream failed (err), or whose client is taken for gone
// (ctx done), with an error event.
//
//go:noinline
func (s *Server) relayBroke(ctx context.Context, w http.ResponseWriter, rc *http.ResponseController, req *core.Request, res *result,
	rq *reqState, su *streamUsage, err error) (int, string) {
	if ctx.Err() != nil {
		// Taken for gone, the client may still read: one that only half-closed its side. Its
		// stream must not end as if whole (an SDK takes what came before a clean end for the
		// whole answer), so it ends with the error a client gone before the head reads, as a
		// stream the upstream broke off ends with one (TestHalfClosedStreamNotEndedAsWhole).
		s.chargeStream(rq, req, su)
		s.unbusy(rq)
		_ = writeEvent(w, errorBody(clientClosed()))
		_ = rc.Flush()
		return http.StatusOK, s.clientLeft(res, w)
	}
	// A cause, not the error's text, which may name the upstream's address (errmap.StreamMessage);
	// the log below has the error without the upstream's words (errmap.LogText). An upstream's own message in an error line is its to
	// size: both are cut (after the key is redacted, so that no cut leaves part of it).
	key := string(res.target.APIKey)
	msg := res.target.Name + ": " + echo.Clip(redactKey(errmap.StreamMessage(err), key), maxStreamMessage)
	s.log.Warn("stream broke off", "target", res.target.Name, "error", echo.Clip(redactKey(errmap.LogText(err), key), maxLoggedError),
		"request_id", requestIDOf(w))
	body := errorBody(&apiError{Type: typeUpstream, Code: "stream_interrupted",
		Message: "the upstream stream broke off: " + msg})
	s.chargeStream(rq, req, su)
	s.unbusy(rq)
	_ = writeEvent(w, body)
	_ = rc.Flush()
	return http.StatusOK, streamBrokeOff
}

// clientLeft notes a stream whose client went away before its end: at debug here, and on the
// request's line (stream=client_left), which is all info shows of it, since it is no target's
// failure.
func (s *Server) clientLeft(res *result, w http.ResponseWriter) string {
	s.log.Debug("client left mid-stream", "target", res.target.Name, "request_id", requestIDOf(w))
	return streamClientLeft
}

// writeFramed writes frame, the event payload framed as writeEvent frames it, when there is one
// (upstream.FramedEvent): one write where there would be three.
func writeFramed(w io.Writer, frame, payload []byte) error {
	if frame == nil {
		return writeEvent(w, payload)
	}
	_, err := w.Write(frame)
	return err
}

func writeEvent(w io.Writer, payload []byte) error {
	if _, err := w.Write(sseData); err != nil {
		return err
	}
	if _, err := w.Write(payload); err != nil {
		return err
	}
	_, err := w.Write(sseEnd)
	return err
}

// requestLog is what a request's log line says besides its method, path, status and times.
type requestLog struct {
	key        string   // the name of the key it came with; "" for none
	route      string   // "" before one was resolved
	movedFrom  string   // the route model auto moved the request off (autoMove); "" when it was not moved
	chain      []string // the targets tried
	stream     string   // how a stream that did not end with its [DONE] ended; "" otherwise (see write)
	cut        string   // how a whole answer that did not go out whole ended (streamClientLeft); "" otherwise
	id         string   // the request's ID (X-Request-Id)
	upstreamID string   // the serving upstream's own ID for it; "" when it sent none
}

// logRequest writes a request's line. Its fields are in a fixed order, which operators' tooling
// reads: method, path, route, chain, status, duration, then moved_from, stream, cut, key,
// request_id and upstream_request_id, each of those six only when it has a value. The IDs are values the
// gateway checked (upstream.ValidRequestID), never headers copied wholesale.
func (s *Server) logRequest(r *http.Request, rl requestLog, status int, start, now time.Time) {
	h := s.log.Handler()
	if !h.Enabled(r.Context(), slog.LevelInfo) {
		return
	}
	if t, ok := h.(*logfmt.Text); ok {
		// The line's shape is known: written as a logfmt.Line, in the same bytes, it needs no
		// slog.Record (whose sixth attribute is an allocation), no walk of its attributes and no
		// joined chain.
		l := t.Line(now, slog.LevelInfo, "request").String("method", r.Method).String("path", r.URL.Path).
			String("route", rl.route).Join("chain", chainSep, rl.chain).Int("status", int64(status)).
			Duration("duration", now.Sub(start))
		if rl.movedFrom != "" {
			l = l.String("moved_from", rl.movedFrom)
		}
		if rl.stream != "" {
			l = l.String("stream", rl.stream)
		}
		if rl.cut != "" {
			l = l.String("cut", rl.cut)
		}
		if rl.key != "" {
			l = l.String("key", rl.key)
		}
		if rl.id != "" {
			l = l.String("request_id", rl.id)
		}
		if rl.upstreamID != "" {
			l = l.String("upstream_request_id", rl.upstreamID)
		}
		_ = l.Write()
		return
	}
	// Another handler (a test's, a user's, a derived logger's) gets the record directly:
	// Logger.LogAttrs would also record the caller's program counter (runtime.Callers), which no
	// handler of ours prints, on every request.
	rec := slog.NewRecord(now, slog.LevelInfo, "request", 0)
	rec.AddAttrs(
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.String("route", rl.route),
		slog.String("chain", chainHeader(rl.chain, "")),
		slog.Int("status", status),
		slog.Duration("duration", now.Sub(start)))
	if rl.movedFrom != "" {
		rec.AddAttrs(slog.String("moved_from", rl.movedFrom))
	}
	if rl.stream != "" {
		rec.AddAttrs(slog.String("stream", rl.stream))
	}
	if rl.cut != "" {
		rec.AddAttrs(slog.String("cut", rl.cut))
	}
	if rl.key != "" {
		rec.AddAttrs(slog.String("key", rl.key))
	}
	if rl.id != "" {
		rec.AddAttrs(slog.String("request_id", rl.id))
	}
	if rl.upstreamID != "" {
		rec.AddAttrs(slog.String("upstream_request_id", rl.upstreamID))
	}
	_ = h.Handle(r.Context(), rec)
}

// The most of an upstream's error text a stream's error event carries, and the log line.
const (
	maxStreamMessage = 1 << 10
	maxLoggedError   = 4 << 10
)
