package filerecord

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenthost/bots/internal/atomicfile"
	"github.com/agenthost/bots/record"
)

// maxReaders bounds the files a load reads at once.
const maxReaders = 8

// loaded is what a load found in one bot folder besides the entry it
// keeps: the stat of the file read (for a watch set after the read), or
// why it keeps none.
type loaded struct {
	stat   fileStat
	err    error
	keep   cachedFile // what the next load cache holds of the file (see readBotCached)
	cached bool       // the bytes were the load cache's
}

// clockMargin is how much older than the start of a load a temp file must
// be for the load's sweep to take it: a file's modification time comes
// from the kernel's coarse clock, up to a tick (1-10 ms) behind
// time.Now, and a restart after a kill takes longer than this.
const clockMargin = 100 * time.Millisecond

// load reads the tombstones, migrates what an older layout left (see
// migrate.go), then reads every bot folder's bot.md with a small pool of
// readers (from the load cache where it holds the file as it is, see
// loadcache.go), and starts the background work: the cache's write when
// it changed, and the sweep of the temp files killed writes left in the
// bot folders (see sweep). What is not a bot record is reported and left
// out, and so is a bot.md whose slug has a tombstone (a spent name); its
// folder is kept, since it may be a person's own copy.
func (s *Store) load(ctx context.Context) error {
	start := time.Now()
	began := s.now() // for the load cache (loadcache.go)
	// A temp file last modified before the load began is what a write
	// killed before its rename left: a crash, or a kill -9, however
	// little before the restart. The configuration folder is this store's
	// alone, and every write of this process begins after this, so such a
	// file is no write in progress (and removing one that were would only
	// fail that write: its rename finds no file, the target keeps its old
	// bytes). The margin is for the file system's clock, which lags the
	// precise one by up to a tick: a write begun just after the load must
	// not look older than it. Work folders, which instances share, keep
	// the stricter atomicfile.StaleAfter (bot.Service.clearPersonaTemps).
	cutoff := began.Add(-clockMargin)
	s.clearTemps(cutoff, s.goneDir)
	if _, err := atomicfile.RemoveStale(s.configDir, cutoff, cacheName); err != nil {
		s.log.Warn("stale temp files of the load cache left", "folder", s.configDir, "err", err)
	}
	// The cache is read (25 MB at 100,000 bots) while bots/ is listed.
	var cache []cacheItem
	var reading sync.WaitGroup
	reading.Go(func() { cache = s.readCache() })
	defer reading.Wait()
	gone, err := s.readTombstones()
	if err != nil {
		return err
	}
	dirs, err := listDir(s.botsDir)
	if err != nil {
		return fmt.Errorf("list bots: %w", err)
	}
	if moved, err := s.migrate(ctx, gone, dirs); err != nil {
		return err
	} else if moved {
		if dirs, err = listDir(s.botsDir); err != nil {
			return fmt.Errorf("list bots: %w", err)
		}
	}
	ids := make([]string, 0, len(dirs))
	temps := false
	for _, d := range dirs {
		name := d.Name()
		switch {
		case strings.HasPrefix(name, deletedPrefix) && d.IsDir():
			s.clearAside(name)
		case atomicfile.IsTemp(name):
			temps = temps || d.Type().IsRegular()
		case d.IsDir():
			ids = append(ids, name)
		case d.Type()&os.ModeSymlink != 0:
			if fi, err := os.Stat(filepath.Join(s.botsDir, name)); err == nil && fi.IsDir() {
				ids = append(ids, name)
			}
		}
	}
	if temps {
		s.clearTemps(cutoff, s.botsDir) // lists bots/ again, only when it holds temp files
	}
	// In slug order, so that the entries are made, and laid out in
	// memory, about in the order every listing walks them: a pass over
	// the bots in slug order otherwise misses the cache at every bot
	// (bot.New at 20,000 bots took 125 ms against 107 ms). Slugs sort far
	// faster than the folder's entries did (os.ReadDir).
	slices.Sort(ids)
	reading.Wait()
	inCache := alignCache(ids, cache)
	found := make([]loaded, len(ids))
	// The readers make each entry the store will keep: an entry is some
	// 400 bytes, and a slice of them copied into the store would copy
	// each once more (40 MB at 100,000 bots).
	entries := make([]*record.Entry, len(ids))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(maxReaders, 2*runtime.GOMAXPROCS(0), len(ids)) {
		wg.Go(func() {
			d := newDecoder()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(ids) {
					return
				}
				id := ids[i]
				var c cachedFile
				if inCache != nil {
					c = inCache[i]
				}
				e, st, keep, cached, err := d.readBotCached(s.file(id), id, c, began)
				found[i] = loaded{stat: st, err: err, keep: keep, cached: cached}
				if _, spent := gone[id]; err == nil && !spent {
					entries[i] = &e
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.gone = gone
	s.bots.Load(entries)
	for i, id := range ids {
		f := found[i]
		problemID := id
		if record.CheckSlug(id) != nil {
			problemID = ""
		}
		switch {
		case errors.Is(f.err, errNoFile):
		case f.err != nil:
			s.report(problemID, s.file(id), f.err.Error())
		default:
			if _, spent := gone[id]; spent {
				s.report(id, s.file(id), fmt.Sprintf("the slug %q was deleted and is spent: the bot is left out and its folder kept", id))
			}
		}
	}
	if s.watch != nil {
		s.toArm = make([]armItem, len(ids))
		for i, id := range ids {
			s.toArm[i] = armItem{name: id, stat: found[i].stat}
		}
	}
	var items []cacheItem // nil when unchanged: nothing to write, and the cache's bytes go now
	changed := cacheChanged(entries, found, len(cache))
	if changed {
		items = cacheItems(ids, entries, found)
	}
	after := func() {
		select {
		case <-s.stop:
		default:
			if changed {
				s.writeCache(items)
			}
		}
		s.sweep(cutoff, ids)
	}
	s.sweeping = make(chan struct{})
	if s.watch != nil {
		// After the watch of every folder is set, on the same goroutine:
		// all are background work a start shares its two cores with.
		s.toSweep = after
	} else {
		go after()
	}
	s.log.Info("loaded bot records", "folder", s.botsDir, "bots", s.bots.Len(), "tombstones", len(s.gone),
		"problems", len(s.problems), "took", time.Since(start))
	return nil
}

// cacheItems are what the next load cache holds of a load of ids, which
// kept entries and found found: an item without bytes is a file the load
// read, which writeCache reads again.
func cacheItems(ids []string, entries []*record.Entry, found []loaded) []cacheItem {
	items := make([]cacheItem, 0, len(ids))
	for i, id := range ids {
		if f := found[i]; entries[i] != nil && f.keep.key.ino != 0 {
			items = append(items, cacheItem{id: id, file: f.keep})
		}
	}
	return items
}

// cacheChanged reports whether the next load cache differs from the one
// the load read, which held held files: the load read a file the cache
// may hold, or the cache held one that is gone. A restart over unchanged
// bots makes no list of 100,000 items to find that out.
func cacheChanged(entries []*record.Entry, found []loaded, held int) bool {
	used := 0
	for i, f := range found {
		if entries[i] == nil || f.keep.key.ino == 0 {
			continue
		}
		if !f.cached {
			return true
		}
		used++
	}
	return used != held
}

// sweep removes, in the background once the store is open (and once a
// watching store's watch of every folder is set), the temp
// files older than cutoff that killed writes left in each bot folder the
// load found, and in its sessions/ and logs/: three folder reads a bot,
// which cost more than reading its bot.md, for files that are only litter
// (a load skips them, and no read looks at them). Close stops it and waits
// for it.
func (s *Store) sweep(cutoff time.Time, ids []string) {
	defer close(s.sweeping)
	buf := make([]byte, 8<<10)
	for _, id := range ids {
		select {
		case <-s.stop:
			return
		default:
		}
		dir := s.dir(id)
		temps, has := mayHoldTemps(dir, buf, sessionsDirName, logsDirName)
		if temps {
			s.clearTemps(cutoff, dir)
		}
		for i, sub := range []string{sessionsDirName, logsDirName} {
			if !has[i] {
				continue // a bot that never chatted has neither
			}
			d := filepath.Join(dir, sub)
			if t, _ := mayHoldTemps(d, buf); t {
				s.clearTemps(cutoff, d)
			}
		}
	}
}

// listDir lists dir in the order the folder gives, unsorted: a load
// needs no order, and sorting 100,000 names costs more than listing them.
func listDir(dir string) ([]os.DirEntry, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// clearAside removes a folder a Delete moved aside and did not finish
// removing before a crash.
func (s *Store) clearAside(name string) {
	path := filepath.Join(s.botsDir, name)
	if err := os.RemoveAll(path); err != nil {
		s.log.Warn("cannot remove the folder of a deleted bot", "path", path, "reason", err.Error())
	}
}

// clearTemps removes the temp files older than cutoff that writes killed
// before their rename left in dirs, logging what it removed and what it
// could not.
func (s *Store) clearTemps(cutoff time.Time, dirs ...string) {
	for _, dir := range dirs {
		removed, err := atomicfile.RemoveStale(dir, cutoff)
		if len(removed) > 0 {
			s.log.Info("removed temp files a crash left", "folder", dir, "files", removed)
		}
		if err != nil {
			s.log.Warn("cannot remove temp files a crash left", "folder", dir, "reason", err.Error())
		}
	}
}
