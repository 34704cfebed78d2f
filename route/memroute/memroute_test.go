package memroute_test

import (
	"testing"

	"github.com/agenthost/bots/route"
	"github.com/agenthost/bots/route/memroute"
	"github.com/agenthost/bots/route/relay"
	"github.com/agenthost/bots/route/routetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	routetest.Run(t, func(t *testing.T, conns []route.Connection) route.Store { return memroute.New(conns) })
}

func TestMemoryConformance(t *testing.T) {
	t.Parallel()
	routetest.RunMemory(t, routetest.MemoryHarness{Open: func(*testing.T) relay.Memory { return &memroute.Memory{} }})
}
