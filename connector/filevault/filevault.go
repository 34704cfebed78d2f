// Package filevault is a connector.Vault that reads credentials from a JSON
// file kept apart from the bots:
//
//	{"connectors": {"<adapter>/<id>": {"value": "...", "header": "Authorization", "url": "https://...",
//	                                   "owners": ["user:soft", "team:backend"]}}}
//
// owners say who may use the entry (connector.Permits): user:<id>,
// team:<name>, project:<name>, root:<host>, or "*" for everybody signed
// in; a call needs both the bot's owner and the person who sent the
// message among them. An entry that names no owners is root's alone, and
// the vault says so at Warn each time it reads the file; an owner of any
// other form makes the file unusable, naming the entry.
//
// The file must be readable by its owner alone (mode 0600, or 0400), and it
// must lie outside the daemon's config folder and the bots' root folder, so
// that no record, work folder or copy of either ever holds it; a file that
// breaks either rule is refused, naming the file (and its mode). The file is
// read again when its modification time or size changes, so an edit reaches
// the next call.
package filevault

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/bots/connector"
	"github.com/agenthost/bots/internal/jsonerr"
)

// MaxSize is the largest vault file read.
const MaxSize = 1 << 20

// Config configures a Vault.
type Config struct {
	// Path is the vault file. Required.
	Path string
	// ConfigDir is the daemon's configuration folder; the file may not be
	// in it. Empty means none to keep out of.
	ConfigDir string
	// Root is the folder the bots' work folders are under; the file may
	// not be in it. Empty means none to keep out of.
	Root string
	// Logger receives a line when the file is read again, and a Warn per
	// entry that names no owners. Nil discards.
	Logger *slog.Logger
	// Scrubber, when set, learns every value of the file each time it is
	// read, so that text leaving a session is scrubbed of values no call
	// has resolved yet.
	Scrubber *connector.Scrubber
}

// Vault resolves credentials from a JSON file. It is safe to use
// concurrently.
type Vault struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	modTime time.Time
	size    int64
	entries map[string]entry
}

var (
	_ connector.Vault  = (*Vault)(nil)
	_ connector.Lister = (*Vault)(nil)
)

type entry struct {
	Value  string   `json:"value"`
	Header string   `json:"header"`
	URL    string   `json:"url"`
	Owners []string `json:"owners"`
}

type file struct {
	Connectors map[string]entry `json:"connectors"`
}

// New checks cfg, and the file's mode and place, and makes a Vault. The file
// is checked again on every Resolve.
func New(cfg Config) (*Vault, error) {
	if cfg.Path == "" {
		return nil, errors.New("filevault: no vault file")
	}
	abs, err := filepath.Abs(cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("filevault: %w", err)
	}
	cfg.Path = abs
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	v := &Vault{cfg: cfg, log: log}
	if _, err := v.check(); err != nil {
		return nil, err
	}
	return v, nil
}

// check refuses a file of the wrong mode or place, and answers its stat.
func (v *Vault) check() (fs.FileInfo, error) {
	path := v.cfg.Path
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("the vault file %s cannot be read: %w: %w", path, err, connector.ErrVault)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("the vault file %s is not a regular file: %w", path, connector.ErrVault)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("the vault file %s is mode %04o: it must be 0600, readable by its owner alone: %w", path, perm, connector.ErrVault)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, fmt.Errorf("the vault file %s cannot be resolved: %w: %w", path, err, connector.ErrVault)
	}
	for _, d := range []struct{ name, dir string }{{"config folder", v.cfg.ConfigDir}, {"root folder", v.cfg.Root}} {
		if d.dir == "" {
			continue
		}
		if within(path, d.dir) || within(real, d.dir) {
			return nil, fmt.Errorf("the vault file %s is inside the %s %s: keep it outside the config and root folders: %w", path, d.name, d.dir, connector.ErrVault)
		}
	}
	return info, nil
}

// within reports whether path is dir or under it, as given and with dir's
// symbolic links resolved.
func within(path, dir string) bool {
	dirs := []string{dir}
	if abs, err := filepath.Abs(dir); err == nil {
		dirs = append(dirs, abs)
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			dirs = append(dirs, real)
		}
	}
	for _, d := range dirs {
		rel, err := filepath.Rel(d, path)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
			return true
		}
	}
	return false
}

// Resolve checks the file again, reads it when it changed, and answers the
// entry "<adapter>/<id>".
func (v *Vault) Resolve(ctx context.Context, ref connector.Ref) (connector.Credential, error) {
	if err := ctx.Err(); err != nil {
		return connector.Credential{}, err
	}
	entries, err := v.load()
	if err != nil {
		return connector.Credential{}, fmt.Errorf("%s: %w", ref, err)
	}
	e, ok := entries[ref.Adapter+"/"+ref.ID]
	if !ok || e.Value == "" {
		return connector.Credential{}, fmt.Errorf("%s: the vault file %s has no value for %s/%s: %w", ref, v.cfg.Path, ref.Adapter, ref.ID, connector.ErrNoCredential)
	}
	c := connector.NewCredential(e.Value, e.Header, e.URL)
	c.Owners = slices.Clone(e.Owners)
	return c, nil
}

// Values answers every value of the file as it is now.
func (v *Vault) Values(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, err := v.load()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.Value)
	}
	return out, nil
}

func (v *Vault) load() (map[string]entry, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	info, err := v.check()
	if err != nil {
		return nil, err
	}
	if v.entries != nil && info.ModTime().Equal(v.modTime) && info.Size() == v.size {
		return v.entries, nil
	}
	if info.Size() > MaxSize {
		return nil, fmt.Errorf("the vault file %s is larger than %d bytes: %w", v.cfg.Path, MaxSize, connector.ErrVault)
	}
	data, err := os.ReadFile(v.cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("the vault file %s cannot be read: %w: %w", v.cfg.Path, err, connector.ErrVault)
	}
	entries, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("the vault file %s %v: %w", v.cfg.Path, err, connector.ErrVault)
	}
	v.entries, v.modTime, v.size = entries, info.ModTime(), info.Size()
	v.log.Info("vault file read", "path", v.cfg.Path, "connectors", len(entries))
	for _, k := range slices.Sorted(maps.Keys(entries)) {
		e := entries[k]
		if v.cfg.Scrubber != nil {
			v.cfg.Scrubber.Add(e.Value)
		}
		if len(e.Owners) == 0 {
			v.log.Warn("vault entry "+k+" names no owners, so only root and bots root owns may use it", "path", v.cfg.Path, "entry", k)
		}
	}
	return entries, nil
}

// parse decodes the file. Its errors say where, never what: a decoder's own
// message could quote part of a value.
func parse(data []byte) (map[string]entry, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f file
	if err := dec.Decode(&f); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		at := "its end"
		if e := (*jsonerr.Error)(nil); errors.As(jsonerr.Locate(data, err), &e) {
			at = fmt.Sprintf("line %d, column %d", e.Line, e.Column)
		}
		switch {
		case errors.As(err, &syn), errors.Is(err, io.ErrUnexpectedEOF):
			return nil, fmt.Errorf("is not valid JSON (at %s)", at)
		case errors.As(err, &typ):
			return nil, fmt.Errorf("has a %s where a string or an object belongs (at %s)", typ.Value, at)
		case strings.HasPrefix(err.Error(), "json: unknown field"):
			return nil, errors.New("names a field a vault entry does not have: use value, header, url and owners")
		}
		return nil, errors.New("is not a vault: {\"connectors\": {\"<adapter>/<id>\": {\"value\": ...}}}")
	}
	for k, e := range f.Connectors {
		if _, err := connector.ParseRef("connectors://" + k); err != nil {
			return nil, errors.New("has a key that is not <adapter>/<id>")
		}
		for _, o := range e.Owners {
			if err := connector.CheckOwner(o); err != nil {
				return nil, fmt.Errorf("entry %s: %w", k, err)
			}
		}
	}
	if f.Connectors == nil {
		f.Connectors = map[string]entry{}
	}
	return f.Connectors, nil
}
