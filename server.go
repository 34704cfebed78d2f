// Package bots embeds the whole bot system in a Go program. One value, a
// Server, holds everything: the record store, the users directory, the
// agents back sessions run on, the vault of connector credentials, the bot
// service and its one Bus, and serves them over the Agent Host Protocol
// (JSON-RPC 2.0 over WebSocket) as an http.Handler:
//
//	srv := &bots.Server{ConfigDir: "/var/lib/my-host", Options: bot.Options{Root: "/srv/bots"}}
//	defer srv.Close()
//	http.ListenAndServe("127.0.0.1:9187", srv.Handler())
//
// No connection is anonymous: without a users file every connection
// presents the server's local token (LocalToken), and the handler answers
// only the Host names a local server should (PublicHosts).
//
// Back sessions run on echo unless the Server is given more: ACP agents
// read from an agents file run as sandboxed child processes, each with the
// connectors of its bot as tools, the credentials from the vault:
//
//	agents, err := acp.ReadAgents("/etc/my-host/agents.json", dir)
//	if err != nil { … }
//	srv := &bots.Server{ConfigDir: dir, Agents: agents, DefaultAgent: "claude",
//		UsersFile: "/etc/my-host/users.json", VaultFile: "/etc/my-host/vault.json"}
//
// The reference server, examples/server, is flags → a Server →
// http.Server. A host with a registry of its own (resources by scheme,
// channels, sessions by provider) plugs bots into it with bot.Apply
// instead.
package bots

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/agenthost/bots/access/usersfile"
	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/connector"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/filerecord"
	"github.com/agenthost/bots/route"
	"github.com/agenthost/bots/route/fileroute"
	"github.com/agenthost/bots/route/relay"
	"github.com/agenthost/bots/telemetry"
	"github.com/agenthost/bots/telemetry/prom"
	"github.com/agenthost/bots/transport"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/agents"
	"github.com/agenthost/bots/wake/echo"
	"github.com/agenthost/bots/wake/filerows"
	"github.com/agenthost/bots/wake/local"
	"github.com/agenthost/bots/web"
)

// UsersPoll is how often a users file is looked at for changes: a
// membership change reaches the catalogue, and a revoked token closes its
// connections, within it.
const UsersPoll = 250 * time.Millisecond

// ErrClosed is what Start answers after Close.
var ErrClosed = errors.New("bots: server closed")

// Server is the whole bot system, served over AHP. Set its fields, then
// call Start, or let the first request through Handler start it; the
// fields are read once, at the start. Close stops everything it started.
// The zero value of every field but ConfigDir is a documented default.
type Server struct {
	// ConfigDir is the configuration folder (made, mode 0700, when
	// absent): the bot records of the default store, persona templates,
	// chat logs, back-session rows, and each ACP agent's HOME and session
	// records. Required; DefaultConfigDir is the usual one.
	ConfigDir string
	// HostName is this host's name, as in root:<host>; "" is os.Hostname.
	HostName string
	// Options are the plugin options. Options.Root is the folder bots work
	// under; "" is ~/.bots (bot.DefaultRoot).
	Options bot.Options

	// Store keeps the bot records. Nil takes Database's when it is set,
	// else the bot.md files under ConfigDir (filerecord), watched for
	// hand edits; Close closes the store it opened. A store given here is
	// the caller's to close.
	Store record.Store
	// Database keeps, when Store is nil, what several Servers share to
	// be one set of bots (postgres.Database{URL: …}): the records, and
	// with them the chat logs, back-session rows, the agents' session
	// records (agents.Env.Sessions), leases and routes. The
	// root must be the folder they all share: Start refuses one the
	// database does not know as theirs. Nil keeps all of it under
	// ConfigDir, and links no database driver.
	Database Database
	// LeaseTTL is the time to live of the leases with Database: a back
	// session's and a running main turn's. Zero is lease.DefaultTTL (10
	// s); Start refuses one under lease.MinTTL. Holders renew every TTL/3
	// and every instance looks for main turns whose instance died every
	// TTL/5: when an instance dies, its main turns read as interrupted on
	// the others within TTL + TTL/5, and its back sessions move to another
	// instance at the next message after TTL. A shorter TTL notices a
	// death sooner and costs more writes to the database.
	LeaseTTL time.Duration
	// Users is the users directory connections authenticate against. Nil
	// opens UsersFile when it is set.
	Users bot.Users
	// UsersFile is the users file (see usersfile.Parse), re-read every
	// UsersPoll when it changes; Close closes it. With neither Users nor
	// UsersFile the host has no users directory: bots are owned by
	// root:<host>, and every connection must present the local token
	// (LocalToken, kept in ConfigDir's LocalTokenFile), which makes it
	// root; serve such a Server on a loopback address alone.
	UsersFile string
	// PublicHosts are the Host names (or addresses), each with or without
	// a port, that requests may name besides loopback names and
	// addresses and the address a request came in on: any other Host is
	// answered 421 Misdirected Request (see transport.Hosts), so that a
	// web page of another name that resolves to this server (DNS
	// rebinding) reaches nothing. Name here the names people reach the
	// server by.
	PublicHosts []string

	// Harnesses are more harnesses back sessions may run on, by provider,
	// besides echo (echo.Provider), which is always there.
	Harnesses map[string]wake.Harness
	// Agents are the agents back sessions may run outside the process:
	// acp.Agents, the ACP agents acp.ReadAgents reads from an agents
	// file, each a child process in an OS sandbox. Nil runs none, and an
	// embedder that sets none links no agent SDK. The Server gives each
	// agent (agents.Env) the connectors of the bot its session serves,
	// the Logger, and the sandbox's bounds: no grant may reach ConfigDir,
	// the root, VaultFile or UsersFile, no TCP connect may reach the
	// server's own ListenPorts where Landlock has network rules, and
	// AgentsUnsandboxed says whether an agent may run where the kernel
	// offers no sandbox; with a Database, the agents' session records are
	// its. At Start each agent is checked once in the background, its
	// result logged: Info when ready, Warn saying what to do.
	Agents agents.Set
	// LoginCommand, when set, is how a person logs an agent in: with the
	// agent's name appended, it is named in the sentence that says the
	// agent is not signed in (an agent's own LoginHint wins).
	LoginCommand string
	// AgentsUnsandboxed lets Agents run where the kernel offers no
	// sandbox, logged at Warn at every start; without it Start refuses
	// them there. Where the kernel offers one it is always used.
	AgentsUnsandboxed bool
	// DefaultAgent is the provider a back session runs on when its bot
	// names none; "" is echo. It must be echo, a Harnesses key or an
	// Agents provider.
	DefaultAgent string

	// Vault holds the connector credentials. Nil reads VaultFile, falling
	// back to environment variables (envvault), or reads the environment
	// alone without a VaultFile.
	Vault connector.Vault
	// VaultFile is a credentials file (filevault): mode 0600, outside
	// ConfigDir and the root, re-read when it changes.
	VaultFile string
	// Adapters make the connector calls; nil offers the http adapter.
	Adapters *connector.Registry

	// Routes keeps the chat-network connections and routes (package
	// route). Nil keeps them in files under ConfigDir (fileroute:
	// connections.json, routes/) when there are Networks - the routes in
	// the database with Database (pgroute), the connections still in each
	// instance's connections.json - else there are none. A connection's credentials are vault references, resolved
	// through Vault when it dials.
	Routes route.Store
	// Networks are the chat-network adapters the routes may use
	// (route/irc, route/xmpp…). Routes run (route/relay) once Routes and
	// Networks are set and the users directory maps network identities to
	// people (a route.People, as a users file with identities is); each
	// message is then a turn of its sender's person, through ClientAs.
	Networks []route.Network

	// Bundled are the bots the host ships (see bot.Bundle): read-only,
	// owned by root:<host>; an earlier bundle wins a slug. The reference
	// server gives the builder bot (bot/builder) and -bundled's folder.
	Bundled []bot.Bundle
	// Tools is what back sessions are offered; a bot's tools list only
	// narrows it. The zero value is wake.DefaultToolPolicy: the workspace
	// tools go only to bots that list them.
	Tools wake.ToolPolicy

	// Logger receives reports; nil discards them. Every credential the
	// vault holds, and every one a connector call resolves, is taken out
	// of what reaches it.
	Logger *slog.Logger
	// Page answers the requests to / that are not WebSocket upgrades: the
	// web page (web.Handler), or a host's own; nil leaves them to the AHP
	// endpoint, which refuses them.
	Page http.Handler
	// Tracer receives a span per AHP request and per chat turn, with
	// children for the store, the wake, the agent's start and each ACP
	// call (whose trace context the agent is given in _meta); nil records
	// none. No span attribute holds what a person or an agent wrote, an
	// instruction or a credential.
	Tracer trace.TracerProvider

	pruneEvery time.Duration // how often the leases that ended are pruned; zero is lease.PruneEvery (tests set it)

	initOnce sync.Once
	log      *slog.Logger
	scrub    *connector.Scrubber
	hub      *telemetry.Hub       // what every part counts into
	metrics  *prometheus.Registry // hub's series and the Go and process collectors

	// portsMu guards ports alone: the agents ask for them (ListenPorts)
	// while Close holds mu and waits for the agents' check.
	portsMu sync.Mutex
	ports   map[uint16]bool // the TCP ports the server was seen listening on

	mu          sync.Mutex
	started     bool // wire has run
	loading     bool // a load was claimed: its runner opens the gate
	closed      bool
	stopping    bool // Shutdown has begun
	startErr    error
	gate        *gate  // answers from the wire before the load ends
	local       string // the local token; "" with a users directory
	svc         *bot.Service
	wire        *transport.Server
	handler     http.Handler
	closers     []func() error // what Start made, closed last first (the wire first of all)
	loads       sync.WaitGroup // the loads the first request started
	stopLoad    context.CancelFunc
	agentEnv    agents.Env // what Agents run with, checked once loaded
	checks      sync.WaitGroup
	stopWork    context.CancelFunc
	relay       *relay.Relay    // runs the routes once loaded; nil when none run
	routes      route.Store     // Routes, or the files open keeps them in; nil for none
	routeMemory relay.Memory    // what the relay remembers: files under ConfigDir, or the database
	vault       connector.Vault // the vault open made, for the routes' credentials
	leases      lease.Leases    // with Database: the leases the routes' connections are held by
	holder      string          // with Database: this instance among the holders
}

// init fills what every method needs: the scrubbed logger.
func (s *Server) init() {
	s.initOnce.Do(func() {
		s.scrub = &connector.Scrubber{}
		h := slog.Handler(slog.DiscardHandler)
		if s.Logger != nil {
			h = s.Logger.Handler()
		}
		s.log = slog.New(s.scrub.Handler(h))
		s.hub = telemetry.New(s.Tracer)
		s.metrics = prom.Registry(s.hub)
	})
}

// Start starts the server: it opens the store, the users directory and
// the vault, starts the agents' harnesses, the session host and the bot
// service, and checks the agents in the background. ctx bounds the start
// alone. Start is idempotent: a second call answers what the first did;
// after Close it answers ErrClosed.
//
// Start starts in two steps. First it opens the users directory and the
// wire, and from then on Handler answers: an initialize at once (its
// _meta lists no problems yet and says bot.LoadingMeta), the web page,
// and GET /healthz with 503 Service Unavailable. Then it loads the bots
// (the store, the service, its chats); every request that needs them - a
// resource method, a subscribe, a session method - waits for the load to
// end and is then answered by the loaded service, and /healthz answers
// 200. Start returns when both are done. A host that wants the early
// answers serves Handler while Start runs, as examples/server does.
func (s *Server) Start(ctx context.Context) error {
	s.init()
	load, err := s.begin(ctx)
	if err != nil {
		return err
	}
	if load != nil {
		load()
	}
	s.mu.Lock()
	g := s.gate
	s.mu.Unlock()
	select {
	case <-g.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed && s.startErr == nil {
		return ErrClosed
	}
	return s.startErr
}

// begin wires the server when it is not, and returns the load for the
// caller to run when no one runs it yet (nil otherwise): its ctx is the
// load's. It answers why the server cannot serve: it could not be
// wired, its load failed, or it is closed.
func (s *Server) begin(ctx context.Context) (load func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, ErrClosed
	case s.startErr != nil:
		return nil, s.startErr
	case !s.started:
		s.started = true
		if s.startErr = s.wireUp(); s.startErr != nil {
			s.closeAll()
			return nil, s.startErr
		}
	}
	if s.loading {
		return nil, nil
	}
	s.loading = true
	ctx, s.stopLoad = context.WithCancel(ctx)
	return func() { s.load(ctx) }, nil
}

// wireUp makes what the wire needs before any bot is loaded: the config
// folder, the users directory, the Bus, the gate and the wire. Called
// with s.mu held.
func (s *Server) wireUp() error {
	if s.ConfigDir == "" {
		return errors.New("bots: Server.ConfigDir is required")
	}
	if err := lease.CheckTTL(s.LeaseTTL); err != nil {
		return fmt.Errorf("bots: Server.LeaseTTL: %w", err)
	}
	if err := os.MkdirAll(s.ConfigDir, 0o700); err != nil {
		return fmt.Errorf("bots: config folder: %w", err)
	}
	hosts := transport.Hosts{Public: s.PublicHosts}
	if err := hosts.Check(); err != nil {
		return fmt.Errorf("bots: Server.PublicHosts: %w", err)
	}
	users := s.Users
	if users == nil && s.UsersFile == "" {
		tok, err := localToken(s.ConfigDir)
		if err != nil {
			return err
		}
		s.local = tok
	}
	if users == nil && s.UsersFile != "" {
		dir, err := usersfile.OpenDirectory(usersfile.DirectoryConfig{Path: s.UsersFile, Interval: UsersPoll, Logger: s.log})
		if err != nil {
			return fmt.Errorf("bots: %w", err)
		}
		s.closers = append(s.closers, dir.Close)
		users = dir
	}
	s.gate = newGate(users, s.local, cmp.Or(s.HostName, bot.DefaultHostName()), s.Tools, s.startingChoices)
	bus := engine.NewBus(s.log)
	wire, err := transport.New(transport.Config{Host: s.gate, Bus: bus, Logger: s.log, Telemetry: s.hub})
	if err != nil {
		return fmt.Errorf("bots: %w", err)
	}
	s.wire = wire
	var h http.Handler = wire
	if s.Page != nil {
		h = web.Split(wire, s.Page)
	}
	s.handler = hosts.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			s.notePort(a)
		}
		if strings.HasPrefix(r.URL.Path, relay.HookPrefix) {
			s.serveHook(w, r)
			return
		}
		h.ServeHTTP(w, r)
	}))
	return nil
}

// LocalToken is the token every connection must present when the server
// has no users directory (neither Users nor UsersFile): read from
// ConfigDir's LocalTokenFile, or made there at the first start, when the
// server starts (Start, or the first request through Handler). It makes a
// connection root, as ?tkn= or Authorization: Bearer, like a users file's
// tokens; the web page takes it from its address (/?tkn=…). It is "" with
// a users directory, and before the server has started.
func (s *Server) LocalToken() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.local
}

// notePort remembers the TCP port of addr, an address the server listens
// on: agents may not connect to it (ListenPorts).
func (s *Server) notePort(addr net.Addr) {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || tcp.Port <= 0 || tcp.Port > 65535 {
		return
	}
	s.portsMu.Lock()
	defer s.portsMu.Unlock()
	if s.ports == nil {
		s.ports = map[uint16]bool{}
	}
	s.ports[uint16(tcp.Port)] = true
}

// RefuseAgentsOn adds the TCP port of addr to ListenPorts: a listener of
// the host's own beside the server's (its metrics, its admin page), which
// the sandboxed agents may not connect to either. Call it before Start,
// or before the agents it should keep out start.
func (s *Server) RefuseAgentsOn(addr net.Addr) { s.notePort(addr) }

// ListenPorts are the TCP ports the server has been seen listening on:
// those of Listen's listeners, of Serve's, and of every request through
// Handler (the port it came in on), sorted. The sandboxed agents may not
// connect to them where the kernel offers Landlock network rules
// (agents.Env.RefuseConnect): an agent reaches the server through its
// tools alone, never as a client of its own.
func (s *Server) ListenPorts() []uint16 {
	s.portsMu.Lock()
	defer s.portsMu.Unlock()
	return slices.Sorted(maps.Keys(s.ports))
}

// load loads the bots behind the wire and opens the gate: to the service
// when it loaded, else to answering Unavailable, and then closes the
// server, as a failed Start does.
func (s *Server) load(ctx context.Context) {
	s.mu.Lock()
	users, bus := s.gate.users, s.wire.Bus()
	s.mu.Unlock()
	svc, closers, err := s.open(ctx, users, bus)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && s.closed {
		err = ErrClosed
	}
	if err != nil {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
		s.gate.open(nil)
		if !s.closed {
			s.startErr = err
			s.closeAll()
		}
		return
	}
	s.closers = append(s.closers, closers...)
	s.svc = svc
	s.gate.open(svc)
	if err := s.startRelay(ctx, users); err != nil {
		s.log.Error("bots: the chat-network routes do not run", "err", err)
	}
	// The agents are checked while the server serves; Close ends the check.
	work, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stopWork = stop
	env := s.agentEnv
	s.checks.Go(func() { s.logChecks(work, env) })
}

// open makes everything behind the wire: the store, the vault, the
// agents' harnesses, the session host and the bot service, and answers
// what must be closed, first first.
func (s *Server) open(ctx context.Context, users bot.Users, bus *engine.Bus) (svc *bot.Service, closers []func() error, err error) {
	// The file store's watch of each bot's folder waits for the end of
	// the load (it costs about 0.9 s of CPU at 100,000 bots, which the
	// rest of the start would share two cores with); closed after a
	// failed load's cleanup, so a store closed meanwhile sets none.
	loaded := make(chan struct{})
	defer close(loaded)
	defer func() {
		if err != nil {
			for i := len(closers) - 1; i >= 0; i-- {
				closers[i]()
			}
			closers = nil
		}
	}()
	began, lap := time.Now(), time.Now()
	var took []any // how long each step took, logged at Debug once loaded
	step := func(name string) {
		now := time.Now()
		took = append(took, name, now.Sub(lap).Round(time.Microsecond))
		lap = now
	}
	store := s.Store
	var db *Shared // nil: what is kept stays under ConfigDir
	holder := ""   // this instance among the leases' holders, with db
	if store == nil && s.Database != nil {
		if db, err = s.openDatabase(ctx); err != nil {
			return nil, closers, err
		}
		closers = append(closers, db.Close)
		store, holder = db.Records, holderName()
		closers = append(closers, pruneLeases(db.Leases, cmp.Or(s.pruneEvery, lease.PruneEvery), s.log))
	}
	if store == nil {
		fs, err := filerecord.Open(ctx, filerecord.Config{ConfigDir: s.ConfigDir, Logger: s.log, Watch: true, WatchAfter: loaded, Telemetry: s.hub})
		if err != nil {
			return nil, closers, fmt.Errorf("bots: %w", err)
		}
		closers = append(closers, fs.Close)
		store = fs
	}
	step("store")
	vault := s.Vault
	if vault == nil {
		v, err := openVault(ctx, s.VaultFile, s.ConfigDir, s.root(), s.scrub, s.log)
		if err != nil {
			return nil, closers, fmt.Errorf("bots: %w", err)
		}
		vault = v
	}
	routes := s.Routes
	if routes == nil && len(s.Networks) > 0 {
		files := fileroute.New(s.ConfigDir, fileroute.Options{Logger: s.log})
		routes = files
		if db != nil && db.Routes != nil {
			// With a database the routes are shared there; each instance
			// reads the connections from its own folder.
			if routes, err = db.Routes(ctx, files); err != nil {
				return nil, closers, fmt.Errorf("bots: database: %w", err)
			}
		}
	}
	var memory relay.Memory = fileroute.NewMemory(filepath.Join(s.ConfigDir, RouteStateDir))
	if db != nil && db.RouteMemory != nil && routes != nil {
		// What the relay remembers is shared too: a connection taken over,
		// or a code paired on another instance's page.
		if memory, err = db.RouteMemory(ctx); err != nil {
			return nil, closers, fmt.Errorf("bots: database: %w", err)
		}
	}
	s.mu.Lock()
	s.vault, s.routes, s.routeMemory = vault, routes, memory
	if db != nil {
		s.leases, s.holder = db.Leases, holder
	}
	s.mu.Unlock()
	adapters := s.Adapters
	if adapters == nil {
		if adapters, err = httpRegistry(s.log); err != nil {
			return nil, closers, fmt.Errorf("bots: %w", err)
		}
	}
	conns := &botConnectors{store: store, users: users, registry: adapters, vault: vault, scrub: s.scrub, log: s.log}
	env := s.agentsEnv(conns, db)
	harnesses, infos, err := s.harnesses(env)
	if err != nil {
		return nil, closers, err
	}
	defaultAgent := cmp.Or(s.DefaultAgent, echo.Provider)
	if _, ok := harnesses[defaultAgent]; !ok {
		return nil, closers, fmt.Errorf("bots: default agent %q: no such agent (this server runs %s)", defaultAgent, strings.Join(slices.Sorted(maps.Keys(harnesses)), ", "))
	}
	step("agents")
	// Chat logs and back-session rows live in the database when the
	// records do, else beside them under ConfigDir, whatever the store: a
	// restart continues its chats and back sessions.
	// With the database, a back session runs on the instance holding its
	// lease (wake.Config.Leases).
	var logs chatlog.Logs = newStartLogs(s.ConfigDir, s.hub)
	var rows wake.Rows = filerows.New(s.ConfigDir)
	var leases lease.Leases
	if db != nil {
		logs, rows, leases = db.Logs, db.Rows, db.Leases
	}
	sessions, err := local.New(local.Config{Bus: bus, Harnesses: harnesses, Logger: s.log, Scrub: s.scrub, Logs: logs, Shared: db != nil, Telemetry: s.hub})
	if err != nil {
		return nil, closers, fmt.Errorf("bots: %w", err)
	}
	closers = append(closers, sessions.Close)
	step("sessions")
	svc, err = bot.New(ctx, bot.Config{
		Store: store, ConfigDir: s.ConfigDir, HostName: s.gate.hostName, Options: s.Options, Logger: s.log,
		Users: users, Bus: bus, Sessions: sessions, DefaultAgent: defaultAgent, Agents: infos,
		Bundled: s.Bundled, Tools: s.Tools, Rows: rows, Logs: logs, Leases: leases, Holder: holder, LeaseTTL: s.LeaseTTL,
		HostPaths: slices.DeleteFunc([]string{s.VaultFile, s.UsersFile}, func(p string) bool { return p == "" }),
		Routes:    routes, RouteStates: s.RouteStates, RoutePair: s.routePair, RoutePaired: s.routePaired, RouteProbe: s.routeProbe,
		RoutePairings: s.routePairings, RouteUnpair: s.routeUnpair,
		Telemetry: s.hub,
	})
	if err != nil {
		return nil, closers, err
	}
	closers = append(closers, svc.Close)
	step("service")
	s.log.Debug("bots: loaded the bots", append(took, "total", time.Since(began).Round(time.Microsecond))...)
	s.mu.Lock()
	s.agentEnv = env
	s.mu.Unlock()
	return svc, closers, nil
}

// DefaultConfigDir is the usual configuration folder of a host:
// $XDG_CONFIG_HOME/agenthost-bots, else ~/.config/agenthost-bots, else
// agenthost-bots in the working folder when there is no home.
func DefaultConfigDir() string {
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "agenthost-bots")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".config", "agenthost-bots")
	}
	return "agenthost-bots"
}

// root is the folder bots work under, as the options name it.
func (s *Server) root() string { return cmp.Or(s.Options.Root, bot.DefaultRoot()) }

// agentsEnv is what Agents run with: conns (nil for none), the logger,
// the sandbox's bounds and, with db, its session records.
func (s *Server) agentsEnv(conns agents.Connectors, db *Shared) agents.Env {
	env := agents.Env{
		Connectors: conns, LoginCommand: s.LoginCommand, Logger: s.log, Telemetry: s.hub,
		AllowUnsandboxed: s.AgentsUnsandboxed,
		Protect:          slices.DeleteFunc([]string{s.ConfigDir, s.root(), s.VaultFile, s.UsersFile}, func(p string) bool { return p == "" }),
		RefuseConnect:    s.ListenPorts,
	}
	if db != nil {
		env.Sessions = db.Sessions
	}
	return env
}

// providers names Agents, refusing one named like echo or one of
// Harnesses.
func (s *Server) providers() ([]string, error) {
	if s.Agents == nil {
		return nil, nil
	}
	names := s.Agents.Providers()
	for _, name := range names {
		if _, ok := s.Harnesses[name]; ok || name == echo.Provider {
			return nil, fmt.Errorf("bots: agent %q is named twice (a harness has its name)", name)
		}
	}
	return names, nil
}

// startingChoices are the agents and templates the make form offers while
// the bots load: the providers harnesses will give the session host (echo,
// Harnesses, Agents) and the templates under ConfigDir.
func (s *Server) startingChoices(ctx context.Context) bot.Choices {
	agents := []string{echo.Provider}
	for name := range s.Harnesses {
		agents = append(agents, name)
	}
	if s.Agents != nil {
		agents = append(agents, s.Agents.Providers()...)
	}
	return bot.HostChoices(ctx, s.ConfigDir, agents, s.log)
}

// harnesses returns every harness back sessions may run on, by provider,
// and the root state's entries of Agents, run with env.
func (s *Server) harnesses(env agents.Env) (map[string]wake.Harness, []ahp.AgentInfo, error) {
	if _, err := s.providers(); err != nil {
		return nil, nil, err
	}
	hs := map[string]wake.Harness{echo.Provider: echo.Harness{}}
	maps.Copy(hs, s.Harnesses)
	if s.Agents == nil {
		return hs, nil, nil
	}
	more, infos, err := s.Agents.Harnesses(env)
	if err != nil {
		return nil, nil, fmt.Errorf("bots: %w", err)
	}
	maps.Copy(hs, more)
	return hs, infos, nil
}

// logChecks checks Agents once, run with env, and logs each result as it
// comes: Info when the agent is ready, Warn with what to do otherwise;
// nothing once ctx is done.
func (s *Server) logChecks(ctx context.Context, env agents.Env) {
	if s.Agents == nil {
		return
	}
	s.Agents.Check(ctx, env, func(r agents.Result) {
		switch {
		case ctx.Err() != nil:
		case r.Ready:
			s.log.Info("agent ready", "agent", r.Provider, "took", r.Took.Round(time.Millisecond))
		default:
			s.log.Warn("agent not ready", "agent", r.Provider, "problem", r.Problem, "took", r.Took.Round(time.Millisecond))
		}
	})
}

// Handler is the server's HTTP handler: the AHP WebSocket at /, the Page
// at GET / without an upgrade, both answered only for a Host that
// transport.Hosts allows with PublicHosts (421 Misdirected Request
// otherwise), and GET /healthz, open to any Host, which answers 200 once
// the server has started, bots loaded, and 503 Service Unavailable while
// they load. The first request starts a server Start has not (the load
// then runs in the background, as Start describes); a server that could
// not start answers 503 Service Unavailable, and logs why once.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	// /healthz is not behind the Host check (transport.Hosts) that guards
	// the page and the WebSocket: it tells "ok" or "loading" and nothing
	// else, takes no token and changes nothing, and health checkers (load
	// balancers, container probes) often name a server by an address or
	// name it has not been told of.
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := s.serving(w, r); !ok {
			return
		}
		s.mu.Lock()
		g := s.gate
		s.mu.Unlock()
		if g == nil || g.loaded() == nil {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "the bots server is loading its bots", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if h, ok := s.serving(w, r); ok {
			h.ServeHTTP(w, r)
		}
	})
	return mux
}

// serving starts the server when it has not started (its load in the
// background) and returns what serves /; it answers 503 when the server
// could not start or is closed.
func (s *Server) serving(w http.ResponseWriter, r *http.Request) (http.Handler, bool) {
	s.init()
	load, err := s.begin(context.WithoutCancel(r.Context()))
	if load != nil {
		s.loads.Go(func() {
			load()
			if err := s.loadErr(); err != nil && !errors.Is(err, ErrClosed) {
				s.log.Error("bots: the server could not start", "err", err)
			}
		})
	}
	if err != nil {
		http.Error(w, "the bots server is not running", http.StatusServiceUnavailable)
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handler == nil || s.stopping {
		http.Error(w, "the bots server is not running", http.StatusServiceUnavailable)
		return nil, false
	}
	return s.handler, true
}

// loadErr is why the server could not start, or nil.
func (s *Server) loadErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.startErr
}

// Listen listens on the TCP address addr for Handler to be served on,
// and notes its port (ListenPorts). With neither Users nor UsersFile the
// local token makes a connection root, so Listen then refuses an address
// that is not loopback ("localhost", or an IP that is loopback), saying
// why.
func (s *Server) Listen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("bots: listen address %q: %w", addr, err)
	}
	if s.Users == nil && s.UsersFile == "" && host != "localhost" && !net.ParseIP(host).IsLoopback() {
		return nil, fmt.Errorf("bots: refusing to serve %s without a users file: with none, whoever holds the local token is root; pass a users file or a loopback address", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s.notePort(ln.Addr())
	return ln, nil
}

// Metrics is the registry of the server's Prometheus series (the README
// lists them under "Operations"): connections, requests, turns, back sessions,
// agents, stores, the catalogue, leases, hand edits, disk-full
// refusals, and the Go runtime and process collectors. An embedder
// serves it where it wants (promhttp.HandlerFor), or gathers it into its
// own; examples/server serves it on -metrics-addr. The series count from
// the start, whether or not anyone reads them.
func (s *Server) Metrics() *prometheus.Registry {
	s.init()
	return s.metrics
}

// Service is the bot service the server runs, for calls in process (make
// a bot, read one); nil before a successful Start.
func (s *Server) Service() *bot.Service {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.svc
}

// ShutdownGrace is how long Serve waits for connections to end once its
// ctx is done.
const ShutdownGrace = 10 * time.Second

// Serve serves Handler on ln (noting its port, ListenPorts) until ctx is
// done, then shuts down: every WebSocket is closed gracefully within
// ShutdownGrace (Shutdown), and the HTTP server with it; Close is then
// done. Like Handler, it starts the
// server with the first request when Start was not called. It answers
// why serving stopped early, or the shutdown's error.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.init()
	s.notePort(ln.Addr())
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	s.mu.Lock()
	failed := s.startErr != nil
	s.mu.Unlock()
	if !failed { // a server that never served has only its error to say
		s.log.Info("shutting down")
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownGrace)
	defer cancel()
	err := s.Shutdown(ctx) // closes the WebSockets, which hs.Shutdown does not
	err = errors.Join(err, hs.Shutdown(ctx))
	<-served
	return err
}

// Shutdown closes every WebSocket gracefully (what was queued for a
// client, then a close frame: http.Server.Shutdown does not close
// WebSockets), waiting for them until ctx is done, then closes the
// server. From its start every request is answered 503, the page too, so
// a page reconnecting is never told the server is up while its socket is
// refused. It answers ctx's error when ctx ended first.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	wire := s.wire
	s.stopping = true // from now on, nothing new: see serving
	s.mu.Unlock()
	s.stopRelay() // its chats end before the wire's connections do
	var err error
	if wire != nil {
		err = wire.Shutdown(ctx)
	}
	return errors.Join(err, s.Close())
}

// Close closes every connection, stops the load when it still runs, the
// agents' check, the bot service and the session host, and closes the
// store and users directory the server opened. A turn still running is
// stopped, not waited for: its chat keeps it as interrupted, and a client
// may resume it once a server runs on the same folders again. Close
// returns when every goroutine the server started has ended. It is
// idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	g, stop := s.gate, s.stopLoad
	s.mu.Unlock()
	if stop != nil { // a load was claimed: it ends, then Close goes on
		stop()
		<-g.done
	}
	s.loads.Wait()
	s.stopRelay()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closeAll()
}

// closeAll closes what start made: the wire, then the rest last first.
// Called with s.mu held.
func (s *Server) closeAll() error {
	if s.stopWork != nil {
		s.stopWork()
	}
	s.checks.Wait()
	var errs []error
	if s.wire != nil {
		errs = append(errs, s.wire.Close())
	}
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	s.closers = nil
	s.svc, s.wire, s.handler = nil, nil, nil
	return errors.Join(errs...)
}
