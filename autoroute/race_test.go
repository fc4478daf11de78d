//go:build race

package autoroute

const raceEnabled = true
