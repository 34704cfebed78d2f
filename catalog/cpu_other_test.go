//go:build !unix

package catalog

import "time"

// processCPU is not measured here.
func processCPU() time.Duration { return 0 }
