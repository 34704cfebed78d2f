//go:build !linux

package filerecord

// mayHoldTemps answers true: the sweep lists every folder.
func mayHoldTemps(dir string, buf []byte) bool { return true }
