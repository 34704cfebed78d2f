package wake_test

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/replica"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/echo"
	"github.com/agenthost/bots/wake/filerows"
	"github.com/agenthost/bots/wake/internal/maintest"
	"github.com/agenthost/bots/wake/local"
)

// restartEnv is a config folder and a bot folder that local Hosts and
// Wakers are started on, one after another, as a restarted server does.
type restartEnv struct {
	config, dir string
	bot         record.Record
}

func newRestartEnv(t *testing.T) *restartEnv {
	t.Helper()
	e := &restartEnv{config: t.TempDir(), dir: t.TempDir()}
	if err := os.WriteFile(filepath.Join(e.dir, "AGENTS.md"), []byte("---\nname: Motion\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.bot = record.Record{ID: "motion", Name: "Motion", Workspace: e.dir, Owner: "user:soft"}
	return e
}

// host starts a local.Host keeping its back sessions' logs in the config
// folder; the test's end closes it.
func (e *restartEnv) host(t *testing.T) *local.Host {
	t.Helper()
	h, err := local.New(local.Config{Harnesses: map[string]wake.Harness{echo.Provider: echo.Harness{}}, ConfigDir: e.config})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// waker starts a Waker on h with the rows of the config folder.
func (e *restartEnv) waker(t *testing.T, h wake.SessionHost) *wake.Waker {
	t.Helper()
	w, err := wake.New(wake.Config{Host: h, Rows: filerows.New(e.config), DefaultAgent: echo.Provider})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// say wakes the bot with text and waits for the main turn to end.
func (e *restartEnv) say(t *testing.T, w *wake.Waker, turnID, text string) (ahp.Turn, string) {
	t.Helper()
	m := maintest.New(turnID, text)
	turn := w.Wake(wake.Message{Bot: e.bot, Person: "user:soft", Session: "ahp-session:/main", Chat: "ahp-chat://main",
		TurnID: turnID, Text: text, StartedAt: time.Now()}, m)
	return m.Ended(t), turn.Session()
}

// spec is a back session of the bot, as the Waker starts one.
func (e *restartEnv) spec() wake.Spec {
	return wake.Spec{Provider: echo.Provider, Dir: e.dir, Owner: "user:soft", Title: "Motion",
		Client: &ahp.SessionActiveClient{ClientID: wake.ClientID, Tools: ahp.List[ahp.ToolDefinition]{wake.PostMessageTool()}},
		Meta:   map[string]any{wake.BackSessionMeta: map[string]any{"bot": "motion", "person": "user:soft", "name": "work"}}}
}

func (e *restartEnv) logPath(session string) string {
	return filepath.Join(e.config, "bots", "motion", "sessions", base64.RawURLEncoding.EncodeToString([]byte(session))+".jsonl")
}

func backWords(t ahp.Turn) string { return echo.Words(t.Message.Text) }

func TestLocalHostStartedAgainHoldsItsBackSessionsAndTheWakeContinuesThem(t *testing.T) {
	t.Parallel()
	e := newRestartEnv(t)
	h1 := e.host(t)
	w1 := e.waker(t, h1)
	turn, session := e.say(t, w1, "t1", "hello")
	if !slices.Equal(texts(turn), []string{"Motion heard: hello"}) {
		t.Fatalf("before the restart: %s", maintest.JSON(turn))
	}
	w1.Close()
	h1.Close()

	h2 := e.host(t)
	if has, _ := h2.Has(ctx(t), session); !has {
		t.Fatalf("the host started again does not hold %s", session)
	}
	state, _, err := h2.Follow(ctx(t), session)
	if err != nil {
		t.Fatal(err)
	}
	if len(state.Turns) != 1 || backWords(state.Turns[0]) != "hello" || state.Turns[0].State != ahp.TurnStateComplete {
		t.Fatalf("the restored back chat holds %s", maintest.JSON(state.Turns))
	}
	turn, again := e.say(t, e.waker(t, h2), "t2", "again")
	if again != session || !slices.Equal(texts(turn), []string{"Motion heard: again"}) {
		t.Fatalf("after the restart the message went to %s and says %q, want %s", again, texts(turn), session)
	}
	state = waitBack(t, h2, session, "the second back turn", func(s ahp.ChatState) bool { return len(s.Turns) == 2 && s.ActiveTurn == nil })
	if backWords(state.Turns[1]) != "again" || state.Turns[1].State != ahp.TurnStateComplete {
		t.Errorf("the back chat holds %s", maintest.JSON(state.Turns))
	}
}

func TestRestoredBackSessionEndsItsInterruptedTurnAndTakesBackWaitingMessages(t *testing.T) {
	t.Parallel()
	e := newRestartEnv(t)
	h1 := e.host(t)
	session, err := h1.Start(ctx(t), e.spec())
	if err != nil {
		t.Fatal(err)
	}
	agentSays := func(text string) ahp.Message {
		return ahp.Message{Text: text, Origin: ahp.MessageOrigin{Kind: ahp.MessageAgent}}
	}
	if err := h1.Send(ctx(t), session, wake.Pending{Kind: ahp.PendingQueued, ID: "p1", Message: agentSays("sleep 30")}); err != nil {
		t.Fatal(err)
	}
	waitBack(t, h1, session, "the sleep", func(s ahp.ChatState) bool { return s.ActiveTurn != nil })
	if err := h1.Send(ctx(t), session, wake.Pending{Kind: ahp.PendingQueued, ID: "p2", Message: agentSays("two")}); err != nil {
		t.Fatal(err)
	}
	h1.Close()

	for range 2 { // a second start reads the same: the ends were logged
		h := e.host(t)
		state, _, err := h.Follow(ctx(t), session)
		if err != nil {
			t.Fatal(err)
		}
		if state.ActiveTurn != nil || len(state.QueuedMessages) != 0 || len(state.Turns) != 1 {
			t.Fatalf("the restored back chat is %s, want its one turn ended and nothing waiting", maintest.JSON(state))
		}
		tn := state.Turns[0]
		tail := tn.ResponseParts[len(tn.ResponseParts)-1]
		if tn.State != ahp.TurnStateError || tail.Error == nil || tail.Error.Error.ErrorType != replica.InterruptedType {
			t.Errorf("the interrupted turn reads %s", maintest.JSON(tn))
		}
		h.Close()
	}
}

func TestRestoredBackSessionTimesItsInterruptedTurnByTheLogNotTheSendersClock(t *testing.T) {
	t.Parallel()
	e := newRestartEnv(t)
	h1 := e.host(t)
	session, err := h1.Start(ctx(t), e.spec())
	if err != nil {
		t.Fatal(err)
	}
	// The turn's sender says it began a day ago, by its own clock.
	began := time.Now().Add(-24 * time.Hour)
	if err := h1.Dispatch(ctx(t), session, ahp.TurnStarted("t1", began, ahp.UserMessage("sleep 30"))); err != nil {
		t.Fatal(err)
	}
	waitBack(t, h1, session, "the sleep", func(s ahp.ChatState) bool { return s.ActiveTurn != nil })
	h1.Close()

	state, _, err := e.host(t).Follow(ctx(t), session)
	if err != nil {
		t.Fatal(err)
	}
	if len(state.Turns) != 1 || state.Turns[0].State != ahp.TurnStateError {
		t.Fatalf("the restored back chat is %s, want its turn ended", maintest.JSON(state))
	}
	d := time.Duration(-1)
	if ms := state.Turns[0].Duration; ms != nil {
		d = time.Duration(*ms) * time.Millisecond
	}
	if d < 0 || d >= time.Hour {
		t.Errorf("the interrupted turn lasted %s: timed from the sender's startedAt, not from the log's line that began it", d)
	}
}

func TestWakerRestoresTheSessionARowNamesWhenTheHostLostIt(t *testing.T) {
	t.Parallel()
	e := newRestartEnv(t)
	lost := "ahp-session:/01lost"
	if err := filerows.New(e.config).Put(ctx(t), wake.Row{Bot: "motion", Person: "user:soft", Name: "work", Session: lost, Provider: echo.Provider}); err != nil {
		t.Fatal(err)
	}
	h := e.host(t)
	turn, session := e.say(t, e.waker(t, h), "t1", "hello")
	if session != lost || !slices.Equal(texts(turn), []string{"Motion heard: hello"}) {
		t.Fatalf("the message went to %s and says %q, want the row's session %s", session, texts(turn), lost)
	}
	if _, err := os.Stat(e.logPath(lost)); err != nil {
		t.Errorf("the restored session keeps no log: %v", err)
	}
}

func TestLocalHostRestoreRefusesAURIItWouldNotMake(t *testing.T) {
	t.Parallel()
	e := newRestartEnv(t)
	h := e.host(t)
	for _, uri := range []string{"ahp-session:/../x", "other:/abc", "ahp-session:/", "ahp-session:/ABC"} {
		if err := h.Restore(ctx(t), uri, e.spec()); !errors.Is(err, wake.ErrRefused) {
			t.Errorf("Restore(%q) = %v, want ErrRefused", uri, err)
		}
	}
}

func TestBackLogIsPrivateAndADisposedSessionLeavesNoneAndIsNotRestored(t *testing.T) {
	t.Parallel()
	e := newRestartEnv(t)
	h1 := e.host(t)
	session, err := h1.Start(ctx(t), e.spec())
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(e.logPath(session)); err != nil {
		t.Fatalf("the back session keeps no log: %v", err)
	} else if fi.Mode().Perm() != 0o600 {
		t.Errorf("the log's mode is %v, want 0600", fi.Mode().Perm())
	}
	if err := h1.Dispose(ctx(t), session); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(e.logPath(session)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a disposed session's log is still there: %v", err)
	}
	h1.Close()
	if has, _ := e.host(t).Has(ctx(t), session); has {
		t.Error("a disposed session came back")
	}
}

func TestBackLogWithATornLastLineIsRestored(t *testing.T) {
	t.Parallel()
	e := newRestartEnv(t)
	h1 := e.host(t)
	_, session := e.say(t, e.waker(t, h1), "t1", "hello")
	h1.Close()
	f, err := os.OpenFile(e.logPath(session), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"kind":"chat","at":"2026-`)
	f.Close()

	state, _, err := e.host(t).Follow(ctx(t), session)
	if err != nil {
		t.Fatal(err)
	}
	if len(state.Turns) != 1 || backWords(state.Turns[0]) != "hello" {
		t.Errorf("the restored chat holds %s", maintest.JSON(state.Turns))
	}
	data, _ := os.ReadFile(e.logPath(session))
	if !strings.HasSuffix(string(data), "}\n") {
		t.Errorf("the torn line was not cut off: %q", data[max(0, len(data)-40):])
	}
}

func TestRestoredBackChatOpensOnlyToItsOwner(t *testing.T) {
	t.Parallel()
	e := newRestartEnv(t)
	h1 := e.host(t)
	_, session := e.say(t, e.waker(t, h1), "t1", "hello")
	h1.Close()
	h2 := e.host(t)
	chat := ahp.DefaultChatURI(session)
	for _, who := range []access.Principal{{User: "soft"}, {Root: true}} {
		if _, err := h2.Channel(ctx(t), engine.Caller{Principal: who}, chat); err != nil {
			t.Errorf("%+v may not open the restored back chat: %v", who, err)
		}
	}
	for _, uri := range []string{chat, session} {
		_, err := h2.Channel(ctx(t), engine.Caller{Principal: access.Principal{User: "mate", Grants: []string{"bot:*", "session:create"}}}, uri)
		if errcode.Of(err) != errcode.PermissionDenied {
			t.Errorf("another person opens %s: %v, want PermissionDenied", uri, err)
		}
	}
}

func TestTheWakeNeverCarriesOnABackSessionHeldInAnotherFolderThanItsBots(t *testing.T) {
	t.Parallel()
	e := newRestartEnv(t)
	h1 := e.host(t)
	w1 := e.waker(t, h1)
	_, first := e.say(t, w1, "t1", "hello")
	w1.Close()
	h1.Close()

	// The host started again holds the session from its log; the bot of
	// the slug now works elsewhere (a bundled bot hiding a person's).
	h2 := e.host(t)
	w2 := e.waker(t, h2)
	if held, err := h2.Has(t.Context(), first); err != nil || !held {
		t.Fatalf("the host started again holds %s: %v (%v)", first, held, err)
	}
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "AGENTS.md"), []byte("---\nname: House\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.bot.Workspace, e.bot.Name = other, "House"
	turn, second := e.say(t, w2, "t2", "hello")
	if second == first {
		t.Errorf("the wake carried on %s, held in %s, for a bot working in %s", first, e.dir, other)
	}
	if !slices.Equal(texts(turn), []string{"House heard: hello"}) {
		t.Errorf("the bot working in %s says %q", other, texts(turn))
	}
}
