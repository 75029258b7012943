//go:build !race

package client_test

// raceEnabled: the race detector is off.
const raceEnabled = false
