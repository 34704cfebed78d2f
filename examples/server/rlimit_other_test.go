//go:build !unix

package main

import "math"

// raiseFDLimit has no limit to raise here.
func raiseFDLimit() (uint64, error) { return math.MaxUint64, nil }
