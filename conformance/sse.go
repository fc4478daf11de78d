package conformance

import (
	"bufio"
	"io"
	"strings"
)

// sseEvent is one dispatched server-sent event.
type sseEvent struct {
	Event string
	Data  string
}

// sseStream is a parsed event stream, kept raw enough to judge the protocol
// (not just the payload): where [DONE] came and whether anything followed.
type sseStream struct {
	Events []sseEvent
	// DoneAt is the index in Events of the first event that ends the stream
	// (see isDone), or -1.
	DoneAt int
	// AfterDone is true when any event followed [DONE].
	AfterDone bool
	// Truncated is true when the stream ended mid-event (no blank line after
	// the last field), which the spec says must be discarded.
	Truncated bool
	// ReadErr is a transport error that ended the stream early.
	ReadErr error
	// ErrorField is the value of the first "error" field, which SSE ignores and llama.cpp's
	// server writes ("error: {...}") when a request fails after the stream's head went out; ""
	// when there is none.
	ErrorField string
}

// maxSSELine bounds one line so a misbehaving server cannot exhaust memory.
const maxSSELine = 4 << 20

// parseSSE reads a text/event-stream body following the WHATWG rules that
// matter here: "field: value" with one optional space, ":" comments, events
// dispatched on a blank line, multi-line data joined with "\n".
func parseSSE(r io.Reader) *sseStream {
	s := &sseStream{DoneAt: -1}
	br := bufio.NewReaderSize(r, 64<<10)
	var data []string
	var event string
	pending := false
	// The specification ignores one leading byte order mark; kept, it would
	// hide the first field's name.
	if bom, err := br.Peek(3); err == nil && string(bom) == "\ufeff" {
		_, _ = br.Discard(3)
	}
	dispatch := func() {
		// A block without a data line dispatches nothing (the
		// specification's "data buffer is empty" rule): "event: ping" or
		// "id: 7" alone is no event, before [DONE] or after it.
		if !pending {
			event = ""
			return
		}
		ev := sseEvent{Event: event, Data: strings.Join(data, "\n")}
		if s.DoneAt >= 0 {
			s.AfterDone = true
		}
		if s.DoneAt < 0 && isDone(ev.Data) {
			s.DoneAt = len(s.Events)
		}
		s.Events = append(s.Events, ev)
		data, event, pending = nil, "", false
	}
	for {
		line, err := readLine(br)
		if err != nil {
			if err != io.EOF {
				s.ReadErr = err
			}
			if pending {
				s.Truncated = true
				// Servers that omit the final blank line are common; keep
				// the event so the judges can still see it, but remember.
				dispatch()
			}
			return s
		}
		if line == "" {
			dispatch()
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "data":
			data = append(data, value)
			pending = true
		case "event":
			event = value
		case "error":
			if s.ErrorField == "" {
				s.ErrorField = value
			}
		}
	}
}

// isDone says whether an event's data ends the stream as the official SDKs
// read it: openai-go's ssestream and openai-python's _streaming.py stop at
// data that begins with "[DONE]" (after the one optional space SSE strips
// after the colon), whatever follows it on the line ("[DONE] ", "[DONE]\t");
// any other data, " [DONE]" or "[done]" among them, goes to their JSON
// decoder, which fails on it.
func isDone(data string) bool { return strings.HasPrefix(data, "[DONE]") }

// readLine returns one line without its terminator. The SSE specification
// allows three: CRLF, LF and a lone CR; bufio's ReadLine knows only the first
// two, and a stream framed with CR would read as one endless line.
func readLine(br *bufio.Reader) (string, error) {
	var buf []byte
	for {
		b, err := br.ReadByte()
		if err != nil {
			if err == io.EOF && len(buf) > 0 {
				return string(buf), nil
			}
			return "", err
		}
		switch b {
		case '\n':
			return string(buf), nil
		case '\r':
			if next, err := br.Peek(1); err == nil && next[0] == '\n' {
				_, _ = br.ReadByte()
			}
			return string(buf), nil
		}
		buf = append(buf, b)
		if len(buf) > maxSSELine {
			return "", errLineTooLong
		}
	}
}

type sseError string

func (e sseError) Error() string { return string(e) }

const errLineTooLong = sseError("event-stream line longer than 4 MiB")

// dataEvents returns the events before [DONE]. Every one had a data line;
// one whose data is empty is kept, because a client hands it to its JSON
// decoder like any other (openai-go and openai-python both fail on it).
func (s *sseStream) dataEvents() []sseEvent {
	end := len(s.Events)
	if s.DoneAt >= 0 {
		end = s.DoneAt
	}
	return s.Events[:end]
}
