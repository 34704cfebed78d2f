package persona

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agenthost/bots/internal/atomicfile"
	"github.com/agenthost/bots/internal/frontmatter"
)

// tempPrefix starts the temp files writeNew makes, as atomicfile's do, so
// that atomicfile.IsTemp knows them.
const tempPrefix = ".tmp-"

// readFile reads a regular file of at most frontmatter.MaxSize bytes and
// answers its permission bits. With follow false, a symlink is refused
// rather than followed (so a bot's AGENTS.md never leads out of its folder),
// and a FIFO or device is refused without blocking on it. A missing file is
// an error that matches fs.ErrNotExist.
func readFile(path string, follow bool) ([]byte, fs.FileMode, error) {
	f, err := openFile(path, follow)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("look at %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > frontmatter.MaxSize {
		return nil, 0, fmt.Errorf("%s is %w", path, frontmatter.ErrTooLarge)
	}
	b := make([]byte, 0, fi.Size()+512)
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if len(b) > frontmatter.MaxSize {
			return nil, 0, fmt.Errorf("%s is %w", path, frontmatter.ErrTooLarge)
		}
		if err == io.EOF {
			return b, fi.Mode().Perm(), nil
		}
		if err != nil {
			return nil, 0, fmt.Errorf("read %s: %w", path, err)
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// errSymlink is wrapped by the error for a persona file that is a symlink.
var errSymlink = errors.New("is a symlink, which a bot's persona files may not be: it is neither read nor written through")

// writeNew writes path durably only when nothing has that name, never over
// an existing file or through a symlink, and reports whether it wrote: a
// synced temp file in the same folder is hard-linked to the name, which
// fails when the name exists. On a file system without hard links it falls
// back to a check and a rename.
func writeNew(path string, data []byte, perm fs.FileMode) (bool, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, tempPrefix+base+"-*")
	if err != nil {
		return false, fmt.Errorf("create a temp file for %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return false, fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return false, fmt.Errorf("chmod %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return false, fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return false, fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil
		}
		if _, lerr := os.Lstat(path); lerr == nil {
			return false, nil
		}
		if err := os.Rename(tmp, path); err != nil {
			return false, fmt.Errorf("rename %s to %s: %w", tmp, path, err)
		}
	}
	if err := atomicfile.SyncDir(dir); err != nil {
		return false, err
	}
	return true, nil
}
