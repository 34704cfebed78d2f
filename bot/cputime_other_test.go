//go:build !unix

package bot_test

import "time"

// cpuTime is 0 where the process's CPU time is not known: the cpu-x
// ratios then read NaN, and the wall-time ones stand.
func cpuTime() time.Duration { return 0 }
