//go:build unix

package main

import (
	"fmt"
	"syscall"
)

// raiseFDLimit raises this process's open-file limit to its hard limit and
// returns the limit then in force: a loopback test with both ends of n
// connections needs 2n descriptors in all, n in each process.
func raiseFDLimit() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("read the open-file limit: %w", err)
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return 0, fmt.Errorf("raise the open-file limit to %d: %w", lim.Max, err)
		}
	}
	return lim.Cur, nil
}
