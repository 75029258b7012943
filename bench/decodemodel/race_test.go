//go:build race

package decodemodel

const raceEnabled = true
