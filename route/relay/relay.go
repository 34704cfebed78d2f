// Package relay runs routes: it keeps one live connection to each network
// a route needs, and passes each message said on a routed scope to the
// route's bot, as a turn of the person its sender maps to, in that
// person's chat with the bot; the bot's replies, questions and approvals
// go back to the network.
//
// The relay is a client of the server like any other: it opens a chat over
// an in-process connection acting as the person (Config.Open), so every
// message is judged with that person's rights at that moment, and the chat
// is logged, replayed and seen on the page as any chat is. A message from
// a network is never an instruction to the relay, except the commands a
// person types in the chat itself: /stop, /approve, /deny, or the number
// of an option.
package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/bots/client"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/route"
	"github.com/agenthost/bots/telemetry"
)

// Config is what a Relay needs.
type Config struct {
	// Store keeps the connections and routes; the relay follows its
	// Watch, so a change takes effect without a restart. Required.
	Store route.Store
	// Networks are the adapters the host offers. A connection whose
	// network is not among them is reported failing.
	Networks []route.Network
	// People maps a sender's identity to a person. It is asked at every
	// message, so a change to the users file counts at once. Required.
	People route.People
	// Open opens a client of the server acting as the person (a user id
	// of the users file). The relay keeps one per person and opens
	// another once it fails. Required.
	Open func(ctx context.Context, person string) (*client.Client, error)
	// Secret resolves one of a connection's credential references (see
	// route.Connection.Secrets). Its errors hold no secret. Nil resolves
	// none: a connection that names a credential then fails to dial.
	Secret func(ctx context.Context, ref string) (string, error)
	// Scrub removes credentials from every text the relay sends to a
	// network; nil sends text as it is.
	Scrub func(string) string
	// Memory keeps, per connection, which chat each scope talks in and
	// which messages it has passed on, so that a restart or a takeover
	// answers nothing twice, and the pairings: files in a folder
	// (fileroute.NewMemory), the database the instances share
	// (pgroute.Memory), or memory alone (memroute.Memory). Required.
	Memory Memory
	// Logger receives the relay's logs; nil discards them.
	Logger *slog.Logger
	// Telemetry, when set, receives the relay's series: ConnectionsSeries
	// and MessagesSeries.
	Telemetry *telemetry.Hub
	// MinBackoff and MaxBackoff bound the wait between two dials of a
	// connection that fails; zero means 1s and 1m.
	MinBackoff, MaxBackoff time.Duration
	// Leases, when set, make exactly one of the instances sharing them
	// hold each connection: the one that holds the lease "route:<id>"
	// (renewed every LeaseTTL/3). The others wait, and one takes the
	// connection over within LeaseTTL of the holder's death. Holder names
	// this instance and is required with Leases; zero LeaseTTL is
	// lease.DefaultTTL.
	Leases   lease.Leases
	Holder   string
	LeaseTTL time.Duration
}

// Relay runs the routes of a Store. Start it with Start; Close stops it
// and waits for everything it started.
type Relay struct {
	cfg      Config
	log      *slog.Logger
	networks map[string]route.Network

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	workers map[string]*worker        // by connection id
	clients map[string]*client.Client // by person
	states  map[string]route.State    // by connection id
	nets    map[string]string         // each connection's network, by id
	mem     Memory

	messages *telemetry.Series // MessagesSeries; nil without Config.Telemetry
}

// Start checks cfg and starts relaying in the background: it lists the
// store's connections and routes now and after every change it reports.
func Start(ctx context.Context, cfg Config) (*Relay, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("relay: Config.Store is required")
	case cfg.People == nil:
		return nil, errors.New("relay: Config.People is required")
	case cfg.Open == nil:
		return nil, errors.New("relay: Config.Open is required")
	case cfg.Memory == nil:
		return nil, errors.New("relay: Config.Memory is required (memroute.Memory forgets at the end)")
	case cfg.Leases != nil && cfg.Holder == "":
		return nil, errors.New("relay: Config.Holder is required with Leases")
	}
	if err := lease.CheckTTL(cfg.LeaseTTL); err != nil {
		return nil, fmt.Errorf("relay: Config.LeaseTTL: %w", err)
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = lease.DefaultTTL
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = time.Second
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = time.Minute
	}
	cfg.MaxBackoff = max(cfg.MaxBackoff, cfg.MinBackoff)
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Relay{cfg: cfg, log: log, networks: map[string]route.Network{},
		done: make(chan struct{}), workers: map[string]*worker{},
		clients: map[string]*client.Client{}, states: map[string]route.State{}, nets: map[string]string{}}
	for _, n := range cfg.Networks {
		r.networks[n.Name()] = n
	}
	r.measure(cfg.Telemetry)
	r.mem = cfg.Memory
	r.ctx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))
	changes, err := cfg.Store.Watch(r.ctx)
	if err != nil {
		r.cancel()
		return nil, fmt.Errorf("relay: cannot watch the routes: %w", err)
	}
	go r.run(changes)
	return r, nil
}

// Close stops every connection and waits for the relay's goroutines.
func (r *Relay) Close() error {
	r.cancel()
	<-r.done
	return nil
}

// HookPrefix is the path under which ServeHTTP takes a network's
// requests: HookPrefix + "<connection id>".
const HookPrefix = "/hooks/"

// ServeHTTP hands a network's request (a Slack event, say) to the live
// connection its path names, when that connection takes requests (an
// adapter whose Conn is an http.Handler); 404 when none does, 503 while
// it is not connected.
func (r *Relay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	id, _, _ := strings.Cut(strings.TrimPrefix(req.URL.Path, HookPrefix), "/")
	r.mu.Lock()
	wk := r.workers[id]
	r.mu.Unlock()
	if wk == nil {
		http.Error(w, fmt.Sprintf("no chat-network connection %q runs here", id), http.StatusNotFound)
		return
	}
	wk.mu.Lock()
	live := wk.live
	wk.mu.Unlock()
	h, ok := live.(http.Handler)
	switch {
	case live == nil:
		w.Header().Set("Retry-After", "5")
		http.Error(w, fmt.Sprintf("the connection %q is not connected now", id), http.StatusServiceUnavailable)
	case !ok:
		http.Error(w, fmt.Sprintf("the connection %q takes no requests", id), http.StatusNotFound)
	default:
		h.ServeHTTP(w, req)
	}
}

// Probe reports whether the connection id works now: nil when it is
// connected, its failure when it is failing, and otherwise (no enabled
// route uses it yet) the outcome of a dial made for the probe and closed
// at once. A preflight asks it of a connection no route runs yet.
func (r *Relay) Probe(ctx context.Context, id string) error {
	r.mu.Lock()
	st, known := r.states[id]
	r.mu.Unlock()
	switch {
	case known && st.State == route.Connected:
		return nil
	case known && st.State == route.Failing:
		return errors.New(st.Reason)
	case known && (st.State == route.Connecting || st.State == route.Elsewhere):
		return nil // a worker is on it, here or on another instance
	}
	conns, err := r.cfg.Store.Connections(ctx)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(conns, func(c route.Connection) bool { return c.ID == id })
	switch {
	case i < 0:
		return fmt.Errorf("there is no connection %q", id)
	case r.networks[conns[i].Network] == nil:
		return fmt.Errorf("this host has no adapter for the network %q", conns[i].Network)
	}
	w := newWorker(r, conns[i])
	defer w.cancel()
	c, err := w.dial()
	if err != nil {
		return err
	}
	return c.Close()
}

// States returns how each connection of the store stands, by id.
func (r *Relay) States() map[string]route.State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.states)
}

func (r *Relay) setState(id string, state route.ConnState, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.states[id]; ok && s.State == state && s.Reason == reason {
		return
	}
	r.states[id] = route.State{Connection: id, State: state, Reason: reason, Since: time.Now()}
}

// run follows the store until Close.
func (r *Relay) run(changes <-chan struct{}) {
	defer close(r.done)
	defer r.stopAll()
	for {
		r.reload()
		select {
		case <-r.ctx.Done():
			return
		case _, ok := <-changes:
			if !ok {
				return
			}
		}
	}
}

// reload starts, restarts and stops workers to match the store.
func (r *Relay) reload() {
	conns, err := r.cfg.Store.Connections(r.ctx)
	if err != nil {
		r.log.Warn("cannot list the connections", "err", err)
		return
	}
	routes, err := r.cfg.Store.Routes(r.ctx)
	if err != nil {
		r.log.Warn("cannot list the routes", "err", err)
		return
	}
	byConn := map[string][]route.Route{}
	for _, rt := range routes {
		if rt.Enabled {
			byConn[rt.Connection] = append(byConn[rt.Connection], rt)
		}
	}
	want := map[string]route.Connection{}
	r.mu.Lock()
	clear(r.nets)
	for _, c := range conns {
		r.nets[c.ID] = c.Network
	}
	r.mu.Unlock()
	for _, c := range conns {
		switch {
		case !c.Enabled:
			r.setState(c.ID, route.Off, "the connection is disabled")
		case len(byConn[c.ID]) == 0:
			r.setState(c.ID, route.Off, "no enabled route uses it")
		case r.networks[c.Network] == nil:
			r.setState(c.ID, route.Failing, fmt.Sprintf("this host has no adapter for the network %q", c.Network))
		default:
			want[c.ID] = c
		}
	}
	r.mu.Lock()
	var old []*worker
	for id, w := range r.workers {
		if c, ok := want[id]; !ok || !sameConnection(c, w.conn) {
			old = append(old, w)
			delete(r.workers, id)
		}
	}
	r.mu.Unlock()
	stop(old)
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := range r.states {
		if !slices.ContainsFunc(conns, func(c route.Connection) bool { return c.ID == id }) {
			delete(r.states, id)
		}
	}
	for id, c := range want {
		w := r.workers[id]
		if w == nil {
			w = newWorker(r, c)
			r.workers[id] = w
			w.routes.Store(ptr(byConn[id]))
			w.start()
			continue
		}
		w.routes.Store(ptr(byConn[id]))
	}
}

func ptr[T any](v T) *T { return &v }

func sameConnection(a, b route.Connection) bool {
	return a.Network == b.Network && maps.Equal(a.Settings, b.Settings) && maps.Equal(a.Secrets, b.Secrets)
}

// stop ends the workers ws' connections all at once (a goodbye can take a
// moment: an IRC server's letting the nick go), and waits for them and
// their turns.
func stop(ws []*worker) {
	for _, w := range ws {
		w.cancel()
	}
	for _, w := range ws {
		<-w.done
	}
}

func (r *Relay) stopAll() {
	r.mu.Lock()
	ws := slices.Collect(maps.Values(r.workers))
	r.workers = map[string]*worker{}
	r.mu.Unlock()
	stop(ws)
	r.mu.Lock()
	cs := slices.Collect(maps.Values(r.clients))
	r.clients = map[string]*client.Client{}
	r.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
	}
}

// client returns the person's client, opening one when there is none.
func (r *Relay) client(person string) (*client.Client, error) {
	r.mu.Lock()
	c := r.clients[person]
	r.mu.Unlock()
	if c != nil {
		return c, nil
	}
	c, err := r.cfg.Open(r.ctx, person)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.clients[person]; old != nil {
		_ = c.Close()
		return old, nil
	}
	r.clients[person] = c
	return c, nil
}

// dropClient forgets the person's client c after it failed, so the next
// message opens another.
func (r *Relay) dropClient(person string, c *client.Client) {
	r.mu.Lock()
	if r.clients[person] == c {
		delete(r.clients, person)
	} else {
		c = nil
	}
	r.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
}

func (r *Relay) scrub(s string) string {
	if r.cfg.Scrub == nil {
		return s
	}
	return r.cfg.Scrub(s)
}
