package bots

import (
	"context"
	"fmt"

	"github.com/agenthost/bots/client"
)

// ClientAs returns a Go client of this server connected in memory as the
// person (a user id of the users directory), for code in the same process
// that acts for someone it authenticated itself, as a chat-network route
// does for the person its sender maps to. Every request is judged as that
// person's at the moment it is made, and the connection is revoked once
// the directory no longer has them. It ends when ctx is done or the
// server closes; close it when done. It fails before Start, without a
// users directory, and for an id the directory does not have.
func (s *Server) ClientAs(ctx context.Context, person string) (*client.Client, error) {
	s.init()
	s.mu.Lock()
	g, wire := s.gate, s.wire
	s.mu.Unlock()
	switch {
	case wire == nil:
		return nil, fmt.Errorf("bots: cannot connect as %q: the server has not started", person)
	case g.users == nil:
		return nil, fmt.Errorf("bots: cannot connect as %q: this server has no users directory", person)
	}
	p, ok := g.users.Principal(person)
	if !ok {
		return nil, fmt.Errorf("bots: cannot connect as %q: the users directory has no such person", person)
	}
	conn, err := wire.PipeAs(ctx, p, func() bool { _, ok := g.users.Principal(person); return ok })
	if err != nil {
		return nil, fmt.Errorf("bots: cannot connect as %q: %w", person, err)
	}
	c := client.New(conn, client.Options{Logger: s.log})
	if _, err := c.Initialize(ctx); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("bots: cannot connect as %q: %w", person, err)
	}
	return c, nil
}
