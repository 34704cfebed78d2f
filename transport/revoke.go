package transport

import "github.com/coder/websocket"

// revokedReason is the close reason of a connection whose token no
// longer authenticates it.
const revokedReason = "token no longer valid: the users file no longer gives it to this user"

// Reauthenticate asks the host again about every open connection's token,
// and closes each connection whose token is refused now or names someone
// else than it did at the upgrade: its subscriptions end at once, and the
// client gets a close frame with status 1008 and a reason naming the
// token. A change of what the same person may do leaves the connection
// open, since every request is judged with the principal the host gives
// now. The Server calls it on each change an AuthWatcher host reports;
// a host without one may call it itself. It does not block on clients.
func (s *Server) Reauthenticate() {
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		if !s.holds(c) {
			c.revoke()
		}
	}
}

// holds reports whether c's token still authenticates it as the principal
// it was given at the upgrade. ServeHTTP and Pipe ask once more after
// registering a connection: a change between the upgrade's Authenticate
// and the registration would otherwise escape Reauthenticate.
func (s *Server) holds(c *conn) bool {
	if c.valid != nil {
		return c.valid()
	}
	p, ok := s.host.Authenticate(c.token)
	return ok && p.Root == c.principal.Root && p.User == c.principal.User
}

// unregister undoes newConn for a connection never served.
func (s *Server) unregister(c *conn) {
	s.forget(c)
	c.cancel()
	s.wg.Done()
}

// revoke ends c's subscriptions and closes it with revokedReason once what
// was queued before is sent: nothing published from now on reaches it.
func (c *conn) revoke() {
	c.link.Revoke()
	c.log.Info("closing connection: its token no longer authenticates", "client", c.clientID)
	c.closeAfterQueue(websocket.StatusPolicyViolation, revokedReason)
}
