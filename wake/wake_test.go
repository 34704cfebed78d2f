package wake_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/persona"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/echo"
	"github.com/agenthost/bots/wake/internal/maintest"
	"github.com/agenthost/bots/wake/local"
	"github.com/agenthost/bots/wake/memrows"
)

func TestWakePostsTheEchoReplyAndEndsTheMainTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	m, turn, _ := e.say("hello there")
	got := m.Ended(t)
	if got.State != ahp.TurnStateComplete {
		t.Fatalf("main turn %s, want complete: %s", got.State, maintest.JSON(got))
	}
	if want := []string{"Motion heard: hello there"}; !slices.Equal(texts(got), want) {
		t.Errorf("main turn says %q, want %q", texts(got), want)
	}
	call := subagentCall(got)
	if call == nil || call.Status != ahp.ToolCallStatusCompleted || !call.Success {
		t.Fatalf("subagent call %s, want completed", maintest.JSON(call))
	}
	if len(call.Content) != 1 || call.Content[0].Type != ahp.ContentSubagent || call.Content[0].Resource != ahp.DefaultChatURI(turn.Session()) {
		t.Errorf("subagent content %s, want the back chat of %s", maintest.JSON(call.Content), turn.Session())
	}
	<-turn.Done()
}

func TestWakeTwicePostsTwoMessagesToTheMainTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	m, _, _ := e.say("twice")
	if got := texts(m.Ended(t)); !slices.Equal(got, []string{"first", "second"}) {
		t.Errorf("main turn says %q, want first, second", got)
	}
}

func TestMainTurnPostMessageAbsentPolicies(t *testing.T) {
	t.Parallel()
	cases := []struct {
		policy, words string
		want          []string
	}{
		{"", "silent", []string{"quiet reply"}},
		{"post", "mute", nil},
		{"notice", "silent", []string{"Motion finished without a reply"}},
		{"silence", "silent", nil},
		{"postNotice", "silent", []string{"quiet reply"}},
		{"postNotice", "mute", []string{"Motion finished without a reply"}},
		{"notice", "hi", []string{"Motion heard: hi"}},
	}
	for _, c := range cases {
		t.Run(c.policy+"/"+c.words, func(t *testing.T) {
			e := newEnv(t, nil, func(cfg *wake.Config) { cfg.MainTurnPostMessageAbsent = wake.PostMessageAbsent(c.policy) })
			m, _, _ := e.say(c.words)
			got := m.Ended(t)
			if got.State != ahp.TurnStateComplete || !slices.Equal(texts(got), c.want) {
				t.Errorf("main turn %s says %q, want complete saying %q", got.State, texts(got), c.want)
			}
		})
	}
}

func TestAWakerNeedsRows(t *testing.T) {
	t.Parallel()
	h, _ := local.New(local.Config{})
	defer h.Close()
	if _, err := wake.New(wake.Config{Host: h}); err == nil || !strings.Contains(err.Error(), "Config.Rows is required") {
		t.Errorf("a Waker with no Rows: %v", err)
	}
}

func TestUnknownOptionValueRefusesNewNamingIt(t *testing.T) {
	t.Parallel()
	h, _ := local.New(local.Config{})
	defer h.Close()
	for _, c := range []struct {
		cfg  wake.Config
		want string
	}{
		{wake.Config{MainTurnPostMessageAbsent: "loud"}, `mainTurnPostMessageAbsent "loud" is not one of post, notice, silence or postNotice`},
		{wake.Config{ContextIn: "x"}, `contextIn "x" is neither text nor meta`},
		{wake.Config{AskIn: "y"}, `askIn "y" is neither main nor own`},
	} {
		c.cfg.Host = h
		w, err := wake.New(c.cfg)
		if err == nil {
			w.Close()
			t.Errorf("New took %+v", c.cfg)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("New: %v, want it to say %s", err, c.want)
		}
	}
}

func TestEmptyOptionValuesAreTheDefaults(t *testing.T) {
	t.Parallel()
	h, _ := local.New(local.Config{})
	defer h.Close()
	w, err := wake.New(wake.Config{Host: h, Rows: &memrows.Rows{}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if a, c, q := w.Options(); a != wake.PostMessageAbsentPost || c != wake.ContextInText || q != wake.AskInMain {
		t.Errorf("options %s %s %s, want post text main", a, c, q)
	}
}

func TestFailedBackTurnFailsTheMainTurnTypedSendFailed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	m, _, _ := e.say("fail")
	got := m.Ended(t)
	ei := errorOf(got)
	if got.State != ahp.TurnStateError || ei == nil || ei.ErrorType != wake.ErrorSendFailed || !strings.Contains(ei.Message, "asked to fail") {
		t.Fatalf("main turn %s, want an error typed sendFailed with the back turn's reason", maintest.JSON(got))
	}
	if call := subagentCall(got); call == nil || call.Status != ahp.ToolCallStatusCancelled {
		t.Errorf("subagent call %s, want cancelled", maintest.JSON(call))
	}
}

func TestQuestionIsShownInTheMainChatAndTheAnswerGoesBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	m, turn, msg := e.say("ask what colour?")
	c, _ := m.Wait(t, "the question", func(c ahp.ChatState, _ ahp.SessionState) bool { return openInput(c) != nil })
	req := openInput(c)
	if len(req.Request.Questions) != 1 || req.Request.Questions[0].Message != "what colour?" {
		t.Fatalf("question %s", maintest.JSON(req))
	}
	answer := ahp.InputCompleted(req.Request.ID, ahp.InputAccept, map[string]ahp.ChatInputAnswer{
		echo.QuestionID: {State: "submitted", Value: &ahp.ChatInputAnswerValue{Kind: "text", Value: "blue"}},
	})
	m.Apply(answer)
	if err := turn.Answer(ctx(t), answer); err != nil {
		t.Fatal(err)
	}
	got := m.Ended(t)
	if !slices.Equal(texts(got), []string{"you said: blue"}) {
		t.Errorf("main turn says %q, want you said: blue", texts(got))
	}
	_ = msg
}

func openInput(c ahp.ChatState) *ahp.InputRequestPart {
	if c.ActiveTurn == nil {
		return nil
	}
	for _, p := range c.ActiveTurn.ResponseParts {
		if p.InputRequest != nil && p.InputRequest.Response == "" {
			return p.InputRequest
		}
	}
	return nil
}

func pendingCall(c ahp.ChatState) *ahp.ToolCallState {
	if c.ActiveTurn == nil {
		return nil
	}
	for _, p := range c.ActiveTurn.ResponseParts {
		if p.ToolCall != nil && p.ToolCall.Status == ahp.ToolCallStatusPendingConfirmation {
			return p.ToolCall
		}
	}
	return nil
}

func TestApprovalIsShownAsAToolCallWaitingForConfirmation(t *testing.T) {
	t.Parallel()
	for _, approve := range []bool{true, false} {
		t.Run(fmt.Sprint(approve), func(t *testing.T) {
			e := newEnv(t, nil)
			m, turn, _ := e.say("approve")
			c, _ := m.Wait(t, "the approval", func(c ahp.ChatState, _ ahp.SessionState) bool { return pendingCall(c) != nil })
			call := pendingCall(c)
			a := ahp.ToolCallConfirmed(c.ActiveTurn.ID, call.ToolCallID, approve)
			m.Apply(a)
			if err := turn.Answer(ctx(t), a); err != nil {
				t.Fatal(err)
			}
			got := m.Ended(t)
			want := map[bool]string{true: "approved", false: "denied"}[approve]
			if !slices.Equal(texts(got), []string{want}) {
				t.Errorf("main turn says %q, want %s", texts(got), want)
			}
		})
	}
}

func TestWithdrawnRequestLeavesTheMainChat(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	m, turn, _ := e.say("ask anything?")
	m.Wait(t, "the question", func(c ahp.ChatState, _ ahp.SessionState) bool { return openInput(c) != nil })
	// The back turn is stopped in the back chat: its question is withdrawn.
	back := turn.Session()
	bs, _, err := e.host.Follow(ctx(t), back)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.host.Dispatch(ctx(t), back, ahp.TurnCancelled(bs.ActiveTurn.ID, 1)); err != nil {
		t.Fatal(err)
	}
	got := m.Ended(t)
	for _, p := range got.ResponseParts {
		if p.InputRequest != nil && p.InputRequest.Response != ahp.InputCancel {
			t.Errorf("question left %q, want cancel", p.InputRequest.Response)
		}
	}
	if got.State != ahp.TurnStateCancelled {
		t.Errorf("main turn %s, want cancelled as its back turn was", got.State)
	}
}

func TestAskInOwnListsTheRequestOnTheMainSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, func(c *wake.Config) { c.AskIn = wake.AskInOwn })
	m, turn, _ := e.say("ask name?")
	_, s := m.Wait(t, "inputNeeded", func(_ ahp.ChatState, s ahp.SessionState) bool { return len(s.InputNeeded) == 1 })
	in := s.InputNeeded[0]
	if in.Kind != ahp.InputNeededChatInput || in.Chat != ahp.DefaultChatURI(turn.Session()) || !s.Status.Has(ahp.StatusInputNeeded) {
		t.Fatalf("inputNeeded %s status %d, want a chatInput naming the back chat, status InputNeeded", maintest.JSON(in), s.Status)
	}
	if openInput(m.Current()) != nil {
		t.Error("the question was copied into the main chat")
	}
	err := e.host.Dispatch(ctx(t), turn.Session(), ahp.InputCompleted(in.ID, ahp.InputAccept, map[string]ahp.ChatInputAnswer{
		echo.QuestionID: {State: "submitted", Value: &ahp.ChatInputAnswerValue{Kind: "text", Value: "Ada"}},
	}))
	if err != nil {
		t.Fatal(err)
	}
	got := m.Ended(t)
	_, s = m.Wait(t, "inputNeeded to clear", func(_ ahp.ChatState, s ahp.SessionState) bool { return len(s.InputNeeded) == 0 })
	if s.Status.Has(ahp.StatusInputNeeded) || !slices.Equal(texts(got), []string{"you said: Ada"}) {
		t.Errorf("status %d, main says %q", s.Status, texts(got))
	}
}

func TestAskInOwnListsAnApproval(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, func(c *wake.Config) { c.AskIn = wake.AskInOwn })
	m, turn, _ := e.say("approve")
	_, s := m.Wait(t, "inputNeeded", func(_ ahp.ChatState, s ahp.SessionState) bool { return len(s.InputNeeded) == 1 })
	in := s.InputNeeded[0]
	if in.Kind != ahp.InputNeededToolConfirmation || in.ToolCall == nil || in.TurnID == "" {
		t.Fatalf("inputNeeded %s", maintest.JSON(in))
	}
	if err := e.host.Dispatch(ctx(t), turn.Session(), ahp.ToolCallConfirmed(in.TurnID, in.ID, true)); err != nil {
		t.Fatal(err)
	}
	if got := texts(m.Ended(t)); !slices.Equal(got, []string{"approved"}) {
		t.Errorf("main says %q", got)
	}
	m.Wait(t, "inputNeeded to clear", func(_ ahp.ChatState, s ahp.SessionState) bool { return len(s.InputNeeded) == 0 })
}

func TestStopTakesBackWaitingMessagesAndStopsTheBackTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	m1, t1, _ := e.say("sleep 30")
	m1.Wait(t, "the back turn", func(c ahp.ChatState, _ ahp.SessionState) bool {
		call := c.ActiveTurn.ResponseParts
		return len(call) > 0 && len(call[0].ToolCall.Content) > 0
	})
	back := t1.Session()
	// The sleep runs in the back session before the next message is
	// sent: the two are sent to it concurrently, in either order.
	waitBack(t, e.host, back, "the sleep to run", func(c ahp.ChatState) bool {
		return c.ActiveTurn != nil && strings.HasSuffix(c.ActiveTurn.Message.Text, "sleep 30")
	})
	m2, t2, _ := e.say("hello") // waits in the back queue behind the sleep
	waitBack(t, e.host, back, "the second message queued", func(c ahp.ChatState) bool { return len(c.QueuedMessages) == 1 })
	m2.Stop(t)
	t2.Stop()
	waitBack(t, e.host, back, "the queue to empty", func(c ahp.ChatState) bool { return len(c.QueuedMessages) == 0 })
	m1.Stop(t)
	t1.Stop()
	c := waitBack(t, e.host, back, "the sleep to stop", func(c ahp.ChatState) bool { return c.ActiveTurn == nil && len(c.Turns) == 1 })
	if c.Turns[0].State != ahp.TurnStateCancelled {
		t.Errorf("back turn %s, want cancelled", c.Turns[0].State)
	}
	<-t1.Done()
	<-t2.Done()
}

func waitBack(t *testing.T, h *local.Host, session, what string, cond func(ahp.ChatState) bool) ahp.ChatState {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	state, ch, err := h.Follow(c, session)
	if err != nil {
		t.Fatal(err)
	}
	for !cond(state) {
		select {
		case a, ok := <-ch:
			if !ok {
				t.Fatalf("timed out waiting for %s: %s", what, maintest.JSON(state))
			}
			state = ahp.ApplyChat(state, a)
		case <-c.Done():
			t.Fatalf("timed out waiting for %s: %s", what, maintest.JSON(state))
		}
	}
	return state
}

func TestSteerMainTurnEndsWithTheTurnTheSteerBecomes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	m, turn, _ := e.say("sleep 0.2")
	m.Wait(t, "the back session", func(c ahp.ChatState, _ ahp.SessionState) bool {
		p := c.ActiveTurn.ResponseParts
		return len(p) > 0 && len(p[0].ToolCall.Content) > 0
	})
	if err := turn.Steer(ctx(t), "and then?"); err != nil {
		t.Fatal(err)
	}
	got := m.Ended(t)
	if want := []string{"awake", "Motion heard: and then?"}; !slices.Equal(texts(got), want) {
		t.Errorf("main turn says %q, want %q", texts(got), want)
	}
}

func TestSteerThatCannotBeHandedOnIsDroppedAndTheTurnKeepsWaiting(t *testing.T) {
	t.Parallel()
	var refuse atomic.Bool
	e := newEnv(t, func(h *local.Host) wake.SessionHost {
		return &fakeHost{Host: h, send: func(ctx context.Context, s string, p wake.Pending) error {
			if refuse.Load() {
				return fmt.Errorf("queue full: %w", wake.ErrRefused)
			}
			return h.Send(ctx, s, p)
		}}
	})
	m, turn, _ := e.say("sleep 0.2")
	m.Wait(t, "the back session", func(c ahp.ChatState, _ ahp.SessionState) bool {
		p := c.ActiveTurn.ResponseParts
		return len(p) > 0 && len(p[0].ToolCall.Content) > 0
	})
	waitBack(t, e.host, turn.Session(), "the back turn", func(c ahp.ChatState) bool { return c.ActiveTurn != nil })
	refuse.Store(true)
	if err := turn.Steer(ctx(t), "more"); err == nil || !strings.Contains(err.Error(), "queue full") {
		t.Fatalf("steer: %v, want the host's refusal", err)
	}
	if got := m.Ended(t); !slices.Equal(texts(got), []string{"awake"}) {
		t.Errorf("main turn says %q, want awake: %s", texts(got), maintest.JSON(got))
	}
}

func TestContextBlockGoesInFrontOfTheWords(t *testing.T) {
	t.Parallel()
	loc := time.FixedZone("X", 2*3600)
	at := time.Date(2026, 10, 11, 9, 0, 0, 0, time.UTC)
	e := newEnv(t, nil, func(c *wake.Config) { c.Location = loc; c.Now = func() time.Time { return at } })
	m, turn, _ := e.say("context")
	got := texts(m.Ended(t))
	want := "<context>\nmain chat: ahp-chat://main\nfrom: soft\ntime: 2026-10-11T11:00:00+02:00\n</context>\ncontext"
	if len(got) != 1 || got[0] != want {
		t.Fatalf("posted %q, want %q", got, want)
	}
	c := waitBack(t, e.host, turn.Session(), "the back turn", func(c ahp.ChatState) bool { return len(c.Turns) == 1 })
	msg := c.Turns[0].Message
	if msg.Origin.Kind != ahp.MessageAgent || msg.Model != nil || msg.Agent != nil || len(msg.Attachments) != 0 {
		t.Errorf("back message %s, want an agent's message with no model, agent or attachments", maintest.JSON(msg))
	}
	d, _ := msg.Meta[wake.DelegationMeta].(map[string]any)
	if d["sourceSession"] != "ahp-session:/main" || d["sourceChat"] != "ahp-chat://main" {
		t.Errorf("delegation _meta %v, want the main session and chat", msg.Meta)
	}
}

func TestContextInMetaSendsTheWordsAlone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, func(c *wake.Config) { c.ContextIn = wake.ContextInMeta })
	m, _, _ := e.say("context")
	if got := texts(m.Ended(t)); !slices.Equal(got, []string{"context"}) {
		t.Errorf("posted %q, want the words alone", got)
	}
}

func TestMessagesToOneNameContinueOneSessionAndTheRowNamesIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	m1, t1, _ := e.say("one")
	m1.Ended(t)
	m2, t2, _ := e.say("two")
	m2.Ended(t)
	if t1.Session() == "" || t1.Session() != t2.Session() {
		t.Fatalf("sessions %q and %q, want one", t1.Session(), t2.Session())
	}
	row, ok, _ := e.rows.Get(ctx(t), "motion", "user:soft", "work")
	if !ok || row.Session != t1.Session() {
		t.Errorf("row %+v, want session %s", row, t1.Session())
	}
}

func TestTurnInTheSessionNameStartsASessionPerMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.bot.Session = "w-{turn}"
	m1, t1, _ := e.say("one")
	m1.Ended(t)
	m2, t2, _ := e.say("two")
	m2.Ended(t)
	if t1.Session() == t2.Session() {
		t.Fatalf("one session %s for two messages, want one each", t1.Session())
	}
	if _, ok, _ := e.rows.Get(ctx(t), "motion", "user:soft", "w-turn-a"); !ok {
		t.Error("no row for w-turn-a")
	}
}

func TestFiftyConcurrentMessagesToOneNameStartOneSession(t *testing.T) {
	t.Parallel()
	var starts atomic.Int32
	e := newEnv(t, func(h *local.Host) wake.SessionHost {
		return &fakeHost{Host: h, start: func(ctx context.Context, s wake.Spec) (string, error) {
			starts.Add(1)
			time.Sleep(time.Millisecond) // widen the race window; not a wait
			return h.Start(ctx, s)
		}}
	})
	var mains []*maintest.Main
	var turns []*wake.Turn
	for i := range 50 {
		m := maintest.New(fmt.Sprintf("t%d", i), "hi")
		mains = append(mains, m)
		turns = append(turns, e.w.Wake(wake.Message{Bot: e.bot, Person: "user:soft", Session: "s", Chat: "c", TurnID: fmt.Sprintf("t%d", i), Text: "hi", StartedAt: time.Now()}, m))
	}
	for _, m := range mains {
		if got := m.Ended(t); got.State != ahp.TurnStateComplete {
			t.Fatalf("a main turn %s", maintest.JSON(got))
		}
	}
	if n := starts.Load(); n != 1 {
		t.Errorf("%d sessions started, want 1", n)
	}
	for _, tn := range turns[1:] {
		if tn.Session() != turns[0].Session() {
			t.Fatal("the messages went to different sessions")
		}
	}
}

func TestSessionTheHostLostAndCannotRestoreIsStartedAgainAndTheRowWrittenOver(t *testing.T) {
	t.Parallel()
	var forget atomic.Bool
	e := newEnv(t, func(h *local.Host) wake.SessionHost {
		return &fakeHost{Host: h, has: func(ctx context.Context, s string) (bool, error) {
			if forget.Load() {
				return false, nil
			}
			return h.Has(ctx, s)
		}, restore: func(context.Context, string, wake.Spec) error { return fmt.Errorf("lost: %w", wake.ErrRefused) }}
	})
	m1, t1, _ := e.say("one")
	m1.Ended(t)
	forget.Store(true)
	m2, t2, _ := e.say("two")
	if got := m2.Ended(t); got.State != ahp.TurnStateComplete {
		t.Fatalf("second turn %s", maintest.JSON(got))
	}
	if t1.Session() == t2.Session() {
		t.Fatal("the lost session was used again")
	}
	row, _, _ := e.rows.Get(ctx(t), "motion", "user:soft", "work")
	if row.Session != t2.Session() {
		t.Errorf("row names %s, want the new session %s", row.Session, t2.Session())
	}
}

// TestASessionTheHostLostIsNotRestoredAtAURIAnotherChatTook: the row's
// back session is gone from the host, and a chat that is no back session
// holds its URI now (Config.Taken): the next message starts a new back
// session, not one restored at that URI, and the row names the new one.
func TestASessionTheHostLostIsNotRestoredAtAURIAnotherChatTook(t *testing.T) {
	t.Parallel()
	var taken sync.Map
	e := newEnv(t, nil, func(c *wake.Config) {
		c.Taken = func(uri string) bool { _, ok := taken.Load(uri); return ok }
	})
	m1, t1, _ := e.say("one")
	m1.Ended(t)
	if err := e.host.Dispose(ctx(t), t1.Session()); err != nil {
		t.Fatal(err)
	}
	taken.Store(t1.Session(), true)
	m2, t2, _ := e.say("two")
	if got := m2.Ended(t); got.State != ahp.TurnStateComplete {
		t.Fatalf("second turn %s", maintest.JSON(got))
	}
	if t2.Session() == t1.Session() {
		t.Fatalf("the back session was restored at %s, which another chat holds", t1.Session())
	}
	if row, _, _ := e.rows.Get(ctx(t), "motion", "user:soft", "work"); row.Session != t2.Session() {
		t.Errorf("row names %s, want the new session %s", row.Session, t2.Session())
	}
}

func TestFailuresEndTheMainTurnWithTheReason(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		wrap func(*local.Host) wake.SessionHost
		bot  func(*env)
		want string
	}{
		{"name no session can have", nil, func(e *env) { e.bot.Session = strings.Repeat("a", 36) + "{turn}" }, "no session can have"},
		{"host would not start", nil, func(e *env) { e.bot.Provider = "nobody" }, `The host would not start a back session for Motion: no agent for provider "nobody"`},
		{"unknown preset", nil, func(e *env) { e.bot.Preset = "gone" }, `no preset "gone"`},
		{"send refused", func(h *local.Host) wake.SessionHost {
			return &fakeHost{Host: h, send: func(context.Context, string, wake.Pending) error {
				return fmt.Errorf("the queue is closed: %w", wake.ErrRefused)
			}}
		}, nil, "The host refused the message: the queue is closed"},
		{"session no longer held", func(h *local.Host) wake.SessionHost {
			return &fakeHost{Host: h, send: func(context.Context, string, wake.Pending) error { return wake.ErrNoSession }}
		}, nil, "The host no longer holds the back session"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, c.wrap)
			if c.bot != nil {
				c.bot(e)
			}
			m, _, _ := e.say("hello")
			got := m.Ended(t)
			ei := errorOf(got)
			if got.State != ahp.TurnStateError || ei == nil || ei.ErrorType != wake.ErrorSendFailed || !strings.Contains(ei.Message, c.want) {
				t.Fatalf("main turn %s, want an error saying %q", maintest.JSON(got), c.want)
			}
		})
	}
}

func TestSendNotConfirmedInTenSecondsIsNotSentAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sends atomic.Int32
		e := newEnv(t, func(h *local.Host) wake.SessionHost {
			return &fakeHost{Host: h, send: func(ctx context.Context, _ string, _ wake.Pending) error {
				sends.Add(1)
				<-ctx.Done() // never confirms
				return ctx.Err()
			}}
		})
		m, turn, _ := e.say("hello")
		start := time.Now()
		<-turn.Done()
		if d := time.Since(start); d != 10*time.Second {
			t.Errorf("the turn failed after %v, want 10s", d)
		}
		got := m.Current().Turns[0]
		if ei := errorOf(got); ei == nil || ei.Message != wake.NotConfirmed || ei.ErrorType != wake.ErrorSendFailed {
			t.Errorf("main turn %s, want VS Code's words", maintest.JSON(got))
		}
		if n := sends.Load(); n != 1 {
			t.Errorf("sent %d times, want once", n)
		}
		e.w.Close()
		e.host.Close()
	})
}

func TestLostSessionWhileWaitingFailsTheMainTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	m, turn, _ := e.say("sleep 30")
	m.Wait(t, "the back session", func(c ahp.ChatState, _ ahp.SessionState) bool {
		p := c.ActiveTurn.ResponseParts
		return len(p) > 0 && len(p[0].ToolCall.Content) > 0
	})
	if err := e.host.Dispose(ctx(t), turn.Session()); err != nil {
		t.Fatal(err)
	}
	got := m.Ended(t)
	if ei := errorOf(got); ei == nil || !strings.Contains(ei.Message, "no longer holds") {
		t.Errorf("main turn %s, want it failed with the lost session", maintest.JSON(got))
	}
}

func TestBackSessionStartsOnPresetElseProviderElseDefaultAgent(t *testing.T) {
	t.Parallel()
	var specs []wake.Spec
	var mu sync.Mutex
	e := newEnv(t, func(h *local.Host) wake.SessionHost {
		return &fakeHost{Host: h, start: func(ctx context.Context, s wake.Spec) (string, error) {
			mu.Lock()
			specs = append(specs, s)
			mu.Unlock()
			return h.Start(ctx, s)
		}}
	})
	e.bot.Session = "s-{turn}"
	e.bot.Preset, e.bot.Provider, e.bot.Model = "quick", "echo", "m2"
	m, _, _ := e.say("a")
	m.Ended(t)
	e.bot.Preset = ""
	m, _, _ = e.say("b")
	m.Ended(t)
	e.bot.Provider, e.bot.Model = "", ""
	m, _, _ = e.say("c")
	m.Ended(t)
	if len(specs) != 3 {
		t.Fatalf("%d starts", len(specs))
	}
	if s := specs[0]; s.Preset != "quick" || s.Provider != "" {
		t.Errorf("preset start %+v", s)
	}
	if s := specs[1]; s.Provider != "echo" || s.Model != "m2" {
		t.Errorf("provider start %+v", s)
	}
	if s := specs[2]; s.Provider != echo.Provider || s.Model != "" {
		t.Errorf("default start %+v", s)
	}
	for _, s := range specs {
		if s.Dir != e.dir || s.Owner != "user:soft" || s.Title != "Motion" || s.SystemPrompt != wake.SystemPrompt {
			t.Errorf("spec %+v, want the bot's folder, the person, the bot's name and the system prompt", s)
		}
		if s.Client == nil || len(s.Client.Tools) != 1 || s.Client.Tools[0].Name != wake.PostMessage {
			t.Errorf("spec offers %+v, want post_message", s.Client)
		}
	}
}

func TestFirstWakeWritesAgentsMdWhereTheFolderHasNone(t *testing.T) {
	t.Parallel()
	files, err := persona.New(persona.Config{ConfigDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, nil, func(c *wake.Config) { c.Persona = files })
	fresh := filepath.Join(t.TempDir(), "fresh")
	e.bot.Workspace = fresh
	m, _, _ := e.say("hi")
	if got := texts(m.Ended(t)); !slices.Equal(got, []string{"Motion heard: hi"}) {
		t.Errorf("main says %q", got)
	}
	if _, err := os.Stat(filepath.Join(fresh, "AGENTS.md")); err != nil {
		t.Fatalf("no AGENTS.md after the first wake: %v", err)
	}
	mine := []byte("---\nname: Mine\n---\nhand written\n")
	os.WriteFile(filepath.Join(fresh, "AGENTS.md"), mine, 0o644)
	m, _, _ = e.say("again")
	m.Ended(t)
	if got, _ := os.ReadFile(filepath.Join(fresh, "AGENTS.md")); string(got) != string(mine) {
		t.Errorf("a wake wrote over AGENTS.md: %q", got)
	}
}

func TestPostMessageRefusedByADenyList(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, func(c *wake.Config) { c.Deny = []string{wake.PostMessage} })
	m, _, _ := e.say("hello")
	got := m.Ended(t)
	if len(texts(got)) != 0 || got.State != ahp.TurnStateError {
		t.Errorf("main turn %s, want nothing posted and the back turn's failure", maintest.JSON(got))
	}
}

func TestPostMessageInATurnBegunInTheBackChatPostsNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	m, turn, _ := e.say("hi")
	m.Ended(t)
	back := turn.Session()
	if err := e.host.Dispatch(ctx(t), back, ahp.TurnStarted("own", time.Now(), ahp.UserMessage("hello"))); err != nil {
		t.Fatal(err)
	}
	c := waitBack(t, e.host, back, "the own turn", func(c ahp.ChatState) bool { return len(c.Turns) == 2 })
	if c.Turns[1].State != ahp.TurnStateError {
		t.Errorf("own turn %s, want its post refused", maintest.JSON(c.Turns[1]))
	}
	if mc := m.Current(); len(mc.Turns) != 1 || len(texts(mc.Turns[0])) != 1 {
		t.Errorf("the main chat changed: %s", maintest.JSON(mc))
	}
}

// fakeHost is a local.Host with some methods replaced.
type fakeHost struct {
	*local.Host
	start func(context.Context, wake.Spec) (string, error)
	has   func(context.Context, string) (bool, error)
	send  func(context.Context, string, wake.Pending) error
	// restore replaces Restore; nil keeps local.Host's.
	restore func(context.Context, string, wake.Spec) error
}

func (f *fakeHost) Restore(ctx context.Context, s string, spec wake.Spec) error {
	if f.restore != nil {
		return f.restore(ctx, s, spec)
	}
	return f.Host.Restore(ctx, s, spec)
}

func (f *fakeHost) Start(ctx context.Context, s wake.Spec) (string, error) {
	if f.start != nil {
		return f.start(ctx, s)
	}
	return f.Host.Start(ctx, s)
}

func (f *fakeHost) Has(ctx context.Context, s string) (bool, error) {
	if f.has != nil {
		return f.has(ctx, s)
	}
	return f.Host.Has(ctx, s)
}

func (f *fakeHost) Send(ctx context.Context, s string, p wake.Pending) error {
	if f.send != nil {
		return f.send(ctx, s, p)
	}
	return f.Host.Send(ctx, s, p)
}

var _ = errors.New

func TestABackChatHoldsOnlyItsLatestEndedTurns(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	var session string
	for i := range local.BackTurns + 3 {
		m, turn, _ := e.say(fmt.Sprint("m", i))
		if got := texts(m.Ended(t)); !slices.Equal(got, []string{fmt.Sprint("Motion heard: m", i)}) {
			t.Fatalf("turn %d says %q", i, got)
		}
		<-turn.Done()
		session = turn.Session()
	}
	state, _, err := e.host.Follow(ctx(t), session)
	if err != nil {
		t.Fatal(err)
	}
	if len(state.Turns) != local.BackTurns || state.TurnsNextCursor != "" {
		t.Fatalf("the back chat holds %d turns (cursor %q), want the latest %d", len(state.Turns), state.TurnsNextCursor, local.BackTurns)
	}
	last := state.Turns[len(state.Turns)-1]
	if last.Message.Text == "" || !strings.HasSuffix(last.Message.Text, fmt.Sprint("m", local.BackTurns+2)) {
		t.Errorf("the latest turn held is %s", maintest.JSON(last.Message))
	}
}
