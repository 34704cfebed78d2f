package acp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// errOutside is the error of a path the agent may not use.
var errOutside = errors.New("the path is outside the bot's folder")

// folder is the bot's folder, the only place the agent's file requests
// reach. Files are opened through an os.Root, so a symbolic link that leads
// out of the folder is refused as well.
type folder struct {
	dir      string // as given, cleaned and absolute
	resolved string // dir with symbolic links resolved
}

func newFolder(dir string) (folder, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return folder{}, fmt.Errorf("acp: the bot's folder: %w", err)
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return folder{}, fmt.Errorf("acp: the bot's folder: %w", err)
	}
	return folder{dir: abs, resolved: resolved}, nil
}

// rel returns p relative to the folder. p must be absolute, hold no ".."
// element and lie inside the folder.
func (f folder) rel(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%q is not an absolute path: %w", p, errOutside)
	}
	for _, el := range strings.Split(filepath.ToSlash(p), "/") {
		if el == ".." {
			return "", fmt.Errorf("%q holds \"..\": %w", p, errOutside)
		}
	}
	clean := filepath.Clean(p)
	for _, base := range []string{f.dir, f.resolved} {
		if r, err := filepath.Rel(base, clean); err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			return r, nil
		}
	}
	return "", fmt.Errorf("%q: %w", p, errOutside)
}

// readFile reads the text file at p, from line (1-based; 0 is the first)
// for limit lines (0 is all).
func (f folder) readFile(p string, line, limit int) (string, error) {
	rel, err := f.rel(p)
	if err != nil {
		return "", err
	}
	root, err := os.OpenRoot(f.dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	data, err := root.ReadFile(rel)
	if err != nil {
		return "", refusal(p, err)
	}
	text := string(data)
	if line <= 1 && limit <= 0 {
		return text, nil
	}
	lines := strings.SplitAfter(text, "\n")
	start := max(line-1, 0)
	if start >= len(lines) {
		return "", nil
	}
	end := len(lines)
	if limit > 0 && start+limit < end {
		end = start + limit
	}
	return strings.Join(lines[start:end], ""), nil
}

// writeFile writes content to the file at p, making its parent folders.
func (f folder) writeFile(p, content string) error {
	rel, err := f.rel(p)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(f.dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if d := filepath.Dir(rel); d != "." {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return refusal(p, err)
		}
	}
	if err := root.WriteFile(rel, []byte(content), 0o644); err != nil {
		return refusal(p, err)
	}
	return nil
}

// refusal words an os.Root error; an escape through a symbolic link is
// errOutside.
func refusal(p string, err error) error {
	if strings.Contains(err.Error(), "path escapes from parent") {
		return fmt.Errorf("%q leads out of the bot's folder: %w", p, errOutside)
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%q: %w", p, pe.Err)
	}
	return err
}
