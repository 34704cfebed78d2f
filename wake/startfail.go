package wake

import (
	"errors"
	"sync"
)

// startFailures keeps, per (bot, person, name), the failure of the last
// back session start that failed, so that the messages that waited on that
// start fail at once with its failure rather than each waiting out a start
// of its own.
type startFailures struct {
	mu sync.Mutex
	m  map[string]*failure
}

// last is the key's last start failure, or nil.
func (s *startFailures) last(key string) *failure {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key]
}

// set keeps f as the key's last start failure; nil forgets it (a start
// succeeded).
func (s *startFailures) set(key string, f *failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f == nil {
		delete(s.m, key)
		return
	}
	if s.m == nil {
		s.m = map[string]*failure{}
	}
	s.m[key] = f
}

// ErrNotStarted is matched (errors.Is) by an Agent.Turn error when the
// agent could not be started for the turn: the messages waiting behind the
// turn then fail with the same error at once, rather than each waiting out
// a start of its own.
var ErrNotStarted = errors.New("the agent could not be started")
