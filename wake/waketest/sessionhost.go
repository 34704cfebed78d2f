package waketest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/wake"
)

// ClientID is the client id under which the SessionHost suite provides
// post_message to the sessions it starts, and completes their calls.
const ClientID = "waketest"

// SessionHost is a wake.SessionHost under test.
type SessionHost struct {
	// Open returns the host under test, for one check; the test closes it
	// (t.Cleanup). Required.
	Open func(t *testing.T) wake.SessionHost
	// Provider is the provider the suite's sessions start on; its agent
	// acts as Script says.
	Provider string
	// Script makes the sessions' agent act. Required.
	Script Script
	// Wait bounds each wait of a check; zero is DefaultWait.
	Wait time.Duration
}

// hostChecks are RunSessionHost's checks, each on a host of its own.
var hostChecks = []struct {
	name string
	fn   func(testing.TB, SessionHost, wake.SessionHost)
}{
	{"StartedSessionIsHeldAndIdle", checkHostStart},
	{"StartOnUnknownProviderIsErrRefused", checkHostStartRefused},
	{"QueuedMessageRunsATurnThatPostsThroughTheClient", checkHostQueued},
	{"QueuedMessageWaitsForTheRunningTurn", checkHostQueueWaits},
	{"QuestionIsAnsweredWithInputCompleted", checkHostAsk},
	{"ApprovalIsAnsweredWithToolCallConfirmed", checkHostApprove},
	{"TurnCancelledStopsTheTurnAndTheChatGoesOn", checkHostStop},
	{"WaitingMessageIsTakenBackWithPendingMessageRemoved", checkHostTakeBack},
	{"ActionThatDoesNotApplyIsErrRefused", checkHostRefusesAction},
	{"UnknownSessionIsErrNoSession", checkHostUnknown},
	{"DisposeEndsTheSessionAndItsFollowers", checkHostDispose},
	{"FollowersSeeTheSameActionsInOrder", checkHostTwoFollowers},
	{"FollowEndsWhenItsContextEnds", checkHostFollowCancel},
	{"SessionsAreApart", checkHostApart},
	{"ListerListsTheBackSessionsHeldUntilDisposed", checkHostLister},
}

// RunSessionHost runs the conformance suite of wake.SessionHost against h.
func RunSessionHost(t *testing.T, h SessionHost) {
	if h.Open == nil || h.Script.Post == nil || h.Script.Ask == nil {
		t.Fatal("waketest: SessionHost needs Open and a Script with Post and Ask")
	}
	for _, c := range hostChecks {
		t.Run(c.name, func(t *testing.T) { c.fn(t, h, h.Open(t)) })
	}
}

// spec is a session the suite starts: in a new folder, post_message
// provided by the suite as its client.
func (h SessionHost) spec(t testing.TB) wake.Spec {
	return wake.Spec{
		Provider: h.Provider, Dir: t.TempDir(), Owner: "user:suite", Title: "Suite", SystemPrompt: wake.SystemPrompt,
		Client: &ahp.SessionActiveClient{ClientID: ClientID, DisplayName: "Suite", Tools: ahp.List[ahp.ToolDefinition]{wake.PostMessageTool()}},
	}
}

func (h SessionHost) start(t testing.TB, sh wake.SessionHost) string {
	t.Helper()
	uri, err := sh.Start(testCtx(t, waitOr(h.Wait)), h.spec(t))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return uri
}

// follower reduces a session chat's actions as a client does, and, when
// client is set, completes the post_message calls of the suite's client.
type follower struct {
	t       testing.TB
	sh      wake.SessionHost
	session string
	wait    time.Duration
	client  bool

	state   ahp.ChatState
	ch      <-chan ahp.Action
	actions []ahp.Action
	posts   []string
	done    map[string]bool // tool calls completed
}

func (h SessionHost) follow(t testing.TB, sh wake.SessionHost, session string, client bool) *follower {
	t.Helper()
	st, ch, err := sh.Follow(testCtx(t, 2*waitOr(h.Wait)+time.Minute), session)
	if err != nil {
		t.Fatalf("Follow: %v", err)
	}
	return &follower{t: t, sh: sh, session: session, wait: waitOr(h.Wait), client: client, state: st, ch: ch, done: map[string]bool{}}
}

// serve completes the running post_message calls of the suite's client.
func (f *follower) serve() {
	at := f.state.ActiveTurn
	if !f.client || at == nil {
		return
	}
	for _, p := range at.ResponseParts {
		tc := p.ToolCall
		if tc == nil || f.done[tc.ToolCallID] || tc.Status != ahp.ToolCallStatusRunning || tc.ToolName != wake.PostMessage ||
			tc.Contributor == nil || tc.Contributor.ClientID != ClientID {
			continue
		}
		f.done[tc.ToolCallID] = true
		var in struct {
			Text string `json:"text"`
		}
		if tc.ToolInput != nil {
			json.Unmarshal([]byte(tc.ToolInput.Text), &in)
		}
		f.posts = append(f.posts, in.Text)
		res := ahp.ToolCallResult{Success: true, PastTenseMessage: ahp.Plain("Posted")}
		if err := f.sh.Dispatch(testCtx(f.t, f.wait), f.session, ahp.ToolCallComplete(at.ID, tc.ToolCallID, res)); err != nil {
			f.t.Fatalf("completing post_message: %v", err)
		}
	}
}

// until reads the chat's actions until cond holds of its state.
func (f *follower) until(what string, cond func(ahp.ChatState) bool) ahp.ChatState {
	f.t.Helper()
	deadline := time.After(f.wait)
	for {
		f.serve()
		if cond(f.state) {
			return f.state
		}
		select {
		case a, ok := <-f.ch:
			if !ok {
				f.t.Fatalf("the chat's follow ended while waiting for %s", what)
			}
			f.actions = append(f.actions, a)
			f.state = ahp.ApplyChat(f.state, a)
		case <-deadline:
			f.t.Fatalf("waited %s for %s", f.wait, what)
		}
	}
}

// ended waits for n ended turns and an idle chat.
func (f *follower) ended(n int) []ahp.Turn {
	f.t.Helper()
	st := f.until("the turns to end", func(c ahp.ChatState) bool { return c.ActiveTurn == nil && len(c.Turns) >= n })
	return st.Turns
}

// running waits for a turn to run and returns its id.
func (f *follower) running() string {
	f.t.Helper()
	return f.until("a turn to run", func(c ahp.ChatState) bool { return c.ActiveTurn != nil }).ActiveTurn.ID
}

func (h SessionHost) send(t testing.TB, sh wake.SessionHost, session, id, text string) {
	t.Helper()
	if err := sh.Send(testCtx(t, waitOr(h.Wait)), session, wake.Pending{Kind: ahp.PendingQueued, ID: id, Message: ahp.UserMessage(text)}); err != nil {
		t.Fatalf("Send %q: %v", text, err)
	}
}

func (h SessionHost) dispatch(t testing.TB, sh wake.SessionHost, session string, a ahp.Action) {
	t.Helper()
	if err := sh.Dispatch(testCtx(t, waitOr(h.Wait)), session, a); err != nil {
		t.Fatalf("Dispatch %s: %v", a.Type, err)
	}
}

func wantState(t testing.TB, turn ahp.Turn, want ahp.TurnState) {
	t.Helper()
	if turn.State != want {
		t.Fatalf("turn %s (%q) ended %s, want %s", turn.ID, turn.Message.Text, turn.State, want)
	}
}

func checkHostStart(t testing.TB, h SessionHost, sh wake.SessionHost) {
	uri := h.start(t, sh)
	if ok, err := sh.Has(testCtx(t, waitOr(h.Wait)), uri); err != nil || !ok {
		t.Fatalf("Has(%s) after Start: %v, %v", uri, ok, err)
	}
	f := h.follow(t, sh, uri, true)
	if f.state.ActiveTurn != nil || len(f.state.QueuedMessages) != 0 || len(f.state.Turns) != 0 {
		t.Fatalf("a new session's chat is not idle and empty: %+v", f.state)
	}
}

func checkHostStartRefused(t testing.TB, h SessionHost, sh wake.SessionHost) {
	spec := h.spec(t)
	spec.Provider = "no-such-agent-waketest"
	if _, err := sh.Start(testCtx(t, waitOr(h.Wait)), spec); !errors.Is(err, wake.ErrRefused) {
		t.Fatalf("Start on an unknown provider: %v, want ErrRefused", err)
	}
}

func checkHostQueued(t testing.TB, h SessionHost, sh wake.SessionHost) {
	uri := h.start(t, sh)
	f := h.follow(t, sh, uri, true)
	msg, posted := h.Script.Post("hello there")
	h.send(t, sh, uri, "m1", msg)
	turns := f.ended(1)
	wantState(t, turns[0], ahp.TurnStateComplete)
	if turns[0].Message.Text != msg {
		t.Fatalf("the turn answered %q, want %q", turns[0].Message.Text, msg)
	}
	if !slices.Equal(f.posts, []string{posted}) {
		t.Fatalf("posted %q, want %q", f.posts, posted)
	}
	named := slices.ContainsFunc(f.actions, func(a ahp.Action) bool {
		b, ok := a.Body.(*ahp.ChatTurnStartedAction)
		return ok && b.QueuedMessageID == "m1"
	})
	if !named {
		t.Fatal("no chat/turnStarted named the queued message m1")
	}
}

func checkHostQueueWaits(t testing.TB, h SessionHost, sh wake.SessionHost) {
	if h.Script.Wait == "" {
		t.Skip("the script has no Wait")
	}
	uri := h.start(t, sh)
	f := h.follow(t, sh, uri, true)
	h.send(t, sh, uri, "m1", h.Script.Wait)
	first := f.running()
	msg, posted := h.Script.Post("after the wait")
	h.send(t, sh, uri, "m2", msg)
	f.until("m2 to wait in the queue", func(c ahp.ChatState) bool {
		return slices.ContainsFunc(c.QueuedMessages, func(m ahp.PendingMessage) bool { return m.ID == "m2" })
	})
	if f.state.ActiveTurn == nil || f.state.ActiveTurn.ID != first {
		t.Fatal("a queued message took the place of the running turn")
	}
	h.dispatch(t, sh, uri, ahp.TurnCancelled(first, 0))
	turns := f.ended(2)
	wantState(t, turns[0], ahp.TurnStateCancelled)
	wantState(t, turns[1], ahp.TurnStateComplete)
	if !slices.Equal(f.posts, []string{posted}) {
		t.Fatalf("posted %q, want %q", f.posts, posted)
	}
}

func checkHostAsk(t testing.TB, h SessionHost, sh wake.SessionHost) {
	uri := h.start(t, sh)
	f := h.follow(t, sh, uri, true)
	msg, answered := h.Script.Ask("Which colour?")
	h.send(t, sh, uri, "m1", msg)
	var req ahp.ChatInputRequest
	f.until("a question", func(c ahp.ChatState) bool {
		if c.ActiveTurn == nil {
			return false
		}
		for _, p := range c.ActiveTurn.ResponseParts {
			if p.InputRequest != nil && p.InputRequest.Response == "" {
				req = p.InputRequest.Request
				return true
			}
		}
		return false
	})
	if len(req.Questions) != 1 {
		t.Fatalf("the request asks %d questions, want 1", len(req.Questions))
	}
	answers := map[string]ahp.ChatInputAnswer{req.Questions[0].ID: {State: "submitted", Value: &ahp.ChatInputAnswerValue{Kind: "text", Value: "teal"}}}
	h.dispatch(t, sh, uri, ahp.InputCompleted(req.ID, ahp.InputAccept, answers))
	wantState(t, f.ended(1)[0], ahp.TurnStateComplete)
	if want := answered("teal"); !slices.Equal(f.posts, []string{want}) {
		t.Fatalf("posted %q, want %q", f.posts, want)
	}
}

func checkHostApprove(t testing.TB, h SessionHost, sh wake.SessionHost) {
	if h.Script.Approve == "" {
		t.Skip("the script has no Approve")
	}
	uri := h.start(t, sh)
	f := h.follow(t, sh, uri, true)
	for i, give := range []bool{true, false} {
		h.send(t, sh, uri, []string{"m1", "m2"}[i], h.Script.Approve)
		var turn, call string
		f.until("a tool call waiting for a confirmation", func(c ahp.ChatState) bool {
			if c.ActiveTurn == nil {
				return false
			}
			for _, p := range c.ActiveTurn.ResponseParts {
				if p.ToolCall != nil && p.ToolCall.Status == ahp.ToolCallStatusPendingConfirmation {
					turn, call = c.ActiveTurn.ID, p.ToolCall.ToolCallID
					return true
				}
			}
			return false
		})
		h.dispatch(t, sh, uri, ahp.ToolCallConfirmed(turn, call, give))
		wantState(t, f.ended(i + 1)[i], ahp.TurnStateComplete)
	}
	if want := []string{h.Script.Approved, h.Script.Denied}; !slices.Equal(f.posts, want) {
		t.Fatalf("posted %q, want %q", f.posts, want)
	}
}

func checkHostStop(t testing.TB, h SessionHost, sh wake.SessionHost) {
	if h.Script.Wait == "" {
		t.Skip("the script has no Wait")
	}
	uri := h.start(t, sh)
	f := h.follow(t, sh, uri, true)
	h.send(t, sh, uri, "m1", h.Script.Wait)
	h.dispatch(t, sh, uri, ahp.TurnCancelled(f.running(), 0))
	wantState(t, f.ended(1)[0], ahp.TurnStateCancelled)
	msg, posted := h.Script.Post("after the stop")
	h.send(t, sh, uri, "m2", msg)
	wantState(t, f.ended(2)[1], ahp.TurnStateComplete)
	if !slices.Equal(f.posts, []string{posted}) {
		t.Fatalf("posted %q, want %q", f.posts, posted)
	}
}

func checkHostTakeBack(t testing.TB, h SessionHost, sh wake.SessionHost) {
	if h.Script.Wait == "" {
		t.Skip("the script has no Wait")
	}
	uri := h.start(t, sh)
	f := h.follow(t, sh, uri, true)
	h.send(t, sh, uri, "m1", h.Script.Wait)
	running := f.running()
	msg, _ := h.Script.Post("taken back")
	h.send(t, sh, uri, "m2", msg)
	f.until("m2 to wait in the queue", func(c ahp.ChatState) bool { return len(c.QueuedMessages) == 1 })
	h.dispatch(t, sh, uri, ahp.PendingMessageRemoved(ahp.PendingQueued, "m2"))
	f.until("the queue to empty", func(c ahp.ChatState) bool { return len(c.QueuedMessages) == 0 })
	h.dispatch(t, sh, uri, ahp.TurnCancelled(running, 0))
	f.ended(1)
	// A message sent after shows the chat went on without m2.
	msg, posted := h.Script.Post("after taking back")
	h.send(t, sh, uri, "m3", msg)
	turns := f.ended(2)
	if len(turns) != 2 || turns[1].Message.Text != msg {
		t.Fatalf("turns after taking m2 back: %d, last %q; want 2, the last %q", len(turns), turns[len(turns)-1].Message.Text, msg)
	}
	if !slices.Equal(f.posts, []string{posted}) {
		t.Fatalf("posted %q, want %q", f.posts, posted)
	}
}

func checkHostRefusesAction(t testing.TB, h SessionHost, sh wake.SessionHost) {
	uri := h.start(t, sh)
	ctx := testCtx(t, waitOr(h.Wait))
	for _, a := range []ahp.Action{
		ahp.InputCompleted("no-such-request", ahp.InputAccept, nil),
		ahp.TurnCancelled("no-such-turn", 0),
		ahp.ToolCallConfirmed("no-such-turn", "no-such-call", true),
		ahp.PendingMessageRemoved(ahp.PendingQueued, "no-such-message"),
	} {
		if err := sh.Dispatch(ctx, uri, a); !errors.Is(err, wake.ErrRefused) {
			t.Errorf("Dispatch %s that does not apply: %v, want ErrRefused", a.Type, err)
		}
	}
}

func checkHostUnknown(t testing.TB, h SessionHost, sh wake.SessionHost) {
	ctx := testCtx(t, waitOr(h.Wait))
	const uri = "ahp-session:/waketest-never-started"
	if ok, err := sh.Has(ctx, uri); err != nil || ok {
		t.Errorf("Has: %v, %v; want false", ok, err)
	}
	if err := sh.Dispose(ctx, uri); !errors.Is(err, wake.ErrNoSession) {
		t.Errorf("Dispose: %v, want ErrNoSession", err)
	}
	if err := sh.Send(ctx, uri, wake.Pending{Kind: ahp.PendingQueued, ID: "m1", Message: ahp.UserMessage("hi")}); !errors.Is(err, wake.ErrNoSession) {
		t.Errorf("Send: %v, want ErrNoSession", err)
	}
	if err := sh.Dispatch(ctx, uri, ahp.TurnCancelled("t1", 0)); !errors.Is(err, wake.ErrNoSession) {
		t.Errorf("Dispatch: %v, want ErrNoSession", err)
	}
	if _, _, err := sh.Follow(ctx, uri); !errors.Is(err, wake.ErrNoSession) {
		t.Errorf("Follow: %v, want ErrNoSession", err)
	}
}

func checkHostDispose(t testing.TB, h SessionHost, sh wake.SessionHost) {
	uri := h.start(t, sh)
	f := h.follow(t, sh, uri, true)
	if h.Script.Wait != "" {
		h.send(t, sh, uri, "m1", h.Script.Wait)
		f.running()
	}
	ctx := testCtx(t, waitOr(h.Wait))
	if err := sh.Dispose(ctx, uri); err != nil {
		t.Fatalf("Dispose: %v", err)
	}
	if ok, err := sh.Has(ctx, uri); err != nil || ok {
		t.Fatalf("Has after Dispose: %v, %v; want false", ok, err)
	}
	deadline := time.After(waitOr(h.Wait))
	for open := true; open; {
		select {
		case _, open = <-f.ch:
		case <-deadline:
			t.Fatal("the follow of a disposed session did not end")
		}
	}
	if err := sh.Send(ctx, uri, wake.Pending{Kind: ahp.PendingQueued, ID: "m2", Message: ahp.UserMessage("hi")}); !errors.Is(err, wake.ErrNoSession) {
		t.Fatalf("Send after Dispose: %v, want ErrNoSession", err)
	}
	if err := sh.Dispose(ctx, uri); !errors.Is(err, wake.ErrNoSession) {
		t.Fatalf("second Dispose: %v, want ErrNoSession", err)
	}
}

func checkHostTwoFollowers(t testing.TB, h SessionHost, sh wake.SessionHost) {
	uri := h.start(t, sh)
	client := h.follow(t, sh, uri, true)
	watcher := h.follow(t, sh, uri, false)
	msg, _ := h.Script.Post("for both")
	h.send(t, sh, uri, "m1", msg)
	client.ended(1)
	watcher.ended(1)
	types := func(as []ahp.Action) []ahp.ActionType {
		var out []ahp.ActionType
		for _, a := range as {
			out = append(out, a.Type)
		}
		return out
	}
	if a, b := types(client.actions), types(watcher.actions); !slices.Equal(a, b) {
		t.Fatalf("followers saw different actions:\n%v\n%v", a, b)
	}
}

func checkHostFollowCancel(t testing.TB, h SessionHost, sh wake.SessionHost) {
	uri := h.start(t, sh)
	ctx, cancel := context.WithCancel(testCtx(t, waitOr(h.Wait)))
	_, ch, err := sh.Follow(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	deadline := time.After(waitOr(h.Wait))
	for open := true; open; {
		select {
		case _, open = <-ch:
		case <-deadline:
			t.Fatal("a follow whose context ended is still open")
		}
	}
}

func checkHostApart(t testing.TB, h SessionHost, sh wake.SessionHost) {
	a, b := h.start(t, sh), h.start(t, sh)
	if a == b {
		t.Fatalf("two starts answered one URI %s", a)
	}
	fa := h.follow(t, sh, a, true)
	msg, _ := h.Script.Post("only in a")
	h.send(t, sh, a, "m1", msg)
	fa.ended(1)
	st, _, err := sh.Follow(testCtx(t, waitOr(h.Wait)), b)
	if err != nil {
		t.Fatal(err)
	}
	if st.ActiveTurn != nil || len(st.Turns) != 0 {
		t.Fatalf("a message to one session shows in another: %+v", st)
	}
}

// checkHostLister checks a host that is a wake.Lister (others pass): it
// lists the back sessions it holds - those whose _meta names
// wake.BackSessionMeta - with their bot and person, finds one by its
// session or chat URI, and lists it no longer once it is disposed of.
func checkHostLister(t testing.TB, h SessionHost, sh wake.SessionHost) {
	l, ok := sh.(wake.Lister)
	if !ok {
		return
	}
	plain := h.start(t, sh)
	spec := h.spec(t)
	spec.Meta = map[string]any{wake.BackSessionMeta: map[string]any{"bot": "suite-bot", "person": "user:suite", "name": "work"}}
	ctx := testCtx(t, waitOr(h.Wait))
	back, err := sh.Start(ctx, spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	want := wake.Held{Session: back, Bot: "suite-bot", Person: "user:suite"}
	if got := l.BackSessions(); !slices.Equal(got, []wake.Held{want}) {
		t.Fatalf("BackSessions = %v, want %v alone", got, want)
	}
	for _, uri := range []string{back, ahp.DefaultChatURI(back)} {
		if got, ok := l.HeldAt(uri); !ok || got != want {
			t.Errorf("HeldAt(%s) = %v, %v; want %v", uri, got, ok, want)
		}
	}
	if got, ok := l.HeldAt(plain); ok {
		t.Errorf("HeldAt of a session that is no back session = %v", got)
	}
	if err := sh.Dispose(ctx, back); err != nil {
		t.Fatalf("Dispose: %v", err)
	}
	if got := l.BackSessions(); len(got) != 0 {
		t.Errorf("BackSessions after Dispose = %v", got)
	}
	if _, ok := l.HeldAt(back); ok {
		t.Error("HeldAt finds a disposed session")
	}
}
