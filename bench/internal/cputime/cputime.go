// Package cputime reads the CPU time this process has used, user plus
// system, every thread's (getrusage RUSAGE_SELF). Differences of two
// readings bracket a measurement; in a process that runs both the client
// and the server of a benchmark they are the CPU of both.
package cputime

import (
	"syscall"
	"time"
)

// Self is the user plus system CPU time this process has used so far.
func Self() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic("cputime: getrusage: " + err.Error())
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
