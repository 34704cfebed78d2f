package routetest

import (
	"context"
	"testing"

	"github.com/agenthost/bots/internal/checktest"
	"github.com/agenthost/bots/route"
	"github.com/agenthost/bots/route/memroute"
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
