package wake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"math"

	"github.com/agenthost/bots/chatlog"
)

// With logs that several instances share and that can be followed
// (LocalConfig.Shared and a chatlog.Shared: instances on one database),
// every LocalHost holds every back session: the one that writes a
// session's log (it started it, or took it over under the Waker's lease
// and read it back) runs it, and the others hold a copy that follows the
// log. The follower (follow) hears of every write to a back session's
// log; a copy reads the lines it has not applied and applies them in
// order through the same reducers, publishing each action to the
// session's and chat's subscribers here, so a client of any instance
// sees the same snapshots and the same actions in the same order, and
// listSessions lists every instance's back sessions. A log another
// instance makes is held when it is heard of; one it removes is let go.
//
// Only the host that writes a session's log takes actions on it: a copy
// refuses a client's dispatch with one sentence (elsewhereLocked), since
// a turn it would start or an answer it would take must reach the agent
// that runs the session, on another instance. The person answers, stops
// and steers a back turn from the chat with the bot, which hands it to
// the instance that runs it. A host that ran a session hears when another
// takes it over (a line it did not write): an idle copy that holds only
// what its log holds follows on from there (its agent closed, to be
// opened at its next turn here); one running a turn, or holding a line
// its log refused, is read again from the log and its channels end, so
// that their subscribers take a new snapshot.

// follow applies what other hosts write to the back sessions' logs until
// ctx ends.
func (h *LocalHost) follow(ctx context.Context) {
	err := h.sh.Follow(ctx, chatlog.Back, func(key chatlog.Key, n int64) {
		if key == (chatlog.Key{}) {
			h.resync(ctx)
			return
		}
		h.heard(ctx, key, n)
	})
	if err != nil && ctx.Err() == nil {
		h.log.Error("wake: the back sessions' logs are no longer followed", "err", err)
	}
}

// resync brings every session up to its log, after the follower may have
// missed writes (at its start, or after a dropped connection).
func (h *LocalHost) resync(ctx context.Context) {
	heads, err := h.sh.Heads(ctx, chatlog.Back)
	if err != nil {
		if ctx.Err() == nil {
			h.log.Warn("wake: the back sessions' logs could not be read again after a gap", "err", err)
		}
		return
	}
	h.mu.Lock()
	held := map[chatlog.Key]bool{}
	for _, s := range h.sessions {
		if s.logged {
			held[s.key] = true
		}
	}
	h.mu.Unlock()
	for key := range held {
		h.heard(ctx, key, heads[key]) // 0 when it is gone
	}
	for key, n := range heads {
		if !held[key] {
			h.heard(ctx, key, n)
		}
	}
}

// heard takes a write to the log of key, which now holds n lines (0: it
// was removed).
func (h *LocalHost) heard(ctx context.Context, key chatlog.Key, n int64) {
	h.swap.Lock()
	defer h.swap.Unlock()
	h.mu.Lock()
	s := h.sessions[key.Session]
	skip := h.closed || h.creating[key.Session] || (s == nil && h.disposed[key.Session])
	h.mu.Unlock()
	switch {
	case skip, s != nil && (!s.logged || s.key != key):
	case n == 0:
		if s != nil && !h.exists(ctx, key) {
			h.drop(s)
		}
	case s == nil:
		h.addCopy(ctx, key)
	default:
		s.mu.Lock()
		behind := int64(s.lines) < n && !s.gone
		s.mu.Unlock()
		if behind && !s.catchUp(ctx) {
			h.readAgain(ctx, s)
		}
	}
}

// exists reports whether the log of key is there; an error reading says
// it is.
func (h *LocalHost) exists(ctx context.Context, key chatlog.Key) bool {
	rctx, cancel := context.WithTimeout(ctx, logWait)
	defer cancel()
	_, err := h.sh.ReadAfter(rctx, key, math.MaxInt64)
	return !errors.Is(err, iofs.ErrNotExist)
}

// addCopy holds a copy of the session another host opened.
func (h *LocalHost) addCopy(ctx context.Context, key chatlog.Key) {
	s, err := h.readLog(ctx, key, false)
	if err != nil {
		if !errors.Is(err, iofs.ErrNotExist) && ctx.Err() == nil {
			h.log.Warn("wake: a back session's log is left out", "log", key, "reason", err)
		}
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.sessions[s.uri] != nil || h.creating[s.uri] || h.disposed[s.uri] {
		return
	}
	h.sessions[s.uri] = s
	h.chats[s.chat] = s
}

// drop lets go of a session whose log another host removed.
func (h *LocalHost) drop(s *localSession) {
	h.mu.Lock()
	held := h.sessions[s.uri] == s
	if held {
		delete(h.sessions, s.uri)
		delete(h.chats, s.chat)
	}
	h.mu.Unlock()
	if held {
		s.dispose()
	}
}

// readAgain replaces the session with a copy read from its log: another
// host writes it now, and this one's cannot follow on. Its channels end,
// so that their subscribers take a new snapshot.
func (h *LocalHost) readAgain(ctx context.Context, old *localSession) {
	fresh, err := h.readLog(ctx, old.key, false)
	if err != nil && !errors.Is(err, iofs.ErrNotExist) {
		if ctx.Err() == nil {
			h.log.Warn("wake: a back session another host took over could not be read again", "log", old.key, "err", err)
		}
		return
	}
	h.drop(old)
	if fresh == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed && h.sessions[fresh.uri] == nil {
		h.sessions[fresh.uri] = fresh
		h.chats[fresh.chat] = fresh
	}
}

// catchUp applies the lines of the session's log after the ones it
// holds, in order, publishing each action. It reports false when the
// session cannot follow on: it runs a turn, waits for an answer, or holds
// a line its log does not (readAgain then reads it over). A session that
// catches up lines is a copy from then on; the agent it had open is
// closed, to be opened again at its next turn here.
func (s *localSession) catchUp(ctx context.Context) bool {
	if s.h.sh == nil || !s.logged {
		return true
	}
	s.mu.Lock()
	ok, agent := s.catchUpLocked(ctx)
	s.mu.Unlock()
	if agent != nil {
		if err := agent.Close(); err != nil {
			s.h.log.Warn("wake: closing an agent failed", "session", s.uri, "err", err)
		}
	}
	return ok
}

// catchUpLocked is catchUp with s.mu held; it returns the agent to close.
func (s *localSession) catchUpLocked(ctx context.Context) (bool, Agent) {
	if s.gone {
		return true, nil
	}
	rctx, cancel := context.WithTimeout(ctx, logWait)
	raw, err := s.h.sh.ReadAfter(rctx, s.key, int64(s.lines))
	cancel()
	if err != nil {
		if !errors.Is(err, iofs.ErrNotExist) && ctx.Err() == nil { // removed: the follower hears it
			s.h.log.Warn("wake: a back session's new lines could not be read", "log", s.key, "err", err)
		}
		return true, nil
	}
	if len(raw) == 0 {
		return true, nil
	}
	lines := make([]*backLine, len(raw))
	theirs := false
	for i, r := range raw {
		var l backLine
		if err := json.Unmarshal(r, &l); err != nil {
			s.h.log.Warn("wake: back session log", "log", s.key, "problem", fmt.Sprintf("line %d: %v", s.lines+i+1, err))
			theirs = true
			continue
		}
		lines[i] = &l
		theirs = theirs || l.By != s.h.id
	}
	if !theirs {
		// Lines of this host's whose writes it could not confirm (the
		// database went away as it committed): it holds them already.
		s.lines += len(raw)
		return true, nil
	}
	if s.turn != nil || len(s.waits) > 0 || s.diverged {
		return false, nil
	}
	for _, l := range lines {
		s.lines++
		if l == nil || l.Action == nil {
			continue
		}
		switch l.Kind {
		case backChat:
			s.showChatLocked(*l.Action, nil)
		case backSession:
			s.showSessionLocked(*l.Action, nil)
		}
	}
	s.here = false
	agent := s.agent
	s.agent = nil
	return true, agent
}

// elsewhereLocked refuses an action on a session another host runs.
// Called with s.mu held.
func (s *localSession) elsewhereLocked() error {
	if s.h.sh == nil || s.here || !s.logged {
		return nil
	}
	return refused("this back session runs on another instance, which alone takes actions on it; answer, stop or steer it from the chat with the bot")
}
