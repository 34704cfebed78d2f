//go:build !unix

package jsonl

import "os"

// openAppend opens the log at path for appending, without making it.
func openAppend(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
}
