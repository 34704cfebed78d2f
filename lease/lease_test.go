package lease_test

import (
	"testing"

	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/lease/leasetest"
)

func TestMemConformance(t *testing.T) {
	leasetest.Run(t, leasetest.Harness{Open: func(*testing.T) lease.Leases { return &lease.Mem{} }})
}
