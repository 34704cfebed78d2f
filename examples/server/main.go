// Command server is the reference server: it serves the bots of one host
// over AHP (JSON-RPC 2.0 over WebSocket). It is wiring only: flags → a
// bots.Server → an http.Server. The README lists the flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/agenthost/bots"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/bot/builder"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/postgres"
	"github.com/agenthost/bots/route"
	"github.com/agenthost/bots/route/irc"
	"github.com/agenthost/bots/route/slack"
	"github.com/agenthost/bots/route/telegram"
	"github.com/agenthost/bots/route/xmpp"
	"github.com/agenthost/bots/transport"
	"github.com/agenthost/bots/wake/acp"
	"github.com/agenthost/bots/wake/agents"
	"github.com/agenthost/bots/web"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil && !errors.Is(err, flag.ErrHelp) { // -h: usage, status 0
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

// run is the whole server: it serves until ctx is done, then shuts down.
// It answers on its address at once, and writes one line to stdout once
// its bots are loaded (GET /healthz then answers 200): "listening on
// http://<addr>" with a users file, else the page's address with the
// local token, "listening on http://<addr>/?tkn=<token>", which opens the
// page signed in.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	s := &bots.Server{Page: web.Handler(web.Config{}), Bundled: []bot.Bundle{builder.Bundle()},
		// The chat networks routes may use; <config>/connections.json and
		// <config>/routes/ say which run (README: Talk to a bot from IRC).
		Networks: []route.Network{irc.Network{}, xmpp.Network{}, telegram.Network{}, slack.Network{}}}
	var addr, agentsFile, login, metricsAddr string
	var checkAgents bool
	var level slog.Level
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.StringVar(&s.ConfigDir, "config", bots.DefaultConfigDir(), "configuration folder")
	fs.StringVar(&s.Options.Root, "root", "", "the folder bots work under (default ~/.bots)")
	fs.StringVar(&addr, "addr", "127.0.0.1:9187", "listen address; WebSocket at /, the web page at GET / without an upgrade, GET /healthz answers 200 when ready")
	s.Database = database(os.Getenv("BOTS_DATABASE_URL"))
	fs.Func("db", "PostgreSQL `URL` (default $BOTS_DATABASE_URL): the records, chat logs, back-session rows and leases live there, shared by every instance on it; -root must be the folder they share", func(url string) error {
		s.Database = database(url)
		return nil
	})
	fs.DurationVar(&s.LeaseTTL, "lease-ttl", lease.DefaultTTL, "with -db, the time to live of the leases of back sessions and main turns (at least 500ms); an instance that dies is noticed by the others within it and a fifth of it")
	fs.StringVar(&s.UsersFile, "users", "", "users file (default <config>/users.json when it exists); with none every connection must present the local token (<config>/local-token, printed in the listening line) and may then do anything, so only a loopback -addr is served")
	fs.Func("public-host", "a Host name (with or without a port) the server answers to besides loopback names and addresses and its own address; repeatable; any other Host is refused (421)", func(name string) error {
		s.PublicHosts = append(s.PublicHosts, name)
		return transport.Hosts{Public: []string{name}}.Check()
	})
	fs.StringVar(&s.HostName, "host-name", "", "this host's name (default os.Hostname)")
	fs.StringVar(&s.DefaultAgent, "agent", "echo", "the agent a back session runs on when a bot names none")
	fs.StringVar(&agentsFile, "agents", "", "agents file (default <config>/agents.json when it exists)")
	fs.BoolVar(&s.AgentsUnsandboxed, "agents-unsandboxed", false, "allow agents where the kernel offers no sandbox (logged at Warn)")
	fs.StringVar(&s.VaultFile, "vault", "", "connector credentials file, mode 0600, outside -config and -root; environment variables BOTS_CONNECTOR_<ADAPTER>_<ID> are read when it has none")
	fs.Func("bundled", "a folder of more bundled (read-only, host-owned) bots, one folder each, besides the builder bot", func(dir string) error {
		b, err := bot.BundleDir(dir)
		s.Bundled = append(s.Bundled, b)
		return err
	})
	fs.StringVar((*string)(&s.Options.MainTurnPostMessageAbsent), "main-turn-post-message-absent", "post", "post, notice, silence or postNotice")
	fs.StringVar(&s.Options.InstructionsIn, "instructions-in", "section", "section or body")
	fs.StringVar((*string)(&s.Options.ContextIn), "context-in", "text", "text or meta")
	fs.StringVar((*string)(&s.Options.AskIn), "ask-in", "main", "main or own")
	fs.TextVar(&level, "log-level", slog.LevelInfo, "log level: debug, info, warn or error")
	fs.BoolVar(&checkAgents, "check-agents", false, "start each configured agent, sign in, open a session, print one line per agent (ready, or what to do); exit non-zero if any is not ready")
	fs.StringVar(&metricsAddr, "metrics-addr", "", "Prometheus /metrics (and pprof, on a loopback address alone) on a listener of their own, e.g. 127.0.0.1:9188; off by default, never on -addr")
	fs.StringVar(&login, "login", "", "run the agent's own login with the HOME its back sessions use")
	if err := fs.Parse(args); err != nil {
		return err
	} else if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	} else if err := lease.CheckTTL(s.LeaseTTL); err != nil {
		return fmt.Errorf("-lease-ttl: %w", err)
	}
	quiet := checkAgents || login != "" // their lines say it all: logs only on request
	fs.Visit(func(f *flag.Flag) { quiet = quiet && f.Name != "log-level" })
	if quiet {
		level = slog.LevelError
	}
	s.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	s.UsersFile = orExisting(s.UsersFile, filepath.Join(s.ConfigDir, "users.json"))
	read, err := acp.ReadAgents(orExisting(agentsFile, filepath.Join(s.ConfigDir, "agents.json")), s.ConfigDir)
	if err != nil {
		return err
	}
	s.Agents = read
	s.LoginCommand = "go run ./examples/server -login "
	if s.ConfigDir != bots.DefaultConfigDir() {
		s.LoginCommand = "go run ./examples/server -config " + s.ConfigDir + " -login "
	}
	if login != "" {
		if len(read) == 0 {
			return fmt.Errorf("-login %s logs in an agent of the agents file, and this server has none: write %s (or give -agents FILE) naming %s - the README's \"Real agents\" shows one for Claude Code, Codex and Gemini CLI", login, filepath.Join(s.ConfigDir, "agents.json"), login)
		}
		if !isTerminal(os.Stdin) {
			return fmt.Errorf("-login %s runs the agent's own login, which asks you things on a terminal: run it in a terminal (its input here is not one)", login)
		}
		return s.LoginAgent(ctx, login, agents.Terminal{In: os.Stdin, Out: stdout, Err: os.Stderr})
	} else if checkAgents {
		return s.CheckAgents(ctx, stdout)
	}
	tp, flush, err := tracerFromEnv(ctx) // off unless OTEL_EXPORTER_OTLP_ENDPOINT is set
	if err != nil {
		return err
	}
	defer flush()
	if tp != nil {
		s.Tracer = tp
	}
	ln, err := s.Listen(addr) // refuses a non-loopback addr without -users
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%w: another program (another of these servers?) listens there; give this one another address with -addr, e.g. -addr 127.0.0.1:0 for any free port", err)
	}
	if err != nil {
		return err
	}
	defer s.Close()
	if metricsAddr != "" {
		if _, err := net.ResolveTCPAddr("tcp", metricsAddr); err != nil || metricsAddr == addr {
			return fmt.Errorf("-metrics-addr %q: give a host:port of its own, not -addr's", metricsAddr)
		}
		opsAddr, stopOps, err := serveOps(ctx, metricsAddr, s.Metrics(), s.Logger)
		if err != nil {
			return err
		}
		defer stopOps()
		s.RefuseAgentsOn(opsAddr) // its profiles and counters are the operator's
	}
	// Served at once: an initialize is answered while the bots load, and
	// what needs them waits for Start.
	serving, stopServing := context.WithCancel(ctx)
	defer stopServing()
	served := make(chan error, 1)
	go func() { served <- s.Serve(serving, ln) }()
	if err := s.Start(ctx); err != nil {
		stopServing()
		<-served
		return err
	}
	s.Logger.Info("serving bots", "addr", ln.Addr().String(), "config", s.ConfigDir, "root", s.Service().Root(), "users", s.UsersFile, "host", s.Service().HostName())
	if tok := s.LocalToken(); tok != "" {
		fmt.Fprintf(stdout, "listening on http://%s/?tkn=%s\n", ln.Addr(), tok)
	} else {
		fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())
	}
	return <-served
}

// orExisting is path, or def when path is "" and a file is at def.
func orExisting(path, def string) string {
	if _, err := os.Stat(def); path == "" && err == nil {
		return def
	}
	return path
}

// database is the PostgreSQL database at url, or none for "".
func database(url string) bots.Database {
	if url == "" {
		return nil
	}
	return postgres.Database{URL: url}
}
