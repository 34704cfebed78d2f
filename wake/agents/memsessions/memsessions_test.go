package memsessions_test

import (
	"testing"

	"github.com/agenthost/bots/wake/agents"
	"github.com/agenthost/bots/wake/agents/agentstest"
	"github.com/agenthost/bots/wake/agents/memsessions"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	agentstest.RunSessionStore(t, agentstest.SessionStore{Open: func(*testing.T) agents.SessionStore { return &memsessions.Store{} }})
}
