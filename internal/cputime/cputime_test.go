package cputime

import (
	"runtime"
	"testing"
	"time"
)

// Work done on the CPU shows in Process (which counts in the system's
// ticks): working long enough makes it grow, and it never goes back.
func TestProcessGrowsWithWork(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("no process CPU time here")
	}
	before := Process()
	deadline := time.Now().Add(10 * time.Second)
	for x := 0; ; x++ {
		now := Process()
		if now < before {
			t.Fatalf("Process went back from %s to %s", before, now)
		}
		if now > before {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Process stayed at %s over 10 s of work (%d loops)", now, x)
		}
	}
}
