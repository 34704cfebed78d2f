package local_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/chatlog/chatlogtest"
	"github.com/agenthost/bots/chatlog/memchatlog"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/internal/maintest"
)

func TestASlowLogWriteDoesNotStallTheBackSessionsReaders(t *testing.T) {
	t.Parallel()
	logs := &chatlogtest.Gated{Logs: &memchatlog.Logs{}}
	nd := nodesOn(t, logs, 1)[0]
	_, session := nd.say(t, "hello")

	// The next message's line waits on the log, holding the back
	// session's writer: its readers still read it.
	waited, open := logs.Shut()
	defer open()
	m := maintest.New("turn-slow", "again")
	turn := nd.w.Wake(wake.Message{Bot: nd.bot, Person: "user:soft", Session: "ahp-session:/main", Chat: "ahp-chat://main",
		TurnID: "turn-slow", Text: "again", StartedAt: time.Now()}, m)
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("the message wrote no line to the back session's log")
	}
	read := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if _, _, err := nd.host.Follow(ctx, session); err != nil {
			read <- fmt.Sprintf("Follow: %v", err)
			return
		}
		for _, uri := range []string{session, ahp.DefaultChatURI(session)} {
			ch, err := nd.host.Channel(ctx, engine.Caller{Principal: access.RootPrincipal()}, uri)
			if err != nil {
				read <- fmt.Sprintf("Channel %s: %v", uri, err)
				return
			}
			if _, err := ch.Subscribe(ctx, nil); err != nil {
				read <- fmt.Sprintf("Subscribe %s: %v", uri, err)
				return
			}
		}
		if listed(nd.host, "", session) == "" {
			read <- "Summaries does not list the session"
			return
		}
		read <- ""
	}()
	select {
	case problem := <-read:
		if problem != "" {
			t.Fatalf("a reader of the back session while its log was slow: %s", problem)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a reader of the back session waited on a write to its log")
	}

	// Once the log answers, the message is answered.
	open()
	if got := m.Ended(t).Replies(); len(got) != 1 || got[0] != "Motion heard: again" {
		t.Fatalf("the bot says %q once the log answered", got)
	}
	<-turn.Done()
}
