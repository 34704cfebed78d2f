package wake_test

import (
	"context"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/local"
)

// slowHarness runs agents whose turns, once stopped, return only when
// release is closed: a turn that outlives Close would be seen running.
type slowHarness struct{ entered, release chan struct{} }

func (h slowHarness) Open(ctx context.Context, s wake.SessionInfo) (wake.Agent, error) {
	return slowAgent(h), nil
}

type slowAgent slowHarness

func (a slowAgent) Turn(ctx context.Context, w wake.Work) error {
	a.entered <- struct{}{}
	<-ctx.Done()
	<-a.release
	return ctx.Err()
}

func (slowAgent) Close() error { return nil }

// notReturned fails the test when done is closed once every goroutine of
// the bubble is blocked.
func notReturned(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	synctest.Wait()
	select {
	case <-done:
		t.Fatalf("%s returned while a goroutine it started still ran", what)
	default:
	}
}

func TestLocalHostCloseWaitsForTheTurnsItRan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := slowHarness{entered: make(chan struct{}, 1), release: make(chan struct{})}
		h, err := local.New(local.Config{Harnesses: map[string]wake.Harness{"slow": slow}})
		if err != nil {
			t.Fatal(err)
		}
		session, err := h.Start(t.Context(), wake.Spec{Provider: "slow", Dir: t.TempDir(), Owner: "user:soft"})
		if err != nil {
			t.Fatal(err)
		}
		msg := ahp.Message{Text: "work", Origin: ahp.MessageOrigin{Kind: ahp.MessageAgent}}
		if err := h.Send(t.Context(), session, wake.Pending{Kind: ahp.PendingQueued, ID: "p1", Message: msg}); err != nil {
			t.Fatal(err)
		}
		<-slow.entered
		closed := make(chan struct{})
		go func() { h.Close(); close(closed) }()
		notReturned(t, closed, "local.Host.Close")
		close(slow.release)
		<-closed
	})
}

func TestWakerCloseWaitsForTheGoroutinesItStarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sending, release := make(chan struct{}, 1), make(chan struct{})
		e := newEnv(t, func(h *local.Host) wake.SessionHost {
			return &fakeHost{Host: h, send: func(ctx context.Context, s string, p wake.Pending) error {
				sending <- struct{}{}
				<-ctx.Done()
				<-release // a host slow to give up
				return ctx.Err()
			}}
		})
		_, turn, _ := e.say("hello")
		<-sending
		closed := make(chan struct{})
		go func() { e.w.Close(); close(closed) }()
		notReturned(t, closed, "Waker.Close")
		select {
		case <-turn.Done():
		default:
			t.Error("the main turn was not ended by Close")
		}
		close(release)
		<-closed
		e.host.Close()
	})
}

func TestCloseLeavesNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	e := newEnv(t, nil)
	m, _, _ := e.say("hello")
	m.Ended(t)
	m, turn, _ := e.say("sleep 30")
	m.Wait(t, "the back session", func(c ahp.ChatState, _ ahp.SessionState) bool {
		call := subagentCall(ahp.Turn{ResponseParts: c.ActiveTurn.ResponseParts})
		return call != nil && len(call.Content) > 0
	})
	waitBack(t, e.host, turn.Session(), "the sleep", func(s ahp.ChatState) bool { return s.ActiveTurn != nil })
	e.w.Close()
	e.host.Close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			var b strings.Builder
			pprof.Lookup("goroutine").WriteTo(&b, 1)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", runtime.NumGoroutine(), before, b.String())
		}
		runtime.Gosched() // the feed's pumps end once they see their feed closed
	}
}
