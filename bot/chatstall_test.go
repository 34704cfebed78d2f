package bot_test

import (
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/chatlog/chatlogtest"
	"github.com/agenthost/bots/chatlog/memchatlog"
	"github.com/agenthost/bots/lease/memlease"
)

func TestASlowLogWriteDoesNotStallTheChatsReaders(t *testing.T) {
	t.Parallel()
	logs := &chatlogtest.Gated{Logs: &memchatlog.Logs{}}
	e := newSharedChatEnvOn(t, logs, &memlease.Leases{})
	e.makeBot(t, "motion", motionBody)
	c := e.connect(t, "soft")
	session, chat := c.open("ahp-session:/slow", "motion")

	// The message's first line waits on the log, holding the chat's
	// writer: a second client still subscribes and lists the chat.
	waited, open := logs.Shut()
	defer open()
	c.say(chat, "t1", "hello")
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("the message wrote no line to the log")
	}
	// Each call fails the test when it has no answer in ten seconds.
	reader := e.connect(t, "soft")
	for _, channel := range []string{chat, session} {
		if err := reader.call("subscribe", map[string]any{"channel": channel}, nil); err != nil {
			t.Fatalf("a subscription to %s was refused while its log was slow: %v", channel, err)
		}
	}
	var listed ahp.ListSessionsResult
	if err := reader.call("listSessions", map[string]any{}, &listed); err != nil || len(listed.Items) != 1 {
		t.Fatalf("listSessions while the chat's log was slow = %d sessions, %v; want the chat", len(listed.Items), err)
	}

	// Once the log answers, the turn runs to its end.
	open()
	if got := markdown(c.turn(chat, "t1")); len(got) != 1 || got[0] != "Motion heard: hello" {
		t.Fatalf("the bot says %q once the log answered", got)
	}
}
