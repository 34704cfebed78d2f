package bot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/bot/internal/diskfull"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/internal/frontmatter"
	"github.com/agenthost/bots/persona"
	"github.com/agenthost/bots/record"
)

func invalid(err error) error { return errcode.New(errcode.Invalid, "%v", err) }

// Make makes the bot id from a make's JSON body, as p. It returns once
// the catalogue holds the new bot, so a subscribe after it sees it.
func (s *Service) Make(ctx context.Context, p access.Principal, id string, body []byte) (Bot, error) {
	b, err := s.makeBot(ctx, p, id, body)
	if err != nil {
		s.countDiskFull(err)
		return Bot{}, diskfull.Unsaved(uri(id), err)
	}
	s.awaitCatalogue(ctx, id, b.ETag)
	return b, nil
}

func (s *Service) makeBot(ctx context.Context, p access.Principal, id string, body []byte) (Bot, error) {
	if err := record.CheckSlug(id); err != nil {
		return Bot{}, invalid(err)
	}
	if !CanMake(p) {
		return Bot{}, errcode.New(errcode.PermissionDenied, "Permission denied: %s: making a bot needs bot:put", uri(id))
	}
	if s.isBundled(id) {
		if !s.mayReadBot(ctx, p, id) {
			return Bot{}, slugNotAvailable(id)
		}
		return Bot{}, errcode.New(errcode.AlreadyExists, "%s is a bot bundled with this host: its slug is never made", uri(id))
	}
	patch, err := record.ParsePatch(body)
	if err != nil {
		return Bot{}, invalid(err)
	}
	r, err := patch.Make(id)
	if err != nil {
		return Bot{}, invalid(err)
	}
	if err := s.tools.Check(r.Tools); err != nil {
		return Bot{}, invalid(err)
	}
	if err := s.checkPersona(ctx, r, patch.Template.Has()); err != nil {
		return Bot{}, err
	}
	if r.Owner, err = s.makeOwner(p, patch); err != nil {
		return Bot{}, err
	}
	if r.Body == "" {
		r.Body = record.RandomBody()
	}
	if r.Color == "" {
		r.Color = record.DefaultColor()
	}
	r.CreatedAt = s.stamp()
	r.UpdatedAt = r.CreatedAt

	s.makes.Lock()
	defer s.makes.Unlock()
	if gone, err := s.store.Gone(ctx, id); err != nil {
		return Bot{}, storeError(id, err)
	} else if gone {
		return Bot{}, s.takenError(ctx, p, id, record.ErrGone)
	}
	if _, err := s.store.Get(ctx, id); err == nil {
		return Bot{}, s.takenError(ctx, p, id, record.ErrExists)
	} else if !errors.Is(err, record.ErrNotFound) {
		return Bot{}, storeError(id, err)
	}
	var made []string // the folders this make makes, marked until the record is written
	if r.Workspace, made, err = s.makeFolder(ctx, p, r, patch.Workspace.Has()); err != nil {
		return Bot{}, err
	}
	stored := r
	if s.personaInFile(r) {
		parts := persona.Parts{Name: r.Name, Description: r.Description, Instructions: r.Instructions}
		if err := s.personas.Write(ctx, r.Workspace, parts, r.Template); err != nil {
			s.doneMaking(id, made, false)
			return Bot{}, personaWriteError("make", id, err)
		}
		stored.Name, stored.Description, stored.Instructions = "", "", ""
	}
	e, err := s.store.Create(ctx, stored)
	s.doneMaking(id, made, err == nil)
	if err != nil {
		return Bot{}, s.takenError(ctx, p, id, err)
	}
	s.folders.claim(id, e.ETag, e.Record) // before the next make is let in
	s.partsSeen.forget(id)
	return s.withPersona(ctx, e, true)
}

// checkPersona applies the persona rules a make or an edit must pass: the
// instructions hold no line a section would end at, and a template the body
// names exists.
func (s *Service) checkPersona(ctx context.Context, r record.Record, namesTemplate bool) error {
	if err := persona.CheckInstructions(r.Instructions, s.mode); err != nil {
		return invalid(err)
	}
	if namesTemplate && r.Template != "" {
		if _, err := s.personas.Template(ctx, r.Template); err != nil {
			if errors.Is(err, persona.ErrNoTemplate) {
				return errcode.New(errcode.Invalid, "template %q does not exist", r.Template)
			}
			return fmt.Errorf("template %q: %w", r.Template, err)
		}
	}
	return nil
}

// makeOwner is the owner a make writes: the one the body names, where p may
// name it, else p's own. Any root: owner is this host's, written under its
// name today.
func (s *Service) makeOwner(p access.Principal, patch record.Patch) (string, error) {
	if !patch.Owner.Has() {
		return p.Owner(s.hostName), nil
	}
	owner := patch.Owner.V
	if record.IsRootOwner(owner) {
		if !p.Any() {
			return "", errcode.New(errcode.PermissionDenied, "Permission denied: owner %s: only *:* or a root connection may make a bot for this host", owner)
		}
		return "root:" + s.hostName, nil
	}
	if !p.Any() && !p.Owns(owner) {
		return "", errcode.New(errcode.PermissionDenied, "Permission denied: owner %s is neither you nor a team or project you belong to", owner)
	}
	return owner, nil
}

// makeFolder decides and makes the new bot's work folder: the one the body
// named, which must be under root and no other bot's, else <root>/<slug>. A
// bot on a computer is given the path but no folder here: the machine makes
// it.
func (s *Service) makeFolder(ctx context.Context, p access.Principal, r record.Record, named bool) (dir string, made []string, err error) {
	dir = filepath.Join(s.root, r.ID)
	if named {
		if !filepath.IsAbs(r.Workspace) {
			return "", nil, errcode.New(errcode.Invalid, "workspace %q is not an absolute path", r.Workspace)
		}
		dir = filepath.Clean(r.Workspace)
	}
	if r.Computer != "" {
		return dir, nil, nil
	}
	if made, err = s.claimFolder(ctx, p, r.ID, dir); err != nil {
		return "", nil, err
	}
	return dir, made, nil
}

// personaWriteError gives an error writing bot id's AGENTS.md in a make
// or an edit (what) its code: parts that would make the file larger than
// a persona file may be are the body's fault, and refused as invalid
// params naming the limit; anything else is the host's.
func personaWriteError(what, id string, err error) error {
	if errors.Is(err, frontmatter.ErrTooLarge) && !errors.Is(err, persona.ErrBadFile) {
		return errcode.Wrap(errcode.Invalid, err, "instructions too large: with the name and description they would make the bot's AGENTS.md larger than %d bytes, the most a persona file may be", frontmatter.MaxSize)
	}
	return fmt.Errorf("%s %s: write persona: %w", what, uri(id), err)
}

// claimFolder makes dir the work folder of bot id on this host, as a make
// does and as every edit that brings a bot to this host must: it must be
// absolute, strictly under root with no symbolic link on the way, and no
// other bot's (said as checkFolderFree says it to p); it is then made,
// after a marker naming the folders it makes (markMaking), which the
// caller ends with doneMaking once the record is written or refused.
// The caller holds s.makes.
func (s *Service) claimFolder(ctx context.Context, p access.Principal, id, dir string) ([]string, error) {
	if !filepath.IsAbs(dir) {
		return nil, errcode.New(errcode.Invalid, "workspace %q is not an absolute path", dir)
	}
	if err := s.confine(dir); err != nil {
		return nil, err
	}
	if reason := s.bundledFolderClaim(dir); reason != "" {
		return nil, errcode.New(errcode.Invalid, "workspace %s %s", dir, reason)
	}
	if err := s.checkFolderFree(ctx, p, id, dir); err != nil {
		return nil, err
	}
	made := s.missingFolders(dir)
	if err := s.markMaking(id, made); err != nil {
		return nil, err
	}
	if err := ensureFolder(dir); err != nil {
		s.doneMaking(id, made, false)
		return nil, fmt.Errorf("%s: %w", uri(id), err)
	}
	// The folder may have been swapped for a link while it was made.
	if err := s.confine(dir); err != nil {
		s.doneMaking(id, made, false)
		return nil, err
	}
	return made, nil
}

// confine refuses a folder that is not strictly inside root, or that a
// symbolic link on the way from root leads elsewhere (out of root, or into
// another folder under it), with "Permission denied: <folder>".
func (s *Service) confine(dir string) error {
	reason, err := s.folderEscape(dir)
	if err != nil {
		return err
	}
	if reason != "" {
		return errcode.New(errcode.PermissionDenied, "Permission denied: %s", dir)
	}
	return nil
}

// folderEscape says why dir, an absolute path, is no bot's work folder on
// this host, "" when it may be one: it must be strictly under root, and no
// part of it below root that exists may be a symbolic link (a link would
// lead it out of root, or into another bot's folder). Root itself is the
// operator's, and may be a link. It looks at the path as it is now - one
// Lstat per part below root, so one for <root>/<slug>, but on Linux a
// watch of root's entries (rootwatch.Watch) answers for <root>/<slug> while
// nothing changed - and is called on every use of a folder, not once.
func (s *Service) folderEscape(dir string) (string, error) {
	return s.folderEscapeIdentify(dir, nil)
}

// folderEscapeIdentify is folderEscape that, when ident is not nil and dir
// is a folder directly under root that the watch answers for, also takes
// the identity of its AGENTS.md from the same look at what changed
// (ident.ok; see rootwatch.Watch.KnownIdentity).
func (s *Service) folderEscapeIdentify(dir string, ident *agentsIdentity) (string, error) {
	dir = filepath.Clean(dir)
	if !filepath.IsAbs(dir) {
		return "is not an absolute path", nil
	}
	// Both are clean and absolute, so dir is strictly under root when it
	// starts with root and a separator (root's own, when it is "/").
	below := len(s.root)
	if !strings.HasSuffix(s.root, string(filepath.Separator)) {
		below++
	}
	if len(dir) <= below || !strings.HasPrefix(dir, s.root) || dir[below-1] != filepath.Separator {
		return "is not under root " + s.root, nil
	}
	for i := below; ; {
		end := len(dir)
		if j := strings.IndexByte(dir[i:], filepath.Separator); j >= 0 {
			end = i + j
		}
		var want *agentsIdentity
		if i == below && end == len(dir) {
			want = ident
		}
		link, err := s.partIsLink(dir[:end], dir[i:end], i == below, want)
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return "", nil // nothing from here down exists, so no link can lead away
		}
		if err != nil {
			return "", fmt.Errorf("look at folder %s: %w", dir[:end], err)
		}
		if link {
			return s.linkEscape(dir), nil
		}
		if end == len(dir) {
			return "", nil
		}
		i = end + 1
	}
}

// linkEscape says where a symbolic link under root leads dir: out of root,
// or elsewhere under it.
func (s *Service) linkEscape(dir string) string {
	realRoot, err := filepath.EvalSymlinks(s.root)
	if err != nil {
		return "is reached through a symbolic link"
	}
	real, err := evalExisting(dir)
	if err != nil || real == realRoot || !within(real, realRoot) {
		return "leads out of root through a symbolic link"
	}
	return "is reached through a symbolic link"
}

// checkFolder refuses the use of a bot's work folder on this host - a read
// of its persona, an edit, a wake - when the folder has left root, or is
// reached through a symbolic link, as it is now: a folder swapped for a link
// would have the bot read, write and run its agent wherever the link leads.
// The refusal is reported as a problem of the bot until the folder is
// good again. A bot on a computer has nothing here to check; one on this
// host that names no folder is refused. ident, when not nil, is given the
// identity of the folder's AGENTS.md where the check could take it with
// its own look (folderEscapeIdentify).
func (s *Service) checkFolder(r record.Record, ident *agentsIdentity) error {
	if r.Computer != "" {
		return nil
	}
	if r.Workspace == "" {
		return errcode.New(errcode.PermissionDenied, "Permission denied: %s names no folder on this host to work in", uri(r.ID))
	}
	reason, err := s.folderEscapeIdentify(r.Workspace, ident)
	if err != nil {
		return fmt.Errorf("check the folder of %s: %w", uri(r.ID), err)
	}
	if reason == "" {
		s.folderGood(r.ID)
		return nil
	}
	s.folderBad(r.ID, r.Workspace, "the work folder "+reason+": its persona is not read and no back session is woken there")
	return errcode.New(errcode.PermissionDenied, "Permission denied: the folder %s of %s %s", r.Workspace, uri(r.ID), reason)
}

// folderBad reports a problem with bot id's work folder once, at Warn and,
// when the store keeps problems, as one of the bot's.
func (s *Service) folderBad(id, dir, reason string) {
	s.badFolders.mu.Lock()
	old, known := s.badFolders.byID[id]
	same := known && old.dir == dir && old.reason == reason
	if !same {
		s.badFolders.byID[id] = badFolder{dir: dir, reason: reason, since: s.now()}
	}
	s.badFolders.mu.Unlock()
	if same {
		return
	}
	if keeper, ok := s.raw.(problemKeeper); ok {
		keeper.ReportProblem(id, dir, reason)
	} else {
		s.log.Warn("bot: work folder refused", "bot", id, "path", dir, "reason", reason)
		s.kickProblems()
	}
}

// folderGood clears the problem folderBad reported for bot id, if any.
func (s *Service) folderGood(id string) {
	s.badFolders.mu.Lock()
	old, known := s.badFolders.byID[id]
	delete(s.badFolders.byID, id)
	s.badFolders.mu.Unlock()
	if !known {
		return
	}
	if keeper, ok := s.raw.(problemKeeper); ok {
		keeper.ClearProblem(old.dir)
	} else {
		s.kickProblems()
	}
}

// evalExisting follows the symbolic links of the longest part of path that
// exists and joins the rest to it.
func evalExisting(path string) (string, error) {
	var rest []string
	for {
		real, err := filepath.EvalSymlinks(path)
		if err == nil {
			return filepath.Join(append([]string{real}, rest...)...), nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(path)
		if parent == path {
			return "", err
		}
		rest = append([]string{filepath.Base(path)}, rest...)
		path = parent
	}
}

// checkFolderFree refuses a folder another bot works in, or one that holds
// or lies inside another bot's: two bots in one tree would work over each
// other. It asks the index of claimed folders, so it costs the same with
// ten bots or a hundred thousand. The refusal names the other bot and its
// folder only to a p who may read that bot (folderNotAvailable).
func (s *Service) checkFolderFree(ctx context.Context, p access.Principal, id, dir string) error {
	if other, otherDir, ok := s.folders.takenBy(id, dir); ok {
		if !s.mayReadBot(ctx, p, other) {
			return folderNotAvailable(dir)
		}
		return errcode.New(errcode.Invalid, "folder %s is taken: bot %s works in %s", dir, other, otherDir)
	}
	return nil
}

// slugNotAvailable refuses a make of a slug that is taken - a bot has it,
// it was deleted and is spent, or a bundled bot has it - to a person who
// may not read that bot: one sentence whatever the reason, so that the
// refusal tells them no more than that the slug cannot be theirs (issue
// 22). The code is the one every taken slug answers.
func slugNotAvailable(id string) error {
	return errcode.New(errcode.AlreadyExists, "%s is not available: choose another slug", uri(id))
}

// folderNotAvailable refuses a workspace another bot's folder is, holds or
// lies inside, to a person who may not read that bot: it names the
// folder they named and nothing else.
func folderNotAvailable(dir string) error {
	return errcode.New(errcode.Invalid, "workspace %s is not available: choose another folder, or leave workspace out", dir)
}

// readsEvery reports whether p may read every bot, and so hear of a
// deleted one: *:*, root, bot:get or bot:list.
func readsEvery(p access.Principal) bool {
	return p.Any() || p.Has("bot:get") || p.Has("bot:list")
}

// mayReadBot reports whether p may read the bot id, kept or bundled. A
// bot that is not there (deleted meanwhile) is read by those who read
// every bot.
func (s *Service) mayReadBot(ctx context.Context, p access.Principal, id string) bool {
	if readsEvery(p) {
		return true
	}
	if b, ok := s.bundles.byID[id]; ok {
		return CanRead(p, b.entry.Record)
	}
	e, err := s.store.Get(ctx, id)
	return err == nil && CanRead(p, e.Record)
}

// takenError is storeError for a write by p of bot id: a slug or a folder
// that is taken is said in full only to a p who may read the bot that
// takes it (a spent slug: to a p who reads every bot); to anybody else
// it is not available, whatever the reason.
func (s *Service) takenError(ctx context.Context, p access.Principal, id string, err error) error {
	var taken *record.FolderTakenError
	switch {
	case errors.As(err, &taken):
		if taken.Other == "" || !s.mayReadBot(ctx, p, taken.Other) {
			return folderNotAvailable(taken.Folder)
		}
	case errors.Is(err, record.ErrGone):
		if !readsEvery(p) {
			return slugNotAvailable(id)
		}
	case errors.Is(err, record.ErrExists):
		if !s.mayReadBot(ctx, p, id) {
			return slugNotAvailable(id)
		}
	}
	return storeError(id, err)
}

// guard holds a record a store took in outside the service - found at
// load, made or edited by hand in bot.md, moved by a migration - to the
// folder rules of a make: a bot on this host works in a folder of its own,
// strictly under root, reached through no symbolic link. It is the
// record.Guard the service gives a record.Guarded store.
func (s *Service) guard(r record.Record, others []record.Record) error {
	if r.Computer != "" {
		return nil
	}
	if r.Workspace == "" {
		return errors.New("the bot names no workspace: a bot on this host works in a folder of its own under root")
	}
	dir := filepath.Clean(r.Workspace)
	reason, err := s.folderEscape(dir)
	if err != nil {
		return fmt.Errorf("the folder %s cannot be checked: %w", dir, err)
	}
	if reason != "" {
		return fmt.Errorf("the folder %s %s", dir, reason)
	}
	if reason := s.bundledFolderClaim(dir); reason != "" {
		return fmt.Errorf("the folder %s %s", dir, reason)
	}
	// The bot of the least slug among those whose folder clashes is named.
	if other, otherDir, ok := record.FolderList(others).TakenBy(r.ID, dir); ok {
		return fmt.Errorf("the folder %s is taken: bot %s works in %s", dir, other, otherDir)
	}
	return nil
}

// bundledFolderClaim says why no bot of the store may work in dir, a
// clean absolute folder under root, "" when it may: the folder the
// bundled bots work in, and every folder inside it, are the host's.
func (s *Service) bundledFolderClaim(dir string) string {
	if record.Within(dir, filepath.Join(s.root, bundledFolder)) {
		return "is kept for the bots bundled with this host"
	}
	return ""
}

// Read returns the bot as p may read it. A read starts nothing, and takes
// the persona parts from AGENTS.md each time.
func (s *Service) Read(ctx context.Context, p access.Principal, id string) (Bot, error) {
	e, err := s.get(ctx, id)
	if err != nil {
		return Bot{}, err
	}
	if !CanRead(p, e.Record) {
		return Bot{}, denied(id)
	}
	return s.withPersona(ctx, e, true)
}

// Resolve returns the bot's times and etag.
func (s *Service) Resolve(ctx context.Context, p access.Principal, id string) (Meta, error) {
	e, err := s.get(ctx, id)
	if err != nil {
		return Meta{}, err
	}
	if !CanRead(p, e.Record) {
		return Meta{}, denied(id)
	}
	return Meta{CreatedAt: e.Record.CreatedAt, UpdatedAt: e.Record.UpdatedAt, ETag: e.ETag}, nil
}

// List returns the bots p may read, ordered by slug: a listing shows what a
// read would allow. Persona parts come from what AGENTS.md last held, so a
// listing does not read every file; a read of one bot reads its file. Each
// Bot is the caller's own copy; ListShared copies none.
func (s *Service) List(ctx context.Context, p access.Principal) ([]Bot, error) {
	list, err := record.ListShared(ctx, s.store, readable(p))
	if err != nil {
		return nil, storeError("", err)
	}
	out := make([]Bot, len(list))
	var unknown []int // bots whose parts were never read: read now, outside the lock
	s.partsSeen.mu.RLock()
	for i, e := range list {
		out[i] = Bot{Record: e.Record.Clone(), ETag: e.ETag}
		if !s.personaInFile(e.Record) || s.unmigrated(e.Record) {
			continue
		}
		parts, ok := s.partsSeen.byID[e.Record.ID]
		if !ok {
			unknown = append(unknown, i)
			continue
		}
		r := &out[i].Record
		r.Name, r.Description, r.Instructions = parts.Name, parts.Description, parts.Instructions
	}
	s.partsSeen.mu.RUnlock()
	for _, i := range unknown {
		b, err := s.withPersona(ctx, record.Entry{Record: out[i].Record, ETag: out[i].ETag}, false) // the record is out's own copy
		if err != nil {
			s.log.Warn("bot: listing without persona", "bot", list[i].Record.ID, "err", err)
			continue
		}
		out[i] = b
	}
	return out, nil
}

// ListShared returns the bots p may read, ordered by slug, as the store
// holds them, copying none: the listing an embedder makes when it wants
// it cheap (a pointer a bot; 5,000 bots in tens of microseconds). The
// entries are shared: the store never changes them (a write puts a new
// entry in the bot's place, which the next listing answers), and the
// caller must not change them either, nor their records' slices and map;
// Record.Clone gives a copy. Permissions are checked as a read would now.
//
// No persona file is read: a bot whose name, description and
// instructions live in its AGENTS.md has them empty here, and Read
// answers them as the file holds them now. Every other bot's record holds
// them (a store without files, a bot on a computer, a bundled bot).
func (s *Service) ListShared(ctx context.Context, p access.Principal) ([]*record.Entry, error) {
	list, err := record.ListShared(ctx, s.store, readable(p))
	if err != nil {
		return nil, storeError("", err)
	}
	return list, nil
}

// ListIDs returns the slugs of the bots p may read, in order: what a
// listing of bot:// answers, without copying a record.
func (s *Service) ListIDs(ctx context.Context, p access.Principal) ([]string, error) {
	list, err := s.ListShared(ctx, p)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(list))
	for i, e := range list {
		ids[i] = e.Record.ID
	}
	return ids, nil
}

// Edit merges an edit's JSON body onto the bot, as p. With ifMatch, the edit
// applies only to the revision of that etag. It returns once the catalogue
// holds the edit, so a subscribe after it sees it.
func (s *Service) Edit(ctx context.Context, p access.Principal, id string, body []byte, ifMatch string) (Bot, error) {
	b, err := s.edit(ctx, p, id, body, ifMatch)
	// An edit that names no etag applies to the bot as it is. It is merged
	// onto the revision it read and stored only over that one, so a write
	// that slipped in between - another instance's, on a store several
	// share - refuses it; it is then merged again onto the bot as it
	// became, rather than answered with a conflict nobody asked for.
	for try := 0; ifMatch == "" && errors.Is(err, record.ErrConflict) && try < editRetries; try++ {
		b, err = s.edit(ctx, p, id, body, ifMatch)
	}
	if err != nil {
		s.countDiskFull(err)
		return Bot{}, diskfull.Unsaved(uri(id), err)
	}
	s.awaitCatalogue(ctx, id, b.ETag)
	return b, nil
}

// editRetries bounds how many times an edit without an etag is merged
// again after losing a race to another writer.
const editRetries = 20

func (s *Service) edit(ctx context.Context, p access.Principal, id string, body []byte, ifMatch string) (_ Bot, rerr error) {
	unlock := s.lock(id)
	defer unlock()
	e, err := s.get(ctx, id)
	if err != nil {
		return Bot{}, err
	}
	if s.isBundled(id) && CanRead(p, e.Record) {
		return Bot{}, bundledErr(id, "edited")
	}
	if !CanWrite(p, e.Record) {
		if CanRead(p, e.Record) {
			return Bot{}, errcode.New(errcode.PermissionDenied, "Permission denied: %s: you may read this bot but not edit it", uri(id))
		}
		return Bot{}, denied(id)
	}
	patch, err := record.ParsePatch(body)
	if err != nil {
		return Bot{}, invalid(err)
	}
	if patch.Tools.Has() {
		if err := s.tools.Check(patch.Tools.V); err != nil {
			return Bot{}, invalid(err)
		}
	}
	if ifMatch != "" && ifMatch != e.ETag {
		return Bot{}, storeError(id, record.ErrConflict)
	}
	cur, err := s.withPersona(ctx, e, true)
	if errors.Is(err, persona.ErrBadFile) && patch.Name.Has() {
		// An AGENTS.md that cannot hold a persona (a link, a FIFO, a file
		// too large) is replaced by the edit: the parts are the body's.
		cur, err = Bot{Record: e.Record, ETag: e.ETag}, nil
	}
	if err != nil {
		return Bot{}, err
	}
	r, err := patch.Apply(cur.Record)
	if err != nil {
		return Bot{}, invalid(err)
	}
	if err := s.checkPersona(ctx, r, patch.Template.Has()); err != nil {
		return Bot{}, err
	}
	r.UpdatedAt = s.stamp()
	comes := cur.Record.Computer != "" && r.Computer == ""
	if comes {
		// The bot comes to this host: its folder must pass what a make's
		// does, or it would take another bot's folder or one outside root.
		s.makes.Lock()
		defer s.makes.Unlock()
		if r.Workspace == "" {
			r.Workspace = filepath.Join(s.root, id)
		}
		made, err := s.claimFolder(ctx, p, id, filepath.Clean(r.Workspace))
		if err != nil {
			return Bot{}, err
		}
		defer func() { s.doneMaking(id, made, rerr == nil) }()
	}
	stored := r
	if s.personaInFile(r) {
		parts := persona.Parts{Name: r.Name, Description: r.Description, Instructions: r.Instructions}
		if err := s.writePersona(ctx, r, parts); err != nil {
			return Bot{}, err
		}
		stored.Name, stored.Description, stored.Instructions = "", "", ""
	}
	ne, err := s.store.Update(ctx, stored, e.ETag)
	if err != nil {
		err = s.takenError(ctx, p, id, err)
		if s.personaInFile(r) {
			// the edit is refused: its persona half goes too.
			old := persona.Parts{Name: cur.Record.Name, Description: cur.Record.Description, Instructions: cur.Record.Instructions}
			if perr := s.writePersona(ctx, cur.Record, old); perr != nil {
				s.log.Warn("bot: a refused edit's persona could not be put back", "bot", id, "err", perr)
			}
		}
		return Bot{}, err
	}
	if comes {
		s.folders.claim(id, ne.ETag, ne.Record) // s.makes is still held
	}
	return s.withPersona(ctx, ne, true)
}

// writePersona writes the parts into the bot's AGENTS.md, keeping every
// other byte; a folder a person removed is made again.
func (s *Service) writePersona(ctx context.Context, r record.Record, parts persona.Parts) error {
	if err := s.confine(r.Workspace); err != nil {
		return err
	}
	if err := ensureFolder(r.Workspace); err != nil {
		return fmt.Errorf("edit %s: %w", uri(r.ID), err)
	}
	if err := s.personas.Write(ctx, r.Workspace, parts, r.Template); err != nil {
		return personaWriteError("edit", r.ID, err)
	}
	s.partsSeen.forget(r.ID)
	return nil
}

// Delete deletes the bot and leaves its tombstone. The store removes its own
// data for the bot, and the service the logs of its chats and back
// sessions and its back-session rows (wherever they are kept: files or
// the database); the work folder and its AGENTS.md stay where they are.
// It returns once the catalogue no longer holds the bot.
func (s *Service) Delete(ctx context.Context, p access.Principal, id string, ifMatch string) error {
	if err := s.remove(ctx, p, id, ifMatch); err != nil {
		s.countDiskFull(err)
		return diskfull.Unsaved("the deletion of "+uri(id), err)
	}
	s.awaitCatalogue(ctx, id, "")
	return nil
}

func (s *Service) remove(ctx context.Context, p access.Principal, id string, ifMatch string) error {
	unlock := s.lock(id)
	defer unlock()
	e, err := s.get(ctx, id)
	if err != nil {
		return err
	}
	if s.isBundled(id) && CanRead(p, e.Record) {
		return bundledErr(id, "deleted")
	}
	if !CanWrite(p, e.Record) {
		if CanRead(p, e.Record) {
			return errcode.New(errcode.PermissionDenied, "Permission denied: %s: you may read this bot but not delete it", uri(id))
		}
		return denied(id)
	}
	if err := s.store.Delete(ctx, id, ifMatch); err != nil {
		return storeError(id, err)
	}
	s.partsSeen.forget(id)
	if s.chats != nil {
		s.chats.DropBot(ctx, id)
	}
	return nil
}

// parseURI returns the slug of bot://<slug>, "" for the scheme root bot://.
func parseURI(u string) (string, error) {
	rest, ok := strings.CutPrefix(u, "bot://")
	if !ok {
		return "", errcode.New(errcode.Invalid, "%q is not a bot: URI", u)
	}
	rest = strings.TrimSuffix(rest, "/")
	if rest == "" {
		return "", nil
	}
	if err := record.CheckSlug(rest); err != nil {
		return "", invalid(err)
	}
	return rest, nil
}
