//go:build !unix

package persona

import "os"

// openFile opens path for reading. With follow false it refuses a symlink
// (checked just before the open).
func openFile(path string, follow bool) (*os.File, error) {
	if !follow {
		fi, err := os.Lstat(path)
		if err != nil {
			return nil, err
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return nil, badFile(path, whySymlink, nil)
		}
	}
	return os.Open(path)
}
