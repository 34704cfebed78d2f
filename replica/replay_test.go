package replica_test

import (
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/replica"
)

// at is the time of a log line s seconds after t0, as a log writes it.
func at(s float64) string { return ahp.FormatTime(t0.Add(time.Duration(s * float64(time.Second)))) }

func act(a ahp.Action) *ahp.Action { return &a }

// opening is the replay of a chat whose open line was written at t0.
func opening(keep int, paged bool) replica.Replay {
	summary := ahp.ChatSummary{Resource: "chat", Status: ahp.StatusIdle}
	return replica.Replay{
		Session: ahp.SessionState{Chats: ahp.List[ahp.ChatSummary]{summary}},
		Chat:    ahp.ChatState{ChatSummary: summary, Turns: ahp.List[ahp.Turn]{}},
		Last:    at(0), Keep: keep, Paged: paged,
	}
}

func TestReplayFoldsChatAndSessionLinesKeepingTheLatestTurns(t *testing.T) {
	t.Parallel()
	r := opening(2, true)
	hello := ahp.UserMessage("hello")
	for i, id := range []string{"t1", "t2", "t3"} {
		r.Fold(replica.LineChat, at(float64(2*i+1)), act(ahp.TurnStarted(id, t0, hello)))
		r.Fold(replica.LineChat, at(float64(2*i+2)), act(ahp.TurnComplete(id, time.Second)))
	}
	r.Fold(replica.LineSession, at(7), act(ahp.TitleChanged("Reviews")))
	r.Fold(replica.LineSession, at(8), nil) // a line with no action moves the time alone
	if len(r.Chat.Turns) != 2 || r.Chat.Turns[0].ID != "t2" || r.Dropped != 1 || r.Chat.TurnsNextCursor != "1" {
		t.Errorf("the chat holds %d turns from %q, %d dropped, cursor %q; want t2 and t3, 1 dropped, cursor 1",
			len(r.Chat.Turns), r.Chat.Turns[0].ID, r.Dropped, r.Chat.TurnsNextCursor)
	}
	if r.Session.Title != "Reviews" || r.Last != at(8) {
		t.Errorf("the session's title is %q and the last line at %s; want Reviews and %s", r.Session.Title, r.Last, at(8))
	}
	if _, ok := r.Interrupted(false); ok {
		t.Error("a chat with no active turn has a turn to interrupt")
	}
	session, chat, dropped := r.States("chat")
	if session.Chats[0].ModifiedAt != chat.ModifiedAt || chat.ModifiedAt == "" || dropped != 1 {
		t.Errorf("the session's catalogue says the chat was modified at %q, the chat %q (%d dropped); want the chat's", session.Chats[0].ModifiedAt, chat.ModifiedAt, dropped)
	}
}

func TestReplayInterruptsTheActiveTurnFromTheLineThatBeganIt(t *testing.T) {
	t.Parallel()
	r := opening(4, false)
	// The client's clock is a day behind the server's: the turn lasted
	// from the line that began it to the log's last, 2.5s.
	r.Fold(replica.LineChat, at(10), act(ahp.TurnStarted("t1", t0.Add(-24*time.Hour), ahp.UserMessage("hello"))))
	r.Fold(replica.LineChat, at(12.5), act(ahp.Delta("t1", "p1", "hel")))
	a, ok := r.Interrupted(true)
	if !ok {
		t.Fatal("the active turn has nothing to interrupt")
	}
	b := a.Body.(*ahp.ChatErrorAction)
	if b.TurnID != "t1" || b.Duration != 2500 || !b.Part.Resumable || b.Part.Error.ErrorType != replica.InterruptedType {
		t.Fatalf("Interrupted = turn %s, %d ms, resumable %v, %s; want t1, 2500 ms, resumable, %s",
			b.TurnID, b.Duration, b.Part.Resumable, b.Part.Error.ErrorType, replica.InterruptedType)
	}
	r.Apply(a)
	if r.Chat.ActiveTurn != nil || len(r.Chat.Turns) != 1 || r.Chat.Turns[0].State != ahp.TurnStateError {
		t.Errorf("after the interruption the chat is %+v", r.Chat)
	}
}
