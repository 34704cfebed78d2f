//go:build !unix

package main

import "time"

// cpuTime is not measured on this system; the cpu ratios then read NaN.
func cpuTime() time.Duration { return 0 }
