// Package fileroute keeps routes in files under a configuration folder,
// as the records are kept by default:
//
//	<dir>/connections.json   the operator's connections (read only here)
//	<dir>/routes/<id>.json   one route per file, written crash-safely
//
// connections.json is {"connections": [{"id", "network", "enabled",
// "settings", "secrets"}]}, each secret a vault reference. Both are read
// anew at every listing, so hand edits count at once; Watch looks at them
// every Interval and reports a change, whoever made it. A file that does
// not parse is left alone and reported (Problems), never lost.
package fileroute

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/bots/internal/atomicfile"
	"github.com/agenthost/bots/internal/tick"
	"github.com/agenthost/bots/route"
)

// ConnectionsFile and RoutesDir are where a Store keeps what it keeps,
// under its folder.
const (
	ConnectionsFile = "connections.json"
	RoutesDir       = "routes"
)

// Interval is how often Watch looks at the files when Options gives none.
const Interval = time.Second

// Store keeps routes in files. Its methods are safe for concurrent use
// within one process; one process writes a folder.
type Store struct {
	dir      string
	interval time.Duration
	log      *slog.Logger

	mu sync.Mutex // serialises writes

	probMu   sync.Mutex
	problems map[string]string // file → why it was not read
}

var _ route.Store = (*Store)(nil)

// Options tune a Store.
type Options struct {
	// Interval is how often Watch looks for changes; zero is Interval.
	Interval time.Duration
	// Logger hears of files that do not parse; nil discards.
	Logger *slog.Logger
}

// New returns the store of the folder dir (made when it is first written
// to).
func New(dir string, o Options) *Store {
	if o.Interval <= 0 {
		o.Interval = Interval
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Store{dir: dir, interval: o.Interval, log: log, problems: map[string]string{}}
}

// connectionsFile is the shape of connections.json.
type connectionsFile struct {
	Connections []route.Connection `json:"connections"`
}

// Connections reads connections.json; none when it does not exist.
func (s *Store) Connections(context.Context) ([]route.Connection, error) {
	path := filepath.Join(s.dir, ConnectionsFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return []route.Connection{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the connections: %w", err)
	}
	var f connectionsFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		s.problem(path, fmt.Sprintf("%s does not parse: %v", path, err))
		return nil, fmt.Errorf("%s does not parse: %w", path, err)
	}
	seen := map[string]bool{}
	for _, c := range f.Connections {
		if !route.ValidID(c.ID) || seen[c.ID] || c.Network == "" {
			why := fmt.Sprintf("%s: the connection %q needs a unique id of lowercase letters, digits and dashes, and a network", path, c.ID)
			s.problem(path, why)
			return nil, errors.New(why)
		}
		seen[c.ID] = true
	}
	s.problem(path, "")
	slices.SortFunc(f.Connections, func(a, b route.Connection) int { return strings.Compare(a.ID, b.ID) })
	return f.Connections, nil
}

// Routes reads every route file, ordered by id. A file that does not
// parse, or holds a route Check refuses, is left out and reported
// (Problems).
func (s *Store) Routes(context.Context) ([]route.Route, error) {
	dir := filepath.Join(s.dir, RoutesDir)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return []route.Route{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot list the routes: %w", err)
	}
	out := []route.Route{}
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() || atomicfile.IsTemp(e.Name()) {
			continue
		}
		r, err := s.read(id)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted meanwhile
		}
		path := filepath.Join(dir, e.Name())
		if err != nil {
			s.problem(path, err.Error())
			continue
		}
		s.problem(path, "")
		out = append(out, r)
	}
	return out, nil
}

// read reads the route id and names its Version.
func (s *Store) read(id string) (route.Route, error) {
	path := s.path(id)
	data, err := os.ReadFile(path)
	if err != nil {
		return route.Route{}, err
	}
	var r route.Route
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return route.Route{}, fmt.Errorf("%s does not parse, and is left as it is: %w", path, err)
	}
	if r.ID != id {
		return route.Route{}, fmt.Errorf("%s holds the route %q: a route's file is named after its id", path, r.ID)
	}
	if bad := route.Check(r); bad != nil {
		return route.Route{}, fmt.Errorf("%s is no route: %s", path, strings.Join(bad, " "))
	}
	r.Version = version(data)
	return r, nil
}

func (s *Store) path(id string) string { return filepath.Join(s.dir, RoutesDir, id+".json") }

// version is a strong token of a file's content.
func version(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:12])
}

// PutRoute writes r by its Version, crash-safely.
func (s *Store) PutRoute(_ context.Context, r route.Route) (route.Route, error) {
	if bad := route.Check(r); bad != nil {
		return route.Route{}, fmt.Errorf("the route %q was not saved: %s", r.ID, strings.Join(bad, " "))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkVersion(r.ID, r.Version); err != nil {
		return route.Route{}, err
	}
	r.Version = ""
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return route.Route{}, err
	}
	data = append(data, '\n')
	if err := atomicfile.MkdirAll(filepath.Join(s.dir, RoutesDir), 0o700); err != nil {
		return route.Route{}, fmt.Errorf("cannot make the routes folder: %w", err)
	}
	if err := atomicfile.Write(s.path(r.ID), data, 0o600); err != nil {
		return route.Route{}, fmt.Errorf("cannot write the route %q: %w", r.ID, err)
	}
	r.Version = version(data)
	return r, nil
}

// checkVersion refuses a write naming another Version than the file's:
// none for a new route.
func (s *Store) checkVersion(id, want string) error {
	data, err := os.ReadFile(s.path(id))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if want != "" {
			return fmt.Errorf("the route %q is gone: %w", id, route.ErrConflict)
		}
		return nil
	case err != nil:
		return fmt.Errorf("cannot read the route %q: %w", id, err)
	case want == "" || version(data) != want:
		return fmt.Errorf("the route %q: %w", id, route.ErrConflict)
	}
	return nil
}

// DeleteRoute removes the route id of that version ("" for any).
func (s *Store) DeleteRoute(_ context.Context, id, v string) error {
	if !route.ValidID(id) {
		return fmt.Errorf("the route %q: %w", id, route.ErrNotFound)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	data, err := os.ReadFile(s.path(id))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("the route %q: %w", id, route.ErrNotFound)
	case err != nil:
		return fmt.Errorf("cannot read the route %q: %w", id, err)
	case v != "" && version(data) != v:
		return fmt.Errorf("the route %q: %w", id, route.ErrConflict)
	}
	if err := os.Remove(s.path(id)); err != nil {
		return fmt.Errorf("cannot delete the route %q: %w", id, err)
	}
	return atomicfile.SyncDir(filepath.Join(s.dir, RoutesDir))
}

// Watch looks at the files every Interval and sends when they changed.
func (s *Store) Watch(ctx context.Context) (<-chan struct{}, error) {
	ch := make(chan struct{}, 1)
	last := s.fingerprint()
	go func() {
		defer close(ch)
		tick.Every(ctx, s.interval, func() bool {
			if now := s.fingerprint(); now != last {
				last = now
				select {
				case ch <- struct{}{}:
				default:
				}
			}
			return true
		})
	}()
	return ch, nil
}

// fingerprint sums the names, sizes and times of the files Watch follows.
func (s *Store) fingerprint() string {
	h := sha256.New()
	note := func(path string) {
		if fi, err := os.Stat(path); err == nil {
			fmt.Fprintf(h, "%s %d %d\n", path, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	note(filepath.Join(s.dir, ConnectionsFile))
	dir := filepath.Join(s.dir, RoutesDir)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !atomicfile.IsTemp(e.Name()) {
			note(filepath.Join(dir, e.Name()))
		}
	}
	return string(h.Sum(nil))
}

// problem notes (why not empty) or clears a file's problem, logging a new
// one once.
func (s *Store) problem(path, why string) {
	s.probMu.Lock()
	defer s.probMu.Unlock()
	if why == "" {
		delete(s.problems, path)
		return
	}
	if s.problems[path] != why {
		s.log.Warn("route: a file is left out", "path", path, "why", why)
	}
	s.problems[path] = why
}

// Problems are the files left out, and why, by path.
func (s *Store) Problems() map[string]string {
	s.probMu.Lock()
	defer s.probMu.Unlock()
	out := make(map[string]string, len(s.problems))
	for k, v := range s.problems {
		out[k] = v
	}
	return out
}
