package lease_test

import (
	"testing"
	"time"

	"github.com/agenthost/bots/lease"
)

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
