package wake_test

import (
	"testing"

	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/waketest"
)

func TestMemRowsConformance(t *testing.T) {
	waketest.RunRows(t, waketest.Rows{Open: func(t *testing.T) wake.Rows { return &wake.MemRows{} }})
}

func TestFileRowsConformance(t *testing.T) {
	dirs := map[wake.Rows]string{}
	waketest.RunRows(t, waketest.Rows{
		Open: func(t *testing.T) wake.Rows {
			dir := t.TempDir()
			rows := wake.NewFileRows(dir)
			dirs[rows] = dir
			return rows
		},
		Reopen: func(t *testing.T, old wake.Rows) wake.Rows { return wake.NewFileRows(dirs[old]) },
	})
}
