package replica

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/chatlog"
)

// Wait bounds one read or write of a chat's log.
const Wait = 30 * time.Second

// ErrBehind is what Log.Append answers when the log holds lines the
// replica has not applied: another instance appended first. Nothing was
// written; the replica reads what it missed (ReadNew), applies it and
// decides again on the chat as it is then.
var ErrBehind = errors.New("replica: the chat's log has lines another instance appended first")

// Log is a replica's place in its chat's log: the log's key and how many
// of its lines the replica holds applied. With Shared set (logs several
// instances write and follow) each line goes in at that count; without,
// it is appended. The zero Log is not usable; its holder serializes its
// calls.
type Log struct {
	Logs   chatlog.Logs
	Shared chatlog.Shared // nil: this instance alone writes the log
	Key    chatlog.Key
	Lines  int64 // how many lines of the log the replica holds applied
	failed int   // appends that failed in a row (Failed)
}

// MaxBehind is how many times a replica decides an action again, or
// tries a line again, on a chat other instances keep writing first
// (ErrBehind) before it gives up.
const MaxBehind = 20

// Append writes line as the log's next line, fsynced when sync is set,
// and counts it. With Shared it goes in only when the log holds Lines
// lines; otherwise the answer is ErrBehind and nothing is written. It
// takes at most Wait.
func (l *Log) Append(ctx context.Context, line []byte, sync bool) error {
	ctx, cancel := context.WithTimeout(ctx, Wait)
	defer cancel()
	var err error
	if l.Shared != nil {
		err = l.Shared.AppendAt(ctx, l.Key, l.Lines, line, sync)
	} else {
		err = l.Logs.Append(ctx, l.Key, line, sync)
	}
	switch {
	case errors.Is(err, chatlog.ErrConflict):
		return ErrBehind
	case err != nil:
		l.failed++
		return err
	}
	l.failed = 0
	l.Lines++
	return nil
}

// Failed is how many appends in a row have failed, 0 once one succeeds;
// an ErrBehind, which writes nothing, neither counts nor resets it. A
// holder reports a failing log at its first failure, not at every line
// the chat goes on with in memory.
func (l *Log) Failed() int { return l.failed }

// ReadNew returns the lines of a shared log after the ones the replica
// holds, in order, without counting them: the caller applies them and
// adds their number to Lines. No log is an error wrapping fs.ErrNotExist;
// a Log without Shared has none to read. It takes at most Wait.
func (l *Log) ReadNew(ctx context.Context) ([][]byte, error) {
	if l.Shared == nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, Wait)
	defer cancel()
	return l.Shared.ReadAfter(ctx, l.Key, l.Lines)
}

// The kinds of a chat log's lines: its first opens the chat (or the back
// session); each other is an action applied to the chat or to its session.
const (
	LineOpen    = "open"
	LineChat    = "chat"
	LineSession = "session"
)

// Decode decodes the raw lines of a log, the first of which is its line
// first+1, as lines of type L; a line that does not decode is left out
// and reported in bad, with its number.
func Decode[L any](raw [][]byte, first int64, bad []string) ([]L, []string) {
	lines := make([]L, 0, len(raw))
	for n, r := range raw {
		var l L
		if err := json.Unmarshal(r, &l); err != nil {
			bad = append(bad, fmt.Sprintf("line %d: %v", first+int64(n)+1, err))
			continue
		}
		lines = append(lines, l)
	}
	return lines, bad
}

// Durable reports whether a chat log fsyncs a's line: it begins or ends a
// turn or changes what waits. The other lines (the parts streamed while a
// turn runs) are written with one write each, which a killed process
// keeps; a power loss costs at most the streamed parts of a running turn.
func Durable(a ahp.Action) bool {
	switch a.Type {
	case ahp.ActionChatTurnStarted, ahp.ActionChatTurnComplete, ahp.ActionChatTurnCancelled, ahp.ActionChatError,
		ahp.ActionChatPendingMessageSet, ahp.ActionChatPendingMessageRemoved, ahp.ActionChatQueuedMessagesReordered:
		return true
	}
	return false
}

// Interrupted is the errorType and message of a turn a log shows begun and
// never ended: the process went away while it ran.
const (
	InterruptedType    = "executionInterrupted"
	InterruptedMessage = "The agent was interrupted before this request finished."
)

// Interrupted ends the turn turnID, which a log shows begun at began and
// never ended, as interrupted: its duration runs to last, the time of the
// log's last line (both RFC 3339; 0 when either is not). resumable says
// whether chat/turnResume may begin it again.
func Interrupted(turnID, began, last string, resumable bool) ahp.Action {
	d := time.Duration(0)
	t0, err0 := time.Parse(time.RFC3339Nano, began)
	t1, err1 := time.Parse(time.RFC3339Nano, last)
	if err0 == nil && err1 == nil && t1.After(t0) {
		d = t1.Sub(t0)
	}
	return ahp.TurnFailed(turnID, d, ahp.ErrorInfo{ErrorType: InterruptedType, Message: InterruptedMessage}, resumable)
}

// Catalogued returns the session s with the entry of its chat at uri
// following the chat c: its status and when it was modified, as a replay
// leaves them.
func Catalogued(s ahp.SessionState, uri string, c ahp.ChatState) ahp.SessionState {
	for i := range s.Chats {
		if s.Chats[i].Resource == uri {
			chats := append(ahp.List[ahp.ChatSummary](nil), s.Chats...)
			chats[i].Status, chats[i].ModifiedAt = c.Status, c.ModifiedAt
			s.Chats = chats
		}
	}
	return s
}
