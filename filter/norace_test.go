//go:build !race

package filter_test

const raceScale = 1
