//go:build race

package client_test

// raceEnabled: the race detector is on, and sync.Pool drops items at
// random, so that pooled state is sometimes allocated again.
const raceEnabled = true
