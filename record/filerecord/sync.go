package filerecord

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agenthost/bots/internal/atomicfile"
	"github.com/agenthost/bots/record"
)

// lookState is what a look at a bot's folder found.
type lookState int

const (
	lookGood       lookState = iota // a bot.md that is a bot record
	lookBad                         // a bot.md that is not one, or cannot be read
	lookNoFile                      // the folder without a bot.md
	lookNoFolder                    // no folder (or no bots/ folder at all)
	lookNoBotsRoot                  // bots/ itself is gone: nothing can be decided
)

// look is one read of a bot's folder.
type look struct {
	state lookState
	entry record.Entry // lookGood
	err   error        // lookBad: why the file is not a bot record
	stat  fileStat     // lookGood, lookBad: the file as it was read
}

// lookAt reads bot id's folder as it is now. The caller holds the slug's
// lock, so that no write of the store's is half done.
func (s *Store) lookAt(id string) look {
	fi, err := os.Stat(s.dir(id))
	switch {
	case err == nil && !fi.IsDir():
		return look{state: lookNoFolder}
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		if _, err := os.Stat(s.botsDir); err != nil {
			return look{state: lookNoBotsRoot}
		}
		return look{state: lookNoFolder}
	case err != nil:
		return look{state: lookBad, err: fmt.Errorf("the folder cannot be read: %w", unwrapPath(err))}
	}
	e, st, err := readBot(s.file(id), id)
	switch {
	case errors.Is(err, errNoFile):
		return look{state: lookNoFile}
	case err != nil:
		if st == (fileStat{}) {
			if fi, serr := os.Lstat(s.file(id)); serr == nil {
				st = statOf(fi)
			}
		}
		return look{state: lookBad, err: err, stat: st}
	}
	return look{state: lookGood, entry: e, stat: st}
}

// problemID is the id a problem about folder name carries: the name when it
// is a slug, else none.
func problemID(name string) string {
	if record.CheckSlug(name) != nil {
		return ""
	}
	return name
}

// reconcile brings what the store holds for bot id in line with l, a look
// at its folder taken under the slug's lock, which the caller still holds.
// A good file is taken at once: a new folder is a Created bot, an edited
// file an Updated one (owner and workspace kept as they were, and the
// change reported), and a file whose etag the store already holds is its
// own write and changes nothing. Anything else - a file that is not a bot
// record, a missing bot.md, a missing folder - is acted on only when final
// says the person is done with it; reconcile then reports whether it took
// the look (false: look again later).
func (s *Store) reconcile(id string, l look, final bool) (settled bool) {
	path := s.file(id)
	s.mu.RLock()
	old, known := s.entry(id)
	_, spent := s.gone[id]
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return true
	}
	switch l.state {
	case lookGood:
		switch {
		case known && old.ETag == l.entry.ETag:
			// The store's own write, or the file it last read put back.
			if l.entry.Record.Owner == old.Record.Owner && l.entry.Record.Workspace == old.Record.Workspace {
				s.ClearProblem(path)
			}
			return true
		case !known && spent:
			s.handEdits.Inc("refused")
			s.mu.Lock()
			s.report(id, path, fmt.Sprintf("the slug %q was deleted and is spent: the bot is left out and its folder kept", id))
			s.mu.Unlock()
			return true
		case !known:
			s.mu.Lock()
			if err := s.guardLocked(l.entry.Record); err != nil {
				s.report(id, path, err.Error()+"; the bot is left out")
				s.mu.Unlock()
				s.handEdits.Inc("refused")
				return true
			}
			s.handEdits.Inc("taken")
			s.bots.Put(l.entry)
			s.clear(path, s.dir(id))
			s.feed.Publish(record.Change{Kind: record.Created, ID: id, Entry: clone(l.entry)})
			s.mu.Unlock()
			s.log.Info("bot made by hand", "id", id, "path", path)
			return true
		}
		e := l.entry
		var refused []string
		if e.Record.Owner != old.Record.Owner {
			refused = append(refused, fmt.Sprintf("the owner may not be changed by hand: the file says %q and the bot keeps %q", e.Record.Owner, old.Record.Owner))
			e.Record.Owner = old.Record.Owner
		}
		if e.Record.Workspace != old.Record.Workspace {
			refused = append(refused, fmt.Sprintf("the workspace may not be changed by hand: the file says %q and the bot keeps %q", e.Record.Workspace, old.Record.Workspace))
			e.Record.Workspace = old.Record.Workspace
		}
		s.mu.Lock()
		if err := s.guardLocked(e.Record); err != nil {
			refused = append(refused, err.Error()+"; the bot reads as it did before the edit")
			s.report(id, path, strings.Join(refused, "; "))
			s.mu.Unlock()
			s.handEdits.Inc("refused")
			return true
		}
		s.bots.Put(e)
		if len(refused) > 0 {
			s.report(id, path, strings.Join(refused, "; "))
			s.handEdits.Inc("refused")
		} else {
			s.clear(path)
			s.handEdits.Inc("taken")
		}
		s.feed.Publish(record.Change{Kind: record.Updated, ID: id, Entry: clone(e)})
		s.mu.Unlock()
		return true

	case lookBad:
		if !final {
			return false
		}
		reason := l.err.Error()
		if known {
			reason += "; the bot reads as it did before the edit"
		} else {
			reason += "; the bot is left out"
		}
		s.mu.Lock()
		s.report(problemID(id), path, reason)
		s.mu.Unlock()
		s.handEdits.Inc("refused")
		return true

	case lookNoFile:
		if !known {
			s.ClearProblem(path)
			return true
		}
		if !final {
			return false
		}
		s.ReportProblem(id, path, "the file is missing; the bot keeps its last record until the file is back or its folder is removed")
		return true

	case lookNoFolder:
		if !known {
			s.mu.Lock()
			s.clear(path, s.dir(id))
			s.mu.Unlock()
			return true
		}
		if !final {
			return false
		}
		return s.deletedByHand(id, old)

	default: // lookNoBotsRoot
		if !final {
			return false
		}
		s.ReportProblem("", s.botsDir, "the bots folder is gone; every bot keeps its last record until it is back")
		return true
	}
}

// deletedByHand takes a folder a person removed as the bot's delete: it
// writes the tombstone, drops the bot and publishes Deleted. A tombstone
// that cannot be written keeps the bot, reported.
func (s *Store) deletedByHand(id string, old record.Entry) bool {
	stone := fmt.Appendf(nil, "deletedAt: %s\n", record.FormatTime(time.Now()))
	if err := atomicfile.Write(filepath.Join(s.goneDir, id), stone, filePerm); err != nil {
		s.ReportProblem(id, s.dir(id), fmt.Sprintf("the folder was removed by hand but the tombstone could not be written (%v): the bot is kept", err))
		return true
	}
	s.mu.Lock()
	s.bots.Delete(id)
	s.gone[id] = struct{}{}
	s.clear(s.file(id), s.dir(id))
	s.feed.Publish(record.Change{Kind: record.Deleted, ID: id, Entry: clone(old)})
	s.mu.Unlock()
	s.log.Info("bot deleted by hand: its folder was removed", "id", id, "path", s.dir(id))
	return true
}

// catchUp takes in a hand edit of bot id's file that the store has not seen
// yet, before a write: a good file is taken as reconcile takes it, so the
// write's ifMatch is checked against it and the write cannot undo it
// unseen; was is that file's stat, which the write checks again just before
// it replaces the file. With strict (an Update), a file the store did not
// write and cannot take - not a bot record, missing, or a folder gone -
// refuses the write with record.ErrConflict rather than write over the
// person's work. The caller holds the slug's lock.
func (s *Store) catchUp(id string, strict bool) (was *fileStat, err error) {
	s.mu.RLock()
	_, known := s.bots.Get(id)
	s.mu.RUnlock()
	if !known {
		return nil, nil // check answers ErrNotFound
	}
	l := s.lookAt(id)
	if l.state == lookGood {
		s.reconcile(id, l, true)
		return &l.stat, nil
	}
	if !strict {
		return nil, nil
	}
	switch l.state {
	case lookBad:
		return nil, fmt.Errorf("%w: %s was changed by hand and is not a bot record (%v)", record.ErrConflict, s.file(id), l.err)
	case lookNoFile:
		return nil, fmt.Errorf("%w: %s was removed by hand", record.ErrConflict, s.file(id))
	default:
		return nil, fmt.Errorf("%w: the folder %s was removed by hand", record.ErrConflict, s.dir(id))
	}
}
