package replica_test

import (
	"context"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/internal/feed"
	"github.com/agenthost/bots/replica"
)

const (
	sessionURI = "ahp-session:/c1"
	chatURI    = "ahp-chat://default/c1"
)

// newChat is a chat holding keep ended turns, on a bus of its own.
func newChat(t *testing.T, keep int, paged bool) (*replica.Chat, *engine.Bus) {
	t.Helper()
	bus := engine.NewBus(nil)
	c := &replica.Chat{Publisher: &replica.Publisher{Bus: bus, Keep: keep, Paged: paged}, SessionURI: sessionURI, ChatURI: chatURI,
		Feed: feed.New[ahp.Action]()}
	summary := ahp.ChatSummary{Resource: chatURI, Status: ahp.StatusIdle}
	c.Reset(ahp.SessionState{Chats: ahp.List[ahp.ChatSummary]{summary}}, ahp.ChatState{ChatSummary: summary, Turns: ahp.List[ahp.Turn]{}}, 0)
	return c, bus
}

// turn is the actions of one turn, begun and ended.
func turn(id string) []ahp.Action {
	return []ahp.Action{ahp.TurnStarted(id, t0, ahp.UserMessage("hello "+id)), ahp.TurnComplete(id, time.Second)}
}

func TestApplyPublishesAndTheCatalogueFollows(t *testing.T) {
	t.Parallel()
	c, _ := newChat(t, 4, false)
	c.Lock()
	defer c.Unlock()
	change, changed := c.Apply(turn("t1")[0], &engine.Origin{ClientID: "vscode", ClientSeq: 1})
	if !changed || change.Status == nil || !change.Status.Has(ahp.StatusInProgress) {
		t.Fatalf("a turn begun changed the listing by %+v (%v); want its status in progress", change, changed)
	}
	ss, cs, _ := c.State()
	if cs.ActiveTurn == nil || ss.Chats[0].Status != cs.Status {
		t.Fatalf("the session's catalogue says %d, the chat %d", ss.Chats[0].Status, cs.Status)
	}
	if snap := c.ChatSnapshot(); snap.Seq == 0 {
		t.Fatal("the chat's snapshot has no serverSeq after an action was published")
	}
	if snap := c.SessionSnapshot(); snap.Seq == 0 {
		t.Fatal("the session's snapshot has no serverSeq after its catalogue changed")
	}
	if _, changed := c.Apply(ahp.Delta("t1", "p1", "x"), nil); changed {
		// A delta changes neither the status nor the time modified.
		t.Fatal("a delta changed the listing")
	}
}

func TestApplyKeepsTheLatestTurns(t *testing.T) {
	t.Parallel()
	for _, paged := range []bool{false, true} {
		c, _ := newChat(t, 2, paged)
		c.Lock()
		for _, id := range []string{"t1", "t2", "t3", "t4", "t5"} {
			for _, a := range turn(id) {
				c.Apply(a, nil)
			}
		}
		c.Unlock()
		_, cs, dropped := c.State()
		if len(cs.Turns) != 2 || cs.Turns[0].ID != "t4" || cs.Turns[1].ID != "t5" || dropped != 3 {
			t.Fatalf("paged %v: the chat holds %d turns from %s with %d dropped; want t4 and t5, 3 dropped", paged, len(cs.Turns), cs.Turns[0].ID, dropped)
		}
		if want := map[bool]string{false: "", true: "3"}[paged]; cs.TurnsNextCursor != want {
			t.Errorf("paged %v: turnsNextCursor %q, want %q", paged, cs.TurnsNextCursor, want)
		}
	}
}

func TestWindowKeepsTheLatestTurnAtLeast(t *testing.T) {
	t.Parallel()
	s := chatAfter(append(turn("t1"), turn("t2")...)...)
	got, dropped := replica.Window(s, 5, 0, true)
	if len(got.Turns) != 1 || got.Turns[0].ID != "t2" || dropped != 6 || got.TurnsNextCursor != "6" {
		t.Fatalf("Window(keep 0) = %d turns, %d dropped, cursor %q; want t2, 6, \"6\"", len(got.Turns), dropped, got.TurnsNextCursor)
	}
	if len(s.Turns) != 2 {
		t.Fatal("Window changed the turns of the state it was given")
	}
}

func TestReadersDoNotWaitForTheWriter(t *testing.T) {
	t.Parallel()
	c, _ := newChat(t, 4, false)
	c.Lock() // a writer, waiting on its log
	defer c.Unlock()
	read := make(chan struct{})
	go func() {
		defer close(read)
		c.ChatSnapshot()
		c.SessionSnapshot()
		c.State()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		c.Follow(ctx)
	}()
	select {
	case <-read:
	case <-time.After(10 * time.Second):
		t.Fatal("a reader waited for the chat's writer")
	}
}

func TestFollowHearsWhatIsAppliedAfterItsState(t *testing.T) {
	t.Parallel()
	c, _ := newChat(t, 4, false)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	st, actions, ok := c.Follow(ctx)
	if !ok || st.ActiveTurn != nil {
		t.Fatalf("Follow of an idle chat = %+v, %v", st.ActiveTurn, ok)
	}
	c.Lock()
	c.Apply(turn("t1")[0], nil)
	c.Unlock()
	select {
	case a := <-actions:
		if a.Type != ahp.ActionChatTurnStarted {
			t.Fatalf("Follow heard %s, want the turn begun", a.Type)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Follow heard nothing of the action applied")
	}
}

func TestAnEndedChatRefusesPublishAndFollow(t *testing.T) {
	t.Parallel()
	c, _ := newChat(t, 4, false)
	if !c.End() || c.End() || !c.Gone() {
		t.Fatal("End reported the chat ended twice, or Gone does not say so")
	}
	if err := c.Publish(engine.Event{Action: ahp.TurnsLoaded(nil, "")}); err != replica.ErrGone {
		t.Fatalf("Publish on an ended chat = %v, want ErrGone", err)
	}
	if _, _, ok := c.Follow(t.Context()); ok {
		t.Fatal("Follow of an ended chat answered")
	}
}
