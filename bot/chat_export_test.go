package bot

// SetChatWindow sets how many ended turns the service's chats hold in
// memory and how many one fetchTurns answers, for tests of the window; the
// chats already open (replayed) keep that many from now on.
func SetChatWindow(s *Service, keep, page int) { s.chats.SetWindow(keep, page) }
