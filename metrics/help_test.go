package metrics

import (
	"strings"
	"testing"
	"time"
)

// TestHelpReadsAsWritten: a family's HELP text is prose for a person reading /metrics. Family
// escapes a backslash as the text format asks, so a help string written with \" (to quote a
// value inside a Go raw string, where it is no escape) reads with the backslashes; and a list of
// a label's values reads with its commas.
func TestHelpReadsAsWritten(t *testing.T) {
	s := New([]string{"r"}, []string{"t"}, time.Unix(1700000000, 0))
	var w Writer
	s.Write(&w, nil)
	for _, l := range strings.Split(string(w.Bytes()), "\n") {
		help, ok := strings.CutPrefix(l, "# HELP ")
		if !ok {
			continue
		}
		if strings.Contains(help, `\\`) {
			t.Errorf("HELP %s: a backslash a reader sees", help)
		}
		if strings.HasPrefix(help, "hayula_stream_ends_total ") && !strings.Contains(help, `mid-stream), "broke_off"`) {
			t.Errorf("HELP %s: want its ends listed with commas", help)
		}
	}
}
