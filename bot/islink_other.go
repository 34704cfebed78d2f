//go:build !unix

package bot

import "os"

// isLink reports whether path is a symbolic link, with os.Lstat's error.
func isLink(path string) (bool, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return false, err
	}
	return fi.Mode()&os.ModeSymlink != 0, nil
}
