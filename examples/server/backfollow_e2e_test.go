package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/internal/waittest"
)

// listedSession is c's listSessions row of session, and whether it has
// one.
func listedSession(c *ahpClient, session string) (ahp.SessionSummary, bool) {
	var list ahp.ListSessionsResult
	c.must("listSessions", map[string]any{"channel": ahp.RootURI}, &list)
	for _, s := range list.Items {
		if s.Resource == session {
			return s, true
		}
	}
	return ahp.SessionSummary{}, false
}

// rejections are the reasons c's actions on uri were rejected with.
func (c *ahpClient) rejections(uri string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.rejected[uri])
}

func TestEndToEndABackSessionRunningOnOneInstanceIsListedAndFollowedOnTheOthers(t *testing.T) {
	t.Parallel()
	in, chat := chatOnInstances(t, 3, "ahp-session:/backs")
	a, b, c := in[0].c, in[1].c, in[2].c
	clients := []*ahpClient{a, b, c}

	// A message to the bot on A starts its back session on A.
	a.dispatch(chat, ahp.TurnStarted("t1", time.Now(), ahp.UserMessage("hello")))
	a.waitChat(chat, "the first turn", func(s ahp.ChatState) bool { return len(s.Turns) == 1 && s.ActiveTurn == nil })
	backChat := backOf(a.turn(chat, "t1"))
	var back string
	for _, s := range func() []ahp.SessionSummary {
		var list ahp.ListSessionsResult
		a.must("listSessions", map[string]any{"channel": ahp.RootURI}, &list)
		return list.Items
	}() {
		if s.DefaultChat == backChat {
			back = s.Resource
		}
	}
	if backChat == "" || back == "" {
		t.Fatalf("A lists no back session whose chat is %q", backChat)
	}
	onA, _ := listedSession(a, back)

	// B and C list it as A does, and subscribe to it.
	for i, cl := range clients[1:] {
		var got ahp.SessionSummary
		var ok bool
		if !waittest.Within(10*time.Second, func() bool {
			got, ok = listedSession(cl, back)
			return ok && mustJSON(got) == mustJSON(onA)
		}) {
			t.Fatalf("instance %d lists the back session as %s (%v), want A's %s", i+1, mustJSON(got), ok, mustJSON(onA))
		}
	}
	for _, cl := range clients {
		cl.subscribe(back)
		cl.subscribe(backChat)
	}
	waitSameState(t, back, clients...)
	waitSameState(t, backChat, clients...)

	// The next message runs on A again, in the same back session: every
	// client is sent the same actions on it, in the same order.
	a.dispatch(chat, ahp.TurnStarted("t2", time.Now(), ahp.UserMessage("stream one two three")))
	for _, cl := range clients {
		st := cl.waitChat(backChat, "the second back turn", func(s ahp.ChatState) bool { return len(s.Turns) == 2 && s.ActiveTurn == nil })
		if words(st.Turns[1]) != "stream one two three" {
			t.Errorf("a client reads the back chat's second turn as %s", mustJSON(st.Turns[1]))
		}
	}
	if got := backOf(a.turn(chat, "t2")); got != backChat {
		t.Errorf("the second message went to %s, want the back session's chat %s", got, backChat)
	}
	waitSameState(t, backChat, clients...)
	waitSameState(t, back, clients...)
	sameActions(t, backChat, clients...)
	sameActions(t, back, clients...)
	if n := len(a.actions(backChat)); n < 5 {
		t.Errorf("the clients were sent %d actions on the back chat, want the streamed turn's", n)
	}
	for i, cl := range clients {
		cl.sameAsSnapshot(in[i].addr)
	}

	// A client of B cannot act on the back session A runs, but to answer:
	// it is told where it runs, and nothing changes anywhere.
	b.dispatch(backChat, ahp.NewAction(&ahp.ChatIsArchivedChangedAction{IsArchived: true}))
	if !waittest.Within(10*time.Second, func() bool { return len(b.rejections(backChat)) != 0 }) {
		t.Fatal("the action on B was neither taken nor refused")
	}
	if r := b.rejections(backChat); !strings.Contains(r[0], "runs on another instance") {
		t.Errorf("B refused the action saying %q", r[0])
	}
	waitSameState(t, backChat, clients...)
	sameActions(t, backChat, clients...)

	// But it answers a question there: the answer goes into the back
	// session's log, and A hands it to the turn that asked.
	a.dispatch(chat, ahp.TurnStarted("t-ask", time.Now(), ahp.UserMessage("ask your name?")))
	st := b.waitChat(backChat, "the question, on B", func(s ahp.ChatState) bool {
		return slices.ContainsFunc(active(s), func(p ahp.ResponsePart) bool { return p.InputRequest != nil })
	})
	var id string
	for _, p := range active(st) {
		if p.InputRequest != nil {
			id = p.InputRequest.Request.ID
		}
	}
	b.dispatch(backChat, ahp.InputCompleted(id, ahp.InputAccept, map[string]ahp.ChatInputAnswer{
		"answer": {State: "submitted", Value: &ahp.ChatInputAnswerValue{Kind: "text", Value: "Ada"}},
	}))
	for _, cl := range clients {
		st := cl.waitChat(chat, "the answered turn", func(s ahp.ChatState) bool { return len(s.Turns) == 3 && s.ActiveTurn == nil })
		if got := texts(st.Turns[2]); !slices.Equal(got, []string{"you said: Ada"}) {
			t.Errorf("the turn on A, answered in the back chat on B, says %q", got)
		}
		cl.waitChat(backChat, "the answered back turn", func(s ahp.ChatState) bool { return len(s.Turns) == 3 && s.ActiveTurn == nil })
	}
	waitSameState(t, backChat, clients...)
	sameActions(t, backChat, clients...)

	// Talking in the bot chat on C reaches the same back session, which
	// every instance follows.
	c.dispatch(chat, ahp.TurnStarted("t3", time.Now(), ahp.UserMessage("again")))
	for _, cl := range clients {
		st := cl.waitChatFor(backChat, "the back turn of C's message", time.Minute, func(s ahp.ChatState) bool { return len(s.Turns) == 4 && s.ActiveTurn == nil })
		if words(st.Turns[3]) != "again" {
			t.Errorf("a client reads the back chat's fourth turn as %s", mustJSON(st.Turns[3]))
		}
	}
	// C took the back session over: A and B follow it on, their
	// subscriptions open, sent the same actions as C.
	waitSameState(t, backChat, clients...)
	waitSameState(t, back, clients...)
	sameActions(t, backChat, clients...)
	sameActions(t, back, clients...)
	onC, _ := listedSession(c, back)
	for i, cl := range clients[:2] {
		if got, _ := listedSession(cl, back); mustJSON(got) != mustJSON(onC) {
			t.Errorf("instance %d lists the back session as %s, want C's %s", i, mustJSON(got), mustJSON(onC))
		}
	}
}
