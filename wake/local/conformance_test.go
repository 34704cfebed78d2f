package local_test

import (
	"testing"

	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/echo"
	"github.com/agenthost/bots/wake/local"
	"github.com/agenthost/bots/wake/waketest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	waketest.RunSessionHost(t, waketest.SessionHost{
		Open: func(t *testing.T) wake.SessionHost {
			h, err := local.New(local.Config{Harnesses: map[string]wake.Harness{echo.Provider: echo.Harness{}}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { h.Close() })
			return h
		},
		Provider: echo.Provider,
		Script:   waketest.EchoScript(),
	})
}
