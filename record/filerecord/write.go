package filerecord

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agenthost/bots/internal/atomicfile"
)

// replaceFile replaces path with data crash-safely, as atomicfile.Write
// does - a temp file in the same folder (named so that a load skips it),
// fsynced, renamed over path, the folder fsynced - and answers the stat of
// the file it wrote, taken before the rename so that nobody else's write
// can be in it. still, when not nil, is called just before the rename and
// stops the write with its error: it checks that the file about to be
// replaced is still the one the store last read, so that a person's save
// landing while the temp file was written is not replaced unseen. The
// folder must exist.
func replaceFile(path string, data []byte, still func() error) (fileStat, error) {
	dir, base := filepath.Split(path)
	f, err := os.CreateTemp(dir, ".tmp-"+base+"-*")
	if err != nil {
		return fileStat{}, fmt.Errorf("create temp file for %s: %w", path, err)
	}
	tmp := f.Name()
	renamed := false
	defer func() {
		if !renamed {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fileStat{}, fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Chmod(filePerm); err != nil {
		return fileStat{}, fmt.Errorf("chmod %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return fileStat{}, fmt.Errorf("sync %s: %w", tmp, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return fileStat{}, fmt.Errorf("stat %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fileStat{}, fmt.Errorf("close %s: %w", tmp, err)
	}
	if still != nil {
		if err := still(); err != nil {
			return fileStat{}, err
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return fileStat{}, fmt.Errorf("rename %s to %s: %w", tmp, path, err)
	}
	renamed = true
	if err := atomicfile.SyncDir(dir); err != nil {
		return fileStat{}, err
	}
	return statOf(fi), nil
}
