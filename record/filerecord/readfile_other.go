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
	return readFileInto(path, nil)
}

// readFileInto is readFile; buf is for the Linux reader's use.
func readFileInto(path string, _ []byte) ([]byte, fileStat, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fileStat{}, errNoFile
		}
		return nil, fileStat{}, fmt.Errorf("the file cannot be read: %w", unwrapPath(err))
	}
	defer f.Close()
	// As on Linux (readfile_linux.go): a read is taken only when the
	// file's stat is the same after it as before, so that a file rewritten
	// in place while it is read does not give the bytes of two saves.
	for range readTries {
		before, err := f.Stat()
		if err != nil {
			return nil, fileStat{}, fmt.Errorf("the file cannot be read: %w", unwrapPath(err))
		}
		if !before.Mode().IsRegular() {
			return nil, fileStat{}, errNotRegular
		}
		if before.Size() > frontmatter.MaxSize {
			return nil, fileStat{}, errTooLarge
		}
		data, err := io.ReadAll(io.LimitReader(io.NewSectionReader(f, 0, frontmatter.MaxSize+1), frontmatter.MaxSize+1))
		if err != nil {
			return nil, fileStat{}, fmt.Errorf("the file cannot be read: %w", unwrapPath(err))
		}
		if len(data) > frontmatter.MaxSize {
			return nil, fileStat{}, errTooLarge
		}
		after, err := f.Stat()
		if err != nil {
			return nil, fileStat{}, fmt.Errorf("the file cannot be read: %w", unwrapPath(err))
		}
		if st := statOf(before); st == statOf(after) && st.size == int64(len(data)) {
			return data, st, nil
		}
	}
	return nil, fileStat{}, errChanging
}

// readTries is how many times readFile reads a file that changes while it
// is read before it gives up.
const readTries = 3

// statOf gives what an etag takes from a file: its inode where the system
// has them (inode_*.go), its size and its modification time.
func statOf(fi os.FileInfo) fileStat {
	return fileStat{ino: inode(fi), size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}

// readFileKeyed is readFileInto; no cacheKey is known here, so a load
// keeps no cache (see loadcache.go).
func readFileKeyed(path string, buf []byte) ([]byte, fileStat, cacheKey, error) {
	data, st, err := readFileInto(path, buf)
	return data, st, cacheKey{}, err
}

// statKey knows no cacheKey here.
func statKey(string) (cacheKey, bool) { return cacheKey{}, false }
