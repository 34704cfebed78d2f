package routetest

import (
	"cmp"
	"context"
	"testing"

	"github.com/agenthost/bots/internal/checktest"
	"github.com/agenthost/bots/route"
	"github.com/agenthost/bots/route/memroute"
	"github.com/agenthost/bots/route/relay"
)

// lenient is a store that takes every write, whatever its Version.
type lenient struct{ *memroute.Store }

func (l lenient) PutRoute(ctx context.Context, r route.Route) (route.Route, error) {
	all, _ := l.Store.Routes(ctx)
	for _, o := range all {
		if o.ID == r.ID {
			r.Version = o.Version
		}
	}
	return l.Store.PutRoute(ctx, r)
}

// deaf is a store whose Watch ends at once, having heard nothing. (One
// that hears nothing and never ends fails the check too, after the ten
// seconds it waits for each write.)
type deaf struct{ *memroute.Store }

func (deaf) Watch(context.Context) (<-chan struct{}, error) {
	ch := make(chan struct{})
	close(ch)
	return ch, nil
}

func TestTheChecksCanFail(t *testing.T) {
	t.Parallel()
	for name, s := range map[string]route.Store{
		"PutRouteMakesAndReplacesByVersion":         lenient{memroute.New(Conns)},
		"ConcurrentWritesOfOneVersionOneWins":       lenient{memroute.New(Conns)},
		"WatchHearsEveryWriteAndEndsWithItsContext": deaf{memroute.New(Conns)},
		"ListsTheConnectionsItWasGivenOrderedByID":  memroute.New(Conns[:1]),
	} {
		failed := checktest.Failures(t, func(tb testing.TB) { Checks[name](tb, func() route.Store { return s }) })
		if len(failed) == 0 {
			t.Errorf("%s passed a store that breaks it", name)
		}
	}
}

// brokenMemory is a memory in memory broken one way, by how.
type brokenMemory struct {
	memroute.Memory
	how    string
	writes int
}

func (b *brokenMemory) Get(ctx context.Context, key string) ([]byte, error) {
	if b.how == "one key" {
		key = "all"
	}
	v, err := b.Memory.Get(ctx, key)
	if v == nil && b.how == "empty for nil" {
		v = []byte{}
	}
	return v, err
}

func (b *brokenMemory) Update(ctx context.Context, key string, fn func([]byte) ([]byte, error)) error {
	if b.how == "one key" {
		key = "all"
	}
	return b.Memory.Update(ctx, key, func(old []byte) ([]byte, error) {
		if b.how == "forgets the old value" {
			old = nil
		}
		v, err := fn(old)
		if err != nil && b.how == "writes what failed" {
			return v, nil
		}
		if b.writes++; b.how == "drops every seventh write" && b.writes%7 == 0 {
			return old, nil
		}
		return v, err
	})
}

func TestTheMemoryChecksCanFail(t *testing.T) {
	t.Parallel()
	again := func(relay.Memory) relay.Memory { return &memroute.Memory{} } // storage that forgets
	for name, how := range map[string]string{
		"AKeyNeverWrittenIsNil":                "empty for nil",
		"UpdateIsGivenTheValueItReplaces":      "forgets the old value",
		"AnUpdateWhoseFuncFailsWritesNothing":  "writes what failed",
		"ConcurrentUpdatesOfOneKeyLoseNone":    "drops every seventh write",
		"WhatIsWrittenIsReadOnceOpenedAgain":   "",
		"KeysWithASlashAreApartFromOneAnother": "one key",
	} {
		m := &brokenMemory{how: how}
		failed := checktest.Failures(t, func(tb testing.TB) { MemoryChecks[name](tb, m, again) })
		if len(failed) == 0 {
			t.Errorf("%s passed a memory that %s", name, cmp.Or(how, "forgets when opened again"))
		}
	}
}
