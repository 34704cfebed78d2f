package memrecord_test

import (
	"testing"

	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/memrecord"
	"github.com/agenthost/bots/record/recordtest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	recordtest.Run(t, recordtest.Harness{
		Open: func(*testing.T) (record.Store, error) { return memrecord.New(), nil },
	})
}
