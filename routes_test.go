package bots_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/agenthost/bots/route"
	"github.com/agenthost/bots/route/memroute"
)

// deafNetwork is a chat network no route of these tests dials.
type deafNetwork struct{}

func (deafNetwork) Name() string { return "irc" }

func (deafNetwork) Dial(context.Context, route.Dial) (route.Conn, error) {
	return nil, errors.New("this test dials no network")
}

// TestAServerOfOnePersonWithNoRoutesSaysNothingOfRoutesAndWithOneSaysTheyCannotRun:
// without a users file nobody maps to a chat network's sender; a server
// that offers networks but holds no route logs nothing of it (every
// reference server's first start), and one holding a route logs at
// Error that routes need a users file.
func TestAServerOfOnePersonWithNoRoutesSaysNothingOfRoutesAndWithOneSaysTheyCannotRun(t *testing.T) {
	t.Parallel()
	for _, routes := range []int{0, 1} {
		srv := newServer(t)
		var logs bytes.Buffer
		srv.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		store := memroute.New([]route.Connection{{ID: "libera", Network: "irc"}})
		if routes == 1 {
			if _, err := store.PutRoute(t.Context(), route.Route{ID: "ask", Enabled: true, Connection: "libera", Bot: "bot-builder", Scope: route.Scope{Kind: route.Direct}}); err != nil {
				t.Fatal(err)
			}
		}
		srv.Routes, srv.Networks = store, []route.Network{deafNetwork{}}
		if err := srv.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		srv.Close()
		said := strings.Contains(logs.String(), "level=ERROR") && strings.Contains(logs.String(), "routes need a users directory")
		if routes == 0 && strings.Contains(logs.String(), "level=ERROR") {
			t.Errorf("a server with no routes logged an error:\n%s", logs.String())
		}
		if routes == 1 && !said {
			t.Errorf("a server holding a route it cannot run did not say why:\n%s", logs.String())
		}
	}
}
