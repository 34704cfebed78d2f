package filerecord

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"time"

	"github.com/agenthost/bots/internal/frontmatter"
)

// FastPathAgrees checks a file's frontmatter against both decoders: it
// fails when the fast path does not read it, or reads it otherwise than the
// YAML decoder.
func FastPathAgrees(file []byte) error {
	doc, err := frontmatter.Split(file)
	if err != nil {
		return err
	}
	fast, ok := decodeFast(doc.Front)
	if !ok {
		return fmt.Errorf("the fast path does not read it")
	}
	slow, err := frontmatter.Decode(doc.Front)
	if err != nil {
		return fmt.Errorf("the YAML decoder refuses it: %w", err)
	}
	if !reflect.DeepEqual(fast, slow) {
		return fmt.Errorf("fast %#v, yaml %#v", fast, slow)
	}
	return nil
}

// ErrStopped is what a migration stopped by MigrateStoppingAfter answers.
var ErrStopped = errors.New("stopped as by a crash")

// MigrateStoppingAfter runs the migration a load of configDir starts with
// and stops it before its step n+1 (a move or a removal), as a crash there
// would. It answers the steps made, and ErrStopped when it stopped.
func MigrateStoppingAfter(configDir string, n int) (int, error) {
	s, err := newStore(Config{ConfigDir: configDir})
	if err != nil {
		return 0, err
	}
	for _, dir := range []string{s.botsDir, s.goneDir} {
		if err := os.MkdirAll(dir, dirPerm); err != nil {
			return 0, err
		}
	}
	steps := 0
	s.migrateStep = func(string) error {
		if steps == n {
			return ErrStopped
		}
		steps++
		return nil
	}
	gone, err := s.readTombstones()
	if err != nil {
		return 0, err
	}
	dirs, err := os.ReadDir(s.botsDir)
	if err != nil {
		return 0, err
	}
	_, err = s.migrate(context.Background(), gone, dirs)
	return steps, err
}

// WatchPending answers how many bot folders the watch has yet to read: 0
// when it is idle.
func (s *Store) WatchPending() int {
	if s.watch == nil {
		return 0
	}
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	n := len(s.watch.pending) + len(s.watch.fresh)
	if s.watch.fw.queued() {
		n++
	}
	return n
}

// WaitWatched returns once a watching store has set the watch of every
// folder its load read.
func (s *Store) WaitWatched() {
	if s.watch != nil {
		<-s.watch.armed
	}
}

// OpenBeganAt is Open with a load that takes began for the time it
// began: the clock the load cache's cutoff for recent files reads.
func OpenBeganAt(ctx context.Context, cfg Config, began time.Time) (*Store, error) {
	s, err := newStore(cfg)
	if err != nil {
		return nil, err
	}
	s.now = func() time.Time { return began }
	if err := s.open(ctx, cfg.Watch, cfg.WatchAfter); err != nil {
		return nil, err
	}
	return s, nil
}

// WaitSwept returns once the sweep of temp files a load started is done.
func (s *Store) WaitSwept() {
	if s.sweeping != nil {
		<-s.sweeping
	}
}
