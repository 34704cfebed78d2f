package agents_test

import (
	"path/filepath"
	"testing"

	"github.com/agenthost/bots/wake/agents"
	"github.com/agenthost/bots/wake/agents/agentstest"
)

func TestMemSessionStoreConformance(t *testing.T) {
	t.Parallel()
	agentstest.RunSessionStore(t, agentstest.SessionStore{Open: func(*testing.T) agents.SessionStore { return &agents.MemSessionStore{} }})
}

func TestFileSessionStoreConformance(t *testing.T) {
	t.Parallel()
	agentstest.RunSessionStore(t, agentstest.SessionStore{
		Open: func(t *testing.T) agents.SessionStore {
			return agents.FileSessionStore{Dir: filepath.Join(t.TempDir(), "sessions")}
		},
		Reopen: func(_ *testing.T, old agents.SessionStore) agents.SessionStore {
			return agents.FileSessionStore{Dir: old.(agents.FileSessionStore).Dir}
		},
	})
}
