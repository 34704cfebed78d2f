// Package cputime reads the CPU time the process has used, for benchmarks
// on a machine shared with other work: a busy machine stretches the wall
// clock of a measurement, not the CPU time it took.
package cputime

import "time"

// Process is the CPU time this process has used so far, user and system;
// zero where the system does not say.
func Process() time.Duration { return process() }
