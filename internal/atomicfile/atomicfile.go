// Package atomicfile writes files so that a crash leaves either the old
// content or the new, never a torn mix: write a temp file in the same
// folder, fsync it, rename it over the target, fsync the folder.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// tempPrefix starts the name of every temp file Write makes, so that readers
// of a folder can skip them (IsTemp) and a later Write can clear leftovers of
// a crash.
const tempPrefix = ".tmp-"

// IsTemp reports whether a file name is one of Write's temp files.
func IsTemp(name string) bool {
	return len(name) > len(tempPrefix) && name[:len(tempPrefix)] == tempPrefix
}

// StaleAfter is how old a temp file must be for RemoveStale to take it for
// the leftover of a crash: a write in progress takes milliseconds, so an
// older one is no write anybody is still making.
const StaleAfter = time.Minute

// RemoveStale removes from dir the temp files that writes killed before
// their rename left behind (Write's, and those of writers using its prefix),
// when they were last modified before cutoff. With targets, only the temp
// files of writes to those names (.tmp-<target>-*) are removed, so a folder
// that is somebody else's keeps its own .tmp- files. It returns the paths
// it removed; a missing folder has none.
func RemoveStale(dir string, cutoff time.Time, targets ...string) ([]string, error) {
	removed, _, err := Sweep(dir, cutoff, targets...)
	return removed, err
}

// Sweep is RemoveStale that also reports whether dir still holds temp
// files of the targets that were too young to take (modified at or after
// cutoff): a sweep that must leave what may be a write in progress can
// look at the folder again once they are old enough.
func Sweep(dir string, cutoff time.Time, targets ...string) (removed []string, young bool, err error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("list %s for stale temp files: %w", dir, err)
	}
	var errs []error
	for _, e := range ents {
		name := e.Name()
		if !IsTemp(name) || !e.Type().IsRegular() || !ofTargets(name, targets) {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if !fi.ModTime().Before(cutoff) {
			young = true
			continue
		}
		path := filepath.Join(dir, name)
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, path)
	}
	if len(removed) > 0 {
		if err := SyncDir(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return removed, young, errors.Join(errs...)
}

// ofTargets reports whether the temp file name is one of a write to one of
// targets, or targets is empty.
func ofTargets(name string, targets []string) bool {
	if len(targets) == 0 {
		return true
	}
	for _, t := range targets {
		if strings.HasPrefix(name, tempPrefix+t+"-") {
			return true
		}
	}
	return false
}

// Write replaces path with data durably. The folder must exist.
func Write(path string, data []byte, perm fs.FileMode) error {
	dir, tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("rename %s to %s: %w", tmp, path, err)
	}
	return SyncDir(dir)
}

// writeTemp writes data, synced, with mode perm, to a new temp file beside
// path, and returns the folder and the temp file's path; on an error it
// leaves no temp file.
func writeTemp(path string, data []byte, perm fs.FileMode) (dir, tmp string, err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, tempPrefix+base+"-*")
	if err != nil {
		return "", "", fmt.Errorf("create temp file for %s: %w", path, err)
	}
	tmp = f.Name()
	_, err = f.Write(data)
	if err = errors.Join(err, f.Chmod(perm), f.Sync(), f.Close()); err != nil {
		os.Remove(tmp)
		return "", "", fmt.Errorf("write %s: %w", tmp, err)
	}
	return dir, tmp, nil
}

// SyncDir fsyncs a folder, making renames and removals in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open folder %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync folder %s: %w", dir, err)
	}
	return nil
}

// MkdirAll makes a folder and its missing parents, and fsyncs the parent of
// each folder it made so the new entries survive a crash.
func MkdirAll(dir string, perm fs.FileMode) error {
	dir = filepath.Clean(dir)
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("make folder %s: %w", dir, fs.ErrExist)
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := MkdirAll(parent, perm); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, perm); err != nil && !os.IsExist(err) {
		return fmt.Errorf("make folder %s: %w", dir, err)
	}
	return SyncDir(parent)
}

// WriteNew writes data to path durably, and only when there is no file at
// path: it links a synced temp file there, so a crash leaves either no file
// or all of it, and of two writers racing, one writes and the other gets
// an error wrapping fs.ErrExist. The folder must exist.
func WriteNew(path string, data []byte, perm fs.FileMode) error {
	dir, tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		return err
	}
	return SyncDir(dir)
}
