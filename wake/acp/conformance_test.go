package acp

import (
	"testing"

	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/local"
	"github.com/agenthost/bots/wake/waketest"
)

// fakeScript is the fake ACP agent's words (acpfake).
func fakeScript() waketest.Script {
	return waketest.Script{
		Post: func(words string) (string, string) { return "post " + words, words },
		Ask: func(q string) (string, func(string) string) {
			return "ask " + q, func(a string) string { return "you said: " + a }
		},
		Approve: "permit", Approved: "allowed", Denied: "rejected",
		Wait: "sleep",
	}
}

func TestHarnessConformance(t *testing.T) {
	t.Parallel()
	waketest.RunHarness(t, waketest.Harness{
		Open:     func(t *testing.T) wake.Harness { return newHarness(t, nil) },
		Provider: "fake",
		Script:   fakeScript(),
	})
}

func TestLocalHostOnTheACPHarnessConformance(t *testing.T) {
	t.Parallel()
	waketest.RunSessionHost(t, waketest.SessionHost{
		Open: func(t *testing.T) wake.SessionHost {
			h, err := local.New(local.Config{Harnesses: map[string]wake.Harness{"fake": newHarness(t, nil)}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { h.Close() })
			return h
		},
		Provider: "fake",
		Script:   fakeScript(),
	})
}
