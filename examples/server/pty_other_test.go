//go:build !linux

package main

import (
	"os"
	"testing"
)

// openPTY skips: the tests open a pseudo-terminal on Linux alone.
func openPTY(t *testing.T) (main, term *os.File) {
	t.Skip("the tests open a pseudo-terminal on Linux alone")
	return nil, nil
}
