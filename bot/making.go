package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/agenthost/bots/internal/atomicfile"
	"github.com/agenthost/bots/persona"
	"github.com/agenthost/bots/record"
)

// makingDir is the folder under the configuration folder that holds a
// marker for each write that is making a work folder: <configDir>/making/<slug>.
const makingDir = "making"

// A making marker says which folders a make (or an edit that brings a bot
// to this host) is about to make, written durably before the first of them
// is made and removed once the bot's record is written or the write is
// refused. A marker a start finds is a write a crash cut short: the
// folders it names are the server's own, so the start removes those that
// no bot took and that hold nothing but what the write put there
// (sweepMaking). A folder with no marker - one a person made under root on
// purpose, or one a bot took - is never looked at: only the marker tells
// the server's leftovers apart from folders that are somebody's.
type making struct {
	// Folders are the folders the write makes, the deepest first.
	Folders []string `json:"folders"`
}

// missingFolders are dir and those of its parents below root that do not
// exist, the deepest first: what making dir makes (root, which a make may
// make too, is the operator's and never removed).
func (s *Service) missingFolders(dir string) []string {
	var out []string
	for d := filepath.Clean(dir); d != s.root; {
		if _, err := os.Lstat(d); err == nil || !errors.Is(err, fs.ErrNotExist) {
			return out
		}
		out = append(out, d)
		parent := filepath.Dir(d)
		if parent == d {
			return out
		}
		d = parent
	}
	return out
}

// markMaking writes the marker of bot id's write making folders, before
// any of them is made. The caller holds s.makes.
func (s *Service) markMaking(id string, folders []string) error {
	if len(folders) == 0 {
		return nil
	}
	data, err := json.Marshal(making{Folders: folders})
	if err != nil {
		return fmt.Errorf("mark the make of %s: %w", uri(id), err)
	}
	dir := filepath.Join(s.configDir, makingDir)
	path := filepath.Join(dir, id)
	if s.makes.dirMade && writeSynced(path, data) == nil {
		return nil
	}
	// The first make, or the folder went: make it, and write again.
	if err := atomicfile.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("mark the make of %s: %w", uri(id), err)
	}
	s.makes.dirMade = true
	if err := writeSynced(path, data); err != nil {
		return fmt.Errorf("mark the make of %s: %w", uri(id), err)
	}
	return nil
}

// writeSynced writes a marker in place and fsyncs it: one fsync rather
// than atomicfile.Write's two and a rename, on every make. A marker a
// crash tore is no JSON, and sweepMaking trusts nothing in it, so it
// needs no rename to be whole or absent. On a journaling file system
// (ext4, xfs) its entry is committed no later than the folders it names,
// whose making ends with an fsync; elsewhere a crash may at worst lose a
// marker, and with it only the sweep of that make's folders.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// doneMaking ends bot id's write: when it was refused (stored false), the
// folders it made are removed where they are still empty - another
// instance's bot may have taken one meanwhile and written into it, so no
// file is removed now - and the marker goes. A folder that is not empty
// keeps its marker, for the next start to see to (sweepMaking), and so
// does a marker whose removal failed.
func (s *Service) doneMaking(id string, folders []string, stored bool) {
	if len(folders) == 0 {
		return
	}
	if !stored && len(removeEmpty(folders)) < len(folders) {
		return
	}
	path := filepath.Join(s.configDir, makingDir, id)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("bot: the marker of a make could not be removed", "path", path, "reason", err.Error())
	}
}

// removeEmpty removes each of folders, the deepest first, that is empty,
// stopping at the first that is not: its parents hold it.
func removeEmpty(folders []string) []string {
	var removed []string
	for _, d := range folders {
		if err := os.Remove(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			break
		}
		removed = append(removed, d)
	}
	return removed
}

// sweepMaking sees to the markers a crash left (see making), at start,
// before any make is let in: one listing of <configDir>/making, which is
// empty unless a write was cut short, so a start over 100,000 bots pays
// nothing for it. A marker whose folders a bot works in, holds or lies
// inside is only removed. Otherwise its work folder loses the AGENTS.md
// and CLAUDE.md the make wrote, when they are all it holds, and then
// its folders go where empty. Anything else in them keeps them.
func (s *Service) sweepMaking(ctx context.Context) {
	dir := filepath.Join(s.configDir, makingDir)
	ents, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("bot: the markers of makes a crash cut short cannot be listed", "path", dir, "reason", err.Error())
		}
		return
	}
	for _, e := range ents {
		path := filepath.Join(dir, e.Name())
		if atomicfile.IsTemp(e.Name()) {
			continue // a marker's write a crash cut short, which made nothing yet: sweepConfigTemps takes it
		}
		if err := s.sweepMarker(ctx, e.Name(), path); err != nil {
			s.log.Warn("bot: a make a crash cut short could not be cleared", "path", path, "reason", err.Error())
			continue
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("bot: the marker of a make could not be removed", "path", path, "reason", err.Error())
		}
	}
}

// sweepConfigTemps removes, at start, the temp files killed writes left
// in the folders of the configuration folder the service writes itself
// besides the store's: the markers of makes and the bundled bots' stamps.
// The configuration folder is this instance's alone and none of its
// writes has begun yet, so every temp file there is a leftover, however
// young (the store sweeps its own folders as it loads).
func (s *Service) sweepConfigTemps() {
	began := time.Now()
	for _, dir := range []string{filepath.Join(s.configDir, makingDir), filepath.Join(s.configDir, bundledStamps)} {
		removed, err := atomicfile.RemoveStale(dir, began)
		if len(removed) > 0 {
			s.log.Info("bot: removed temp files a crash left", "folder", dir, "files", removed)
		}
		if err != nil {
			s.log.Warn("bot: cannot remove temp files a crash left", "folder", dir, "reason", err.Error())
		}
	}
}

// sweepMarker removes what the write of bot id that the marker at path
// names left, unless a bot took it.
func (s *Service) sweepMarker(ctx context.Context, id, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var m making
	if err := json.Unmarshal(data, &m); err != nil {
		return nil // not a marker the server wrote whole: nothing to trust in it
	}
	folders := slices.DeleteFunc(m.Folders, func(d string) bool {
		return !filepath.IsAbs(d) || filepath.Clean(d) != d || s.folderEscapeReason(d) != ""
	})
	if len(folders) == 0 {
		return nil
	}
	for _, d := range folders {
		if _, _, taken := s.folders.takenBy("", d); taken {
			return nil // a bot works there now: it is that bot's
		}
	}
	if _, err := s.store.Get(ctx, id); err == nil {
		return nil
	} else if !errors.Is(err, record.ErrNotFound) {
		return err
	}
	work := folders[0]
	if onlyPersona(work) {
		for _, name := range []string{persona.AgentsFile, persona.ClaudeFile} {
			if err := os.Remove(filepath.Join(work, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		if _, err := atomicfile.RemoveStale(work, s.now(), persona.AgentsFile, persona.ClaudeFile); err != nil {
			return err
		}
	}
	if removed := removeEmpty(folders); len(removed) > 0 {
		s.log.Info("bot: removed the folders of a make a crash cut short", "bot", id, "folders", removed)
	}
	return nil
}

// onlyPersona reports whether dir holds nothing but what a make writes
// there: AGENTS.md, CLAUDE.md and their temp files.
func onlyPersona(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		name := e.Name()
		switch {
		case name == persona.AgentsFile || name == persona.ClaudeFile:
		case atomicfile.IsTemp(name) && !e.IsDir():
		default:
			return false
		}
	}
	return true
}

// folderEscapeReason is folderEscape's reason, or one when the folder
// cannot be checked: a folder the sweep of markers touches must be a
// work folder's, strictly under root and reached through no link.
func (s *Service) folderEscapeReason(dir string) string {
	reason, err := s.folderEscape(dir)
	if err != nil {
		return err.Error()
	}
	return reason
}
