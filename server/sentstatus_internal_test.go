package server

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
)

// TestSentStatus: the status an answer is counted with, from its write's error, and at no
// allocation for an answer that went out (it is asked of every whole answer; an errors.As target
// declared ahead of the nil check cost each one).
func TestSentStatus(t *testing.T) {
	gone := errors.New("write: broken pipe")
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, http.StatusOK},
		{gone, statusClientGone},
		{sentInstead(http.StatusBadGateway), http.StatusBadGateway},
		{fmt.Errorf("flush: %w", sentInstead(http.StatusBadGateway)), http.StatusBadGateway},
	} {
		if got := sentStatus(tc.err); got != tc.want {
			t.Errorf("sentStatus(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = sentStatus(nil) }); n != 0 {
		t.Errorf("sentStatus(nil): %v allocations, want 0", n)
	}
}
