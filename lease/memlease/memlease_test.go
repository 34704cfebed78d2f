package memlease_test

import (
	"testing"

	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/lease/leasetest"
	"github.com/agenthost/bots/lease/memlease"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	leasetest.Run(t, leasetest.Harness{
		Open:  func(*testing.T) lease.Leases { return &memlease.Leases{} },
		Holds: func(_ *testing.T, ls lease.Leases, f lease.Fence) bool { return ls.(*memlease.Leases).Holds(f) },
	})
}
