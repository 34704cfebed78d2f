package bot

import "github.com/agenthost/bots/replica"

// SetChatWindow sets how many ended turns the service's chats hold in
// memory and how many one fetchTurns answers, for tests of the window; the
// chats already open (replayed) keep that many from now on.
func SetChatWindow(s *Service, keep, page int) {
	c := s.chats
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pub.Keep, c.page = keep, page
	for _, ch := range c.bySession {
		ch.Lock()
		ss, cs, dropped := ch.State()
		cs, dropped = replica.Window(cs, dropped, keep, true)
		ch.Reset(ss, cs, dropped)
		ch.Unlock()
	}
}
