package filesessions_test

import (
	"path/filepath"
	"testing"

	"github.com/agenthost/bots/wake/agents"
	"github.com/agenthost/bots/wake/agents/agentstest"
	"github.com/agenthost/bots/wake/agents/filesessions"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	agentstest.RunSessionStore(t, agentstest.SessionStore{
		Open: func(t *testing.T) agents.SessionStore {
			return filesessions.Store{Dir: filepath.Join(t.TempDir(), "sessions")}
		},
		Reopen: func(_ *testing.T, old agents.SessionStore) agents.SessionStore {
			return filesessions.Store{Dir: old.(filesessions.Store).Dir}
		},
	})
}
