package bot

import "golang.org/x/sys/unix"

// threadCPU is the CPU time of the calling thread, in nanoseconds.
func threadCPU() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return ts.Nano()
}
