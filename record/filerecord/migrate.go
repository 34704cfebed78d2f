package filerecord

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agenthost/bots/internal/atomicfile"
	"github.com/agenthost/bots/record"
)

// The older layout a load moves, and where its files go.
//
//	bots/<slug>.md                    → bots/<slug>/bot.md
//	bot-chats/<slug>/<path>           → bots/<slug>/logs/<path>
//	bot-chats/<slug><sep><rest>       → bots/<slug>/logs/<slug><sep><rest>
//	bot-sessions/<slug>/<path>        → bots/<slug>/sessions/<path>
//	bot-sessions/<slug><sep><rest>    → bots/<slug>/sessions/<slug><sep><rest>
//
// A file names its bot by the folder it is in, directly under bot-chats/ or
// bot-sessions/; a file directly there names it by the start of its own
// name, the longest run of the characters a slug may hold (a-z, 0-9, -)
// before the first one it may not (".", "@", "_", an upper-case letter…),
// so motion.2026-10-11.jsonl and motion@work.json are motion's, and
// motion-2.jsonl is motion-2's. A file keeps its name: nothing is renamed,
// only moved.
//
// A file whose bot has a bot.md is moved into its folder. A file of a
// deleted bot (one with a tombstone and no bot.md) is removed. Any other
// file - no bot of that slug, a name that names none, a place already taken
// by a file with other bytes, a move the system refuses - is reported and
// left where it is. A place taken by a file with the same bytes holds a
// copy already, and the older copy is removed.
//
// Every step is one rename or one removal, made durable before the next, so
// a crash leaves each file in exactly one of its two places and the next
// load finishes the migration. Folders of the older layout left empty are
// removed; a migration that finds nothing to do touches nothing.
const (
	oldChatsDir     = "bot-chats"
	oldSessionsDir  = "bot-sessions"
	oldRecordSuffix = ".md"
	logsDirName     = "logs"
	sessionsDirName = "sessions"
)

// readTombstones returns the slugs that have a tombstone.
func (s *Store) readTombstones() (map[string]struct{}, error) {
	stones, err := os.ReadDir(s.goneDir)
	if err != nil {
		return nil, fmt.Errorf("list tombstones: %w", err)
	}
	gone := make(map[string]struct{}, len(stones))
	for _, d := range stones {
		if name := d.Name(); !atomicfile.IsTemp(name) && record.CheckSlug(name) == nil {
			gone[name] = struct{}{}
		}
	}
	return gone, nil
}

// migration is one run of the move from the older layout.
type migration struct {
	s     *Store
	gone  map[string]struct{}
	moved int // files moved or removed
}

// migrate moves what an older layout left into the bots' folders, and
// removes what is left of deleted bots: a bot folder of a slug with a
// tombstone and no bot.md (a delete that died between its steps). A
// folder that still holds its bot.md is kept; the load reports its spent
// name. dirs is the listing of bots/; moved reports whether the migration
// moved or removed anything, which makes that listing stale. It fails only
// when ctx ends or the migration is stopped (tests); what it cannot do is
// reported.
func (s *Store) migrate(ctx context.Context, gone map[string]struct{}, dirs []os.DirEntry) (moved bool, err error) {
	start := time.Now()
	m := &migration{s: s, gone: gone}
	defer func() { moved = m.moved > 0 }()
	for id := range gone {
		if err := m.clearLeftover(ctx, id); err != nil {
			return false, err
		}
	}
	var records []string
	for _, d := range dirs {
		name := d.Name()
		if d.Type().IsRegular() && strings.HasSuffix(name, oldRecordSuffix) && !atomicfile.IsTemp(name) {
			records = append(records, name)
		}
	}
	chats := filepath.Join(s.configDir, oldChatsDir)
	sessions := filepath.Join(s.configDir, oldSessionsDir)
	if len(records) == 0 && !exists(chats) && !exists(sessions) {
		return false, nil
	}
	for _, name := range records {
		if err := m.moveRecord(ctx, name); err != nil {
			return false, err
		}
	}
	for _, tree := range [][2]string{{chats, logsDirName}, {sessions, sessionsDirName}} {
		if err := m.moveTree(ctx, tree[0], tree[1]); err != nil {
			return false, err
		}
	}
	if m.moved > 0 {
		s.log.Info("migrated bot files from the older layout", "folder", s.configDir, "files", m.moved, "took", time.Since(start))
	}
	return false, nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// step is called before each move or removal: it stops the migration when
// ctx ends or a test's hook says so.
func (m *migration) step(ctx context.Context, what string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if m.s.migrateStep != nil {
		if err := m.s.migrateStep(what); err != nil {
			return fmt.Errorf("migration stopped before %s: %w", what, err)
		}
	}
	return nil
}

// report reports a file the migration leaves where it is.
func (m *migration) report(id, path, reason string) {
	m.s.mu.Lock()
	m.s.report(id, path, reason+": the file is left where it is")
	m.s.mu.Unlock()
}

// clearLeftover removes the folder of deleted bot id when it holds no
// bot.md.
func (m *migration) clearLeftover(ctx context.Context, id string) error {
	if fi, err := os.Lstat(m.s.dir(id)); err != nil || !fi.IsDir() {
		return nil
	}
	if _, err := os.Lstat(m.s.file(id)); !errors.Is(err, fs.ErrNotExist) {
		return nil // kept: the load reports the spent name
	}
	if err := m.step(ctx, "remove the folder of deleted bot "+id); err != nil {
		return err
	}
	if err := m.s.removeFolder(id); err != nil {
		m.s.ReportProblem(id, m.s.dir(id), fmt.Sprintf("the folder of the deleted bot could not be removed: %v", err))
		return nil
	}
	m.moved++
	return nil
}

// moveRecord moves bots/<slug>.md to bots/<slug>/bot.md.
func (m *migration) moveRecord(ctx context.Context, name string) error {
	src := filepath.Join(m.s.botsDir, name)
	slug := strings.TrimSuffix(name, oldRecordSuffix)
	if err := record.CheckSlug(slug); err != nil {
		m.report("", src, fmt.Sprintf("the file name is no bot slug (%v), so the record cannot be placed", err))
		return nil
	}
	return m.move(ctx, slug, src, m.s.file(slug))
}

// moveTree places every file under root (bot-chats/ or bot-sessions/) into
// the into folder (logs or sessions) of its bot, then removes the folders
// it left empty.
func (m *migration) moveTree(ctx context.Context, root, into string) error {
	fi, err := os.Lstat(root)
	if err != nil {
		return nil
	}
	if !fi.IsDir() {
		m.report("", root, "it is not a folder of the older layout")
		return nil
	}
	var files, dirs []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			m.report("", path, fmt.Sprintf("it cannot be read (%v)", unwrapPath(err)))
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			dirs = append(dirs, path)
		} else {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, path := range files {
		rel, _ := filepath.Rel(root, path)
		slug, dest, ok := placeOf(rel)
		switch {
		case !ok:
			m.report("", path, "its name names no bot")
		case exists(m.s.file(slug)):
			if err := m.move(ctx, slug, path, filepath.Join(m.s.dir(slug), into, dest)); err != nil {
				return err
			}
		case m.isGone(slug):
			if err := m.step(ctx, "remove "+path); err != nil {
				return err
			}
			if err := os.Remove(path); err != nil {
				m.report(slug, path, fmt.Sprintf("it is left of deleted bot %q but cannot be removed (%v)", slug, unwrapPath(err)))
				continue
			}
			syncDir(m.s, filepath.Dir(path))
			m.moved++
		default:
			m.report("", path, fmt.Sprintf("there is no bot %q to place it with", slug))
		}
	}
	// The deepest folders first, so that a parent is empty when reached.
	slices.SortFunc(dirs, func(a, b string) int { return len(b) - len(a) })
	for _, dir := range dirs {
		os.Remove(dir) // fails, as meant, on a folder that still holds something
	}
	return nil
}

func (m *migration) isGone(slug string) bool {
	_, ok := m.gone[slug]
	return ok
}

// placeOf names the bot a file of bot-chats/ or bot-sessions/ is of, and
// its path in that bot's logs/ or sessions/ folder: see the layout above.
func placeOf(rel string) (slug, dest string, ok bool) {
	first, rest, nested := strings.Cut(rel, string(filepath.Separator))
	if nested {
		return first, rest, record.CheckSlug(first) == nil
	}
	i := 0
	for i < len(first) && (first[i] >= 'a' && first[i] <= 'z' || first[i] >= '0' && first[i] <= '9' || first[i] == '-') {
		i++
	}
	slug = first[:i]
	return slug, first, record.CheckSlug(slug) == nil
}

// move renames src to dst, making dst's folder first, and makes both
// folders durable. A dst already there is left alone: when it holds the
// same bytes, src is a copy a crash left behind and is removed; otherwise
// src is reported and left.
func (m *migration) move(ctx context.Context, slug, src, dst string) error {
	if _, err := os.Lstat(dst); err == nil {
		if !sameBytes(src, dst) {
			m.report(slug, src, fmt.Sprintf("%s is there already with other content", dst))
			return nil
		}
		if err := m.step(ctx, "remove "+src+", already at "+dst); err != nil {
			return err
		}
		if err := os.Remove(src); err != nil {
			m.report(slug, src, fmt.Sprintf("it is already at %s but cannot be removed (%v)", dst, unwrapPath(err)))
			return nil
		}
		syncDir(m.s, filepath.Dir(src))
		m.moved++
		return nil
	}
	if err := atomicfile.MkdirAll(filepath.Dir(dst), dirPerm); err != nil {
		m.report(slug, src, fmt.Sprintf("its place %s cannot be made (%v)", filepath.Dir(dst), err))
		return nil
	}
	if err := m.step(ctx, "move "+src+" to "+dst); err != nil {
		return err
	}
	if err := os.Rename(src, dst); err != nil {
		m.report(slug, src, fmt.Sprintf("it cannot be moved to %s (%v)", dst, unwrapPath(err)))
		return nil
	}
	syncDir(m.s, filepath.Dir(dst))
	syncDir(m.s, filepath.Dir(src))
	m.moved++
	return nil
}

// sameBytes reports whether two regular files hold the same bytes.
func sameBytes(a, b string) bool {
	fa, errA := os.Lstat(a)
	fb, errB := os.Lstat(b)
	if errA != nil || errB != nil || !fa.Mode().IsRegular() || !fb.Mode().IsRegular() || fa.Size() != fb.Size() {
		return false
	}
	da, errA := os.ReadFile(a)
	db, errB := os.ReadFile(b)
	return errA == nil && errB == nil && bytes.Equal(da, db)
}

// syncDir makes a folder's renames and removals durable, logging a
// failure: the step is made either way, and a crash before it at worst
// leaves the file where the next load moves it again.
func syncDir(s *Store, dir string) {
	if err := atomicfile.SyncDir(dir); err != nil {
		s.log.Warn("cannot make a folder durable", "path", dir, "reason", err.Error())
	}
}
