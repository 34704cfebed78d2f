package waketest

import (
	"context"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/internal/checktest"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/echo"
	"github.com/agenthost/bots/wake/local"
)

// These tests prove that the suites' checks fail implementations that
// break the contract they check.

// stubborn is a harness whose agent ignores a stop while it waits.
type stubborn struct{ release chan struct{} }

func (s stubborn) Open(ctx context.Context, info wake.SessionInfo) (wake.Agent, error) {
	a, err := echo.Harness{}.Open(ctx, info)
	return stubbornAgent{a, s.release}, err
}

type stubbornAgent struct {
	wake.Agent
	release chan struct{}
}

func (a stubbornAgent) Turn(ctx context.Context, w wake.Work) error {
	if w.Message().Text == "wait stubbornly" {
		<-a.release
		return nil
	}
	return a.Agent.Turn(ctx, w)
}

func TestHarnessStopCheckFailsAnAgentThatIgnoresTheStop(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	script := EchoScript()
	script.Wait = "wait stubbornly"
	h := Harness{Open: func(*testing.T) wake.Harness { return stubborn{release} }, Script: script, Provider: echo.Provider, Wait: 300 * time.Millisecond}
	a := openAgent(t, h)
	msgs := checktest.Failures(t, func(t testing.TB) { checkHarnessStop(t, h, a) })
	if len(msgs) == 0 {
		t.Fatal("the stop check passed an agent that ignores its stop")
	}
	t.Logf("the check said: %s", msgs[0])
}

func localHost(t *testing.T) *local.Host {
	h, err := local.New(local.Config{Harnesses: map[string]wake.Harness{echo.Provider: echo.Harness{}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// lenient is a host that takes every action, applying or not.
type lenient struct{ *local.Host }

func (l lenient) Dispatch(ctx context.Context, session string, a ahp.Action) error {
	l.Host.Dispatch(ctx, session, a)
	return nil
}

func TestHostRefusalCheckFailsAHostThatTakesEveryAction(t *testing.T) {
	t.Parallel()
	h := SessionHost{Open: func(t *testing.T) wake.SessionHost { return lenient{localHost(t)} }, Provider: echo.Provider, Script: EchoScript()}
	msgs := checktest.Failures(t, func(tb testing.TB) { checkHostRefusesAction(tb, h, h.Open(t)) })
	if len(msgs) == 0 {
		t.Fatal("the refusal check passed a host that answers every action with nil")
	}
	t.Logf("the check said: %s", msgs[0])
}

// forgetful is a host whose Follow loses the end of every turn.
type forgetful struct{ *local.Host }

func (f forgetful) Follow(ctx context.Context, session string) (ahp.ChatState, <-chan ahp.Action, error) {
	st, in, err := f.Host.Follow(ctx, session)
	if err != nil {
		return st, in, err
	}
	out := make(chan ahp.Action)
	go func() {
		defer close(out)
		for a := range in {
			if a.Type == ahp.ActionChatTurnComplete {
				continue
			}
			select {
			case out <- a:
			case <-ctx.Done():
				return
			}
		}
	}()
	return st, out, nil
}

func TestHostQueuedCheckFailsAHostWhoseFollowLosesActions(t *testing.T) {
	t.Parallel()
	h := SessionHost{Open: func(t *testing.T) wake.SessionHost { return forgetful{localHost(t)} }, Provider: echo.Provider,
		Script: EchoScript(), Wait: 500 * time.Millisecond}
	msgs := checktest.Failures(t, func(tb testing.TB) { checkHostQueued(tb, h, h.Open(t)) })
	if len(msgs) == 0 {
		t.Fatal("the queued-message check passed a host whose Follow drops chat/turnComplete")
	}
	t.Logf("the check said: %s", msgs[0])
}
