// Package bench holds sluice's cross-module benchmarks: sluice's admission
// measured in the same run as the admission primitives of other Go libraries
// (see peers_test.go and docs/benchmarks.md). It has no API of its own.
package bench
