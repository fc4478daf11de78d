package metrics

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestReloads: the reload counters by result, and the timestamp of the configuration in use (the
// start until a reload succeeds; a failed one does not move it).
func TestReloads(t *testing.T) {
	started := time.Unix(1000, 0)
	var r Reloads
	write := func() map[string]string {
		var w Writer
		r.Write(&w, started)
		return parse(t, string(w.Bytes()))
	}
	want := func(ok, failed, ts string) map[string]string {
		return map[string]string{
			`hayula_config_reloads_total{result="ok"}`:            ok,
			`hayula_config_reloads_total{result="failed"}`:        failed,
			"hayula_config_last_reload_success_timestamp_seconds": ts,
		}
	}
	if diff := cmp.Diff(want("0", "0", "1000"), write()); diff != "" {
		t.Errorf("before any reload (-want +got):\n%s", diff)
	}
	r.Done(true, time.Unix(2000, 500_000_000))
	r.Done(false, time.Unix(3000, 0))
	if diff := cmp.Diff(want("1", "1", "2000.5"), write()); diff != "" {
		t.Errorf("after one good and one failed reload (-want +got):\n%s", diff)
	}
	var none *Reloads
	none.Done(true, started)
	var w Writer
	none.Write(&w, started)
	if len(w.Bytes()) != 0 {
		t.Errorf("a nil Reloads wrote %q", w.Bytes())
	}
}
