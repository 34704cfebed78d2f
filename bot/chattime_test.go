package bot_test

import (
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/bot"
)

// aDayBehind is the startedAt of a client whose clock is a day behind.
func aDayBehind() time.Time { return time.Now().Add(-24 * time.Hour) }

// wantShort fails unless the turn lasted less than a minute by its
// duration.
func wantShort(t *testing.T, turn ahp.Turn) {
	t.Helper()
	if turn.Duration == nil || *turn.Duration < 0 || time.Duration(*turn.Duration)*time.Millisecond > time.Minute {
		t.Fatalf("turn %s: its duration is not that of a short turn measured by the server's clock", jsonText(turn))
	}
}

func TestATurnsDurationIsMeasuredByTheServersClockNotTheClients(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, bot.Options{})
	e.makeBot(t, "motion", motionBody)
	c := e.connect(t, "soft")
	_, chat := c.open("ahp-session:/clock", "motion")
	c.dispatch(chat, ahp.TurnStarted("t1", aDayBehind(), ahp.UserMessage("hello")))
	turn := c.turn(chat, "t1")
	if turn.State != ahp.TurnStateComplete {
		t.Fatalf("turn %s", jsonText(turn))
	}
	wantShort(t, turn)
}

func TestAnInterruptedTurnsDurationIsMeasuredByTheServersClock(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, bot.Options{})
	e.makeBot(t, "motion", motionBody)
	c := e.connect(t, "soft")
	_, chat := c.open("ahp-session:/clock-cut", "motion")
	c.dispatch(chat, ahp.TurnStarted("t1", aDayBehind(), ahp.UserMessage("sleep 30")))
	c.waitChat(chat, "the turn to begin", func(s ahp.ChatState) bool { return s.ActiveTurn != nil })
	e.stop()
	e.start()
	c2 := e.connect(t, "soft")
	c2.subscribe(chat)
	c2.mu.Lock()
	s := c2.chats[chat]
	c2.mu.Unlock()
	if len(s.Turns) != 1 || s.Turns[0].State != ahp.TurnStateError {
		t.Fatalf("replayed chat %s", jsonText(s))
	}
	wantShort(t, s.Turns[0])
}
