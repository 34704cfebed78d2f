// Package waketest holds the conformance suites of wake's ports, run from
// the tests of every implementation, the embedder's own included:
//
//   - RunHarness checks a wake.Harness: the agent it opens posts through
//     Work.CallTool, asks through Work.Ask and Work.Approve, returns
//     promptly when its turn is stopped (and works again after), ends its
//     turn when post_message is denied, and does nothing through a Work
//     once its Turn has returned.
//   - RunSessionHost checks a wake.SessionHost as the Waker uses it: a
//     queued message starts a turn whose post_message the suite completes
//     as the session's client, answers to questions and approvals through
//     Dispatch, a stop, taking back a waiting message, Follow, Dispose, and
//     the sentinel errors.
//   - RunRows checks a wake.Rows: the session rows of (bot, person, name),
//     through a reopen of their storage.
//
// The first two drive the agent by the words of its messages, which a Script names:
// EchoScript is the echo agent's (wake/echo); a harness of another agent
// gives the words that make it post, ask, ask approval and wait.
//
//	func TestHarnessConformance(t *testing.T) {
//		waketest.RunHarness(t, waketest.Harness{
//			Open:     func(t *testing.T) wake.Harness { return echo.Harness{} },
//			Provider: echo.Provider,
//			Script:   waketest.EchoScript(),
//		})
//	}
//
//	func TestSessionHostConformance(t *testing.T) {
//		waketest.RunSessionHost(t, waketest.SessionHost{
//			Open: func(t *testing.T) wake.SessionHost {
//				h, err := local.New(local.Config{
//					Harnesses: map[string]wake.Harness{echo.Provider: echo.Harness{}}})
//				if err != nil {
//					t.Fatal(err)
//				}
//				t.Cleanup(func() { h.Close() })
//				return h
//			},
//			Provider: echo.Provider,
//			Script:   waketest.EchoScript(),
//		})
//	}
//
// Every wait of the suites is bounded (Wait, ten seconds unless set); none
// sleeps.
package waketest

import (
	"context"
	"testing"
	"time"
)

// Script is how the suites make an agent act: the text of the message
// that makes it do each thing.
type Script struct {
	// Post returns a message that makes the agent call post_message once,
	// with {"text": posted}, and end its turn.
	Post func(words string) (message, posted string)
	// Ask returns a message that makes the agent ask question (one
	// question, through Work.Ask or its host's question tool) and then
	// post answered(answer), answer being the text the person gave.
	Ask func(question string) (message string, answered func(answer string) string)
	// Approve makes the agent ask approval for a tool call (through
	// Work.Approve or its host's confirmation), then post Approved when
	// it was given and Denied when not.
	Approve, Approved, Denied string
	// Wait makes the agent wait until its turn is stopped.
	Wait string
}

// EchoScript is the script of the echo agent (wake/echo) in a folder with
// no AGENTS.md.
func EchoScript() Script {
	return Script{
		Post: func(words string) (string, string) { return words, "echo heard: " + words },
		Ask: func(q string) (string, func(string) string) {
			return "ask " + q, func(a string) string { return "you said: " + a }
		},
		Approve: "approve", Approved: "approved", Denied: "denied",
		Wait: "sleep 3600",
	}
}

// DefaultWait bounds every wait of the suites when their Wait is zero.
const DefaultWait = 10 * time.Second

// testCtx is a context that ends with the test, or after d.
func testCtx(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func waitOr(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultWait
	}
	return d
}
