//go:build race

package filter_test

// raceScale shrinks the regexp-heavy random tests under the race detector, which slows Go's
// regexp about twentyfold; they start no goroutines, so the race run loses nothing.
const raceScale = 10
