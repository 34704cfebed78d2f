package pgrecord

// ListenerPID is the backend pid of the feed's listening connection, for
// tests that drop it.
func (s *Store) ListenerPID() uint32 { return s.listener.Load() }
