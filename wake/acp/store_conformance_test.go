package acp_test

import (
	"path/filepath"
	"testing"

	"github.com/agenthost/bots/wake/acp"
	"github.com/agenthost/bots/wake/acp/acptest"
)

func TestMemStoreConformance(t *testing.T) {
	t.Parallel()
	acptest.RunStore(t, acptest.Store{Open: func(*testing.T) acp.Store { return &acp.MemStore{} }})
}

func TestFileStoreConformance(t *testing.T) {
	t.Parallel()
	acptest.RunStore(t, acptest.Store{
		Open:   func(t *testing.T) acp.Store { return acp.FileStore{Dir: filepath.Join(t.TempDir(), "sessions")} },
		Reopen: func(_ *testing.T, old acp.Store) acp.Store { return acp.FileStore{Dir: old.(acp.FileStore).Dir} },
	})
}
