// Package keyfile keeps one value per key, each as JSON in a small file of
// its own, written crash-safely (internal/atomicfile): the store behind
// wake's session rows and acp's agent session records.
package keyfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/agenthost/bots/internal/atomicfile"
)

// File and folder modes: a value may say whose session is whose, so only
// the owner reads them.
const (
	FileMode = 0o600
	DirMode  = 0o700
)

// Config configures a Store.
type Config[K comparable, V any] struct {
	// Path names the file of key; an error refuses the key, as one that
	// would name a file outside the store's folder must be. Required.
	Path func(key K) (string, error)
	// Decode reads a file's bytes; ok false reads as no value. Nil decodes
	// the file as JSON.
	Decode func(data []byte) (v V, ok bool, err error)
	// Cache keeps every value read or written in memory, for files no one
	// else writes while the store is open.
	Cache bool
}

// Store keeps values of type V by keys of type K. Its methods may be
// called concurrently; writes of one key are last-writer-wins.
type Store[K comparable, V any] struct {
	cfg Config[K, V]

	mu    sync.Mutex
	cache map[K]V
}

// New returns a store on cfg. It touches no file.
func New[K comparable, V any](cfg Config[K, V]) *Store[K, V] {
	return &Store[K, V]{cfg: cfg, cache: map[K]V{}}
}

// Get returns the value of key; ok is false when it has no file (or its
// file reads as no value). A file that does not decode is an error naming
// it.
func (s *Store[K, V]) Get(key K) (v V, ok bool, err error) {
	if s.cfg.Cache {
		s.mu.Lock()
		v, ok = s.cache[key]
		s.mu.Unlock()
		if ok {
			return v, true, nil
		}
	}
	path, err := s.cfg.Path(key)
	if err != nil {
		return v, false, err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return v, false, nil
	}
	if err != nil {
		return v, false, err
	}
	if s.cfg.Decode != nil {
		v, ok, err = s.cfg.Decode(data)
	} else {
		err = json.Unmarshal(data, &v)
		ok = err == nil
	}
	if err != nil {
		return v, false, fmt.Errorf("%s: %w", path, err)
	}
	if ok && s.cfg.Cache {
		s.mu.Lock()
		s.cache[key] = v
		s.mu.Unlock()
	}
	return v, ok, nil
}

// Put writes v as key's file, over any file there: a temp file fsynced
// and renamed over it, its folder (made when missing) fsynced.
func (s *Store[K, V]) Put(key K, v V) error {
	path, err := s.cfg.Path(key)
	if err != nil {
		return err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	if err := atomicfile.MkdirAll(filepath.Dir(path), DirMode); err != nil {
		return err
	}
	if err := atomicfile.Write(path, append(data, '\n'), FileMode); err != nil {
		return err
	}
	if s.cfg.Cache {
		s.mu.Lock()
		s.cache[key] = v
		s.mu.Unlock()
	}
	return nil
}

// Forget drops from the cache the values of the keys drop reports, after
// their files were removed by the caller.
func (s *Store[K, V]) Forget(drop func(K) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.cache {
		if drop(k) {
			delete(s.cache, k)
		}
	}
}
