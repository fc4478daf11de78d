package metrics

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hayula/gateway/core"
)

// TestUpstreamStatusesBoundSeries: the status a request is answered with may be an upstream's
// (an error restored as it came), and an upstream may answer any three digits. Statuses without
// a registered meaning are counted by their class (code="5xx"), so that an upstream answering
// 520, 521, … 999 adds at most one series per class to an endpoint and route, not one per status;
// a registered status (418) is still counted as itself.
func TestUpstreamStatusesBoundSeries(t *testing.T) {
	s := New([]string{"r"}, []string{"a"}, time.Unix(0, 0))
	registered := 0
	for status := 100; status <= 999; status++ {
		if http.StatusText(status) != "" || slotOf(status) >= 0 {
			registered++
		}
		s.Request(core.OpChat, 0, status, time.Millisecond)
	}
	s.Request(core.OpChat, 0, 520, time.Millisecond)
	s.Request(core.OpChat, 0, 418, time.Millisecond)
	var w Writer
	s.Write(&w, nil)
	got := parse(t, string(w.Bytes()))
	series := 0
	for k := range got {
		if strings.HasPrefix(k, "hayula_requests_total{") {
			series++
		}
	}
	// Classes 1xx to 9xx at most, on top of the registered statuses.
	if limit := registered + 9; series > limit {
		t.Errorf("900 distinct statuses made %d series of hayula_requests_total; want at most %d", series, limit)
	}
	for k, want := range map[string]string{
		`hayula_requests_total{endpoint="chat",route="r",code="418"}`: "2",
		`hayula_requests_total{endpoint="chat",route="r",code="5xx"}`: "90", // 512…599, and 520 again
		`hayula_requests_total{endpoint="chat",route="r",code="9xx"}`: "100",
		`hayula_requests_total{endpoint="chat",route="r",code="502"}`: "1",
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
}
