package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/internal/pgtest"
	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/lease/pglease"
)

// stateJSON is the client's reduced state of uri (a session or a chat).
func stateJSON(c *ahpClient, uri string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if strings.HasPrefix(uri, "ahp-chat:") {
		return mustJSON(c.chats[uri])
	}
	return mustJSON(c.sessions[uri])
}

// logFiles lists the chat and back-session log files under config.
func logFiles(t *testing.T, config string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(config, func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".jsonl") {
			out = append(out, path)
		}
		return nil
	})
	return out
}

func TestEndToEndAnotherInstanceOnTheDatabaseReplaysAChatAndContinuesItsBackSession(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	base := t.TempDir()
	db, root := pgtest.URL(t), filepath.Join(base, "bots")
	config1, config2 := filepath.Join(base, "config-1"), filepath.Join(base, "config-2")
	cmd, addr := startProcess(t, bin, config1, root, "-db", db)
	c := dialChat(t, addr, "one")
	c.makeBot("motion", `{"name": "Motion"}`)
	session := "ahp-session:/shared"
	chat := c.openChat(session, "motion")
	if got := say(t, c, chat, "t1", "hello"); !slices.Equal(got, []string{"Motion heard: hello"}) {
		t.Fatalf("on the first instance the bot says %q", got)
	}
	back := backOf(c.turn(chat, "t1"))
	if back == "" {
		t.Fatal("the main turn shows no back session")
	}
	c.subscribe(back)
	c.waitChat(back, "the back turn of hello", func(s ahp.ChatState) bool { return len(s.Turns) == 1 && s.ActiveTurn == nil })
	c.sameAsSnapshot(addr)
	want := map[string]string{session: stateJSON(c, session), chat: stateJSON(c, chat), back: stateJSON(c, back)}
	endProcess(t, cmd, syscall.SIGTERM)

	// Another instance, with a configuration folder of its own, on the
	// same database.
	_, addr2 := startProcess(t, bin, config2, root, "-db", db)
	c2 := dialChat(t, addr2, "two")
	for _, uri := range []string{session, chat, back} {
		c2.subscribe(uri)
		if got := stateJSON(c2, uri); got != want[uri] {
			t.Errorf("the other instance's snapshot of %s is\n%s\nwant the first's\n%s", uri, got, want[uri])
		}
	}
	if got := say(t, c2, chat, "t2", "again"); !slices.Equal(got, []string{"Motion heard: again"}) {
		t.Errorf("on the other instance the bot says %q", got)
	}
	if got := backOf(c2.turn(chat, "t2")); got != back {
		t.Errorf("on the other instance the message went to %s, want the same back session %s", got, back)
	}
	st := c2.waitChat(back, "the back turn of again", func(s ahp.ChatState) bool { return len(s.Turns) == 2 && s.ActiveTurn == nil })
	if words(st.Turns[0]) != "hello" || words(st.Turns[1]) != "again" {
		t.Errorf("the back chat holds %s, want hello then again", mustJSON(st.Turns))
	}
	c2.sameAsSnapshot(addr2)
	for _, config := range []string{config1, config2} {
		if files := logFiles(t, config); len(files) != 0 {
			t.Errorf("with -db, logs were written as files: %q", files)
		}
	}
}

// count answers a SELECT count(*) on the test's database.
func count(t *testing.T, db, query string) int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(t.Context(), query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestEndToEndFiftyConcurrentMessagesOverThreeInstancesStartOneBackSession(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	base := t.TempDir()
	db, root := pgtest.URL(t), filepath.Join(base, "bots")
	var clients []*ahpClient
	for i := range 3 {
		_, addr := startProcess(t, bin, filepath.Join(base, fmt.Sprintf("config-%d", i)), root, "-db", db)
		clients = append(clients, dialChat(t, addr, fmt.Sprintf("client-%d", i)))
	}
	clients[0].makeBot("motion", `{"name": "Motion"}`)
	const n = 50
	chats := make([]string, n)
	for i := range n {
		chats[i] = clients[i%3].openChat(fmt.Sprintf("ahp-session:/m-%d", i), "motion")
	}
	// Every message at once: each in a main chat of its own, all to one
	// (bot, person, name), spread over the three instances.
	for i := range n {
		clients[i%3].dispatch(chats[i], ahp.TurnStarted("t", time.Now(), ahp.UserMessage(fmt.Sprintf("m-%d", i))))
	}
	backs := map[string]bool{}
	for i := range n {
		c := clients[i%3]
		st := c.waitChatFor(chats[i], "the turn", 2*time.Minute, func(s ahp.ChatState) bool {
			return len(s.Turns) == 1 && s.ActiveTurn == nil
		})
		turn := st.Turns[0]
		if got := texts(turn); turn.State != ahp.TurnStateComplete || !slices.Equal(got, []string{fmt.Sprintf("Motion heard: m-%d", i)}) {
			t.Errorf("message %d: the turn ended %s saying %q: %s", i, turn.State, got, mustJSON(turn))
		}
		backs[backOf(turn)] = true
	}
	if len(backs) != 1 {
		t.Errorf("the messages went to %d back sessions, want 1: %v", len(backs), slices.Collect(maps.Keys(backs)))
	}
	if got := count(t, db, `SELECT count(*) FROM bots_logs WHERE kind = 'sessions'`); got != 1 {
		t.Errorf("the database holds %d back-session logs, want 1", got)
	}
	if got := count(t, db, `SELECT count(*) FROM bots_rows`); got != 1 {
		t.Errorf("the database holds %d session rows, want 1", got)
	}
	// Each instance answered its messages, one at a time: the lease went
	// round, each taking over with a greater token.
	if got := count(t, db, `SELECT max(token) FROM bots_leases`); got < 3 {
		t.Errorf("the lease was taken %d times, want at least once by each instance", got)
	}
	// Every main turn took a lease of its own: pruned, the rows of the
	// ended turns are gone (each instance lets go of its turn's lease just
	// after the turn ends).
	ls, err := pglease.Open(t.Context(), pgtest.Pool(t, db))
	if err != nil {
		t.Fatal(err)
	}
	var left int
	if !waittest.Within(15*time.Second, func() bool {
		if _, err := ls.Prune(t.Context(), lease.PruneGrace); err != nil {
			t.Fatal(err)
		}
		left = count(t, db, `SELECT count(*) FROM bots_leases WHERE key LIKE 'turn %'`)
		return left == 0
	}) {
		t.Fatalf("after %d turns and a prune, bots_leases holds %d rows of ended turns", n, left)
	}
}

// shortTTL is the lease time to live (-lease-ttl) of the end-to-end tests
// that wait for a dead instance's leases to expire and need not prove the
// default bound.
const shortTTL = 2 * time.Second

func TestEndToEndKillingTheInstanceThatHoldsALeaseMidTurnLetsAnotherTakeOverAndResume(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	base := t.TempDir()
	db, root := pgtest.URL(t), filepath.Join(base, "bots")
	ttl := "-lease-ttl=" + shortTTL.String()
	cmd, addr := startProcess(t, bin, filepath.Join(base, "config-a"), root, "-db", db, ttl)
	c := dialChat(t, addr, "a")
	c.makeBot("motion", `{"name": "Motion"}`)
	session := "ahp-session:/takeover"
	chat := c.openChat(session, "motion")
	back := c.runBack(chat, "t1", "sleep 3")
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	killed := time.Now()

	// Another instance, on the same database, while the dead one's lease
	// has not expired yet.
	_, addr2 := startProcess(t, bin, filepath.Join(base, "config-b"), root, "-db", db, ttl)
	c2 := dialChat(t, addr2, "b")
	c2.subscribe(session)
	c2.subscribe(chat)
	c2.mu.Lock()
	replayed := c2.chats[chat]
	c2.mu.Unlock()
	if len(replayed.Turns) != 1 || replayed.ActiveTurn != nil {
		t.Fatalf("the other instance reads the chat as %s", mustJSON(replayed))
	}
	parts := replayed.Turns[0].ResponseParts
	if last := parts[len(parts)-1]; last.Error == nil || last.Error.Error.ErrorType != "executionInterrupted" || !last.Error.Resumable {
		t.Fatalf("the killed turn reads %s, want interrupted and resumable", mustJSON(replayed.Turns[0]))
	}
	// Resumed there, it waits for the dead instance's lease, takes the
	// back session over and is answered once.
	c2.dispatch(chat, ahp.TurnResume("t1"))
	got := c2.waitChatFor(chat, "the resumed turn", time.Minute, func(s ahp.ChatState) bool {
		return s.ActiveTurn == nil && len(s.Turns) == 1 && s.Turns[0].State == ahp.TurnStateComplete
	}).Turns[0]
	took := time.Since(killed)
	if !slices.Equal(texts(got), []string{"awake"}) {
		t.Errorf("the resumed turn says %q: %s", texts(got), mustJSON(got))
	}
	// The lease's expiry, the start of the other instance, and the sleep
	// of 3 s.
	if bound := shortTTL + 5*time.Second + 3*time.Second; took > bound {
		t.Errorf("the takeover and answer took %v, want within %v with leases of %v", took, bound, shortTTL)
	}
	c2.subscribe(back)
	bs := c2.waitChat(back, "the back chat", func(s ahp.ChatState) bool { return s.ActiveTurn == nil && len(s.Turns) == 2 })
	if k := bs.Turns[0]; k.State != ahp.TurnStateError || !strings.Contains(mustJSON(k), `"executionInterrupted"`) || words(bs.Turns[1]) != "sleep 3" {
		t.Errorf("the back chat holds %s, want the killed turn interrupted, then the resumed message once", mustJSON(bs.Turns))
	}
	t.Logf("killed to answered: %v; the turn says %q", took, texts(got))
}

// follow subscribes c to the session and chat of a bot chat another
// instance opened, once c's instance holds it, and records every action
// on them from then on.
func (c *ahpClient) follow(session string) string {
	c.t.Helper()
	chat := ahp.DefaultChatURI(session)
	waittest.For(c.t, "the instance to hold the chat "+chat, func() bool {
		return c.call("subscribe", map[string]any{"channel": chat}, nil, nil) == nil
	})
	c.mu.Lock()
	if c.recorded == nil {
		c.recorded = map[string][]string{}
	}
	c.botChats[chat] = true
	c.mu.Unlock()
	c.subscribe(session)
	c.subscribe(chat)
	return chat
}

// actions are the actions c was sent on uri, from its subscription on.
func (c *ahpClient) actions(uri string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.recorded[uri])
}

// sameActions checks that every client was sent the same actions on uri.
func sameActions(t *testing.T, uri string, clients ...*ahpClient) {
	t.Helper()
	want := clients[0].actions(uri)
	for i, c := range clients[1:] {
		if got := c.actions(uri); !slices.Equal(got, want) {
			t.Errorf("client %d was sent on %s\n%s\nwant client 0's\n%s", i+1, uri, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// waitSameState waits until every client's reduced state of uri is the
// first one's.
func waitSameState(t *testing.T, uri string, clients ...*ahpClient) {
	t.Helper()
	var want string
	differ := -1
	if !waittest.Within(10*time.Second, func() bool {
		want, differ = stateJSON(clients[0], uri), -1
		for i, c := range clients[1:] {
			if stateJSON(c, uri) != want {
				differ = i + 1
			}
		}
		return differ < 0
	}) {
		t.Fatalf("client %d holds %s as\n%s\nwant client 0's\n%s", differ, uri, stateJSON(clients[differ], uri), want)
	}
}

func TestEndToEndClientsOnEveryInstanceSeeTheSameActionsOfAChatInOrder(t *testing.T) {
	t.Parallel()
	session := "ahp-session:/everywhere"
	in, chat := chatOnInstances(t, 3, session)
	a, b, c := in[0].c, in[1].c, in[2].c
	clients := []*ahpClient{a, b, c}

	// A turn runs on A: B and C are sent the same actions, in order.
	a.dispatch(chat, ahp.TurnStarted("t1", time.Now(), ahp.UserMessage("hello")))
	for _, cl := range clients {
		st := cl.waitChat(chat, "the turn on A", func(s ahp.ChatState) bool { return len(s.Turns) == 1 && s.ActiveTurn == nil })
		if got := texts(st.Turns[0]); !slices.Equal(got, []string{"Motion heard: hello"}) {
			t.Fatalf("a client reads the turn on A saying %q", got)
		}
	}
	waitSameState(t, chat, clients...)
	waitSameState(t, session, clients...)
	sameActions(t, chat, clients...)
	sameActions(t, session, clients...)
	back := backOf(a.turn(chat, "t1"))

	// A client on C talks in the chat whose back session ran on A: it
	// reads the reply, from the same back session, and A and B see it.
	c.dispatch(chat, ahp.TurnStarted("t2", time.Now(), ahp.UserMessage("again")))
	for _, cl := range clients {
		st := cl.waitChat(chat, "the turn on C", func(s ahp.ChatState) bool { return len(s.Turns) == 2 && s.ActiveTurn == nil })
		if got := texts(st.Turns[1]); !slices.Equal(got, []string{"Motion heard: again"}) {
			t.Fatalf("a client reads the turn on C saying %q", got)
		}
	}
	if got := backOf(c.turn(chat, "t2")); got != back {
		t.Errorf("the message on C went to %s, want the back session %s", got, back)
	}

	// A message queued on B while A runs a turn (and holds the back
	// session) is answered once, after it.
	a.dispatch(chat, ahp.TurnStarted("t3", time.Now(), ahp.UserMessage("sleep 1")))
	b.waitChat(chat, "the turn on A, on B", func(s ahp.ChatState) bool { return s.ActiveTurn != nil && s.ActiveTurn.ID == "t3" })
	b.dispatch(chat, ahp.PendingMessageSet(ahp.PendingQueued, "q1", ahp.UserMessage("from b")))
	for _, cl := range clients {
		cl.waitChatFor(chat, "the queued message's turn", time.Minute, func(s ahp.ChatState) bool {
			return len(s.Turns) == 4 && s.ActiveTurn == nil && len(s.QueuedMessages) == 0
		})
	}
	waitSameState(t, chat, clients...)
	waitSameState(t, session, clients...)
	sameActions(t, chat, clients...)
	sameActions(t, session, clients...)
	st := b.waitChat(chat, "the end", func(s ahp.ChatState) bool { return len(s.Turns) == 4 })
	if got := texts(st.Turns[2]); !slices.Equal(got, []string{"awake"}) {
		t.Errorf("the turn on A says %q", got)
	}
	if m, got := st.Turns[3].Message.Text, texts(st.Turns[3]); m != "from b" || !slices.Equal(got, []string{"Motion heard: from b"}) {
		t.Errorf("the queued message's turn is %q saying %q, want it answered once", m, got)
	}
	if got := backOf(st.Turns[3]); got != back {
		t.Errorf("the queued message went to %s, want the back session %s", got, back)
	}
	for i, cl := range clients {
		cl.sameAsSnapshot(in[i].addr)
	}
	if n := len(a.actions(chat)); n < 20 {
		t.Errorf("the clients were sent %d actions on the chat, want the four turns'", n)
	}

	// Two messages at once on two instances: the log lets one begin a
	// turn, and the other is refused (a turn is in progress) everywhere.
	a.dispatch(chat, ahp.TurnStarted("x-a", time.Now(), ahp.UserMessage("one")))
	b.dispatch(chat, ahp.TurnStarted("x-b", time.Now(), ahp.UserMessage("two")))
	for _, cl := range clients {
		cl.waitChat(chat, "the race's turn", func(s ahp.ChatState) bool { return len(s.Turns) == 5 && s.ActiveTurn == nil })
	}
	waitSameState(t, chat, clients...)
	sameActions(t, chat, clients...)
	st = a.waitChat(chat, "the race's turn", func(s ahp.ChatState) bool { return len(s.Turns) == 5 })
	if m := st.Turns[4].Message.Text; m != "one" && m != "two" {
		t.Errorf("the race's turn is %q", m)
	}
}

func TestEndToEndAStopOnAnotherInstanceStopsTheTurnWhereItRuns(t *testing.T) {
	t.Parallel()
	in, chat := chatOnInstances(t, 2, "ahp-session:/stop")
	a, b := in[0].c, in[1].c
	a.dispatch(chat, ahp.TurnStarted("t1", time.Now(), ahp.UserMessage("sleep 60")))
	st := b.waitChat(chat, "the back session, on B", func(s ahp.ChatState) bool {
		p := active(s)
		return len(p) > 0 && p[0].ToolCall != nil && len(p[0].ToolCall.Content) > 0
	})
	back := st.ActiveTurn.ResponseParts[0].ToolCall.Content[0].Resource
	a.subscribe(back)
	a.waitChat(back, "the back turn on A", func(s ahp.ChatState) bool { return s.ActiveTurn != nil })

	stopped := time.Now()
	b.dispatch(chat, ahp.TurnCancelled("t1", 0))
	for _, c := range []*ahpClient{a, b} {
		c.waitChat(chat, "the cancel", func(s ahp.ChatState) bool {
			return s.ActiveTurn == nil && len(s.Turns) == 1 && s.Turns[0].State == ahp.TurnStateCancelled
		})
	}
	// The back turn on A was stopped: it ends now, not in a minute.
	a.waitChat(back, "the back turn's end on A", func(s ahp.ChatState) bool { return s.ActiveTurn == nil && len(s.Turns) == 1 })
	if took := time.Since(stopped); took > 30*time.Second {
		t.Errorf("the back turn ended %v after the stop on B", took)
	}
	waitSameState(t, chat, a, b)
	sameActions(t, chat, a, b)
}

func TestEndToEndAnAnswerGivenOnAnotherInstanceReachesTheTurnWhereItRuns(t *testing.T) {
	t.Parallel()
	in, chat := chatOnInstances(t, 2, "ahp-session:/answer")
	a, b := in[0].c, in[1].c
	a.dispatch(chat, ahp.TurnStarted("t", time.Now(), ahp.UserMessage("ask your name?")))
	st := b.waitChat(chat, "the question, on B", func(s ahp.ChatState) bool {
		return slices.ContainsFunc(active(s), func(p ahp.ResponsePart) bool { return p.InputRequest != nil })
	})
	var id string
	for _, p := range active(st) {
		if p.InputRequest != nil {
			id = p.InputRequest.Request.ID
		}
	}
	b.dispatch(chat, ahp.InputCompleted(id, ahp.InputAccept, map[string]ahp.ChatInputAnswer{
		"answer": {State: "submitted", Value: &ahp.ChatInputAnswerValue{Kind: "text", Value: "Ada"}},
	}))
	for _, c := range []*ahpClient{a, b} {
		st := c.waitChat(chat, "the answered turn", func(s ahp.ChatState) bool { return len(s.Turns) == 1 && s.ActiveTurn == nil })
		if got := texts(st.Turns[0]); !slices.Equal(got, []string{"you said: Ada"}) {
			t.Errorf("the turn on A, answered on B, says %q", got)
		}
	}
	waitSameState(t, chat, a, b)
	sameActions(t, chat, a, b)
}

func TestEndToEndAMainTurnWhoseInstanceIsKilledReadsInterruptedOnTheOthersAndResumesOnce(t *testing.T) {
	t.Parallel()
	// The instances run with the default -lease-ttl (10 s): this proves
	// the bound the README gives, TTL + TTL/5 (12 s), with 3 s to spare.
	killMainTurn(t, lease.DefaultTTL, 15*time.Second)
}

func TestEndToEndWithAShortLeaseTTLAKilledMainTurnReadsInterruptedSooner(t *testing.T) {
	t.Parallel()
	// -lease-ttl reaches the watch of main turns: TTL + TTL/5 (2.4 s),
	// with the same 3 s to spare.
	killMainTurn(t, shortTTL, shortTTL+shortTTL/5+3*time.Second)
}

// killMainTurn kills, mid-turn, the instance that runs a main turn, of
// three on one database with leases of ttl, and checks that the two
// others read the turn as interrupted within bound and resume it once.
func killMainTurn(t *testing.T, ttl, bound time.Duration) {
	in, chat := chatOnInstances(t, 3, "ahp-session:/killed", "-lease-ttl="+ttl.String())
	cmdA, a, b, c := in[0].cmd, in[0].c, in[1].c, in[2].c
	a.dispatch(chat, ahp.TurnStarted("t1", time.Now(), ahp.UserMessage("sleep 4")))
	for _, cl := range []*ahpClient{b, c} {
		cl.waitChat(chat, "the back session, followed", func(s ahp.ChatState) bool {
			p := active(s)
			return len(p) > 0 && p[0].ToolCall != nil && len(p[0].ToolCall.Content) > 0
		})
	}
	if err := cmdA.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmdA.Wait()
	killed := time.Now()

	// Within the bound, both watching instances read the turn as
	// interrupted and resumable, without a restart or a cancel.
	interrupted := func(s ahp.ChatState) bool {
		if s.ActiveTurn != nil || len(s.Turns) != 1 {
			return false
		}
		parts := s.Turns[0].ResponseParts
		last := parts[len(parts)-1]
		return last.Error != nil && last.Error.Error.ErrorType == "executionInterrupted" && last.Error.Resumable
	}
	for _, cl := range []*ahpClient{b, c} {
		cl.waitChatFor(chat, "the killed turn read as interrupted", bound+5*time.Second, interrupted)
	}
	if took := time.Since(killed); took > bound {
		t.Errorf("the killed turn read as interrupted %v after the kill, want within %v with leases of %v", took, bound, ttl)
	}
	t.Logf("killed to interrupted on B and C: %v", time.Since(killed))
	waitSameState(t, chat, b, c)

	// Resumed on B, it is answered once, and C sees the answer.
	b.dispatch(chat, ahp.TurnResume("t1"))
	for _, cl := range []*ahpClient{b, c} {
		got := cl.waitChatFor(chat, "the resumed turn", time.Minute, func(s ahp.ChatState) bool {
			return s.ActiveTurn == nil && len(s.Turns) == 1 && s.Turns[0].State == ahp.TurnStateComplete
		}).Turns[0]
		if !slices.Equal(texts(got), []string{"awake"}) {
			t.Errorf("the resumed turn says %q: %s", texts(got), mustJSON(got))
		}
	}
	waitSameState(t, chat, b, c)
	sameActions(t, chat, b, c)
}

// instance is a built server on the shared database and a client of it.
type instance struct {
	cmd  *exec.Cmd
	addr string
	c    *ahpClient
	db   string // the database's URL
	bin  string // the built server, root and base folder it was started with
	root string
	base string
}

// chatOnInstances starts n built servers on one throwaway database and
// one root, with a client on each; the first makes bot motion and opens
// session with it, and every client follows the chat, whose URI it
// returns. more are more flags for every instance.
func chatOnInstances(t *testing.T, n int, session string, more ...string) ([]instance, string) {
	t.Helper()
	bin := buildServer(t)
	base := t.TempDir()
	db, root := pgtest.URL(t), filepath.Join(base, "bots")
	in := make([]instance, n)
	for i := range in {
		name := string(rune('a' + i))
		in[i].cmd, in[i].addr = startProcess(t, bin, filepath.Join(base, "config-"+name), root, append([]string{"-db", db}, more...)...)
		in[i].c = dialChat(t, in[i].addr, name)
		in[i].db, in[i].bin, in[i].root, in[i].base = db, bin, root, base
	}
	in[0].c.makeBot("motion", `{"name": "Motion"}`)
	in[0].c.must("createSession", map[string]any{"channel": session, "provider": "bot-chat", "config": map[string]any{"bot": "motion"}}, nil)
	chat := in[0].c.follow(session)
	for _, x := range in[1:] {
		x.c.follow(session)
	}
	return in, chat
}

func TestEndToEndDeletingABotOnTheDatabaseLeavesNothingOfItsChatsThere(t *testing.T) {
	t.Parallel()
	session := "ahp-session:/doomed"
	in, chat := chatOnInstances(t, 2, session)
	a, b, db := in[0].c, in[1].c, in[0].db
	if got := say(t, a, chat, "t1", "hello"); !slices.Equal(got, []string{"Motion heard: hello"}) {
		t.Fatalf("the bot says %q", got)
	}
	back := backOf(a.turn(chat, "t1"))
	a.subscribe(back)
	a.waitChat(back, "the back turn", func(s ahp.ChatState) bool { return len(s.Turns) == 1 && s.ActiveTurn == nil })
	b.waitChat(chat, "the turn, followed", func(s ahp.ChatState) bool { return len(s.Turns) == 1 && s.ActiveTurn == nil })
	of := func(table string) int {
		return count(t, db, `SELECT count(*) FROM `+table+` WHERE bot = 'motion'`)
	}
	if of("bots_logs") != 2 || of("bots_rows") != 1 {
		t.Fatalf("before the deletion the database holds %d logs and %d rows of the bot, want 2 and 1", of("bots_logs"), of("bots_rows"))
	}

	a.must("resourceDelete", map[string]any{"channel": ahp.RootURI, "uri": "bot://motion"}, nil)
	// Acknowledged, the deletion has removed the logs of the bot's chat
	// and back session, and its back-session row.
	if logs, rows := of("bots_logs"), of("bots_rows"); logs != 0 || rows != 0 {
		t.Errorf("after the deletion the database holds %d logs and %d rows of the bot, want none", logs, rows)
	}
	if lines := count(t, db, `SELECT count(*) FROM bots_log_lines`); lines != 0 {
		t.Errorf("after the deletion the database holds %d log lines, want none", lines)
	}
	// The other instance lets the chat go; one started now replays none.
	sessions := func(c *ahpClient) []string {
		var list ahp.ListSessionsResult
		c.must("listSessions", map[string]any{"channel": ahp.RootURI}, &list)
		var out []string
		for _, s := range list.Items {
			out = append(out, s.Resource)
		}
		return out
	}
	if !waittest.Within(15*time.Second, func() bool { return !slices.Contains(sessions(b), session) }) {
		t.Fatalf("15 s after the deletion the other instance still lists the chat: %q", sessions(b))
	}
	_, addr := startProcess(t, in[0].bin, filepath.Join(in[0].base, "config-later"), in[0].root, "-db", db)
	if got := sessions(dialChat(t, addr, "later")); len(got) != 0 {
		t.Errorf("an instance started after the deletion lists %q, want no chat", got)
	}
	// The slug is never made again (a tombstone), so no later bot
	// inherits the chats; the database has nothing left to give it.
	if err := a.call("resourceWrite", map[string]any{"channel": ahp.RootURI, "uri": "bot://motion", "data": `{"name": "Motion"}`,
		"encoding": "utf-8", "createOnly": true}, nil, nil); err == nil || !strings.Contains(err.Message, "never made again") {
		t.Errorf("making the deleted slug again: %v, want it refused", err)
	}
}
