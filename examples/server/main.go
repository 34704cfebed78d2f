// Command server is the reference server: it serves the bots of one host
// over the Agent Host Protocol (JSON-RPC 2.0 over WebSocket).
//
//	go run ./examples/server [flags]
//
// It is wiring only: flags → the file record store and persona files →
// bot.New → the transport handler → an http.Server with graceful shutdown.
// The README lists the flags; DESIGN.md's reference server contract is
// binding.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/agenthost/bots/access/usersfile"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/connector"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/transport"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/acp"
	"github.com/agenthost/bots/wake/acp/sandbox"
	"github.com/agenthost/bots/wake/echo"
	"github.com/agenthost/bots/web"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

// usersPoll is how often the users file is looked at for changes: a
// membership change reaches the catalogue within it.
const usersPoll = 250 * time.Millisecond

// config is what the flags say.
type config struct {
	configDir, root, addr, users, hostName, agent, agents, vault string
	db                                                           string // -db: PostgreSQL, "" for files
	options                                                      bot.Options
	logLevel                                                     slog.Level
	agentsUnsandboxed                                            bool
	checkAgents                                                  bool   // -check-agents: check, print, exit
	login                                                        string // -login: the agent to log in
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.configDir, "config", defaultConfigDir(), "configuration folder")
	fs.StringVar(&c.root, "root", "", "the folder bots work under (default ~/.bots)")
	fs.StringVar(&c.addr, "addr", "127.0.0.1:9187", "listen address; WebSocket at /, the web page at GET / without an upgrade, GET /healthz answers 200 when ready")
	fs.StringVar(&c.db, "db", os.Getenv("BOTS_DATABASE_URL"), "PostgreSQL URL (default $BOTS_DATABASE_URL): the records live there, shared by every instance on it; -root must be the folder they share")
	fs.StringVar(&c.users, "users", "", "users file (default <config>/users.json when it exists); with none every connection may do anything, so only a loopback -addr is served")
	fs.StringVar(&c.hostName, "host-name", "", "this host's name (default os.Hostname)")
	fs.StringVar(&c.agent, "agent", "echo", "the agent a back session runs on when a bot names none")
	fs.StringVar(&c.agents, "agents", "", "agents file (default <config>/agents.json when it exists)")
	fs.BoolVar(&c.agentsUnsandboxed, "agents-unsandboxed", false, "allow agents where the kernel offers no sandbox (logged at Warn)")
	fs.StringVar(&c.vault, "vault", "", "connector credentials file, mode 0600, outside -config and -root; environment variables BOTS_CONNECTOR_<ADAPTER>_<ID> are read when it has none")
	fs.StringVar(&c.options.MainTurnPostMessageAbsent, "main-turn-post-message-absent", "post", "post, notice, silence or postNotice")
	fs.StringVar(&c.options.InstructionsIn, "instructions-in", "section", "section or body")
	fs.StringVar(&c.options.ContextIn, "context-in", "text", "text or meta")
	fs.StringVar(&c.options.AskIn, "ask-in", "main", "main or own")
	fs.TextVar(&c.logLevel, "log-level", slog.LevelInfo, "log level: debug, info, warn or error")
	fs.BoolVar(&c.checkAgents, "check-agents", false, "start each configured agent, sign in, open a session, print one line per agent (ready, or what to do); exit non-zero if any is not ready")
	fs.StringVar(&c.login, "login", "", "run the agent's own login with the HOME its back sessions use")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if c.checkAgents || c.login != "" {
		// Their lines say it all: logs only on request.
		levelSet := false
		fs.Visit(func(f *flag.Flag) { levelSet = levelSet || f.Name == "log-level" })
		if !levelSet {
			c.logLevel = slog.LevelError
		}
	}
	c.options.Root = c.root
	if c.users == "" {
		if p := filepath.Join(c.configDir, "users.json"); fileExists(p) {
			c.users = p
		}
	}
	if c.agents == "" {
		if p := filepath.Join(c.configDir, "agents.json"); fileExists(p) {
			c.agents = p
		}
	}
	return c, nil
}

func defaultConfigDir() string {
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "agenthost-bots")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".config", "agenthost-bots")
	}
	return "agenthost-bots"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// isLoopback reports whether a listen address serves this machine alone.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// run is the whole server: it serves until ctx is done, then shuts down.
// It writes one line, "listening on http://<addr>", to stdout once ready.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	c, err := parseFlags(args, os.Stderr)
	if err != nil {
		return err
	}
	// Every credential the vault holds, and every one a connector call
	// resolves, is taken out of the logs, and of all that leaves a back
	// session (LocalConfig.Scrub, which the wake takes for the main chats).
	scrub := &connector.Scrubber{}
	log := slog.New(scrub.Handler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: c.logLevel})))
	root := c.root
	if root == "" {
		root = bot.DefaultRoot()
	}
	sb := agentSandbox{allowUnsandboxed: c.agentsUnsandboxed, protect: protected(c.configDir, root, c.vault, c.users)}
	if c.checkAgents || c.login != "" {
		// A check runs each agent as a back session would, sandboxed; a
		// login runs the agent's own login command as the person who
		// typed it, outside the sandbox (see acp.Login).
		cfgs, err := readAgents(c.agents, c.configDir, nil, sb, log)
		if err != nil {
			return err
		}
		if c.login != "" {
			return loginAgent(ctx, cfgs, c.login, acp.Terminal{In: os.Stdin, Out: stdout, Err: os.Stderr})
		}
		return printChecks(ctx, cfgs, stdout)
	}
	if c.users == "" && !isLoopback(c.addr) {
		return fmt.Errorf("refusing to serve %s without a users file: with none every connection may do anything; pass -users or a loopback -addr", c.addr)
	}
	if err := os.MkdirAll(c.configDir, 0o700); err != nil {
		return fmt.Errorf("config folder: %w", err)
	}

	var users bot.Users
	if c.users != "" {
		dir, err := usersfile.OpenDirectory(usersfile.DirectoryConfig{Path: c.users, Interval: usersPoll, Logger: log})
		if err != nil {
			return err
		}
		defer dir.Close()
		users = dir
	}
	store, err := openStore(ctx, c, root, log)
	if err != nil {
		return err
	}
	defer store.Close()
	bus := engine.NewBus(log)
	vault, err := openVault(ctx, c.vault, c.configDir, root, scrub, log)
	if err != nil {
		return err
	}
	registry, err := newRegistry(log)
	if err != nil {
		return err
	}
	conns := &botConnectors{store: store, users: users, registry: registry, vault: vault, scrub: scrub, log: log}
	harnesses := map[string]wake.Harness{echo.Provider: echo.Harness{}}
	cfgs, err := readAgents(c.agents, c.configDir, conns, sb, log)
	if err != nil {
		return err
	}
	agents, err := loadAgents(cfgs, harnesses)
	if err != nil {
		return err
	}
	if err := checkSandbox(len(agents), c.agentsUnsandboxed, sandbox.Available, log); err != nil {
		return err
	}
	// The agents are checked while the server serves; the check ends
	// with the server.
	checkCtx, stopCheck := context.WithCancel(ctx)
	var checks sync.WaitGroup
	defer checks.Wait()
	defer stopCheck()
	checks.Go(func() { logChecks(checkCtx, cfgs, log) })
	if _, ok := harnesses[c.agent]; !ok {
		return fmt.Errorf("-agent %q: no such agent (this server runs %s and the agents of -agents)", c.agent, echo.Provider)
	}
	sessions, err := wake.NewLocalHost(wake.LocalConfig{Bus: bus, Harnesses: harnesses, Logger: log, Scrub: scrub, ConfigDir: c.configDir})
	if err != nil {
		return err
	}
	defer sessions.Close()
	svc, err := bot.New(ctx, bot.Config{
		Store: store, ConfigDir: c.configDir, HostName: c.hostName, Options: c.options,
		Logger: log, Users: users, Bus: bus, Sessions: sessions, DefaultAgent: c.agent,
		Agents: agents, Rows: rowsFor(c),
	})
	if err != nil {
		return err
	}
	defer svc.Close()
	srv, err := transport.New(transport.Config{Host: svc, Bus: bus, Logger: log})
	if err != nil {
		return err
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	// GET / without an upgrade answers the web page; the WebSocket stays at /.
	mux.Handle("/", web.Split(srv, web.Handler(web.Config{})))
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	log.Info("serving bots", "addr", ln.Addr().String(), "config", c.configDir, "root", svc.Root(), "users", c.users, "host", svc.HostName())
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.Shutdown(shutdownCtx)
	if err := hs.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
