//go:build !linux

package filechatlog

import "os"

// holdsNoFolder reports false: elsewhere than on Linux every bot folder is
// looked into (subfolders_linux.go).
func holdsNoFolder(dir *os.File, name string) bool { return false }
