//go:build !linux

package main

import "os"

// isTerminal reports whether f is a terminal; where the server cannot tell
// it takes f for one.
func isTerminal(*os.File) bool { return true }
