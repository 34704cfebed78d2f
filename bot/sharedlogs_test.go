package bot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/lease/memlease"
	"github.com/agenthost/bots/replica"
)

// waitHolding waits until c's instance holds chat, which it does once it
// heard of it from the shared logs: until c may subscribe to it.
func (c *chatClient) waitHolding(t *testing.T, chat string) {
	t.Helper()
	waittest.For(t, "the instance to hold "+chat, func() bool {
		return c.call("subscribe", map[string]any{"channel": chat}, nil) == nil
	})
}

// logLines reads the log of a bot chat from the shared logs.
func logLines(t *testing.T, logs chatlog.Logs, bot, session string) []string {
	t.Helper()
	lines, _, err := logs.Read(t.Context(), chatlog.Key{Kind: chatlog.Chat, Bot: bot, Session: session})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = string(l)
	}
	return out
}

func TestWithSharedLogsAStartWritesNothingAndTheInterruptedLineComesBeforeTheNextOne(t *testing.T) {
	t.Parallel()
	var ahead atomic.Int64 // how far the leases' clock is ahead
	e := newSharedChatEnv(t, &memlease.Leases{Now: func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }})
	e.makeBot(t, "motion", motionBody)
	c := e.connect(t, "soft")
	session := "ahp-session:/shared"
	_, chat := c.open(session, "motion")
	c.say(chat, "t1", "sleep 30")
	c.waitChat(chat, "the back session", func(s ahp.ChatState) bool {
		return s.ActiveTurn != nil && len(s.ActiveTurn.ResponseParts) > 0 && len(s.ActiveTurn.ResponseParts[0].ToolCall.Content) > 0
	})
	before := logLines(t, e.logs, "motion", session)

	// Another instance starts while the turn runs on the first: it reads
	// the turn as interrupted, and writes nothing.
	other := e.sibling("second")
	if after := logLines(t, e.logs, "motion", session); !slices.Equal(after, before) {
		t.Fatalf("another instance's start wrote to the log:\n%q\nwant\n%q", after, before)
	}
	c2 := other.connect(t, "soft")
	c2.subscribe(session)
	c2.subscribe(chat)
	st := c2.waitChat(chat, "the chat as read back", func(s ahp.ChatState) bool { return len(s.Turns) == 1 })
	if ei := turnError(st.Turns[0]); ei == nil || ei.ErrorType != replica.InterruptedType {
		t.Fatalf("the other instance reads the running turn as %s", jsonText(st.Turns[0]))
	}

	// The first instance goes away, and its lease expires; a message on
	// the other writes the interrupted line, then its own.
	e.stop()
	ahead.Store(int64(lease.DefaultTTL))
	stopped := logLines(t, e.logs, "motion", session)
	c2.say(chat, "t2", "again")
	if got := markdown(c2.turn(chat, "t2")); !slices.Equal(got, []string{"Motion heard: again"}) {
		t.Errorf("the other instance's bot says %q", got)
	}
	all := logLines(t, e.logs, "motion", session)
	if len(all) <= len(stopped) {
		t.Fatalf("the message wrote no line")
	}
	var next struct {
		Kind   string
		Action ahp.Action
	}
	if err := json.Unmarshal([]byte(all[len(stopped)]), &next); err != nil {
		t.Fatal(err)
	}
	failed, ok := next.Action.Body.(*ahp.ChatErrorAction)
	if next.Kind != "chat" || !ok || failed.TurnID != "t1" || failed.Part.Error.ErrorType != replica.InterruptedType {
		t.Errorf("the line after the first instance's last is %s, want t1 interrupted", all[len(stopped)])
	}
}

func TestTwoInstancesOnSharedLogsHoldOneChatAndAnswerEveryMessageQueuedOnEitherOnce(t *testing.T) {
	t.Parallel()
	e := newSharedChatEnv(t, &memlease.Leases{})
	e.makeBot(t, "motion", motionBody)
	other := e.sibling("second")
	c1, c2 := e.connect(t, "soft"), other.connect(t, "soft")
	session := "ahp-session:/both"
	_, chat := c1.open(session, "motion")
	// The other instance holds the chat once it heard of it.
	c2.waitHolding(t, chat)
	c2.subscribe(session)
	c2.subscribe(chat)

	// Messages queued on both at once: every one is answered once.
	const n = 10
	var wg sync.WaitGroup
	for i := range n {
		c := c1
		if i%2 == 1 {
			c = c2
		}
		wg.Go(func() {
			c.dispatch(chat, ahp.PendingMessageSet(ahp.PendingQueued, fmt.Sprintf("q%d", i), ahp.UserMessage(fmt.Sprintf("m%d", i))))
		})
	}
	wg.Wait()
	done := func(s ahp.ChatState) bool {
		return len(s.Turns) == n && s.ActiveTurn == nil && len(s.QueuedMessages) == 0
	}
	s1, s2 := c1.waitChat(chat, "every message answered", done), c2.waitChat(chat, "every message answered", done)
	if a, b := jsonText(s1), jsonText(s2); a != b {
		t.Errorf("the instances hold the chat as\n%s\nand\n%s", a, b)
	}
	said := map[string]int{}
	for _, turn := range s1.Turns {
		said[turn.Message.Text]++
		if got, want := markdown(turn), []string{"Motion heard: " + turn.Message.Text}; !slices.Equal(got, want) {
			t.Errorf("the turn of %q says %q", turn.Message.Text, got)
		}
	}
	for i := range n {
		if m := fmt.Sprintf("m%d", i); said[m] != 1 {
			t.Errorf("%s was answered %d times, want once", m, said[m])
		}
	}
	c1.sameAsSnapshot(e, "soft")
	c2.sameAsSnapshot(other, "soft")
}

func TestAnInstanceThatReadATurnAsInterruptedReadsTheChatAgainWhenItsInstanceWritesOn(t *testing.T) {
	t.Parallel()
	e := newSharedChatEnv(t, &memlease.Leases{})
	e.makeBot(t, "motion", motionBody)
	c := e.connect(t, "soft")
	session := "ahp-session:/reread"
	_, chat := c.open(session, "motion")
	c.say(chat, "t1", "sleep 1")
	c.waitChat(chat, "the back session", func(s ahp.ChatState) bool {
		return s.ActiveTurn != nil && len(s.ActiveTurn.ResponseParts) > 0 && len(s.ActiveTurn.ResponseParts[0].ToolCall.Content) > 0
	})
	// Started while the turn runs on the first, the other instance reads
	// it as interrupted: it cannot know the first is alive.
	other := e.sibling("second")
	c2 := other.connect(t, "soft")
	c2.subscribe(chat)
	if st := c2.waitChat(chat, "the chat as read back", func(s ahp.ChatState) bool { return len(s.Turns) == 1 }); turnError(st.Turns[0]) == nil {
		t.Fatalf("the other instance reads the running turn as %s", jsonText(st.Turns[0]))
	}
	// The first writes on: the other reads the chat again and holds it
	// as the first does, the turn answered and not interrupted.
	want := c.waitChat(chat, "the turn's end", func(s ahp.ChatState) bool { return len(s.Turns) == 1 && s.ActiveTurn == nil })
	if got := markdown(want.Turns[0]); !slices.Equal(got, []string{"awake"}) {
		t.Fatalf("the turn says %q", got)
	}
	var got ahp.ChatState
	if !waittest.Within(10*time.Second, func() bool {
		c3 := other.connect(t, "soft")
		c3.subscribe(chat)
		c3.mu.Lock()
		got = c3.chats[chat]
		c3.mu.Unlock()
		return jsonText(got) == jsonText(want)
	}) {
		t.Fatalf("the other instance holds the chat as\n%s\nwant the first's\n%s", jsonText(got), jsonText(want))
	}
}

func TestAFollowedTurnWhoseInstanceLetGoOfItsLeaseIsEndedAsInterruptedOnceAndResumes(t *testing.T) {
	t.Parallel()
	e := newSharedChatEnv(t, &memlease.Leases{})
	e.makeBot(t, "motion", motionBody)
	other := e.sibling("second")
	c1, c2 := e.connect(t, "soft"), other.connect(t, "soft")
	session := "ahp-session:/watched"
	_, chat := c1.open(session, "motion")
	c2.waitHolding(t, chat)
	c2.subscribe(session)
	c2.subscribe(chat)
	c1.say(chat, "t1", "sleep 3")
	c2.waitChat(chat, "the back session, followed", func(s ahp.ChatState) bool {
		return s.ActiveTurn != nil && len(s.ActiveTurn.ResponseParts) > 0 && len(s.ActiveTurn.ResponseParts[0].ToolCall.Content) > 0
	})

	// The first instance goes away mid-turn, letting go of its leases:
	// the other ends the turn as interrupted and resumable.
	e.stop()
	st := c2.waitChat(chat, "the turn read as interrupted", func(s ahp.ChatState) bool {
		return s.ActiveTurn == nil && len(s.Turns) == 1
	})
	if ei := turnError(st.Turns[0]); ei == nil || ei.ErrorType != replica.InterruptedType {
		t.Fatalf("the turn whose instance went away reads %s", jsonText(st.Turns[0]))
	}
	c2.dispatch(chat, ahp.TurnResume("t1"))
	got := c2.waitChat(chat, "the resumed turn", func(s ahp.ChatState) bool {
		return s.ActiveTurn == nil && len(s.Turns) == 1 && s.Turns[0].State == ahp.TurnStateComplete
	}).Turns[0]
	if got.ID != "t1" {
		t.Errorf("the resumed turn is %s", jsonText(got))
	}
	// One interrupted line and one completion in the log.
	interrupted, complete := 0, 0
	for _, l := range logLines(t, e.logs, "motion", session) {
		var line struct{ Action ahp.Action }
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatal(err)
		}
		switch b := line.Action.Body.(type) {
		case *ahp.ChatErrorAction:
			if b.Part.Error.ErrorType == replica.InterruptedType {
				interrupted++
			}
		case *ahp.ChatTurnCompleteAction:
			complete++
		}
	}
	if interrupted != 1 || complete != 1 {
		t.Errorf("the log holds %d interrupted lines and %d completions, want one each", interrupted, complete)
	}
}

// refusedLeases are memory leases that count the acquisitions of one key
// they refused.
type refusedLeases struct {
	*memlease.Leases
	key     string
	refused atomic.Int64
}

func (l *refusedLeases) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (lease.Lease, bool, error) {
	got, ok, err := l.Leases.Acquire(ctx, key, holder, ttl)
	if err == nil && !ok && key == l.key {
		l.refused.Add(1)
	}
	return got, ok, err
}

func TestAResumedTurnWhoseLeaseALookerHeldAMomentIsTakenSoonAndNotEndedByTheWatchers(t *testing.T) {
	t.Parallel()
	session := "ahp-session:/looked-at"
	key := "turn " + session + " t1"
	leases := &refusedLeases{Leases: &memlease.Leases{}, key: key}
	e := newSharedChatEnv(t, leases)
	e.makeBot(t, "motion", motionBody)
	runner, watcher := e.sibling("second"), e.sibling("third")
	c1, c2 := e.connect(t, "soft"), runner.connect(t, "soft")
	_, chat := c1.open(session, "motion")
	for _, c := range []*chatClient{c2, watcher.connect(t, "soft")} {
		c.waitHolding(t, chat)
	}
	c2.subscribe(chat)
	c1.say(chat, "t1", "sleep 5")
	c2.waitChat(chat, "the back session, followed", func(s ahp.ChatState) bool {
		return s.ActiveTurn != nil && len(s.ActiveTurn.ResponseParts) > 0 && len(s.ActiveTurn.ResponseParts[0].ToolCall.Content) > 0
	})
	e.stop()
	c2.waitChat(chat, "the turn read as interrupted", func(s ahp.ChatState) bool { return s.ActiveTurn == nil && len(s.Turns) == 1 })

	// Someone holds the turn's lease the moment it is resumed (as a
	// watcher does while it looks), then lets go: the instance that runs
	// the resumed turn takes it soon, so no watcher ends the turn.
	var held lease.Lease
	waittest.For(t, "the turn's lease to be free", func() bool {
		l, ok, err := leases.Acquire(t.Context(), key, "looker", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		held = l
		return ok
	})
	refused := leases.refused.Load()
	c2.dispatch(chat, ahp.TurnResume("t1"))
	c2.waitChat(chat, "the resumed turn", func(s ahp.ChatState) bool { return s.ActiveTurn != nil })
	waittest.For(t, "the instance that runs the resumed turn to try to take its lease, and be refused",
		func() bool { return leases.refused.Load() != refused })
	if err := leases.Release(t.Context(), key, "looker", held.Token); err != nil {
		t.Fatal(err)
	}
	got := c2.waitChat(chat, "the resumed turn's end", func(s ahp.ChatState) bool {
		return s.ActiveTurn == nil && len(s.Turns) == 1
	}).Turns[0]
	if got.State != ahp.TurnStateComplete {
		t.Errorf("the resumed turn ended %s: %s", got.State, jsonText(got))
	}
	interrupted := 0
	for _, l := range logLines(t, e.logs, "motion", session) {
		var line struct{ Action ahp.Action }
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatal(err)
		}
		if b, ok := line.Action.Body.(*ahp.ChatErrorAction); ok && b.Part.Error.ErrorType == replica.InterruptedType {
			interrupted++
		}
	}
	if interrupted != 1 {
		t.Errorf("the log holds %d interrupted lines, want the one of the instance that went away", interrupted)
	}
}

// slowLeases are memory leases whose holder's first acquisition of key
// takes a while, as on a loaded database.
type slowLeases struct {
	*memlease.Leases
	key, holder string
	delay       time.Duration
	once        sync.Once
}

func (l *slowLeases) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (lease.Lease, bool, error) {
	if key == l.key && holder == l.holder {
		l.once.Do(func() { time.Sleep(l.delay) }) // the latency of a loaded database
	}
	return l.Leases.Acquire(ctx, key, holder, ttl)
}

func TestAFollowedTurnWhoseInstanceTakesItsLeaseLateButWithinATTLIsNotEnded(t *testing.T) {
	t.Parallel()
	// The watchers look every TTL/5: half a TTL is two looks and more.
	session := "ahp-session:/slow-lease"
	e := newSharedChatEnv(t, &slowLeases{Leases: &memlease.Leases{}, key: "turn " + session + " t1", holder: "first", delay: sharedTTL / 2})
	e.makeBot(t, "motion", motionBody)
	watcher := e.sibling("second")
	c1, c2 := e.connect(t, "soft"), watcher.connect(t, "soft")
	_, chat := c1.open(session, "motion")
	c2.waitHolding(t, chat)
	c2.subscribe(chat)
	c1.say(chat, "t1", "sleep 1")
	got := c2.waitChat(chat, "the turn's end", func(s ahp.ChatState) bool {
		return s.ActiveTurn == nil && len(s.Turns) == 1
	}).Turns[0]
	if got.State != ahp.TurnStateComplete {
		t.Errorf("a turn whose lease was taken half a TTL late ended %s on the watcher: %s", got.State, jsonText(got))
	}
}
