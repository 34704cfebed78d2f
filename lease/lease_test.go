package lease_test

import (
	"testing"
	"time"

	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/lease/leasetest"
)

func TestMemConformance(t *testing.T) {
	t.Parallel()
	leasetest.Run(t, leasetest.Harness{
		Open:  func(*testing.T) lease.Leases { return &lease.Mem{} },
		Holds: func(_ *testing.T, ls lease.Leases, f lease.Fence) bool { return ls.(*lease.Mem).Holds(f) },
	})
}

func TestCheckTTLRefusesATooShortOrNegativeTimeToLive(t *testing.T) {
	t.Parallel()
	for _, ttl := range []time.Duration{-time.Second, time.Millisecond, lease.MinTTL - 1} {
		if err := lease.CheckTTL(ttl); err == nil {
			t.Errorf("CheckTTL(%v) took it", ttl)
		}
	}
	for _, ttl := range []time.Duration{0, lease.MinTTL, lease.DefaultTTL, time.Hour} {
		if err := lease.CheckTTL(ttl); err != nil {
			t.Errorf("CheckTTL(%v) = %v", ttl, err)
		}
	}
}
