package echo_test

import (
	"testing"

	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/echo"
	"github.com/agenthost/bots/wake/waketest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	waketest.RunHarness(t, waketest.Harness{
		Open:     func(*testing.T) wake.Harness { return echo.Harness{} },
		Provider: echo.Provider,
		Script:   waketest.EchoScript(),
	})
}
