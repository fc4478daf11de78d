//go:build !race

package h1

const raceOn = false
