package server

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// lengthValue shares one value per length below maxSharedLength and builds the others afresh;
// every value is the length in decimal.
func TestLengthValue(t *testing.T) {
	s := new(Server)
	for _, n := range []int{0, 1, 9, 10, 412, maxSharedLength - 1, maxSharedLength, 1 << 20} {
		first, again := s.lengthValue(n), s.lengthValue(n)
		want := []string{strconv.Itoa(n)}
		if diff := cmp.Diff(want, first); diff != "" {
			t.Errorf("%d: (-want +got):\n%s", n, diff)
		}
		if diff := cmp.Diff(want, again); diff != "" {
			t.Errorf("%d again: (-want +got):\n%s", n, diff)
		}
		if shared := &first[0] == &again[0]; shared != (n < maxSharedLength) {
			t.Errorf("%d: shared %v, want %v", n, shared, n < maxSharedLength)
		}
	}
}
