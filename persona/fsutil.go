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

// ErrBadFile is matched (errors.Is) by the error for a persona file that
// cannot hold a persona whatever it says: a symbolic link, anything but a
// regular file, or a file larger than frontmatter.MaxSize. The error names
// the file and why. Files.Write replaces such an AGENTS.md - the name,
// never what a link leads to - with one made from the template.
var ErrBadFile = errors.New("cannot hold a bot's persona")

// ErrBadText is matched by the error for an AGENTS.md whose text holds no
// persona a read can answer: a frontmatter never closed or not valid YAML,
// a name or description that is a list or a map. Files.Write refuses such
// a file too: it is the bot's writing, for a person to mend.
var ErrBadText = errors.New("does not hold a persona")

// fileError is a persona file that cannot be used: its path, why, and the
// kind (ErrBadFile or ErrBadText) and cause errors.Is matches.
type fileError struct {
	path, why string
	kind      error
	cause     error // may be nil
}

func (e *fileError) Error() string { return e.path + " " + e.why }

func (e *fileError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.kind}
	}
	return []error{e.kind, e.cause}
}

// badFile is the ErrBadFile error for path.
func badFile(path, why string, cause error) error {
	return &fileError{path: path, why: why, kind: ErrBadFile, cause: cause}
}

// whyNotRegular says what a file of mode m is, for a file that had to be a
// regular one.
func whyNotRegular(m fs.FileMode) string {
	what := "something other than a file"
	switch {
	case m.IsDir():
		what = "a folder"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0:
		what = "a device"
	}
	return "is not a regular file but " + what + ", which a bot's persona file may not be"
}

// whyTooLarge says why a file over frontmatter.MaxSize is refused.
var whyTooLarge = fmt.Sprintf("is larger than %d bytes, which a bot's persona file may not be", frontmatter.MaxSize)

// readFile reads a regular file of at most frontmatter.MaxSize bytes and
// answers its permission bits. With follow false, a symlink is refused
// rather than followed (so a bot's AGENTS.md never leads out of its folder),
// and a FIFO or device is refused without blocking on it. A file that is
// not a regular one, or is too large, is an error matching ErrBadFile. A
// missing file is an error that matches fs.ErrNotExist.
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
		return nil, 0, badFile(path, whyNotRegular(fi.Mode()), nil)
	}
	if fi.Size() > frontmatter.MaxSize {
		return nil, 0, badFile(path, whyTooLarge, frontmatter.ErrTooLarge)
	}
	b := make([]byte, 0, fi.Size()+512)
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if len(b) > frontmatter.MaxSize {
			return nil, 0, badFile(path, whyTooLarge, frontmatter.ErrTooLarge)
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

// whySymlink says why a persona file that is a symlink is refused.
const whySymlink = "is a symlink, which a bot's persona files may not be: it is neither read nor written through"

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
