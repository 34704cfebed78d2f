package bot

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
	"maps"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/internal/atomicfile"
	"github.com/agenthost/bots/internal/frontmatter"
	"github.com/agenthost/bots/persona"
	"github.com/agenthost/bots/record"
)

// Bundle is a read-only set of bots a host ships with itself: one folder
// per bot, named by its slug, holding its bot.md (a record's frontmatter,
// as in <configDir>/bots/<slug>/bot.md, without owner, workspace or
// computer) and the files of its work folder, AGENTS.md among them.
//
// A bundled bot is owned by the host (root:<host>), is readable by all
// who may read bots, and cannot be made, edited or deleted through the
// service. A bot of the store with its slug (a person's, made before the
// host shipped the bundle) is hidden while the bundle ships the slug, and
// kept whole: its record, its work folder (still its own: no other bot
// may claim it) and its chats stay as they are, it is served again when
// the bundle no longer ships the slug, it stands as a problem those who
// may read it see, and its chats are never carried on by the bundled
// bot. Its persona (name, description, instructions) is the
// bundle's AGENTS.md where it has one, else its bot.md's.
//
// Its work folder is <root>/.bundled/<slug>, under a folder no make, edit
// or hand-made bot may claim (a slug never starts with a dot), so that a
// bundled bot never runs in a folder a person made. It is written from
// the bundle at the first message to the bot, and again when the
// bundle's version (a hash of all its files) changes: then a file is
// written when it is missing or still holds exactly what the previous
// version wrote; a file changed in the folder since is kept, and reported
// at Warn. Its persona files (AGENTS.md, CLAUDE.md) are the bundle's
// before every wake, whatever the folder holds. What was written is kept
// in <configDir>/bundled/<slug>.json.
type Bundle struct {
	// FS holds the bots' folders.
	FS fs.FS
	// Origin says where the bundle comes from in reports: a folder's path,
	// or "built in".
	Origin string
}

// bundled is one bot of a bundle.
type bundled struct {
	entry   record.Entry      // the record, with its persona, and an etag of its version
	files   map[string][]byte // the work folder's files by slash path
	version string            // a hash of every file of the bot's folder in the bundle
	origin  string            // <Bundle.Origin>/<slug>
}

// bundleBotFile is the record's file in a bundled bot's folder.
const bundleBotFile = "bot.md"

// bundledFolder is the folder under root the bundled bots work in, one
// folder each, named by slug. No make, edit or hand-made bot may claim it
// or a folder inside it.
const bundledFolder = ".bundled"

// bundledPersona are the files of a bundled bot's folder that the bundle
// always decides: the persona its back sessions run on.
var bundledPersona = []string{persona.AgentsFile, persona.ClaudeFile}

// loadBundles reads every bot of the bundles; a bot of an earlier bundle
// wins over one of a later with its slug, reported at Warn. A bot that
// cannot be read is an error: the host shipped it.
func loadBundles(bundles []Bundle, hostName, root string, mode persona.Mode, log *slog.Logger) (map[string]*bundled, error) {
	out := map[string]*bundled{}
	for _, b := range bundles {
		if b.FS == nil {
			return nil, fmt.Errorf("bundle %q has no files", b.Origin)
		}
		entries, err := fs.ReadDir(b.FS, ".")
		if err != nil {
			return nil, fmt.Errorf("bundle %s: %w", b.Origin, err)
		}
		for _, e := range entries {
			if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			bb, err := loadBundled(b, e.Name(), hostName, root, mode)
			if err != nil {
				return nil, err
			}
			if prev, ok := out[e.Name()]; ok {
				log.Warn("bot: two bundles ship a bot of one slug; the first is kept", "bot", e.Name(), "kept", prev.origin, "ignored", bb.origin)
				continue
			}
			out[e.Name()] = bb
		}
	}
	return out, nil
}

func loadBundled(b Bundle, slug, hostName, root string, mode persona.Mode) (*bundled, error) {
	origin := b.Origin + "/" + slug
	if err := record.CheckSlug(slug); err != nil {
		return nil, fmt.Errorf("bundled bot %s: %w", origin, err)
	}
	sub, err := fs.Sub(b.FS, slug)
	if err != nil {
		return nil, fmt.Errorf("bundled bot %s: %w", origin, err)
	}
	files := map[string][]byte{}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", p)
		}
		data, err := fs.ReadFile(sub, p)
		files[p] = data
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("bundled bot %s: %w", origin, err)
	}
	front, ok := files[bundleBotFile]
	if !ok {
		return nil, fmt.Errorf("bundled bot %s has no %s", origin, bundleBotFile)
	}
	r, err := bundledRecord(slug, front)
	if err != nil {
		return nil, fmt.Errorf("bundled bot %s: %s: %w", origin, bundleBotFile, err)
	}
	if agents, ok := files[persona.AgentsFile]; ok {
		parts, err := persona.Read(agents, mode)
		if err != nil {
			return nil, fmt.Errorf("bundled bot %s: %s: %w", origin, persona.AgentsFile, err)
		}
		if parts.Name != "" {
			r.Name = parts.Name
		}
		if parts.Description != "" {
			r.Description = parts.Description
		}
		if parts.Instructions != "" {
			r.Instructions = parts.Instructions
		}
	}
	if strings.TrimSpace(r.Name) == "" {
		return nil, fmt.Errorf("bundled bot %s has no name", origin)
	}
	r.Owner = "root:" + hostName
	r.Workspace = filepath.Join(root, bundledFolder, slug)
	if r.Body == "" {
		r.Body = record.Bodies()[0]
	}
	if r.Color == "" {
		r.Color = record.DefaultColor()
	}
	version := versionOf(files)
	delete(files, bundleBotFile)
	return &bundled{entry: record.Entry{Record: r, ETag: "bundled-" + version[:32]}, files: files, version: version, origin: origin}, nil
}

// bundledRecord reads a bundled bot's bot.md: the record's fields, and
// instructions below the frontmatter. Owner, workspace and computer are
// the host's to say.
func bundledRecord(slug string, data []byte) (record.Record, error) {
	doc, err := frontmatter.Split(data)
	if err != nil {
		return record.Record{}, err
	}
	m := map[string]any{}
	if doc.Has {
		if m, err = frontmatter.Decode(doc.Front); err != nil {
			return record.Record{}, err
		}
	}
	for _, k := range []string{"owner", "workspace", "computer"} {
		if _, ok := m[k]; ok {
			return record.Record{}, fmt.Errorf("a bundled bot names no %s: the host gives it", k)
		}
	}
	if body := strings.TrimSpace(string(doc.Body)); body != "" {
		if _, ok := m["instructions"]; !ok {
			m["instructions"] = body
		}
	}
	if _, ok := m["name"]; !ok {
		m["name"] = slug // AGENTS.md may name it
	}
	p, err := record.PatchFromMap(m)
	if err != nil {
		return record.Record{}, err
	}
	return p.Make(slug)
}

// versionOf is a hash of a bot folder's files, paths and contents.
func versionOf(files map[string][]byte) string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		fmt.Fprintf(h, "%d:%s:%d:", len(n), n, len(files[n]))
		h.Write(files[n])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func hashOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// bundleStamp is what was last written of a bundled bot into its work
// folder: the folder, the bundle's version and each file's hash as
// written. A stamp of another folder is no stamp of this one.
type bundleStamp struct {
	Dir     string            `json:"dir"`
	Version string            `json:"version"`
	Files   map[string]string `json:"files"`
}

// bundledErr is the refusal of a write to a bundled bot through the
// service, naming why.
func bundledErr(id, what string) error {
	return errcode.New(errcode.PermissionDenied, "Permission denied: %s is bundled with this host, so it cannot be %s; make a bot of another slug from it instead", uri(id), what)
}

// bundledStamps is the folder under the configuration folder that holds
// a stamp for each bundled bot: what of its bundle was last written.
const bundledStamps = "bundled"

// isBundled reports whether id is a bundled bot's slug.
func (s *Service) isBundled(id string) bool {
	_, ok := s.bundles.byID[id]
	return ok
}

// writeBundled writes a bundled bot's work folder from the bundle when
// its version is not the one last written there, and its persona files
// from the bundle whenever they differ (see Bundle). It runs before a
// message wakes the bot.
func (s *Service) writeBundled(ctx context.Context, id string) error {
	b, ok := s.bundles.byID[id]
	if !ok {
		return nil
	}
	s.bundles.mu.Lock()
	defer s.bundles.mu.Unlock()
	dir := b.entry.Record.Workspace
	stampPath := filepath.Join(s.configDir, bundledStamps, id+".json")
	var old bundleStamp
	if data, err := os.ReadFile(stampPath); err == nil {
		if err := json.Unmarshal(data, &old); err != nil {
			s.log.Warn("bot: a bundled bot's stamp cannot be read; its folder's files are kept", "bot", id, "path", stampPath, "err", err)
			old = bundleStamp{}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", stampPath, err)
	}
	if old.Dir != dir {
		old = bundleStamp{} // written for a folder the bot no longer works in
	}
	if old.Version == b.version {
		return s.writeBundledPersona(id, b)
	}
	if err := s.confine(dir); err != nil {
		return err
	}
	if err := ensureFolder(dir); err != nil {
		return fmt.Errorf("%s: %w", uri(id), err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("%s: open work folder: %w", uri(id), err)
	}
	defer root.Close()
	next := bundleStamp{Dir: dir, Version: b.version, Files: map[string]string{}}
	names := make([]string, 0, len(b.files))
	for n := range b.files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		data := b.files[name]
		cur, err := root.ReadFile(filepath.FromSlash(name))
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			s.log.Warn("bot: a bundled bot's file in its folder cannot be read; it is kept", "bot", id, "file", name, "err", err)
			continue
		case hashOf(cur) == hashOf(data):
			next.Files[name] = hashOf(data)
			continue
		case slices.Contains(bundledPersona, name):
			// The persona is always the bundle's.
		case old.Files[name] == "" || hashOf(cur) != old.Files[name]:
			// Changed since the bundle wrote it (or never written by it).
			s.log.Warn("bot: a bundled bot's file was changed in its folder; the bundle's new version of it is not written", "bot", id, "file", filepath.Join(dir, name), "bundle", b.origin)
			if old.Files[name] != "" {
				next.Files[name] = old.Files[name]
			}
			continue
		}
		if err := writeIn(root, name, data); err != nil {
			return fmt.Errorf("%s: write %s: %w", uri(id), name, err)
		}
		next.Files[name] = hashOf(data)
	}
	data, err := json.Marshal(next)
	if err != nil {
		return err
	}
	if err := atomicfile.MkdirAll(filepath.Dir(stampPath), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(stampPath, data, 0o600)
}

// writeBundledPersona writes the persona files of bundled bot b back from
// the bundle where its folder holds anything else: what its back session
// (or a hand) wrote there since is never the persona it runs on.
func (s *Service) writeBundledPersona(id string, b *bundled) error {
	dir := b.entry.Record.Workspace
	var root *os.Root
	for _, name := range bundledPersona {
		data, ok := b.files[name]
		if !ok {
			continue
		}
		if root == nil {
			if err := s.confine(dir); err != nil {
				return err
			}
			var err error
			if root, err = os.OpenRoot(dir); err != nil {
				return fmt.Errorf("%s: open work folder: %w", uri(id), err)
			}
			defer root.Close()
		}
		if cur, err := root.ReadFile(name); err == nil && bytes.Equal(cur, data) {
			continue
		}
		s.log.Warn("bot: a bundled bot's persona file was changed in its folder; the bundle's is written back", "bot", id, "file", filepath.Join(dir, name), "bundle", b.origin)
		if err := writeIn(root, name, data); err != nil {
			return fmt.Errorf("%s: write %s: %w", uri(id), name, err)
		}
	}
	return nil
}

// writeIn writes name (a slash path) inside root crash-safely: a temp
// file beside it, synced, renamed over it, and the folder synced. Through os.Root, no link in
// the folder leads the write out of it.
func writeIn(root *os.Root, name string, data []byte) error {
	name = filepath.FromSlash(name)
	if d := filepath.Dir(name); d != "." {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	tmp := filepath.Join(filepath.Dir(name), ".bundle-"+hashOf([]byte(name))[:12]+".tmp")
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		root.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		root.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		root.Remove(tmp)
		return err
	}
	if err := root.Rename(tmp, name); err != nil {
		root.Remove(tmp)
		return err
	}
	d, err := root.Open(filepath.Dir(name))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// bundledStore is the service's store with the bundled bots laid over
// it: they are listed and read as its own, never written, and a bot of
// the store with a bundled slug is hidden - kept by the store as it is -
// reported at Warn with both paths, and a problem of its owner's while it
// is (hiddenProblems).
type bundledStore struct {
	record.Store
	bundled map[string]*bundled
	ids     []string               // the bundled slugs, in order
	where   func(id string) string // where the store keeps bot id, for reports
	log     *slog.Logger
	now     func() time.Time
	kick    func() // tells the problems' follower that hidden changed

	mu     sync.Mutex
	hidden map[string]time.Time // the store's bots a bundled bot hides, since when
}

// hiddenReason is the problem of a bot of the store a bundled bot hides.
const hiddenReason = "a bot bundled with this host takes this slug and wins while the host ships it: this bot is hidden but kept whole - its record, its work folder (which no other bot may take) and its chats - and is served again once the bundle no longer ships it"

var (
	_ record.Filterer     = (*bundledStore)(nil)
	_ record.IDLister     = (*bundledStore)(nil)
	_ record.SharedLister = (*bundledStore)(nil)
)

func newBundledStore(inner record.Store, b map[string]*bundled, where func(string) string, log *slog.Logger, now func() time.Time, kick func()) *bundledStore {
	ids := slices.Sorted(maps.Keys(b))
	return &bundledStore{Store: inner, bundled: b, ids: ids, where: where, log: log, now: now, kick: kick, hidden: map[string]time.Time{}}
}

// shadowed reports, once while it lasts, a bot of the store that a
// bundled bot hides.
func (b *bundledStore) shadowed(id string) {
	b.mu.Lock()
	_, seen := b.hidden[id]
	if !seen {
		b.hidden[id] = b.now()
	}
	b.mu.Unlock()
	if !seen {
		b.log.Warn("bot: a bot takes the slug of a bundled bot and is hidden, kept as it is; the bundled bot wins", "bot", id, "path", b.where(id), "bundled", b.bundled[id].origin)
		b.kick()
	}
}

// unshadowed forgets a hidden bot the store no longer keeps.
func (b *bundledStore) unshadowed(id string) {
	b.mu.Lock()
	_, seen := b.hidden[id]
	delete(b.hidden, id)
	b.mu.Unlock()
	if seen {
		b.kick()
	}
}

// hiddenProblems are the problems of the store's bots bundled bots hide:
// each at its record's place in the store.
func (b *bundledStore) hiddenProblems() []record.Problem {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]record.Problem, 0, len(b.hidden))
	for id, since := range b.hidden {
		out = append(out, record.Problem{ID: id, Path: b.where(id), Reason: hiddenReason, Since: since})
	}
	return out
}

// chatOfHidden reports whether a chat with bot id that works in dirs (its
// session's working directories, as file URLs) is one with the store's
// bot a bundled bot of its slug hides: that chat is never carried on by
// the bundled bot.
func (s *Service) chatOfHidden(ctx context.Context, id string, dirs []string) bool {
	if s.bundles.hiding == nil || !s.bundles.hiding.isHidden(id) || len(dirs) == 0 {
		return false
	}
	e, err := s.raw.Get(ctx, id)
	if err != nil {
		return false
	}
	u, err := url.Parse(dirs[0])
	return err == nil && u.Path != "" && filepath.Clean(u.Path) == filepath.Clean(e.Record.Workspace)
}

// isHidden reports whether the store keeps a bot of bundled slug id.
func (b *bundledStore) isHidden(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.hidden[id]
	return ok
}

func (b *bundledStore) Get(ctx context.Context, id string) (record.Entry, error) {
	if bb, ok := b.bundled[id]; ok {
		return bundledEntry(bb), nil
	}
	return b.Store.Get(ctx, id)
}

func bundledEntry(bb *bundled) record.Entry {
	return record.Entry{Record: bb.entry.Record.Clone(), ETag: bb.entry.ETag}
}

func (b *bundledStore) List(ctx context.Context) ([]record.Entry, error) {
	return b.ListFunc(ctx, func(record.Record) bool { return true })
}

// ListFunc lists the store's bots and the bundled ones keep keeps, by id.
func (b *bundledStore) ListFunc(ctx context.Context, keep func(record.Record) bool) ([]record.Entry, error) {
	list, err := record.ListFunc(ctx, b.Store, keep)
	if err != nil {
		return nil, err
	}
	return mergeBundled(b, list, keep, func(e record.Entry) string { return e.Record.ID }, bundledEntry), nil
}

// ListIDs lists the slugs of the store's bots and the bundled ones keep
// keeps, in order.
func (b *bundledStore) ListIDs(ctx context.Context, keep func(record.Record) bool) ([]string, error) {
	list, err := record.ListIDs(ctx, b.Store, keep)
	if err != nil {
		return nil, err
	}
	return mergeBundled(b, list, keep, func(id string) string { return id }, func(bb *bundled) string { return bb.entry.Record.ID }), nil
}

// ListShared lists the store's own entries and those of the bundled bots
// keep keeps (every one for a nil keep), in order. A bundled bot's entry
// is never changed after New, so it is handed out as it is.
func (b *bundledStore) ListShared(ctx context.Context, keep func(*record.Record) bool) ([]*record.Entry, error) {
	list, err := record.ListShared(ctx, b.Store, keep)
	if err != nil {
		return nil, err
	}
	return mergeBundled(b, list, func(r record.Record) bool { return keep == nil || keep(&r) },
		func(e *record.Entry) string { return e.Record.ID }, func(bb *bundled) *record.Entry { return &bb.entry }), nil
}

// mergeBundled merges the bundled bots keep keeps into list, the store's
// listing in slug order, in one pass: a bot of the store with a bundled
// slug is left out, the bundled one listed in its place.
func mergeBundled[T any](b *bundledStore, list []T, keep func(record.Record) bool, idOf func(T) string, of func(*bundled) T) []T {
	out := make([]T, 0, len(list)+len(b.ids))
	i := 0
	for _, id := range b.ids {
		for ; i < len(list) && idOf(list[i]) < id; i++ {
			out = append(out, list[i])
		}
		if i < len(list) && idOf(list[i]) == id {
			i++ // hidden by the bundled bot
		}
		if bb := b.bundled[id]; keep(bb.entry.Record) {
			out = append(out, of(bb))
		}
	}
	return append(out, list[i:]...)
}

func (b *bundledStore) Create(ctx context.Context, r record.Record) (record.Entry, error) {
	if _, ok := b.bundled[r.ID]; ok {
		return record.Entry{}, fmt.Errorf("%w: bundled with this host", record.ErrExists)
	}
	return b.Store.Create(ctx, r)
}

func (b *bundledStore) Update(ctx context.Context, r record.Record, ifMatch string) (record.Entry, error) {
	if _, ok := b.bundled[r.ID]; ok {
		return record.Entry{}, fmt.Errorf("bot %s is bundled with this host and is never written", r.ID)
	}
	return b.Store.Update(ctx, r, ifMatch)
}

func (b *bundledStore) Delete(ctx context.Context, id, ifMatch string) error {
	if _, ok := b.bundled[id]; ok {
		return fmt.Errorf("bot %s is bundled with this host and is never deleted", id)
	}
	return b.Store.Delete(ctx, id, ifMatch)
}

// Watch passes on the store's changes but those of a bundled slug, which
// are reported.
func (b *bundledStore) Watch(ctx context.Context) (<-chan record.Change, error) {
	in, err := b.Store.Watch(ctx)
	if err != nil {
		return nil, err
	}
	out := make(chan record.Change)
	go func() {
		defer close(out)
		for c := range in {
			if _, ok := b.bundled[c.ID]; ok {
				if c.Kind == record.Deleted {
					b.unshadowed(c.ID)
				} else {
					b.shadowed(c.ID)
				}
				continue
			}
			select {
			case out <- c:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// reportShadowed reports every bot of the store a bundled bot hides now.
func (b *bundledStore) reportShadowed(ctx context.Context) {
	for id := range b.bundled {
		if _, err := b.Store.Get(ctx, id); err == nil {
			b.shadowed(id)
		}
	}
}

// bundledWhere says where the store keeps a bot, for reports: its bot.md
// for a file store.
func bundledWhere(configDir string, store record.Store) func(string) string {
	fb, ok := store.(record.FileBacked)
	files := ok && fb.FileBacked()
	return func(id string) string {
		if files {
			return filepath.Join(configDir, "bots", id, "bot.md")
		}
		return path.Join("store", id)
	}
}

// BundleDir is the bundle of the bot folders in dir, as a host's option
// (the reference server's -bundled) names it.
func BundleDir(dir string) (Bundle, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Bundle{}, fmt.Errorf("bundled bots %q: %w", dir, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return Bundle{}, fmt.Errorf("bundled bots: %w", err)
	}
	if !st.IsDir() {
		return Bundle{}, fmt.Errorf("bundled bots: %s is not a folder", abs)
	}
	return Bundle{FS: os.DirFS(abs), Origin: abs}, nil
}
