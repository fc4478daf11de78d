package upstream

import (
	"encoding/json"
	"slices"
	"strings"
	"unsafe"

	"github.com/hayula/gateway/internal/jsonx"
)

// This file is the think stream's reading and writing of a chunk: a walk with internal/jsonx in
// place of json.Unmarshal into a map[string]json.RawMessage (and its choices into
// []map[string]json.RawMessage), and the rewritten chunk appended in place of mustJSON of those
// maps, with the same bytes (FuzzThinkStreamMatchesOracle): an object's members are read as such
// a map holds them, one a name (the last of a name wins), names decoded (escapes, invalid UTF-8
// as U+FFFD), values as they came; and written in the order of their names, values compacted.

// rawMember is one member of an object as a map[string]json.RawMessage holds it. name is a view
// of the chunk's bytes, or of the scratch's: it lives as long as the rewrite that read it.
type rawMember struct {
	name  string
	value []byte
	// compact says value is compact already, written by the rewrite (chunkScratch.written):
	// appendMembers copies it rather than walk it for whitespace to drop, which, for the
	// choices and the delta a rewrite wrote, was a sixth of what a rewritten chunk cost.
	compact bool
}

// thinkChoice is one element of a chunk's choices: its members, none for a null one (a nil map,
// which mustJSON's map writer wrote as {}).
type thinkChoice struct {
	members []rawMember
}

// chunkScratch holds what the rewrite of one chunk reads and writes before the chunk itself is
// written, reused from chunk to chunk. The member lists handed out are slices of members, each
// with its capacity cut at its end, so that an append to one never writes over the next.
type chunkScratch struct {
	members []rawMember
	names   []byte // member names that needed decoding
	choices []thinkChoice
	vals    []byte // values the rewrite wrote: strings, deltas, the choices array
	// text is a content decoded; answer and reasoning are what the splitter made of it.
	text, answer, reasoning []byte
}

func (w *chunkScratch) reset() {
	w.members, w.names, w.choices, w.vals = w.members[:0], w.names[:0], w.choices[:0], w.vals[:0]
}

// readTop reads the chunk ev, which json.Unmarshal would have refused or read as no object
// when ok is false. A chunk jsonx's validating walk declines that encoding/json reads all the
// same (nested deeper than jsonx follows) is walked without validating.
func (w *chunkScratch) readTop(ev []byte) (ms []rawMember, ok bool) {
	it := jsonx.Object(ev, true)
	if ms, ok = w.read(&it); ok {
		return ms, true
	}
	if !json.Valid(ev) {
		return nil, false
	}
	it = jsonx.Object(ev, false)
	return w.read(&it)
}

// readMembers reads the object b, which is valid JSON, as its map holds it.
func (w *chunkScratch) readMembers(b []byte) []rawMember {
	it := jsonx.Object(b, false)
	ms, _ := w.read(&it)
	return ms
}

// readChoices reads a chunk's choices as json.Unmarshal reads them into a
// []map[string]json.RawMessage: ok is false where it fails (absent, not an array, an element
// neither an object nor null), and even then there are as many choices as elements.
func (w *chunkScratch) readChoices(raw []byte) (chs []thinkChoice, ok bool) {
	if len(raw) == 0 || raw[0] != '[' {
		return nil, isNull(raw)
	}
	ok = true
	it := jsonx.Array(raw, false)
	for {
		_, v, more := it.Next()
		if !more {
			return w.choices, ok
		}
		var ch thinkChoice
		switch v[0] {
		case '{':
			ch.members = w.readMembers(v)
		case 'n':
		default:
			ok = false
		}
		w.choices = append(w.choices, ch)
	}
}

// read appends the members of the object it walks, in the order they came, a name sent twice
// twice (member finds the last, as the map kept it; sorted makes the list the map's); ok is
// false when the walk does not end cleanly. A chunk the rewrite passes as it came, every chunk
// after a think block, is read so and never sorted: sorting every object read was a third of
// what such a chunk cost (BenchmarkThinkStream/answer).
func (w *chunkScratch) read(it *jsonx.Iter) ([]rawMember, bool) {
	start := len(w.members)
	for {
		k, v, more := it.Next()
		if !more {
			break
		}
		w.members = append(w.members, rawMember{name: w.name(k), value: v})
	}
	if !it.Done() {
		w.members = w.members[:start]
		return nil, false
	}
	return w.members[start:len(w.members):len(w.members)], true
}

// sorted is ms as the map held it, to be written or compared member by member: in the order of
// the names, the last member of each name kept; ms itself when it is so already (set's lists),
// else a new list, ms left as it was.
func (w *chunkScratch) sorted(ms []rawMember) []rawMember {
	// IsSortedFunc asks cmp(later, earlier) < 0 of an unsorted pair: a name no greater than the
	// one before it, a name twice included (the copy keeps the last).
	if slices.IsSortedFunc(ms, func(later, earlier rawMember) int {
		if later.name > earlier.name {
			return 1
		}
		return -1
	}) {
		return ms
	}
	start := len(w.members)
	w.members = append(w.members, ms...)
	n := len(sortMembers(w.members[start:]))
	w.members = w.members[:start+n]
	return w.members[start : start+n : start+n]
}

// name is the quoted key q decoded, as json.Unmarshal decodes a map's key.
func (w *chunkScratch) name(q []byte) string {
	if name, plain := jsonx.PlainKey(q); plain {
		return view(name)
	}
	start := len(w.names)
	w.names, _ = jsonx.AppendUnquote(w.names, q)
	return view(w.names[start:])
}

// set is ms with name's value v, replaced or added in its place in the order of the names; a nil
// v takes name out. The list is a new one, sorted; ms is left as it was.
func (w *chunkScratch) set(ms []rawMember, name string, v []byte) []rawMember {
	return w.put(ms, rawMember{name: name, value: v})
}

// written is set for a value v the rewrite wrote itself, compact by construction
// (appendJSONString's, appendMembers', a literal of its own).
func (w *chunkScratch) written(ms []rawMember, name string, v []byte) []rawMember {
	return w.put(ms, rawMember{name: name, value: v, compact: true})
}

func (w *chunkScratch) put(ms []rawMember, nm rawMember) []rawMember {
	name, v := nm.name, nm.value
	ms = w.sorted(ms)
	start := len(w.members)
	done := false
	for _, m := range ms {
		if !done && name <= m.name {
			if v != nil {
				w.members = append(w.members, nm)
			}
			done = true
			if m.name == name {
				continue
			}
		}
		w.members = append(w.members, m)
	}
	if !done && v != nil {
		w.members = append(w.members, nm)
	}
	return w.members[start:len(w.members):len(w.members)]
}

// sortMembers sorts ms by name, keeping the last member of each name, in place. A chunk's
// object has a handful of members: up to 20, a stable insertion sort without a comparison
// function's call for each compare; more (an upstream's odd chunk), the library's stable sort,
// whose time does not grow with the square of their number.
func sortMembers(ms []rawMember) []rawMember {
	if len(ms) <= 20 {
		for i := 1; i < len(ms); i++ {
			for j := i; j > 0 && ms[j].name < ms[j-1].name; j-- {
				ms[j], ms[j-1] = ms[j-1], ms[j]
			}
		}
	} else {
		slices.SortStableFunc(ms, func(a, b rawMember) int { return strings.Compare(a.name, b.name) })
	}
	out := ms[:0]
	for i, m := range ms {
		if i+1 < len(ms) && ms[i+1].name == m.name {
			continue
		}
		out = append(out, m)
	}
	return out
}

// member is the value of ms's member name: the last of that name, as the map kept it.
func member(ms []rawMember, name string) ([]byte, bool) {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].name == name {
			return ms[i].value, true
		}
	}
	return nil, false
}

// appendMembers appends the object of ms (sorted, one a name), as mustJSON wrote a
// map[string]json.RawMessage: each name as a JSON string, each value compacted.
func appendMembers(dst []byte, ms []rawMember) []byte {
	dst = append(dst, '{')
	for i, m := range ms {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendName(dst, m.name)
		dst = append(dst, ':')
		if m.compact {
			dst = append(dst, m.value...)
		} else {
			dst = appendCompactJSON(dst, m.value)
		}
	}
	return append(dst, '}')
}

// appendName appends a member's name as appendJSONString writes it: a name of printable ASCII
// without a quote or a backslash (every name of a chunk nearly) as it is, between quotes, where
// the escaping writer's word-at-a-time loop cost more than the few bytes of a name.
func appendName(dst []byte, name string) []byte {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < ' ' || c > '~' || c == '"' || c == '\\' {
			return appendJSONString(dst, name)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, name...)
	return append(dst, '"')
}

// nonEmptyString reports a JSON string value that is not "": any other decodes to at least one
// byte.
func nonEmptyString(raw []byte) bool { return len(raw) > 2 && raw[0] == '"' }

// view is b as a string without a copy, for names and texts read during one rewrite while
// nothing writes to b's bytes: appends to a scratch buffer go past them, and the buffer is
// reused only by the next rewrite, when none of them is read any more.
func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
