package server

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
)

// TestSentStatus: the status an answer is counted with, from its write's error, and how it ended
// when its client left after its head, and at no allocation for an answer that went out (it is
// asked of every whole answer; an errors.As target declared ahead of the nil check cost each one).
func TestSentStatus(t *testing.T) {
	gone := errors.New("write: broken pipe")
	for _, tc := range []struct {
		err   error
		want  int
		ended string
	}{
		{nil, http.StatusOK, ""},
		{gone, statusClientGone, ""},
		{sentInstead(http.StatusBadGateway), http.StatusBadGateway, ""},
		{fmt.Errorf("flush: %w", sentInstead(http.StatusBadGateway)), http.StatusBadGateway, ""},
		{headSent{gone}, http.StatusOK, streamClientLeft},
		{fmt.Errorf("flush: %w", headSent{gone}), http.StatusOK, streamClientLeft},
	} {
		if got, ended := sentStatus(tc.err); got != tc.want || ended != tc.ended {
			t.Errorf("sentStatus(%v) = %d, %q; want %d, %q", tc.err, got, ended, tc.want, tc.ended)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = sentStatus(nil) }); n != 0 {
		t.Errorf("sentStatus(nil): %v allocations, want 0", n)
	}
}

// TestCutAfter: a whole answer's write is headSent only when part of its body, not none and not
// all, went out before the failure: WriteWhole's own fallback reports the whole body taken into
// its buffers when its flush fails, and nothing of it is known to have gone out then.
func TestCutAfter(t *testing.T) {
	gone := errors.New("write: connection reset by peer")
	for _, tc := range []struct {
		n, size int
		err     error
		cut     bool
	}{
		{10, 10, nil, false},
		{0, 10, gone, false},
		{10, 10, gone, false},
		{1, 10, gone, true},
		{9, 10, gone, true},
	} {
		err := cutAfter(tc.n, tc.size, tc.err)
		if _, cut := errors.AsType[headSent](err); cut != tc.cut || !errors.Is(err, tc.err) {
			t.Errorf("cutAfter(%d, %d, %v) = %v; want headSent %v, wrapping the error", tc.n, tc.size, tc.err, err, tc.cut)
		}
	}
}
