package replica

import (
	"cmp"

	"github.com/agenthost/bots/ahp"
)

// Replay is a chat as the lines of its log leave it, folded one at a time
// after its open line: what a start, or an instance reading a chat over,
// holds. Both kinds of chat fold their logs through it, so that a line
// reads back the same in a bot chat and in a back session.
type Replay struct {
	// Session and Chat are the states so far, begun as the open line
	// makes them; Dropped is how many ended turns of the chat's history
	// are older than those Chat holds (Window).
	Session ahp.SessionState
	Chat    ahp.ChatState
	Dropped int
	// Last is when the last line folded was written, begun with the open
	// line's time; Began, when the line that began the active turn was,
	// by the server's clock (a client's startedAt is by its own).
	Last, Began string
	// Keep and Paged are Window's: how many ended turns the chat holds,
	// and whether it says how many older ones its log has.
	Keep  int
	Paged bool
}

// Fold applies one line of the log after the open one: its kind
// (LineChat or LineSession), when it was written, and its action (nil for
// a line that carries none).
func (r *Replay) Fold(kind, at string, a *ahp.Action) {
	r.Last = at
	if a == nil {
		return
	}
	switch kind {
	case LineChat:
		idle := r.Chat.ActiveTurn == nil
		r.Apply(*a)
		if idle && r.Chat.ActiveTurn != nil {
			r.Began = at
		}
	case LineSession:
		r.Session = ahp.ApplySession(r.Session, *a)
	}
}

// Apply applies a chat action, keeping the chat's latest ended turns: a
// line the replay adds (an interrupted turn's end, say).
func (r *Replay) Apply(a ahp.Action) {
	r.Chat, r.Dropped = Window(ahp.ApplyChat(r.Chat, a), r.Dropped, r.Keep, r.Paged)
}

// Interrupted is the action that ends the chat's active turn as
// interrupted (Interrupted), its duration running from the line that
// began it to the log's last; ok is false when no turn is active. The
// caller applies it (Apply) and, where it writes the log, logs it.
func (r *Replay) Interrupted(resumable bool) (a ahp.Action, ok bool) {
	at := r.Chat.ActiveTurn
	if at == nil {
		return ahp.Action{}, false
	}
	return Interrupted(at.ID, cmp.Or(r.Began, at.StartedAt), r.Last, resumable), true
}

// States are the states a replica holds once the log is folded (what
// Chat.Reset takes): the session's catalogue entry of the chat at uri
// follows the chat (Catalogued).
func (r *Replay) States(uri string) (ahp.SessionState, ahp.ChatState, int) {
	return Catalogued(r.Session, uri, r.Chat), r.Chat, r.Dropped
}
