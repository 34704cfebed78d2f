package acp

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/acp/acpfake"
)

// hitAt runs the watch until it reports a limit and returns the limit and
// how long it took, on synctest's clock.
func hitAt(w *watch) (limit, time.Duration) {
	began := time.Now()
	l := <-w.hit
	return l, time.Since(began)
}

func TestTurnIdleFiresAfterExactlyTurnIdleOfSilence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWatch(2*time.Minute, 30*time.Minute)
		defer w.stop()
		if l, after := hitAt(w); l.field != TurnIdleField || after != 2*time.Minute {
			t.Errorf("hit %s after %s, want turnIdle after 2m", l.field, after)
		}
	})
}

func TestAnUpdateStartsTheIdleClockAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWatch(2*time.Minute, 30*time.Minute)
		defer w.stop()
		began := time.Now()
		time.Sleep(90 * time.Second)
		w.touch()
		l, _ := hitAt(w)
		if after := time.Since(began); l.field != TurnIdleField || after != 90*time.Second+2*time.Minute {
			t.Errorf("hit %s after %s, want turnIdle 2m after the update at 90s", l.field, after)
		}
	})
}

func TestTimeWaitingOnThePersonIsNotIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWatch(2*time.Minute, 30*time.Minute)
		defer w.stop()
		began := time.Now()
		release := w.hold()
		time.Sleep(10 * time.Minute) // the person takes their time to answer
		select {
		case l := <-w.hit:
			t.Fatalf("%s hit while the agent waited on the person", l.field)
		default:
		}
		release()
		release() // twice is once
		l, _ := hitAt(w)
		if after := time.Since(began); l.field != TurnIdleField || after != 12*time.Minute {
			t.Errorf("hit %s after %s, want turnIdle 2m after the answer", l.field, after)
		}
	})
}

func TestTurnTimeoutFiresThoughTheAgentKeepsTalking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWatch(2*time.Minute, 30*time.Minute)
		defer w.stop()
		began := time.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			tick := time.NewTicker(time.Minute)
			defer tick.Stop()
			for {
				select {
				case <-tick.C:
					w.touch()
				case <-w.hit:
					return
				}
			}
		}()
		<-done
		if after := time.Since(began); after != 30*time.Minute {
			t.Errorf("the turn was stopped after %s, want 30m", after)
		}
	})
}

func TestAStoppedWatchReportsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWatch(time.Minute, time.Hour)
		w.stop()
		time.Sleep(2 * time.Hour)
		select {
		case l := <-w.hit:
			t.Errorf("a stopped watch reported %s", l.field)
		default:
		}
	})
}

func TestParseLimit(t *testing.T) {
	t.Parallel()
	for value, want := range map[string]time.Duration{"": 0, "90s": 90 * time.Second, "2m": 2 * time.Minute, "1h30m": 90 * time.Minute} {
		if got, err := ParseLimit("turnIdle", value); err != nil || got != want {
			t.Errorf("%q = %s, %v; want %s", value, got, err, want)
		}
	}
	for _, bad := range []string{"90", "soon", "0s", "-1m"} {
		if _, err := ParseLimit("turnIdle", bad); err == nil || !strings.Contains(err.Error(), `turnIdle "`+bad+`"`) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// withFakeEnv passes the fake's switch name=value to the child.
func withFakeEnv(name, value string) func(*Config) {
	return func(c *Config) {
		c.Agent.Env = append(c.Agent.Env, name)
		environ := c.Environ
		c.Environ = func() []string { return append(environ(), name+"="+value) }
	}
}

// backInfo is a back session of bot Motion.
func backInfo(t *testing.T) wake.SessionInfo {
	return wake.SessionInfo{URI: "ahp-session:/limits", Provider: "fake", Dir: t.TempDir(), Title: "Motion",
		Meta: map[string]any{wake.BackSessionMeta: map[string]any{"bot": "motion", "person": "user:soft", "name": "work"}}}
}

// openBack opens an agent of h for a back session of bot Motion.
func openBack(t *testing.T, h *Harness) *agent {
	t.Helper()
	ag, err := h.Open(testCtx(t), backInfo(t))
	if err != nil {
		t.Fatal(err)
	}
	a := ag.(*agent)
	t.Cleanup(func() { a.Close() })
	return a
}

// stepError asserts err is a *StepError at step whose sentence holds each
// of want.
func stepError(t *testing.T, err error, step Step, want ...string) {
	t.Helper()
	var se *StepError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v (%T), want a *StepError", err, err)
	}
	if se.Step != step {
		t.Errorf("step %q, want %q: %s", se.Step, step, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not say %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "{") {
		t.Errorf("%q holds JSON", err)
	}
}

func TestStartTimeoutStopsAHungStartAndSaysSo(t *testing.T) {
	t.Parallel()
	logs := &waittest.Log{}
	h := newHarness(t, func(c *Config) {
		withFakeEnv(acpfake.HangInitEnv, "1")(c)
		c.StartTimeout = 300 * time.Millisecond
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	_, err := h.Open(testCtx(t), backInfo(t))
	stepError(t, err, StepStart, "Motion's agent fake failed while starting: it did not answer initialize within 300ms (the agent's startTimeout), so it was stopped.",
		"raise startTimeout for it in the agents file")
	if l := logs.String(); !strings.Contains(l, `level=WARN msg="acp: the agent did not start" agent=fake`) || !strings.Contains(l, `bot=Motion step=starting`) {
		t.Errorf("the start failure is not logged at Warn with bot, agent and step:\n%s", l)
	}
}

func TestStartFailuresSayTheAgentsWordsAndHowItEnded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		step Step
		want string
	}{
		{"an error answered", withFakeEnv(acpfake.NewFailEnv, "The model is overloaded"), StepOpen,
			"Motion's agent fake failed while opening the session: The model is overloaded."},
		{"an exit", withFakeEnv(acpfake.NewExitEnv, "5"), StepOpen,
			"Motion's agent fake failed while opening the session: it exited with status 5."},
		{"a missing command", func(c *Config) { c.Agent.Command = "/nonexistent/agent" }, StepStart,
			`Motion's agent fake failed while starting: its command "/nonexistent/agent" could not be run (no such file or directory). Check the command of fake in the agents file.`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newHarness(t, tc.mod).Open(testCtx(t), backInfo(t))
			stepError(t, err, tc.step, tc.want)
			if strings.Contains(err.Error(), "killed") {
				t.Errorf("%q says killed", err)
			}
		})
	}
}

func TestTurnEndsAreToldAsTheyHappened(t *testing.T) {
	t.Parallel()
	for word, want := range map[string]string{
		"exit 4": "Motion's agent fake failed during the turn: it exited with status 4.",
		"signal": "Motion's agent fake failed during the turn: it was killed by signal 9 (killed).",
	} {
		a := openBack(t, newHarness(t, nil))
		_, err := runTurn(t, a, word)
		stepError(t, err, StepTurn, want)
		mustTurn(t, a, "say still here")
	}
}

func TestTurnIdleStopsASilentTurnAndSaysSo(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.TurnIdle = 300 * time.Millisecond })
	a := openBack(t, h)
	pid := pidOf(t, a)
	_, err := runTurn(t, a, "silent")
	stepError(t, err, StepTurn, "Motion's agent fake failed during the turn: it sent nothing for 300ms (the agent's turnIdle), so the turn was stopped.",
		"raise turnIdle for fake in the agents file")
	if again := pidOf(t, a); again != pid {
		t.Errorf("the agent honoured the stop, but its child was replaced (%d → %d)", pid, again)
	}
}

func TestTurnTimeoutStopsATurnThatKeepsTalking(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.TurnIdle, c.TurnTimeout = 5*time.Second, 500*time.Millisecond })
	a := openBack(t, h)
	w, err := runTurn(t, a, "tick")
	stepError(t, err, StepTurn, "Motion's agent fake failed during the turn: the turn ran for 500ms (the agent's turnTimeout), so it was stopped.")
	if !strings.Contains(w.replied(), "tick") {
		t.Errorf("the agent said %q, want ticks", w.replied())
	}
}

func TestIgnoredStopIsKilledAndTheNextMessageContinuesTheSessionOnANewChild(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withFakeEnv(acpfake.IgnoreCancelEnv, "1"))
	a := openBack(t, h)
	first := mustTurn(t, a, "session").replied()
	id, _, _ := strings.Cut(first, " loaded=")
	pid := pidOf(t, a)

	ctx, cancel := context.WithCancel(testCtx(t))
	w := &fakeWork{text: "sleep", said: make(chan string, 1)}
	errc := make(chan error, 1)
	go func() { errc <- a.Turn(ctx, w) }()
	<-w.said
	cancel()
	// The next message comes at once, while the stopped turn waits out its
	// grace: it must not be sent to the stuck child, nor fail with it.
	if got := mustTurn(t, a, "session").replied(); got != id+" loaded=true" {
		t.Errorf("the next message found %q, want %q (the same session, loaded on a new child)", got, id+" loaded=true")
	}
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("the stopped turn returned %v", err)
	}
	if !gone(pid) {
		t.Errorf("process %d ignored the stop and lives on", pid)
	}
}

func TestIgnoredLimitStopSaysTheChildWasKilled(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) {
		withFakeEnv(acpfake.IgnoreCancelEnv, "1")(c)
		c.TurnIdle = 200 * time.Millisecond
	})
	a := openBack(t, h)
	_, err := runTurn(t, a, "silent")
	stepError(t, err, StepTurn, "it sent nothing for 200ms (the agent's turnIdle), so the turn was stopped; it did not stop within 300ms, so it was killed, and the next message continues the session in a new process.")
	if got := mustTurn(t, a, "session").replied(); !strings.HasSuffix(got, "loaded=true") {
		t.Errorf("after the kill the next message found %q, want the session loaded", got)
	}
}
