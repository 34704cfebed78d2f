package bot

// SetChatWindow sets how many ended turns the service's chats hold in
// memory and how many one fetchTurns answers, for tests of the window; the
// chats already open (replayed) keep that many from now on.
func SetChatWindow(s *Service, keep, page int) {
	c := s.chats
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keep, c.page = keep, page
	for _, ch := range c.bySession {
		ch.writing.Lock()
		ch.mu.Lock()
		ch.cstate, ch.dropped = window(ch.cstate, ch.dropped, keep)
		ch.mu.Unlock()
		ch.writing.Unlock()
	}
}
