package local

import (
	"context"
	"encoding/json"
	"errors"
	iofs "io/fs"
	"math"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/replica"
	"github.com/agenthost/bots/wake"
)

// With logs that several instances share and that can be followed
// (Config.Shared and a chatlog.Shared: instances on one database),
// every Host holds every back session: the one that writes a
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
// The host that runs a session writes its log; every line goes in at the
// count of lines its writer holds (AppendAt), so that writers are
// ordered by the log. A copy takes one kind of client action: an answer
// (to a question, a confirmation, a client tool's result), checked
// against the chat as the log is and appended at the copy's count
// (answerElsewhereLocked); the runner hears it and hands it to the turn
// that waits for it, and a runner whose own append finds an answer
// before it takes the answer in first (takeAnswersLocked). Any other
// action on a copy is refused with one sentence (elsewhereLocked): a
// stop or a message must change what the runner does mid-turn, and the
// chat with the bot carries those to it. A host that ran a session hears
// when another takes it over (a line that is neither its own nor an
// answer): an idle copy that holds only what its log holds follows on
// from there (its agent closed, to be opened at its next turn here); one
// running a turn, or holding a line its log refused, is read again from
// the log and its channels end, so that their subscribers take a new
// snapshot.

// follow applies what other hosts write to the back sessions' logs until
// ctx ends.
func (h *Host) follow(ctx context.Context) {
	if err := replica.Follow(ctx, h.sh, chatlog.Back, h, h.log); err != nil {
		h.log.Error("wake: the back sessions' logs are no longer followed", "err", err)
	}
}

// Held returns the keys of the logs of the sessions the host holds
// (replica.Follower).
func (h *Host) Held() []chatlog.Key {
	h.mu.Lock()
	defer h.mu.Unlock()
	var keys []chatlog.Key
	for _, s := range h.sessions {
		if s.logged {
			keys = append(keys, s.tail.Key)
		}
	}
	return keys
}

// Heard takes a write to the log of key, which now holds n lines (0: it
// was removed) (replica.Follower).
func (h *Host) Heard(ctx context.Context, key chatlog.Key, n int64) {
	h.swap.Lock()
	defer h.swap.Unlock()
	h.mu.Lock()
	s := h.sessions[key.Session]
	skip := h.closed || h.creating[key.Session] || (s == nil && h.disposed[key.Session])
	h.mu.Unlock()
	switch {
	case skip, s != nil && (!s.logged || s.tail.Key != key):
	case n == 0:
		if s != nil && !h.exists(ctx, key) {
			h.drop(s)
		}
	case s == nil:
		h.addCopy(ctx, key)
	default:
		s.Lock()
		behind := s.tail.Lines < n && !s.Gone()
		s.Unlock()
		if behind && !s.catchUp(ctx) {
			h.readAgain(ctx, s)
		}
	}
}

// exists reports whether the log of key is there; an error reading says
// it is.
func (h *Host) exists(ctx context.Context, key chatlog.Key) bool {
	rctx, cancel := context.WithTimeout(ctx, replica.Wait)
	defer cancel()
	_, err := h.sh.ReadAfter(rctx, key, math.MaxInt64)
	return !errors.Is(err, iofs.ErrNotExist)
}

// addCopy holds a copy of the session another host opened.
func (h *Host) addCopy(ctx context.Context, key chatlog.Key) {
	s, err := h.readLog(ctx, key, false)
	if err != nil {
		if !errors.Is(err, iofs.ErrNotExist) && ctx.Err() == nil {
			h.log.Warn("wake: a back session's log is left out", "log", key, "reason", err)
		}
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.sessions[s.SessionURI] != nil || h.creating[s.SessionURI] || h.disposed[s.SessionURI] {
		return
	}
	h.sessions[s.SessionURI] = s
	h.chats[s.ChatURI] = s
}

// drop lets go of a session whose log another host removed.
func (h *Host) drop(s *localSession) {
	h.mu.Lock()
	held := h.sessions[s.SessionURI] == s
	if held {
		delete(h.sessions, s.SessionURI)
		delete(h.chats, s.ChatURI)
	}
	h.mu.Unlock()
	if held {
		s.dispose()
	}
}

// readAgain replaces the session with a copy read from its log: another
// host writes it now, and this one's cannot follow on. Its channels end,
// so that their subscribers take a new snapshot.
func (h *Host) readAgain(ctx context.Context, old *localSession) {
	fresh, err := h.readLog(ctx, old.tail.Key, false)
	if err != nil && !errors.Is(err, iofs.ErrNotExist) {
		if ctx.Err() == nil {
			h.log.Warn("wake: a back session another host took over could not be read again", "log", old.tail.Key, "err", err)
		}
		return
	}
	h.drop(old)
	if fresh == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed && h.sessions[fresh.SessionURI] == nil {
		h.sessions[fresh.SessionURI] = fresh
		h.chats[fresh.ChatURI] = fresh
	}
}

// catchUp applies the lines of the session's log after the ones it
// holds, in order, publishing each action. It reports false when the
// session cannot follow on: it runs a turn, waits for an answer, or holds
// a line its log does not (readAgain then reads it over), unless the
// lines are only answers, which the host that runs the session takes
// (handing each to the turn that waits for it) and any copy applies. A
// session that catches up other lines is a copy from then on; the agent
// it had open is closed, to be opened again at its next turn here.
func (s *localSession) catchUp(ctx context.Context) bool {
	if s.h.sh == nil || !s.logged {
		return true
	}
	s.Lock()
	ok, agent := s.catchUpLocked(ctx, false)
	s.Unlock()
	if agent != nil {
		if err := agent.Close(); err != nil {
			s.h.log.Warn("wake: closing an agent failed", "session", s.SessionURI, "err", err)
		}
	}
	return ok
}

// takeAnswersLocked applies the lines another host wrote after the ones
// the session holds, when they are only answers; it reports false when
// they are not (another host runs the session now) or cannot be read.
// Called with s locked, by a write that found the log longer.
func (s *localSession) takeAnswersLocked() bool {
	ok, _ := s.catchUpLocked(context.Background(), true)
	return ok
}

// catchUpLocked is catchUp with s locked, answers alone when
// answersOnly; it returns the agent to close.
func (s *localSession) catchUpLocked(ctx context.Context, answersOnly bool) (bool, wake.Agent) {
	if s.Gone() {
		return !answersOnly, nil
	}
	raw, err := s.tail.ReadNew(ctx)
	if err != nil {
		if !errors.Is(err, iofs.ErrNotExist) && ctx.Err() == nil { // removed: the follower hears it
			s.h.log.Warn("wake: a back session's new lines could not be read", "log", s.tail.Key, "err", err)
		}
		return !answersOnly, nil
	}
	lines, bad := replica.Decode[backLine](raw, s.tail.Lines, nil)
	for _, b := range bad {
		s.h.log.Warn("wake: back session log", "log", s.tail.Key, "problem", b)
	}
	others := len(bad) > 0 // lines that are neither this host's nor answers
	for _, l := range lines {
		mine := s.h.id != "" && l.By == s.h.id
		answer := l.Kind == replica.LineChat && l.Action != nil && replica.AnswerTo(*l.Action) != ""
		others = others || (!mine && !answer)
	}
	if !others {
		for _, l := range lines {
			s.tail.Lines++
			// A line of this host's whose write it could not confirm
			// (the database went away as it committed) it holds
			// already.
			if l.By != s.h.id {
				s.showChatLocked(*l.Action, nil)
				s.deliverAnswerLocked(*l.Action)
			}
		}
		return true, nil
	}
	if answersOnly || s.turn != nil || len(s.waits) > 0 || s.diverged {
		return false, nil
	}
	s.tail.Lines += int64(len(raw))
	for _, l := range lines {
		if l.Action == nil || l.By == s.h.id {
			continue
		}
		switch l.Kind {
		case replica.LineChat:
			s.showChatLocked(*l.Action, nil)
		case replica.LineSession:
			s.ApplySession(*l.Action, nil)
		}
	}
	s.here = false
	agent := s.agent
	s.agent = nil
	return true, agent
}

// deliverAnswerLocked hands an answer to the turn that waits for it, if
// any: an answer to a question once it is complete, a confirmation, a
// client tool's result. Called with s locked.
func (s *localSession) deliverAnswerLocked(a ahp.Action) {
	switch a.Body.(type) {
	case *ahp.ChatInputCompletedAction, *ahp.ChatToolCallConfirmedAction, *ahp.ChatToolCallCompleteAction:
		s.deliverLocked(replica.AnswerTo(a), a)
	}
}

// answerErrLocked says why the answer a does not apply to the chat as it
// is, nil when it does. origin is the client that gives it, nil for an
// in-process caller. Called with s locked.
func (s *localSession) answerErrLocked(a ahp.Action, origin *engine.Origin) error {
	step, err := replica.Decide(s.ChatState(), a, backRules, origin)
	if err == nil && step != replica.Answer {
		return refused("%s is not an answer", a.Type)
	}
	return refusal(err)
}

// answerElsewhereLocked takes a client's answer on a copy of a session
// another host runs: it goes into the session's log at the count of lines
// the copy holds, as it is now (caught up first, and again when another
// host wrote first), and the host that runs the session hands it to the
// turn that waits for it when it hears it. Called with s locked.
func (s *localSession) answerElsewhereLocked(a ahp.Action, origin *engine.Origin) error {
	a = wake.ScrubAction(s.h.scrub, a)
	for range replica.MaxBehind {
		ok, agent := s.catchUpLocked(context.Background(), false)
		if agent != nil {
			s.closeLater(agent)
		}
		if !ok {
			return refused("this back session is being taken over; answer again")
		}
		if err := s.answerErrLocked(a, origin); err != nil {
			return err
		}
		data, err := json.Marshal(backLine{Kind: replica.LineChat, At: ahp.FormatTime(s.h.now()), Action: &a, By: s.h.id})
		if err != nil {
			return err
		}
		err = s.tail.Append(context.Background(), data, true)
		if errors.Is(err, replica.ErrBehind) {
			continue
		}
		if err != nil {
			return &wake.RefusedError{Reason: "the answer could not be written to the back session's log", Err: err}
		}
		s.showChatLocked(a, origin)
		return nil
	}
	return refused("the back session's log kept changing; answer again")
}

// closeLater closes an agent in a goroutine the host's Close waits for.
func (s *localSession) closeLater(agent wake.Agent) {
	s.h.turns.Go(func() {
		if err := agent.Close(); err != nil {
			s.h.log.Warn("wake: closing an agent failed", "session", s.SessionURI, "err", err)
		}
	})
}

// elsewhereLocked refuses an action on a session another host runs.
// Called with s locked.
func (s *localSession) elsewhereLocked() error {
	if s.h.sh == nil || s.here || !s.logged {
		return nil
	}
	return refused("this back session runs on another instance, which alone takes actions on it but answers; stop or steer it from the chat with the bot")
}
