package bot_test

import (
	"slices"
	"testing"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/replica"
)

func TestAMessageQueuedBehindAnInterruptedTurnStartsAfterARestart(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, bot.Options{})
	e.makeBot(t, "motion", motionBody)
	c := e.connect(t, "soft")
	_, chat := c.open("ahp-session:/queued", "motion")
	c.say(chat, "t1", "sleep 30")
	c.waitChat(chat, "the back session", func(s ahp.ChatState) bool {
		return s.ActiveTurn != nil && len(s.ActiveTurn.ResponseParts) > 0 && len(s.ActiveTurn.ResponseParts[0].ToolCall.Content) > 0
	})
	c.dispatch(chat, ahp.PendingMessageSet(ahp.PendingQueued, "q1", ahp.UserMessage("after")))
	c.waitChat(chat, "the queued message", func(s ahp.ChatState) bool { return len(s.QueuedMessages) == 1 })
	e.stop() // the process goes away mid-turn, a message waiting behind it
	e.start()
	c2 := e.connect(t, "soft")
	c2.subscribe(chat)
	s := c2.waitChat(chat, "the queued message answered", func(s ahp.ChatState) bool {
		return s.ActiveTurn == nil && len(s.QueuedMessages) == 0 && len(s.Turns) == 2
	})
	if ei := turnError(s.Turns[0]); ei == nil || ei.ErrorType != replica.InterruptedType {
		t.Errorf("the interrupted turn reads %s", jsonText(s.Turns[0]))
	}
	if got := markdown(s.Turns[1]); s.Turns[1].Message.Text != "after" || !slices.Equal(got, []string{"Motion heard: after"}) {
		t.Errorf("the queued message became %s", jsonText(s.Turns[1]))
	}
}
