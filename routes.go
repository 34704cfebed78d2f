package bots

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/connector"
	"github.com/agenthost/bots/route"
	"github.com/agenthost/bots/route/relay"
)

// RouteStateDir is the folder under ConfigDir where the routes' relay
// keeps, per connection, which chat each scope talks in and which
// messages it has passed on, and the pairings (with Database: in the
// database instead).
const RouteStateDir = "routes-state"

// startRelay runs the routes when the server has them, networks to run
// them on, and people to map senders to; without people it says so only
// when routes were made. Called with s.mu held, once the gate is open.
func (s *Server) startRelay(ctx context.Context, users bot.Users) error {
	if s.routes == nil || len(s.Networks) == 0 {
		return nil
	}
	people, ok := users.(route.People)
	if !ok {
		// A server of one person (its local token) has nobody to map a
		// sender to: that is only worth saying when routes were made.
		rs, err := s.routes.Routes(ctx)
		if err != nil {
			return fmt.Errorf("list the routes: %w", err)
		}
		if len(rs) == 0 {
			return nil
		}
		return errors.New("routes need a users directory that maps network identities to people (a users file's identities); this server has none")
	}
	vault := s.vault
	rl, err := relay.Start(ctx, relay.Config{
		Store:    s.routes,
		Networks: s.Networks,
		People:   people,
		Open:     s.ClientAs,
		Secret: func(ctx context.Context, ref string) (string, error) {
			r, err := connector.ParseRef(ref)
			if err != nil {
				return "", err
			}
			c, err := vault.Resolve(ctx, r)
			if err != nil {
				return "", err
			}
			s.scrub.Add(c.Value())
			return c.Value(), nil
		},
		Scrub:     s.scrub.String,
		Memory:    s.routeMemory,
		Logger:    s.log.With("part", "routes"),
		Telemetry: s.hub,
		// With a database, one instance holds each connection.
		Leases: s.leases, Holder: s.holder, LeaseTTL: s.LeaseTTL,
	})
	if err != nil {
		return err
	}
	s.relay = rl
	return nil
}

// stopRelay stops the routes, before the wire their chats use closes.
func (s *Server) stopRelay() {
	s.mu.Lock()
	rl := s.relay
	s.relay = nil
	s.mu.Unlock()
	if rl != nil {
		rl.Close()
	}
}

// serveHook hands a chat network's request under /hooks/<connection> to
// the relay (relay.Relay.ServeHTTP): Slack's events and button presses.
func (s *Server) serveHook(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	rl := s.relay
	s.mu.Unlock()
	if rl == nil {
		w.Header().Set("Retry-After", "5")
		http.Error(w, "no chat-network route runs on this server now", http.StatusServiceUnavailable)
		return
	}
	rl.ServeHTTP(w, r)
}

// routePair pairs a chat account with a person through the relay.
func (s *Server) routePair(_ context.Context, person, code string) (string, error) {
	s.mu.Lock()
	rl := s.relay
	s.mu.Unlock()
	if rl == nil {
		return "", errors.New("no chat-network route runs on this server now, so no code waits")
	}
	return rl.Pair(person, code)
}

// routePaired is the person an identity was paired with, through the
// relay.
func (s *Server) routePaired(ctx context.Context, identity string) (string, bool) {
	s.mu.Lock()
	rl := s.relay
	s.mu.Unlock()
	if rl == nil {
		return "", false
	}
	return rl.Paired(ctx, identity)
}

// routePairings lists the pairings of person (everyone's for "") through
// the relay.
func (s *Server) routePairings(ctx context.Context, person string) ([]route.Pairing, error) {
	s.mu.Lock()
	rl := s.relay
	s.mu.Unlock()
	if rl == nil {
		return []route.Pairing{}, nil
	}
	return rl.Pairings(ctx, person)
}

// routeUnpair lets go of a pairing through the relay.
func (s *Server) routeUnpair(ctx context.Context, person, identity string) error {
	s.mu.Lock()
	rl := s.relay
	s.mu.Unlock()
	if rl == nil {
		return route.ErrNotPaired
	}
	return rl.Unpair(ctx, person, identity)
}

// routeProbe tries a connection through the relay, for a preflight.
func (s *Server) routeProbe(ctx context.Context, connection string) error {
	s.mu.Lock()
	rl := s.relay
	s.mu.Unlock()
	if rl == nil {
		return errors.New("no chat-network route runs on this server now")
	}
	return rl.Probe(ctx, connection)
}

// RouteStates returns how each chat-network connection stands, by id:
// connected, or failing and why; nil when no route runs.
func (s *Server) RouteStates() map[string]route.State {
	s.mu.Lock()
	rl := s.relay
	s.mu.Unlock()
	if rl == nil {
		return nil
	}
	return rl.States()
}
