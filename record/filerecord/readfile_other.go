//go:build !linux

package filerecord

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/agenthost/bots/internal/frontmatter"
)

// readFile reads a bot.md and its metadata from one open file, refusing
// anything but a regular file of at most frontmatter.MaxSize bytes.
func readFile(path string) ([]byte, fileStat, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fileStat{}, errNoFile
		}
		return nil, fileStat{}, fmt.Errorf("the file cannot be read: %w", unwrapPath(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fileStat{}, fmt.Errorf("the file cannot be read: %w", unwrapPath(err))
	}
	if !fi.Mode().IsRegular() {
		return nil, fileStat{}, errNotRegular
	}
	if fi.Size() > frontmatter.MaxSize {
		return nil, fileStat{}, errTooLarge
	}
	data, err := io.ReadAll(io.LimitReader(f, frontmatter.MaxSize+1))
	if err != nil {
		return nil, fileStat{}, fmt.Errorf("the file cannot be read: %w", unwrapPath(err))
	}
	if len(data) > frontmatter.MaxSize {
		return nil, fileStat{}, errTooLarge
	}
	return data, statOf(fi), nil
}

// statOf gives what an etag takes from a file: its inode where the system
// has them (inode_*.go), its size and its modification time.
func statOf(fi os.FileInfo) fileStat {
	return fileStat{ino: inode(fi), size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}
