package persona

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/bots/internal/atomicfile"
	"github.com/agenthost/bots/internal/frontmatter"
)

// File names in a bot's work folder and the configuration folder.
const (
	// AgentsFile is the persona file in a bot's work folder.
	AgentsFile = "AGENTS.md"
	// ClaudeFile sits beside AgentsFile and imports it, because Claude reads
	// that name and not AGENTS.md.
	ClaudeFile = "CLAUDE.md"
	// ClaudeImport is the whole text of a CLAUDE.md this package writes.
	ClaudeImport = "@AGENTS.md\n"
)

// ErrNoTemplate is returned (wrapped, naming the template) for a named
// template that does not exist.
var ErrNoTemplate = errors.New("no such template")

// maxTemplateName is the longest template name, as long as a slug.
const maxTemplateName = 40

// Config configures Files.
type Config struct {
	// ConfigDir is the daemon's configuration folder; templates are under
	// <ConfigDir>/templates. Required.
	ConfigDir string
	// Mode is where a bot's instructions are in its AGENTS.md (the option
	// instructionsIn). The zero value is InSection.
	Mode Mode
	// Logger receives Warn lines for templates that cannot be read. Nil
	// discards.
	Logger *slog.Logger
	// Identify, when set, is asked first for the identity of an AGENTS.md
	// a read looks at (its path, as Read joins it), instead of an lstat of
	// the path. It must answer for the regular file the path names now,
	// not following a final link, as lstat would; false lets Read lstat
	// the path. Nil always lstats.
	Identify func(path string) (Identity, bool)
}

// Files reads and writes personas in bot work folders, and templates under
// <configDir>/templates. Its methods may be called concurrently; writes to
// one folder are serialised.
type Files struct {
	templates string // <configDir>/templates
	mode      Mode
	log       *slog.Logger

	mu    sync.Mutex
	locks map[string]*dirLock

	cache    partsCache // the parts each AGENTS.md held, while its identity holds
	identify func(path string) (Identity, bool)
}

// TemplateInfo names a template for a client's form.
type TemplateInfo struct {
	Name  string // what a bot's template field holds: <configDir>/templates/<Name>.md
	Title string // the title its frontmatter holds; empty when it holds none
}

// New returns Files for cfg.
func New(cfg Config) (*Files, error) {
	if cfg.ConfigDir == "" {
		return nil, errors.New("persona: the configuration folder is not set")
	}
	if err := cfg.Mode.check(); err != nil {
		return nil, fmt.Errorf("persona: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Files{
		templates: filepath.Join(filepath.Clean(cfg.ConfigDir), "templates"),
		mode:      cfg.Mode,
		log:       log,
		locks:     map[string]*dirLock{},
		identify:  cfg.Identify,
	}, nil
}

// Mode returns where these Files keep a bot's instructions.
func (f *Files) Mode() Mode { return f.mode }

// DefaultTemplatePath is <configDir>/templates/bots/AGENTS.md.
func (f *Files) DefaultTemplatePath() string {
	return filepath.Join(f.templates, "bots", AgentsFile)
}

// Load writes the default template <configDir>/templates/bots/AGENTS.md
// when nothing is there, never over a person's edit. Call it once at start.
func (f *Files) Load(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	path := f.DefaultTemplatePath()
	if _, err := os.Lstat(path); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("look for the default template: %w", err)
	}
	if err := atomicfile.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("make the templates folder: %w", err)
	}
	wrote, err := writeNew(path, []byte(DefaultTemplate), 0o644)
	if err != nil {
		return fmt.Errorf("write the default template: %w", err)
	}
	if wrote {
		f.log.Info("wrote the default persona template", "path", path)
	}
	return nil
}

// CheckTemplateName reports why name cannot name a template: a template name
// is a lowercase slug, 1 to 40 lowercase letters, digits and dashes starting
// with a letter, so it is a file name and never a path.
func CheckTemplateName(name string) error {
	ok := len(name) > 0 && len(name) <= maxTemplateName && name[0] >= 'a' && name[0] <= 'z'
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-'
	}
	if !ok {
		return fmt.Errorf("template %q is not a template name: use 1 to %d lowercase letters, digits and dashes, starting with a letter", name, maxTemplateName)
	}
	return nil
}

// Template returns the text of a template. For "" it is the default
// template file, or the shipped DefaultTemplate when that file is missing.
// For a name it is the body of <configDir>/templates/<name>.md (its
// frontmatter holds the title); a name that is not a slug is refused, and
// one with no file is ErrNoTemplate, wrapped in a sentence naming it.
func (f *Files) Template(ctx context.Context, name string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if name == "" {
		b, _, err := readFile(f.DefaultTemplatePath(), true)
		if errors.Is(err, fs.ErrNotExist) {
			return DefaultTemplate, nil
		}
		if err != nil {
			return "", fmt.Errorf("read the default template: %w", err)
		}
		return string(b), nil
	}
	t, err := f.named(name)
	if err != nil {
		return "", err
	}
	return t.body, nil
}

type namedTemplate struct {
	title, body string
	titleErr    error // why the title is not text; the body is still good
}

func (f *Files) named(name string) (namedTemplate, error) {
	if err := CheckTemplateName(name); err != nil {
		return namedTemplate{}, err
	}
	b, _, err := readFile(filepath.Join(f.templates, name+".md"), true)
	if errors.Is(err, fs.ErrNotExist) {
		return namedTemplate{}, fmt.Errorf("template %q: %w", name, ErrNoTemplate)
	}
	if err != nil {
		return namedTemplate{}, fmt.Errorf("read template %q: %w", name, err)
	}
	doc, err := frontmatter.Split(b)
	if err != nil {
		return namedTemplate{}, fmt.Errorf("template %q: its %w", name, err)
	}
	m, err := frontmatter.Decode(doc.Front)
	if err != nil {
		return namedTemplate{}, fmt.Errorf("template %q has a frontmatter that is not valid: %w", name, err)
	}
	title, err := textValue(m, "title")
	if err != nil {
		err = fmt.Errorf("template %q: its title is not text", name)
	}
	return namedTemplate{title: title, body: string(doc.Body), titleErr: err}, nil
}

// Templates lists the named templates, <configDir>/templates/<name>.md, by
// name. A file that cannot be read as a template is left out and reported
// at Warn, one whose title is not text is listed without one and reported;
// a missing templates folder lists none.
func (f *Files) Templates(ctx context.Context) ([]TemplateInfo, error) {
	names, err := f.TemplateNames(ctx)
	if err != nil {
		return nil, err
	}
	var out []TemplateInfo
	for _, name := range names {
		t, err := f.named(name)
		if err != nil {
			f.log.Warn("template left out", "path", filepath.Join(f.templates, name+".md"), "reason", err.Error())
			continue
		}
		if t.titleErr != nil {
			f.log.Warn("template listed without a title", "path", filepath.Join(f.templates, name+".md"), "reason", t.titleErr.Error())
		}
		out = append(out, TemplateInfo{Name: name, Title: t.title})
	}
	return out, nil
}

// TemplateNames lists the names of the templates' files,
// <configDir>/templates/<name>.md, sorted, without reading them: what a
// form offers (a template that does not read is refused at the make,
// saying why). A missing templates folder lists none.
func (f *Files) TemplateNames(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(f.templates)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list templates: %w", err)
	}
	var out []string
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".md")
		if ok && !e.IsDir() && !atomicfile.IsTemp(e.Name()) && CheckTemplateName(name) == nil {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Read returns the parts in <dir>/AGENTS.md. A missing file (or folder)
// reads as empty parts. A symlink is refused, and so is anything that is not
// a regular file or is larger than frontmatter.MaxSize (ErrBadFile), and a
// file whose text holds no persona (ErrBadText); each error names the file
// and why.
//
// Every read answers what the file holds now. A file whose identity (device,
// inode, size, modification and change times) is the one an earlier read saw,
// and that had not changed for racyMargin before that read, is not opened
// again: any write since would have given it a new identity.
func (f *Files) Read(ctx context.Context, dir string) (Parts, error) {
	return f.read(ctx, dir, Identity{}, false)
}

// ReadIdentified is Read given the identity of <dir>/AGENTS.md as
// Config.Identify answers it, taken by the caller as the read began (with
// its own look at the folder: one look serving both): Read takes no
// identity of its own.
func (f *Files) ReadIdentified(ctx context.Context, dir string, id Identity) (Parts, error) {
	return f.read(ctx, dir, id, true)
}

// read is Read; given, with id the identity of the file.
func (f *Files) read(ctx context.Context, dir string, id Identity, given bool) (Parts, error) {
	if err := ctx.Err(); err != nil {
		return Parts{}, err
	}
	// the cache is by folder: a read it answers joins no path.
	path := ""
	known := given
	if !given {
		path = filepath.Join(dir, AgentsFile)
		id, known = f.identityOf(path)
	}
	if known {
		if p, ok := f.cache.lookup(dir, id); ok {
			return p, nil
		}
	}
	if path == "" {
		path = filepath.Join(dir, AgentsFile)
	}
	// before the file is read, after its identity was taken: a change
	// the read misses that keeps the identity (one landing in the same
	// tick of the file's change time) is then within racyMargin of it.
	readAt := time.Now()
	b, _, err := readFile(path, false)
	if errors.Is(err, fs.ErrNotExist) {
		f.cache.forget(dir)
		return Parts{}, nil
	}
	if err != nil {
		return Parts{}, err
	}
	p, err := Read(b, f.mode)
	if err != nil {
		return Parts{}, &fileError{path: path, why: "does not hold a persona: " + err.Error(), kind: ErrBadText, cause: err}
	}
	if known {
		f.cache.store(dir, id, readAt, p)
	}
	return p, nil
}

// identityOf is the identity of the regular file at path, from
// Config.Identify when it answers, else from an lstat.
func (f *Files) identityOf(path string) (Identity, bool) {
	if f.identify != nil {
		if id, ok := f.identify(path); ok {
			return id, true
		}
	}
	return identify(path)
}

// Write writes the parts into <dir>/AGENTS.md. When the file is absent it is
// made from the template (Make: filled with the parts, then edited so they
// are exactly present); when present, only our parts are written (Edit) and
// a file that already says them is not touched. CLAUDE.md holding
// "@AGENTS.md" is written beside it when absent, never over an existing one.
// The folder is made when missing. Writes are crash-safe.
//
// An AGENTS.md that cannot hold a persona (ErrBadFile: a symlink, a FIFO,
// a file too large) is replaced by one made from the template, as if it
// were absent: the rename replaces the name itself and never writes where
// a link leads. It is reported at Warn. A folder by that name is not
// replaced, and neither is a file whose text holds no persona (ErrBadText).
//
// template names the template ("" is the default); it is read only when the
// file is made. A named template that no longer exists gives the default,
// as the spec has it for a bot whose template was removed, and is reported
// at Warn: refusing a make or an edit that names a missing template is the
// caller's check (Template answers ErrNoTemplate).
func (f *Files) Write(ctx context.Context, dir string, p Parts, template string) error {
	if err := CheckInstructions(p.Instructions, f.mode); err != nil {
		return err
	}
	unlock, err := f.lock(ctx, dir)
	if err != nil {
		return err
	}
	defer unlock()
	path := filepath.Join(dir, AgentsFile)
	for range 2 {
		src, perm, err := readFile(path, false)
		if errors.Is(err, ErrBadFile) {
			return f.replace(ctx, dir, p, template, err)
		}
		if errors.Is(err, fs.ErrNotExist) {
			wrote, err := f.make(ctx, dir, p, template)
			if err != nil {
				return err
			}
			if !wrote {
				continue // somebody wrote the file meanwhile: edit theirs
			}
			return f.writeClaude(dir)
		}
		if err != nil {
			return err
		}
		out, err := Edit(src, p, f.mode)
		if err != nil {
			return fmt.Errorf("edit %s: %w", path, err)
		}
		if !bytes.Equal(out, src) {
			if err := atomicfile.Write(path, out, perm); err != nil {
				return fmt.Errorf("write %s: %w", path, err)
			}
		}
		return f.writeClaude(dir)
	}
	return fmt.Errorf("write %s: it keeps appearing and disappearing", path)
}

// Ensure writes <dir>/AGENTS.md from the template only when the folder has
// none, for the first wake of a bot whose make did not write it; it never
// writes over an existing file, whatever it is. A named template that no
// longer exists gives the default, as in Write. It writes CLAUDE.md beside
// it when absent too, and reports whether it wrote AGENTS.md.
func (f *Files) Ensure(ctx context.Context, dir string, p Parts, template string) (bool, error) {
	unlock, err := f.lock(ctx, dir)
	if err != nil {
		return false, err
	}
	defer unlock()
	path := filepath.Join(dir, AgentsFile)
	wrote := false
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		if wrote, err = f.make(ctx, dir, p, template); err != nil {
			return false, err
		}
	} else if err != nil {
		return false, fmt.Errorf("look for %s: %w", path, err)
	}
	return wrote, f.writeClaude(dir)
}

// replace writes a new AGENTS.md from the template over one that cannot
// hold a persona, bad saying why; a folder by that name is left alone.
func (f *Files) replace(ctx context.Context, dir string, p Parts, template string, bad error) error {
	path := filepath.Join(dir, AgentsFile)
	if fi, err := os.Lstat(path); err == nil && fi.IsDir() {
		return bad
	}
	out, err := f.fill(ctx, dir, p, template)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, out, 0o644); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	f.cache.forget(dir)
	f.log.Warn("persona file replaced: it could not hold a persona", "path", path, "reason", bad.Error())
	return f.writeClaude(dir)
}

// RemoveStaleTemps removes from dir the temp files of AGENTS.md and
// CLAUDE.md writes that a crash left (last modified before cutoff), and
// returns their paths, and whether younger ones are left
// (atomicfile.Sweep). Every other temp file in the folder is the bot's,
// and stays.
func (f *Files) RemoveStaleTemps(dir string, cutoff time.Time) (removed []string, young bool, err error) {
	return atomicfile.Sweep(dir, cutoff, AgentsFile, ClaudeFile)
}

// make writes a new AGENTS.md in dir from the template, unless one appeared
// meanwhile; it reports whether it wrote.
func (f *Files) make(ctx context.Context, dir string, p Parts, template string) (bool, error) {
	out, err := f.fill(ctx, dir, p, template)
	if err != nil {
		return false, err
	}
	if err := atomicfile.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("make the bot's folder: %w", err)
	}
	path := filepath.Join(dir, AgentsFile)
	wrote, err := writeNew(path, out, 0o644)
	if err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	return wrote, nil
}

// fill is the text of a new AGENTS.md for dir: the template filled with
// the parts. A named template that no longer exists gives the default.
func (f *Files) fill(ctx context.Context, dir string, p Parts, template string) ([]byte, error) {
	text, err := f.Template(ctx, template)
	if errors.Is(err, ErrNoTemplate) {
		// A bot whose template was removed gets the default.
		f.log.Warn("persona template missing, the default is used", "template", template, "folder", dir)
		text, err = f.Template(ctx, "")
	}
	if err != nil {
		return nil, err
	}
	out, err := Make(text, p, f.mode)
	if err != nil {
		name := template
		if name == "" {
			name = "the default"
		} else {
			name = fmt.Sprintf("%q", name)
		}
		return nil, fmt.Errorf("make AGENTS.md from template %s: %w", name, err)
	}
	return out, nil
}

// writeClaude writes CLAUDE.md in dir when nothing has that name: a file, a
// symlink (a person's CLAUDE.md -> AGENTS.md link included) or anything else
// there is left alone and never written through.
func (f *Files) writeClaude(dir string) error {
	path := filepath.Join(dir, ClaudeFile)
	if _, err := os.Lstat(path); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("look for %s: %w", path, err)
	}
	if _, err := writeNew(path, []byte(ClaudeImport), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// dirLock serialises the writes to one folder.
type dirLock struct {
	ch    chan struct{}
	users int
}

// lock takes the write lock of dir, waiting no longer than ctx.
func (f *Files) lock(ctx context.Context, dir string) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	key := filepath.Clean(dir)
	f.mu.Lock()
	l := f.locks[key]
	if l == nil {
		l = &dirLock{ch: make(chan struct{}, 1)}
		f.locks[key] = l
	}
	l.users++
	f.mu.Unlock()
	release := func() {
		f.mu.Lock()
		if l.users--; l.users == 0 {
			delete(f.locks, key)
		}
		f.mu.Unlock()
	}
	select {
	case l.ch <- struct{}{}:
		return func() { <-l.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}
