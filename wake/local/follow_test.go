package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/chatlog/memchatlog"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/lease/memlease"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/echo"
	"github.com/agenthost/bots/wake/internal/maintest"
	"github.com/agenthost/bots/wake/local"
	"github.com/agenthost/bots/wake/memrows"
)

// node is one instance of several on shared logs, rows and leases: a
// local.Host and a Waker on it.
type node struct {
	host *local.Host
	w    *wake.Waker
	bot  record.Record
	n    int
}

// nodes starts n instances sharing memory logs, rows and leases, and a
// bot in a folder for them to wake.
func nodes(t *testing.T, n int) []*node {
	t.Helper()
	return nodesOn(t, &memchatlog.Logs{}, n)
}

// nodesOn starts n instances on logs.
func nodesOn(t *testing.T, logs chatlog.Shared, n int) []*node {
	t.Helper()
	rows, leases := &memrows.Rows{}, &memlease.Leases{}
	bot := testBot(t)
	out := make([]*node, n)
	for i := range out {
		h, err := local.New(local.Config{Harnesses: map[string]wake.Harness{echo.Provider: echo.Harness{}}, Logs: logs, Shared: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		w, err := wake.New(wake.Config{Host: h, Rows: rows, DefaultAgent: echo.Provider, Leases: leases, Holder: fmt.Sprintf("node-%d", i),
			LeaseTTL: 5 * time.Second, LeasePoll: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		out[i] = &node{host: h, w: w, bot: bot}
	}
	return out
}

// testBot is a bot in a folder of the test's own, with its AGENTS.md.
func testBot(t *testing.T) record.Record {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("---\nname: Motion\n---\n## Instructions\nBe brief.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return record.Record{ID: "motion", Name: "Motion", Workspace: dir, Owner: "user:soft"}
}

// say wakes the bot on the node's Waker in a main chat of the node's own
// and waits for the main turn to end.
func (nd *node) say(t *testing.T, text string) (ahp.Turn, string) {
	t.Helper()
	nd.n++
	id := fmt.Sprintf("turn-%d", nd.n)
	m := maintest.New(id, text)
	turn := nd.w.Wake(wake.Message{Bot: nd.bot, Person: "user:soft", Session: "ahp-session:/main", Chat: "ahp-chat://main",
		TurnID: id, Text: text, StartedAt: time.Now()}, m)
	return m.Ended(t), turn.Session()
}

// chatNow is the host's state of the session's chat, as a snapshot.
func chatNow(t *testing.T, h *local.Host, session string) string {
	t.Helper()
	c, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, _, err := h.Follow(c, session)
	if err != nil {
		return err.Error()
	}
	return maintest.JSON(st)
}

// listed is the host's listing row of the session, "" when it lists none.
func listed(h *local.Host, owner, session string) string {
	for _, s := range h.Summaries(owner) {
		if s.Resource == session {
			return maintest.JSON(s)
		}
	}
	return ""
}

// recorder keeps every action a host's Follow sends, from a snapshot on.
type recorder struct {
	mu      sync.Mutex
	state   ahp.ChatState
	actions []string
	open    bool
}

func recordOn(t *testing.T, h *local.Host, session string) *recorder {
	t.Helper()
	c, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, ch, err := h.Follow(c, session)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{state: st, open: true}
	go func() {
		for a := range ch {
			r.mu.Lock()
			r.state = ahp.ApplyChat(r.state, a)
			r.actions = append(r.actions, maintest.JSON(a))
			r.mu.Unlock()
		}
		r.mu.Lock()
		r.open = false
		r.mu.Unlock()
	}()
	return r
}

func (r *recorder) now() (ahp.ChatState, []string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state, slices.Clone(r.actions), r.open
}

func TestABackSessionRunningOnOneHostIsListedAndFollowedOnTheOthers(t *testing.T) {
	t.Parallel()
	ns := nodes(t, 3)
	a := ns[0]
	first, session := a.say(t, "hello")
	if !slices.Equal(first.Replies(), []string{"Motion heard: hello"}) {
		t.Fatalf("the first turn says %q", first.Replies())
	}
	for i, nd := range ns[1:] {
		waittest.For(t, fmt.Sprintf("host %d to list the back session as host 0 does", i+1), func() bool {
			return listed(nd.host, "user:soft", session) != "" && listed(nd.host, "user:soft", session) == listed(a.host, "user:soft", session)
		})
		if got := listed(nd.host, "user:other", session); got != "" {
			t.Errorf("host %d lists the back session to another person: %s", i+1, got)
		}
		waittest.For(t, fmt.Sprintf("host %d to hold the chat as host 0 does", i+1), func() bool {
			return chatNow(t, nd.host, session) == chatNow(t, a.host, session)
		})
	}
	recs := make([]*recorder, len(ns))
	for i, nd := range ns {
		recs[i] = recordOn(t, nd.host, session)
	}
	second, again := a.say(t, "stream one two three")
	if again != session || !slices.Equal(second.Replies(), []string{"one two three"}) {
		t.Fatalf("the second message went to %s and says %q", again, second.Replies())
	}
	waittest.For(t, "host 0's back turn to end", func() bool {
		st, _, _ := recs[0].now()
		return len(st.Turns) == 2 && st.ActiveTurn == nil
	})
	want, wantActions, _ := recs[0].now()
	if len(want.Turns) != 2 || want.ActiveTurn != nil || len(wantActions) < 5 {
		t.Fatalf("host 0's chat is %s after %d actions", maintest.JSON(want), len(wantActions))
	}
	for i, r := range recs[1:] {
		waittest.For(t, fmt.Sprintf("host %d to be sent the turn", i+1), func() bool {
			_, got, _ := r.now()
			return len(got) >= len(wantActions)
		})
		st, got, open := r.now()
		if !slices.Equal(got, wantActions) {
			t.Errorf("host %d sent\n%s\nwant host 0's\n%s", i+1, strings.Join(got, "\n"), strings.Join(wantActions, "\n"))
		}
		if maintest.JSON(st) != maintest.JSON(want) || !open {
			t.Errorf("host %d holds the chat as %s (open %v), want %s", i+1, maintest.JSON(st), open, maintest.JSON(want))
		}
		if l, w := listed(ns[i+1].host, "", session), listed(a.host, "", session); l != w {
			t.Errorf("host %d lists %s, want %s", i+1, l, w)
		}
	}
}

// dispatch dispatches a to the host's channel at uri as a root client.
func dispatch(t *testing.T, h *local.Host, uri string, a ahp.Action) error {
	t.Helper()
	ch, err := h.Channel(context.Background(), engine.Caller{Principal: access.Principal{Root: true}}, uri)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	return ch.(engine.Dispatcher).Dispatch(context.Background(), engine.Dispatch{Action: raw, Origin: engine.Origin{ClientID: "c"}})
}

func TestAClientsActionOnABackSessionAnotherHostRunsIsRefusedThereAndTakenWhereItRuns(t *testing.T) {
	t.Parallel()
	ns := nodes(t, 2)
	a, b := ns[0], ns[1]
	_, session := a.say(t, "hello")
	chat := ahp.DefaultChatURI(session)
	waittest.For(t, "host 1 to hold the back session", func() bool { return listed(b.host, "", session) != "" })

	err := dispatch(t, b.host, chat, ahp.NewAction(&ahp.ChatIsReadChangedAction{IsRead: true}))
	if errcode.Of(err) != errcode.Invalid || !strings.Contains(err.Error(), "runs on another instance") {
		t.Fatalf("a dispatch on the host that does not run the session answered %v, want a refusal saying where it runs", err)
	}
	err = dispatch(t, b.host, session, ahp.NewAction(&ahp.SessionTitleChangedAction{Title: "elsewhere"}))
	if errcode.Of(err) != errcode.Invalid {
		t.Fatalf("a session dispatch on the host that does not run the session answered %v, want a refusal", err)
	}
	if err := dispatch(t, a.host, chat, ahp.NewAction(&ahp.ChatIsReadChangedAction{IsRead: true})); err != nil {
		t.Fatalf("the host that runs the session refused: %v", err)
	}
	if err := dispatch(t, a.host, session, ahp.NewAction(&ahp.SessionTitleChangedAction{Title: "renamed"})); err != nil {
		t.Fatalf("the host that runs the session refused: %v", err)
	}
	waittest.For(t, "host 1 to read the actions taken on host 0", func() bool {
		return chatNow(t, b.host, session) == chatNow(t, a.host, session) && listed(b.host, "", session) == listed(a.host, "", session)
	})
	var st ahp.ChatState
	if err := json.Unmarshal([]byte(chatNow(t, b.host, session)), &st); err != nil {
		t.Fatal(err)
	}
	if l := listed(b.host, "", session); !strings.Contains(l, `"renamed"`) || st.Status&ahp.StatusIsRead == 0 {
		t.Errorf("host 1 lists %s and holds %s", l, chatNow(t, b.host, session))
	}
}

func TestABackSessionTakenOverByAnotherHostIsFollowedByTheFirstAndTakenBackWithItsChannelsOpen(t *testing.T) {
	t.Parallel()
	ns := nodes(t, 2)
	a, b := ns[0], ns[1]
	_, session := a.say(t, "one")
	waittest.For(t, "host 1 to hold the back session", func() bool {
		return chatNow(t, b.host, session) == chatNow(t, a.host, session)
	})
	ra, rb := recordOn(t, a.host, session), recordOn(t, b.host, session)

	// The next message is said on B: B takes the lease and the session
	// over, and A follows it.
	turn, s2 := b.say(t, "two")
	if s2 != session || !slices.Equal(turn.Replies(), []string{"Motion heard: two"}) {
		t.Fatalf("on host 1 the message went to %s saying %q", s2, turn.Replies())
	}
	// And back on A, which continues the session with its agent opened
	// anew.
	turn, s3 := a.say(t, "three")
	if s3 != session || !slices.Equal(turn.Replies(), []string{"Motion heard: three"}) {
		t.Fatalf("back on host 0 the message went to %s saying %q", s3, turn.Replies())
	}
	waittest.For(t, "both hosts to be sent both turns", func() bool {
		sa, _, _ := ra.now()
		sb, _, _ := rb.now()
		return len(sa.Turns) == 3 && sa.ActiveTurn == nil && len(sb.Turns) == 3 && sb.ActiveTurn == nil
	})
	sa, aa, openA := ra.now()
	sb, ab, openB := rb.now()
	if !openA || !openB {
		t.Errorf("a subscription ended (A open %v, B open %v): the copies were read over rather than followed", openA, openB)
	}
	if !slices.Equal(aa, ab) || maintest.JSON(sa) != maintest.JSON(sb) {
		t.Errorf("the hosts were sent\n%s\nand\n%s", strings.Join(aa, "\n"), strings.Join(ab, "\n"))
	}
	if got := maintest.JSON(sa); chatNow(t, a.host, session) != got || chatNow(t, b.host, session) != got {
		t.Errorf("the hosts hold the chat as\n%s\nand\n%s\nwant what they sent\n%s", chatNow(t, a.host, session), chatNow(t, b.host, session), got)
	}
}

func TestABackSessionDisposedOfOnOneHostIsLetGoOnTheOthers(t *testing.T) {
	t.Parallel()
	ns := nodes(t, 2)
	a, b := ns[0], ns[1]
	_, session := a.say(t, "hello")
	waittest.For(t, "host 1 to hold the back session", func() bool { return listed(b.host, "", session) != "" })
	if err := a.host.Dispose(context.Background(), session); err != nil {
		t.Fatal(err)
	}
	waittest.For(t, "host 1 to let it go", func() bool {
		held, _ := b.host.Has(context.Background(), session)
		return !held && listed(b.host, "", session) == ""
	})
	if held, _ := a.host.Has(context.Background(), session); held {
		t.Error("the host that disposed of the session holds it again")
	}
}

// unsureLogs are memory logs whose nth Append from when it is armed
// writes the line and answers an error, as a database that went away as
// it committed does.
type unsureLogs struct {
	*memchatlog.Logs
	n atomic.Int32
}

func (l *unsureLogs) Append(ctx context.Context, key chatlog.Key, line []byte, sync bool) error {
	err := l.Logs.Append(ctx, key, line, sync)
	if err == nil && l.n.Add(-1) == 0 {
		return errors.New("the connection was lost as the line was committed")
	}
	return err
}

func TestALineWrittenWhoseWriteReportedAnErrorDoesNotStopTheTurnThatWroteIt(t *testing.T) {
	t.Parallel()
	logs := &unsureLogs{Logs: &memchatlog.Logs{}}
	ns := nodesOn(t, logs, 2)
	a, b := ns[0], ns[1]
	_, session := a.say(t, "hello")
	waittest.For(t, "host 1 to hold the back session", func() bool { return listed(b.host, "", session) != "" })
	r := recordOn(t, a.host, session)
	logs.n.Store(3) // a line of the turn below
	turn, _ := a.say(t, "stream one two three four")
	if turn.State != ahp.TurnStateComplete || !slices.Equal(turn.Replies(), []string{"one two three four"}) {
		t.Fatalf("the main turn ended %s saying %q", turn.State, turn.Replies())
	}
	waittest.For(t, "both hosts to hold the ended back turn alike", func() bool {
		st, _, _ := r.now()
		return len(st.Turns) == 2 && st.ActiveTurn == nil && chatNow(t, b.host, session) == maintest.JSON(st) && chatNow(t, a.host, session) == maintest.JSON(st)
	})
	if _, _, open := r.now(); !open {
		t.Error("the subscription on the host that ran the turn ended: it read its own line as another's")
	}
}

// openRequest is the id of the input request the chat's running turn
// waits on, "" when none.
func openRequest(t *testing.T, h *local.Host, session string) string {
	var st ahp.ChatState
	if err := json.Unmarshal([]byte(chatNow(t, h, session)), &st); err != nil || st.ActiveTurn == nil {
		return ""
	}
	for _, p := range st.ActiveTurn.ResponseParts {
		if p.InputRequest != nil && st.ActiveTurn.OpenInputRequest(p.InputRequest.Request.ID) {
			return p.InputRequest.Request.ID
		}
	}
	return ""
}

func TestAnAnswerGivenOnAHostThatDoesNotRunTheBackSessionReachesTheTurnWhereItRuns(t *testing.T) {
	t.Parallel()
	ns := nodes(t, 2)
	a, b := ns[0], ns[1]
	_, session := a.say(t, "hello")
	chat := ahp.DefaultChatURI(session)
	m := maintest.New("asking", "ask your name?")
	a.w.Wake(wake.Message{Bot: a.bot, Person: "user:soft", Session: "ahp-session:/main", Chat: "ahp-chat://main",
		TurnID: "asking", Text: "ask your name?", StartedAt: time.Now()}, m)
	waittest.For(t, "host 1 to show the question asked on host 0", func() bool { return openRequest(t, b.host, session) != "" })
	rb := recordOn(t, b.host, session)
	ra := recordOn(t, a.host, session)
	answer := ahp.InputCompleted(openRequest(t, b.host, session), ahp.InputAccept, map[string]ahp.ChatInputAnswer{
		echo.QuestionID: {State: "submitted", Value: &ahp.ChatInputAnswerValue{Kind: "text", Value: "Ada"}},
	})
	if err := dispatch(t, b.host, chat, answer); err != nil {
		t.Fatalf("the answer on host 1 was refused: %v", err)
	}
	if turn := m.Ended(t); !slices.Equal(turn.Replies(), []string{"you said: Ada"}) {
		t.Fatalf("the turn on host 0, answered on host 1, ended %s saying %q", turn.State, turn.Replies())
	}
	// The same answer again is refused: the question is closed.
	if err := dispatch(t, b.host, chat, answer); errcode.Of(err) != errcode.Invalid {
		t.Errorf("a second answer answered %v, want a refusal", err)
	}
	waittest.For(t, "both hosts to hold the ended turn alike", func() bool {
		sa, _, _ := ra.now()
		sb, _, _ := rb.now()
		return sa.ActiveTurn == nil && maintest.JSON(sa) == maintest.JSON(sb)
	})
	_, aa, _ := ra.now()
	_, ab, _ := rb.now()
	if !slices.Equal(aa, ab) {
		t.Errorf("the hosts were sent\n%s\nand\n%s", strings.Join(aa, "\n"), strings.Join(ab, "\n"))
	}
}
