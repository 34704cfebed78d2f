// Package bot is the service: it composes a record store, persona files and
// permissions into the bot: scheme (make, read, list, edit, delete, resolve),
// and is what an embedding host or the reference server serves.
package bot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/bot/internal/mainchat"
	"github.com/agenthost/bots/bot/internal/rootwatch"
	"github.com/agenthost/bots/catalog"
	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/chatlog/filechatlog"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/internal/atomicfile"
	"github.com/agenthost/bots/internal/frontmatter"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/persona"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/route"
	"github.com/agenthost/bots/telemetry"
	"github.com/agenthost/bots/wake"
)

// PersonaIn says where the bots of a service keep their name, description
// and instructions.
type PersonaIn int

const (
	// PersonaAuto keeps them in each bot's AGENTS.md when the store is
	// record.FileBacked, and in the record otherwise.
	PersonaAuto PersonaIn = iota
	// PersonaInFiles keeps them in AGENTS.md whatever the store.
	PersonaInFiles
	// PersonaInRecord keeps them in the record.
	PersonaInRecord
)

// Config configures a Service. Store and ConfigDir are required.
type Config struct {
	// Store keeps the records and tombstones.
	Store record.Store
	// ConfigDir is the daemon's configuration folder: templates live under
	// it, and the root may not.
	ConfigDir string
	// HostName is this host's name, as in root:<hostName>. Empty means
	// DefaultHostName.
	HostName string
	// Options are the plugin's options.
	Options Options
	// PersonaIn overrides where personas are kept; the zero value follows
	// the store.
	PersonaIn PersonaIn
	// Logger receives reports; nil discards them.
	Logger *slog.Logger
	// Now returns the time; nil means time.Now. Tests set it.
	Now func() time.Time
	// Users is the users directory connections authenticate against:
	// usersfile.Directory, access.NewLocal(token) for a host of one
	// person, or the host's own. Nil authenticates no connection (a host
	// that checks tokens itself, as bots.Server's gate does, passes nil);
	// in-process calls as access.RootPrincipal() are still root.
	Users Users
	// Bus carries the actions of the service's channels (the catalogue,
	// resource watches); nil makes one. A transport.Server must be given
	// the same Bus.
	Bus *engine.Bus
	// Sessions is the session host back sessions live on. Nil serves no
	// bot chats: the session methods answer -32601.
	Sessions wake.SessionHost
	// Rows keeps the back-session rows: which back session each (bot,
	// person, session name) is on. Nil keeps them in files under ConfigDir
	// when the store is record.FileBacked, and in memory otherwise.
	Rows wake.Rows
	// Logs keeps the bot chats' logs (chatlog.Chat): a restarted service,
	// or another on the same logs, replays every chat from them. Nil
	// keeps them in files under ConfigDir (filechatlog.Logs).
	Logs chatlog.Logs
	// Leases, when set, are the leases of the back sessions shared with
	// the other instances on one database (wake.Config.Leases); Holder
	// names this instance among them and is required with Leases. With
	// them the Logs are taken to be shared too: the replay at start writes
	// nothing to a log (a turn a log shows running may be running on
	// another instance); a chat whose turn it reads as interrupted gets
	// that line before its next one. Logs that are a chatlog.Shared are
	// then followed: the service holds every chat any instance opens and
	// applies the lines other instances write, and its own writes go in
	// at the count of lines it applied, so that instances talking in one
	// chat at once are ordered by the log.
	Leases lease.Leases
	Holder string
	// LeaseTTL is the time to live of the Leases (the back sessions' and
	// the main turns'); zero is lease.DefaultTTL, and New refuses one
	// under lease.MinTTL. Holders renew every TTL/3, and the instances
	// look for main turns whose instance died every TTL/5, so such a turn
	// reads as interrupted within TTL + TTL/5 of the death.
	LeaseTTL time.Duration
	// DefaultAgent is the provider a back session runs on when its bot
	// names neither a preset nor a provider.
	DefaultAgent string
	// DenyTools names tools back sessions may not call.
	DenyTools []string
	// HostPaths are files of this host, besides those under the root and
	// ConfigDir, that a bot's text written through the workspace tools
	// may not name, nor their folders: a host gives its vault and its
	// users file.
	HostPaths []string
	// Agents are more agents the root state lists after the bot-chat
	// agent: the providers back sessions may run on.
	Agents []ahp.AgentInfo
	// Bundled are the bots the host ships (see Bundle); an earlier
	// bundle's bot wins over a later one's of its slug.
	Bundled []Bundle
	// Tools is what back sessions are offered; a bot's tools list only
	// narrows it. The zero value is wake.DefaultToolPolicy: the
	// workspace tools go only to bots that list them.
	Tools wake.ToolPolicy
	// Routes keeps the host's chat-network connections and routes, which
	// the route methods (MethodRouteList…) and the channel tools list,
	// check and save as the person asking; nil offers neither.
	Routes route.Store
	// RouteStates reports how each connection stands now (the relay's
	// States); nil reports none as dialled.
	RouteStates func() map[string]route.State
	// RoutePair pairs the chat account a code was given to with the
	// person (the relay's Pair), answering its identity; nil pairs none.
	RoutePair func(ctx context.Context, person, code string) (string, error)
	// RoutePaired answers the person a chat account was paired with (the
	// relay's Paired), besides the users directory's identities; nil
	// knows none.
	RoutePaired func(ctx context.Context, identity string) (person string, ok bool)
	// RoutePairings lists the pairings of a person, everyone's for ""
	// (the relay's Pairings); nil lists none.
	RoutePairings func(ctx context.Context, person string) ([]route.Pairing, error)
	// RouteUnpair lets go of a chat account's pairing with a person, with
	// anyone for "" (the relay's Unpair), answering route.ErrNotPaired
	// when there is none; nil has none to let go.
	RouteUnpair func(ctx context.Context, person, identity string) error
	// RouteProbe tries a connection no route runs yet (the relay's
	// Probe), for a preflight; nil only warns that it is not connected.
	RouteProbe func(ctx context.Context, connection string) error
	// Telemetry receives the service's series (turns by outcome and
	// latency, chats open, disk-full refusals, lease takeovers), its
	// catalogue's and its wake's, and a span per main turn; nil records
	// none.
	Telemetry *telemetry.Hub
}

// Service serves bots. Its methods are safe for concurrent use.
type Service struct {
	meters  meters
	store   record.Store // raw with the bundled bots laid over it
	raw     record.Store // Config.Store
	bundles bundles      // the bundled bots
	tools   wake.ToolPolicy
	offered []string // the providers the session host runs; nil when it does not say
	// defAgent is Config.DefaultAgent: the provider of a bot that names
	// none.
	defAgent string
	// firstSeen is when a problem of a record with no times (a bundled
	// bot's) was first seen, taken once, when first needed.
	firstSeen func() time.Time
	personas  *persona.Files
	mode      persona.Mode
	inFiles   bool
	root      string
	walk      *rootwatch.Watch // answers for the folders under root while they are unchanged
	configDir string
	hostPaths []string // Config.HostPaths and their folders, absolute

	hostName   string
	options    Options
	log        *slog.Logger
	now        func() time.Time
	makes      makes // serialises makes
	folders    *folderIndex
	locks      botLocks   // serialise writes to one bot
	partsSeen  partsCache // the parts each bot's AGENTS.md held when last read or written
	users      Users
	bus        *engine.Bus
	catalog    *catalog.Catalog
	stop       func()          // stops following the users directory
	chats      *mainchat.Chats // the bot-chat provider; nil without a session host
	routes     *routeDesk      // the chat-network routes; nil without Config.Routes
	closeOnce  sync.Once
	agents     []ahp.AgentInfo // Config.Agents
	badFolders folderProblems  // the problems checkFolder reported
	problems   problemFeed     // the problems channel's state and its follower
	sweep      background      // the sweep of persona temp files
}

// bundles are the bundled bots, by slug, and the store that lays them
// over the service's own.
type bundles struct {
	byID   map[string]*bundled
	hiding *bundledStore // the service's store, when there are bundled bots
	mu     sync.Mutex    // serialises writes of bundled bots' folders
}

// makes serialises makes: the folder and slug checks and the create.
type makes struct {
	sync.Mutex
	dirMade bool // <configDir>/making is known to exist
}

// botLocks serialise writes to one bot within this service: a bot's id
// picks one of the locks.
type botLocks struct {
	seed maphash.Seed
	mus  [64]sync.Mutex
}

// lock locks bot id's lock, and returns its unlock.
func (l *botLocks) lock(id string) func() {
	mu := &l.mus[maphash.String(l.seed, id)%uint64(len(l.mus))]
	mu.Lock()
	return mu.Unlock
}

// badFolder is a work folder checkFolder refused, and why.
type badFolder struct {
	dir, reason string
	since       time.Time
}

// New checks cfg, fills its defaults, writes the default persona template
// when it is absent, and returns the service.
func New(ctx context.Context, cfg Config) (*Service, error) {
	s, err := settle(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := s.start(ctx, cfg); err != nil {
		return nil, err
	}
	return s, nil
}

// settle checks cfg and makes the service it describes: its personas
// loaded (the default template written when absent) and its bundles
// read. It starts nothing Close would stop.
func settle(ctx context.Context, cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("bot: Config.Store is required")
	}
	if cfg.ConfigDir == "" {
		return nil, errors.New("bot: Config.ConfigDir is required")
	}
	if err := cfg.Options.check(); err != nil {
		return nil, fmt.Errorf("bot: option %w", err)
	}
	if err := lease.CheckTTL(cfg.LeaseTTL); err != nil {
		return nil, fmt.Errorf("bot: Config.LeaseTTL: %w", err)
	}
	configDir, err := filepath.Abs(cfg.ConfigDir)
	if err != nil {
		return nil, fmt.Errorf("bot: config folder %q: %w", cfg.ConfigDir, err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	hostName := cmp.Or(cfg.HostName, DefaultHostName())
	mode, _ := persona.ParseMode(cfg.Options.InstructionsIn) // checked above
	root, problem := resolveRoot(cfg.Options.Root, configDir)
	if problem != "" {
		log.Warn("bot: root option refused, using the default", "problem", problem, "root", root)
	}
	walk := rootwatch.New(root)
	personas, err := persona.New(persona.Config{ConfigDir: configDir, Mode: mode, Logger: log, Identify: walk.Identify})
	if err != nil {
		return nil, fmt.Errorf("bot: %w", err)
	}
	if err := personas.Load(ctx); err != nil {
		return nil, fmt.Errorf("bot: %w", err)
	}
	inFiles := cfg.PersonaIn == PersonaInFiles
	if cfg.PersonaIn == PersonaAuto {
		fb, ok := cfg.Store.(record.FileBacked)
		inFiles = ok && fb.FileBacked()
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	opts := cfg.Options
	opts.Root = root
	bus := cfg.Bus
	if bus == nil {
		bus = engine.NewBus(log)
	}
	if err := wake.CheckPolicy(cfg.Tools); err != nil {
		return nil, fmt.Errorf("bot: %w", err)
	}
	bundled, err := loadBundles(cfg.Bundled, hostName, root, mode, log)
	if err != nil {
		return nil, fmt.Errorf("bot: %w", err)
	}
	s := &Service{
		offered:    offeredProviders(cfg.Sessions),
		defAgent:   cfg.DefaultAgent,
		agents:     slices.Clone(cfg.Agents),
		store:      cfg.Store,
		raw:        cfg.Store,
		bundles:    bundles{byID: bundled},
		tools:      cfg.Tools,
		personas:   personas,
		mode:       mode,
		inFiles:    inFiles,
		root:       root,
		walk:       walk,
		configDir:  configDir,
		hostPaths:  secretPaths(cfg.HostPaths),
		hostName:   hostName,
		options:    opts,
		log:        log,
		now:        now,
		firstSeen:  sync.OnceValue(now),
		locks:      botLocks{seed: maphash.MakeSeed()},
		partsSeen:  partsCache{byID: make(map[string]persona.Parts)},
		badFolders: folderProblems{byID: make(map[string]badFolder)},
		problems:   problemFeed{kick: make(chan struct{}, 1)},
		users:      cfg.Users,
		bus:        bus,
		stop:       func() {},
	}
	if cfg.Routes != nil {
		s.routes = &routeDesk{store: cfg.Routes, states: cfg.RouteStates, pair: cfg.RoutePair, paired: cfg.RoutePaired,
			pairings: cfg.RoutePairings, unpair: cfg.RouteUnpair, probe: cfg.RouteProbe}
	}
	s.meters = newMeters(cfg.Telemetry)
	return s, nil
}

// start starts what the service runs: the guard, the index of folders
// (beside the migration of personas), the catalogue, the problems
// channel, the chats, the watches and the sweeps. What it starts is
// stopped, last first, when a later step fails.
func (s *Service) start(ctx context.Context, cfg Config) error {
	var undo undoStack
	defer undo.run()
	undo.push(s.walk.Close) // a check may have started it
	// The chats' logs are listed while the bots are checked and indexed
	// below: each is a pass over every bot folder (100,000 at scale), and
	// neither needs the other. The listing ends before start returns.
	var chatLogs *mainchat.Listing
	if cfg.Sessions != nil {
		if cfg.Logs == nil {
			cfg.Logs = filechatlog.New(s.configDir)
		}
		chatLogs = mainchat.ListLogs(cfg.Logs)
		defer chatLogs.Wait()
	}
	if g, ok := cfg.Store.(record.Guarded); ok {
		// The guard looks at every bot's folder under root: one listing
		// of root answers for them all while it is unchanged, and one
		// look at what changed serves the whole pass.
		s.walk.LearnRoot()
		thaw := s.walk.Freeze()
		g.SetGuard(s.guard)
		thaw()
	}
	if len(s.bundles.byID) > 0 {
		bs := newBundledStore(cfg.Store, s.bundles.byID, bundledWhere(s.configDir, cfg.Store), s.log, s.now, s.kickProblems)
		bs.reportShadowed(ctx)
		s.store, s.bundles.hiding = bs, bs
	}
	// The persona migration (of the store's own bots) and the index of
	// folders each pass over every bot; they run side by side. The index
	// follows the store's changes from before its listing, so it sees
	// every record the migration writes. It indexes the store's own bots,
	// those bundled bots hide among them: a hidden bot's folder stays its
	// own. The bundled bots' folders are all under bundledFolder, which
	// no bot may claim.
	indexed := make(chan error, 1)
	go func() {
		var err error
		s.folders, err = startFolderIndex(ctx, s.raw)
		indexed <- err
	}()
	migrated := s.migratePersonas(ctx)
	if err := <-indexed; err != nil {
		return fmt.Errorf("bot: folders: %w", err)
	}
	undo.push(s.folders.stop)
	if migrated != nil {
		return fmt.Errorf("bot: %w", migrated)
	}
	var err error
	s.catalog, err = catalog.New(ctx, catalog.Config{
		Source:    s,
		Bus:       s.bus,
		CanRead:   CanRead,
		Principal: s.principalNow,
		Logger:    s.log,
		Telemetry: cfg.Telemetry,
	})
	if err != nil {
		return fmt.Errorf("bot: catalogue: %w", err)
	}
	undo.push(func() { s.catalog.Close() })
	if err := s.startProblems(ctx); err != nil {
		return fmt.Errorf("bot: problems: %w", err)
	}
	undo.push(s.problems.loop.close)
	if cfg.Sessions != nil {
		if s.chats, err = s.startChats(cfg, chatLogs); err != nil {
			return fmt.Errorf("bot: chats: %w", err)
		}
	}
	if g, ok := cfg.Sessions.(wake.Gated); ok {
		g.SetToolGate(gate{s})
	}
	if d, ok := cfg.Users.(access.Watcher); ok {
		s.stop = d.WatchUsers(func(changed []string) {
			s.catalog.MembershipsChanged(changed)
			s.problemsMembershipsChanged(changed)
			if s.chats != nil {
				s.chats.Rejudge()
			}
		})
	}
	s.sweepConfigTemps()
	s.sweepMaking(ctx)
	s.startPersonaSweep()
	undo.release()
	return nil
}

// background is a goroutine a Service started, which Close stops and
// waits for.
type background struct {
	stop context.CancelFunc
	done chan struct{}
}

// goUntil runs f in a goroutine, which stop must end.
func (b *background) goUntil(stop context.CancelFunc, f func()) {
	b.stop, b.done = stop, make(chan struct{})
	go func() {
		defer close(b.done)
		f()
	}()
}

// close stops the goroutine and waits for it to end; nothing when none
// was started.
func (b *background) close() {
	if b.stop != nil {
		b.stop()
		<-b.done
	}
}

// partsCache holds the persona parts each bot's AGENTS.md held when last
// read or written, by id.
type partsCache struct {
	mu   sync.RWMutex // a listing holds it for reading across its bots
	byID map[string]persona.Parts
}

// get returns the parts last seen of bot id.
func (c *partsCache) get(id string) (persona.Parts, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, ok := c.byID[id]
	return p, ok
}

// put keeps p as bot id's parts. A read of an unchanged file finds its
// parts there already: a read lock spares the readers of the cache the
// write lock's wait.
func (c *partsCache) put(id string, p persona.Parts) {
	if old, ok := c.get(id); ok && old == p {
		return
	}
	c.mu.Lock()
	c.byID[id] = p
	c.mu.Unlock()
}

// putListed keeps the parts a listing read unless a read or a write kept
// some meanwhile: those are as new, or newer (the catalogue's first
// listing runs in the background while the service already serves).
func (c *partsCache) putListed(id string, p persona.Parts) {
	c.mu.Lock()
	if _, ok := c.byID[id]; !ok {
		c.byID[id] = p
	}
	c.mu.Unlock()
}

// forget drops bot id's parts.
func (c *partsCache) forget(id string) {
	c.mu.Lock()
	delete(c.byID, id)
	c.mu.Unlock()
}

// undoStack holds what a constructor started, to be stopped last first
// should a later step fail: each step that starts something pushes its
// stop, and a constructor that succeeds releases them all.
type undoStack []func()

// push adds stop, to run before every stop pushed earlier.
func (u *undoStack) push(stop func()) { *u = append(*u, stop) }

// release forgets every stop: what they stop now runs until Close.
func (u *undoStack) release() { *u = nil }

// run runs the stops not released, last first.
func (u *undoStack) run() {
	for i := len(*u) - 1; i >= 0; i-- {
		(*u)[i]()
	}
	*u = nil
}

// DefaultHostName is the host name a service takes when Config.HostName
// is empty: os.Hostname, or "localhost" when it has none.
func DefaultHostName() string {
	if name, err := os.Hostname(); err == nil && name != "" {
		return name
	}
	return "localhost"
}

// Close stops the chats, the catalogue, watches and the problems channel.
// The store is the caller's to close. It is idempotent.
func (s *Service) Close() error {
	s.closeOnce.Do(func() {
		s.sweep.close()
		s.stop()
		if s.chats != nil {
			s.chats.Close()
		}
		s.catalog.Close()
		s.folders.stop()
		s.problems.loop.close()
		s.walk.Close()
	})
	return nil
}

// Bus is the bus the service publishes its channels' actions on.
func (s *Service) Bus() *engine.Bus { return s.bus }

// Root is the folder bots work under.
func (s *Service) Root() string { return s.root }

// HostName is this host's name, as in root:<hostName>.
func (s *Service) HostName() string { return s.hostName }

// Options are the plugin options in force, with the root resolved.
func (s *Service) Options() Options { return s.options }

// Store is the record store the service keeps bots in, with the bundled
// bots laid over it.
func (s *Service) Store() record.Store { return s.store }

// Personas are the persona files the service writes.
func (s *Service) Personas() *persona.Files { return s.personas }

// Bot is a bot as a read answers it: the record with its persona parts, and
// the etag of its revision.
type Bot struct {
	Record record.Record
	ETag   string
}

// Meta is what a resolve answers: the record's times and its etag.
type Meta struct {
	CreatedAt, UpdatedAt time.Time
	ETag                 string
}

// lock serialises writes to one bot within this service.
func (s *Service) lock(id string) func() { return s.locks.lock(id) }

func uri(id string) string { return "bot://" + id }

// personaInFile reports whether r keeps its persona in AGENTS.md: a bot on a
// computer keeps it in its record, and so does every bot of a store with no
// files. A record with no folder (a hand-made bot.md without workspace) has
// no AGENTS.md to read: it never reads the server's working folder's.
func (s *Service) personaInFile(r record.Record) bool {
	return s.inFiles && r.Computer == "" && filepath.IsAbs(r.Workspace) && !s.isBundled(r.ID)
}

// CanRead reports whether p may read r: its owner, a member of its team or
// project, a holder of bot:get or bot:list, *:* or root.
func CanRead(p access.Principal, r record.Record) bool {
	return p.Any() || p.Has("bot:get") || p.Has("bot:list") || p.Owns(r.Owner)
}

// readable is the keep of a listing for p, CanRead with what does not
// depend on the bot decided once: nil when p may read every bot, else
// whether p owns the bot, a comparison with the few owner strings p owns
// (p is not root here: root reads every bot).
func readable(p access.Principal) func(*record.Record) bool {
	if p.Any() || p.Has("bot:get") || p.Has("bot:list") {
		return nil
	}
	owned := p.Owned()
	return func(r *record.Record) bool { return slices.Contains(owned, r.Owner) }
}

// CanWrite reports whether p may edit or delete r: its owner, a member of its
// team or project, *:* or root.
func CanWrite(p access.Principal, r record.Record) bool {
	return p.Any() || p.Owns(r.Owner)
}

// CanMake reports whether p may make bots: bot:put, *:* or root.
func CanMake(p access.Principal) bool {
	return p.Any() || p.Has("bot:put")
}

func denied(id string) error {
	return errcode.New(errcode.PermissionDenied, "Permission denied: %s", uri(id))
}

// get loads a bot's entry, mapping store errors to codes.
func (s *Service) get(ctx context.Context, id string) (record.Entry, error) {
	if err := record.CheckSlug(id); err != nil {
		return record.Entry{}, errcode.Wrap(errcode.Invalid, nil, "%v", err)
	}
	e, err := s.store.Get(ctx, id)
	if err != nil {
		return record.Entry{}, storeError(id, err)
	}
	return e, nil
}

// storeError gives a store error its code and a sentence.
func storeError(id string, err error) error {
	var taken *record.FolderTakenError
	switch {
	case errors.As(err, &taken):
		return errcode.Wrap(errcode.Invalid, err, "%s", taken.Error())
	case errors.Is(err, record.ErrNotFound):
		return errcode.Wrap(errcode.NotFound, err, "no bot at %s", uri(id))
	case errors.Is(err, record.ErrExists):
		return errcode.Wrap(errcode.AlreadyExists, err, "%s already exists", uri(id))
	case errors.Is(err, record.ErrGone):
		return errcode.Wrap(errcode.AlreadyExists, err, "%s was deleted and its slug is never made again", uri(id))
	case errors.Is(err, record.ErrConflict):
		return errcode.Wrap(errcode.Conflict, err, "%s changed since the etag given in ifMatch", uri(id))
	case errors.Is(err, record.ErrClosed):
		return errcode.Wrap(errcode.Unavailable, err, "the bot store is closed")
	case errors.Is(err, frontmatter.ErrTooLarge):
		return errcode.Wrap(errcode.Invalid, err, "%s is too large: its record would be larger than %d bytes, the most a record file may be", uri(id), frontmatter.MaxSize)
	}
	return fmt.Errorf("bot %s: %w", id, err)
}

// withPersona returns e's record with its persona parts, read from AGENTS.md
// when the bot keeps them there (a record a load has not moved its persona
// out of yet answers from itself). fresh - a read, an edit, a wake - checks
// the bot's folder as it is now (checkFolder) and reads the file; otherwise
// (a listing) the parts last seen are used where known.
func (s *Service) withPersona(ctx context.Context, e record.Entry, fresh bool) (Bot, error) {
	r := e.Record
	inFile := s.personaInFile(r) && !s.unmigrated(r)
	var ident agentsIdentity // of AGENTS.md, when the folder check took it
	if fresh {
		want := &ident
		if !inFile {
			want = nil
		}
		if err := s.checkFolder(r, want); err != nil {
			return Bot{}, err
		}
	}
	if inFile {
		parts, err := s.parts(ctx, r, fresh, ident)
		if err != nil {
			return Bot{}, err
		}
		r.Name, r.Description, r.Instructions = parts.Name, parts.Description, parts.Instructions
	}
	return Bot{Record: r, ETag: e.ETag}, nil
}

// parts are r's persona parts: from what was last seen unless fresh, else
// from its AGENTS.md as it is now, with the identity ident when the
// folder check took it.
func (s *Service) parts(ctx context.Context, r record.Record, fresh bool, ident agentsIdentity) (persona.Parts, error) {
	if !fresh {
		if p, ok := s.partsSeen.get(r.ID); ok {
			return p, nil
		}
	}
	var p persona.Parts
	var err error
	if ident.ok {
		p, err = s.personas.ReadIdentified(ctx, r.Workspace, ident.id)
	} else {
		p, err = s.personas.Read(ctx, r.Workspace)
	}
	if err != nil {
		return persona.Parts{}, personaError(r.ID, err)
	}
	if fresh {
		s.partsSeen.put(r.ID, p)
	} else {
		s.partsSeen.putListed(r.ID, p)
	}
	return p, nil
}

// personaError gives an error reading bot id's AGENTS.md its code: a file
// that cannot hold a persona, or whose text holds none, is a Conflict - the
// bot's state on disk stands in the way - named with the file and why, and
// what mends it.
func personaError(id string, err error) error {
	switch {
	case errors.Is(err, persona.ErrBadFile):
		return errcode.Wrap(errcode.Conflict, err, "the persona of %s cannot be read: %v; an edit that names the bot's name writes a new AGENTS.md in its place", uri(id), err)
	case errors.Is(err, persona.ErrBadText):
		return errcode.Wrap(errcode.Conflict, err, "the persona of %s cannot be read: %v; mend the file by hand", uri(id), err)
	}
	return fmt.Errorf("read persona of %s: %w", uri(id), err)
}

// catalogueWait bounds how long an acknowledged write waits for the
// catalogue to hold it; past it the write is acknowledged anyway, and the
// wait is logged.
const catalogueWait = 10 * time.Second

// awaitCatalogue waits until the catalogue has applied the store's change
// that gave bot id the etag ("" for its deletion): read-your-writes for
// whoever subscribes after the write is acknowledged.
//
// It waits for the index of claimed folders too, which follows the same
// feed: a make after an edit or a delete sees the folder it left free.
func (s *Service) awaitCatalogue(ctx context.Context, id, etag string) {
	ctx, cancel := context.WithTimeout(ctx, catalogueWait)
	defer cancel()
	if err := s.catalog.Await(ctx, id, etag); errors.Is(err, context.DeadlineExceeded) {
		s.log.Warn("bot: the catalogue did not take a write in time; acknowledged anyway", "bot", id, "waited", catalogueWait)
	}
	s.folders.await(ctx, id, etag)
}

// stamp is the time a write records, at the millisecond a record keeps.
func (s *Service) stamp() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

// ensureFolder makes a bot's work folder with its parents, durably.
func ensureFolder(dir string) error {
	if err := atomicfile.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("make work folder: %w", err)
	}
	return nil
}
