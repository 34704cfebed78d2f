// Package transport serves the Agent Host Protocol (AHP: JSON-RPC 2.0 over
// WebSocket) for a Host: an http.Handler that VS Code's agent host client,
// and any AHP client, can talk to.
//
// It handles what is the same for every host: token auth at the upgrade,
// one JSON-RPC message per text frame, initialize and version negotiation,
// ping, subscribe, unsubscribe, dispatchAction and reconnect over the
// session engine (package engine: the one global serverSeq, snapshots
// taken at a seq, a bounded replay buffer per client), resource methods
// routed by URI scheme, and the mapping of errcode codes to JSON-RPC
// numbers, which lives here alone.
//
// Each connection handles its messages one at a time, in order; its
// outgoing messages go through a bounded queue (an answer is written at
// once when nothing waits), and a connection that falls too far behind is
// closed, never the server nor another connection.
package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/telemetry"
)

// Config configures a Server. The zero value of each field but Host is a
// documented default.
type Config struct {
	// Host is the service behind the wire. Required.
	Host engine.Host
	// Bus carries the host's actions to subscribers. Nil makes a new one,
	// which Server.Bus returns; a host that publishes needs to be given
	// the same Bus.
	Bus *engine.Bus
	// Logger hears about connections, internal errors (once each, with
	// their detail) and clients closed for falling behind. Nil discards.
	Logger *slog.Logger
	// ReadLimit is the largest frame a client may send, in bytes; a
	// larger one closes that connection with status 1009. Zero means
	// 16 MiB.
	ReadLimit int64
	// SendQueue is how many outgoing messages a connection may have
	// waiting; a connection that has more is too far behind and is
	// closed. Zero means 4096.
	SendQueue int
	// ReplayBuffer is how many recent envelopes are kept per client for
	// reconnect. Zero means 1024; negative keeps none (a reconnect then
	// always gets fresh snapshots).
	ReplayBuffer int
	// ReplayRetention is how long a client's subscriptions and envelopes
	// are kept after its connection is gone, for a reconnect to resume.
	// Zero means one minute; negative drops them at once.
	ReplayRetention time.Duration
	// ServerInfo is the serverInfo of the initialize result. A zero Name
	// means "agenthost-bots".
	ServerInfo Implementation
	// Telemetry receives the server's series (connections, requests by
	// method and code, their latency) and a span per request; nil
	// records none.
	Telemetry *telemetry.Hub
}

// Implementation names a peer's software, as in initialize's serverInfo.
type Implementation struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	Title   string `json:"title,omitempty"`
}

// Server serves AHP for a Host. Create it with New; it is an http.Handler
// for the WebSocket endpoint, and Pipe connects without a socket. Close or
// Shutdown closes every connection, which http.Server.Shutdown does not.
type Server struct {
	cfg     Config
	host    engine.Host
	bus     *engine.Bus
	clients *engine.Clients // the records of this server's clients
	log     *slog.Logger

	base   context.Context // parent of every connection; cancelled by Close
	cancel context.CancelFunc

	stopAuth func() // stops the host's AuthWatcher calls; idempotent

	mu      sync.Mutex
	conns   map[*conn]struct{}
	closed  bool
	wg      sync.WaitGroup // connection goroutines
	nextID  atomic.Uint64
	anonIDs atomic.Uint64
	meters  meters
}

// New validates cfg, fills its defaults and returns a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Host == nil {
		return nil, errors.New("transport: no host")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ReadLimit < 0 {
		return nil, fmt.Errorf("transport: negative read limit %d", cfg.ReadLimit)
	}
	if cfg.ReadLimit == 0 {
		cfg.ReadLimit = 16 << 20
	}
	if cfg.SendQueue < 0 {
		return nil, fmt.Errorf("transport: negative send queue %d", cfg.SendQueue)
	}
	if cfg.SendQueue == 0 {
		cfg.SendQueue = 4096
	}
	switch {
	case cfg.ReplayBuffer == 0:
		cfg.ReplayBuffer = 1024
	case cfg.ReplayBuffer < 0:
		cfg.ReplayBuffer = 0
	}
	if cfg.ReplayRetention == 0 {
		cfg.ReplayRetention = time.Minute
	}
	if cfg.ServerInfo.Name == "" {
		cfg.ServerInfo.Name = "agenthost-bots"
	}
	if cfg.Bus == nil {
		cfg.Bus = engine.NewBus(cfg.Logger)
	}
	base, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg:  cfg,
		host: cfg.Host,
		bus:  cfg.Bus,
		clients: cfg.Bus.Clients(engine.ClientOptions{
			Replay:    cfg.ReplayBuffer,
			Hold:      max(cfg.ReplayBuffer, cfg.SendQueue),
			Retention: cfg.ReplayRetention,
		}),
		log:      cfg.Logger,
		base:     base,
		cancel:   cancel,
		conns:    map[*conn]struct{}{},
		stopAuth: func() {},
	}
	s.meters = newMeters(cfg.Telemetry, s)
	if aw, ok := cfg.Host.(engine.AuthWatcher); ok {
		s.stopAuth = sync.OnceFunc(aw.WatchAuth(s.Reauthenticate))
	}
	return s, nil
}

// Bus returns the Bus the server delivers from.
func (s *Server) Bus() *engine.Bus { return s.bus }

// ErrClosed is returned by Pipe after Close or Shutdown.
var ErrClosed = errors.New("transport: server closed")

// tokenOf returns the token a request presents: the Authorization Bearer
// header, else the tkn query parameter.
func tokenOf(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(tok)
		}
	}
	return r.URL.Query().Get("tkn")
}

// ownOrigin reports whether r comes from no page (it has no Origin, as
// VS Code's client and other programs do not send one) or from a page this
// server served: an http or https origin whose host and port are the
// request's Host. A page of any other origin is refused, whatever token it
// presents: a browser sends the Origin of the page that opened the
// WebSocket, and no page script can change it.
func ownOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" &&
		u.Path == "" && u.User == nil && u.RawQuery == "" && strings.EqualFold(u.Host, r.Host)
}

// ServeHTTP authenticates the request's token, upgrades it to a WebSocket
// and returns, serving AHP on it from a goroutine of its own until either
// side closes (the request's memory is not held for the connection's
// life; Close and Shutdown end the connection). An upgrade whose Origin is
// present and not the server's own (ownOrigin) is refused with 403, and a
// wrong token, or a missing one where the host requires one, with 401,
// both before the upgrade; after Close or Shutdown every request is
// refused with 503.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		http.Error(w, "server shutting down", http.StatusServiceUnavailable)
		return
	}
	if !ownOrigin(r) {
		http.Error(w, fmt.Sprintf("refused a WebSocket from the page at %q: only pages this server serves at %q may open one", r.Header.Get("Origin"), r.Host), http.StatusForbidden)
		return
	}
	token := tokenOf(r)
	p, ok := s.host.Authenticate(token)
	if !ok {
		s.meters.conns.Inc("unauthenticated")
		w.Header().Set("WWW-Authenticate", `Bearer realm="agent host"`)
		http.Error(w, "invalid or missing token", http.StatusUnauthorized)
		return
	}
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		s.log.Info("websocket upgrade failed", "remote", r.RemoteAddr, "err", err)
		return // Accept has answered the request
	}
	ws.SetReadLimit(s.cfg.ReadLimit)
	c, err := s.newConn(p, token, &wsWire{ws: ws}, r.RemoteAddr)
	if err != nil {
		_ = ws.Close(websocket.StatusGoingAway, "server shutting down")
		return
	}
	if !s.holds(c) {
		s.meters.conns.Inc("revoked")
		s.unregister(c)
		_ = ws.Close(websocket.StatusPolicyViolation, revokedReason)
		return
	}
	s.meters.conns.Inc("accepted")
	// the end of the connection's context ends a blocked read or write.
	context.AfterFunc(c.ctx, func() { _ = ws.CloseNow() })
	go func() {
		defer s.wg.Done()
		c.serve()
	}()
}

// Pipe connects to the server in memory, presenting token as a client
// would at the upgrade, and returns the client's end: it speaks the same
// JSON-RPC messages as a WebSocket, one per Send and Recv. A refused token
// is an errcode.Unauthenticated error. The connection ends when either end
// closes, when ctx is done, or when the server closes.
func (s *Server) Pipe(ctx context.Context, token string) (*Conn, error) {
	p, ok := s.host.Authenticate(token)
	if !ok {
		return nil, errcode.New(errcode.Unauthenticated, "invalid or missing token")
	}
	return s.pipe(ctx, p, token, nil)
}

// PipeAs connects to the server in memory as p, for a caller that
// authenticated the person itself (a chat-network route, whose sender maps
// to a person): no token is presented. valid is asked wherever a token
// would be asked again (at once, and at every Reauthenticate): once it
// answers false the connection is revoked as a refused token's is. Every
// request is judged with the principal the host gives now, as on any
// connection.
func (s *Server) PipeAs(ctx context.Context, p access.Principal, valid func() bool) (*Conn, error) {
	if valid == nil {
		return nil, errcode.New(errcode.Invalid, "PipeAs needs a valid function")
	}
	return s.pipe(ctx, p, "", valid)
}

func (s *Server) pipe(ctx context.Context, p access.Principal, token string, valid func() bool) (*Conn, error) {
	w := newPipeWire(s.cfg.ReadLimit)
	c, err := s.newConn(p, token, w, "pipe")
	if err != nil {
		return nil, err
	}
	c.valid = valid
	if !s.holds(c) {
		s.unregister(c)
		return nil, errcode.New(errcode.Unauthenticated, "invalid or missing token")
	}
	stop := context.AfterFunc(ctx, func() { w.closeWith(websocket.StatusGoingAway, "context done") })
	go func() {
		defer s.wg.Done()
		defer stop()
		c.serve()
	}()
	return &Conn{w: w}, nil
}

// newConn registers a connection; the caller must call s.wg.Done when it
// has served it.
func (s *Server) newConn(p access.Principal, token string, w wire, remote string) (*conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	id := s.nextID.Add(1)
	ctx, cancel := context.WithCancel(s.base)
	_, socket := w.(*wsWire)
	c := &conn{
		srv:       s,
		id:        id,
		w:         w,
		principal: p,
		token:     token,
		ctx:       ctx,
		cancel:    cancel,
		directOK:  socket, // a pipe's write waits for its client: queue
		log:       slog.New(&connHandler{h: s.log.Handler(), id: id, principal: p, remote: remote}),
	}
	c.out = newSendQueue(s.cfg.SendQueue, c.writeLoop)
	c.link = s.clients.Link(c)
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	return c, nil
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// Close closes every connection at once and drops every client's
// subscriptions; it does not wait for their goroutines. It is idempotent.
// New connections are refused afterwards.
func (s *Server) Close() error {
	conns := s.stop()
	for _, c := range conns {
		c.fail(websocket.StatusGoingAway, "server closed", false)
	}
	s.cancel()
	s.clients.Close()
	return nil
}

// Shutdown closes every connection gracefully: each gets what was queued
// for it, then a close frame with status 1001, and Shutdown waits for them
// to end. When ctx is done first, the rest are closed at once and ctx's
// error is returned. New connections are refused from the start.
func (s *Server) Shutdown(ctx context.Context) error {
	conns := s.stop()
	for _, c := range conns {
		c.closeAfterQueue(websocket.StatusGoingAway, "server shutting down")
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		for _, c := range conns {
			c.fail(websocket.StatusGoingAway, "server shutting down", false)
		}
	}
	s.cancel()
	s.clients.Close()
	return err
}

func (s *Server) stop() []*conn {
	s.stopAuth()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	return conns
}
