//go:build unix

package catalog

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process has used so far, user and
// system: a machine shared with other work slows the wall clock, not this.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
