package memrows_test

import (
	"testing"

	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/memrows"
	"github.com/agenthost/bots/wake/waketest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	waketest.RunRows(t, waketest.Rows{Open: func(*testing.T) wake.Rows { return &memrows.Rows{} }})
}
