// Package routetest is the conformance suite of route.Store: every
// implementation (memroute, fileroute…) runs it from its own tests.
//
// Connections are the operator's: the port has no method that writes one.
// The suite hands Open the connections a store starts with, and the store's
// test seeds them its own way (a constructor's argument, a file):
//
//	func TestConformance(t *testing.T) {
//		routetest.Run(t, func(t *testing.T, conns []route.Connection) route.Store {
//			return mystore.New(conns)
//		})
//	}
package routetest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/route"
)

// Open opens a store on new storage of its own that holds the connections
// conns and no route. The store is the test's: the suite closes nothing.
type Open func(t *testing.T, conns []route.Connection) route.Store

// Conns are the connections the suite seeds.
var Conns = []route.Connection{
	{ID: "libera", Network: "irc", Enabled: true, Settings: map[string]string{"server": "irc.example.org:6697", "nick": "motion"},
		Secrets: map[string]string{"password": "connectors://irc/libera"}},
	{ID: "chat", Network: "xmpp", Settings: map[string]string{"jid": "motion@example.org"}},
}

// Checks are the suite's checks by name, each run by Run as a subtest.
var Checks = map[string]func(t testing.TB, open func() route.Store){
	"ListsTheConnectionsItWasGivenOrderedByID":  listsConnections,
	"PutRouteMakesAndReplacesByVersion":         putRoute,
	"PutRouteRefusesABadRouteNamingTheField":    refusesBad,
	"DeleteRouteByVersion":                      deleteRoute,
	"WatchHearsEveryWriteAndEndsWithItsContext": watch,
	"ConcurrentWritesOfOneVersionOneWins":       concurrentWrites,
}

// Run runs every check against stores from open.
func Run(t *testing.T, open Open) {
	for name, check := range Checks {
		t.Run(name, func(t *testing.T) {
			check(t, func() route.Store { return open(t, Conns) })
		})
	}
}

func dm(id, person string) route.Route {
	return route.Route{ID: id, Name: "Motion for " + person, Enabled: true, Connection: "libera", Bot: "motion",
		Scope: route.Scope{Kind: route.Direct, ID: person}}
}

func listsConnections(t testing.TB, open func() route.Store) {
	s := open()
	got, err := s.Connections(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "chat" || got[1].ID != "libera" {
		t.Fatalf("Connections = %+v, want chat then libera", got)
	}
	if got[1].Secrets["password"] != "connectors://irc/libera" || got[1].Settings["nick"] != "motion" || !got[1].Enabled || got[0].Enabled {
		t.Errorf("libera read back as %+v", got[1])
	}
	routes, err := s.Routes(context.Background())
	if err != nil || len(routes) != 0 {
		t.Errorf("a new store's Routes = %+v, %v; want none", routes, err)
	}
}

func putRoute(t testing.TB, open func() route.Store) {
	s, ctx := open(), context.Background()
	b, err := s.PutRoute(ctx, dm("b", "bob"))
	if err != nil {
		t.Fatal(err)
	}
	if b.Version == "" {
		t.Fatal("a new route was given no Version")
	}
	if _, err := s.PutRoute(ctx, dm("a", "alice")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutRoute(ctx, dm("b", "bob")); !errors.Is(err, route.ErrConflict) {
		t.Errorf("a new route over an existing id: %v, want ErrConflict", err)
	}
	changed := b
	changed.Name = "renamed"
	c, err := s.PutRoute(ctx, changed)
	if err != nil {
		t.Fatal(err)
	}
	if c.Version == b.Version || c.Version == "" {
		t.Errorf("a replacement kept the Version %q", c.Version)
	}
	if _, err := s.PutRoute(ctx, changed); !errors.Is(err, route.ErrConflict) {
		t.Errorf("a write naming an old Version: %v, want ErrConflict", err)
	}
	all, err := s.Routes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].ID != "a" || all[1].ID != "b" || all[1].Name != "renamed" || all[1].Version != c.Version {
		t.Errorf("Routes = %+v, want a then the renamed b", all)
	}
	if all[1].Scope != (route.Scope{Kind: route.Direct, ID: "bob"}) || all[1].Bot != "motion" || !all[1].Enabled {
		t.Errorf("b read back as %+v", all[1])
	}
}

func refusesBad(t testing.TB, open func() route.Store) {
	s, ctx := open(), context.Background()
	for field, r := range map[string]route.Route{
		"id":         {ID: "Not An Id", Connection: "libera", Bot: "motion", Scope: route.Scope{Kind: route.Direct}},
		"kind":       {ID: "x", Connection: "libera", Bot: "motion", Scope: route.Scope{Kind: "everywhere"}},
		"bot":        {ID: "x", Connection: "libera", Scope: route.Scope{Kind: route.Direct}},
		"connection": {ID: "x", Bot: "motion", Scope: route.Scope{Kind: route.Direct}},
	} {
		_, err := s.PutRoute(ctx, r)
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("a route with a bad %s: %v, want a refusal naming it", field, err)
		}
	}
	if all, _ := s.Routes(ctx); len(all) != 0 {
		t.Errorf("refused routes were kept: %+v", all)
	}
}

func deleteRoute(t testing.TB, open func() route.Store) {
	s, ctx := open(), context.Background()
	a, err := s.PutRoute(ctx, dm("a", "alice"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRoute(ctx, "a", "not-"+a.Version); !errors.Is(err, route.ErrConflict) {
		t.Errorf("a delete naming another Version: %v, want ErrConflict", err)
	}
	if err := s.DeleteRoute(ctx, "a", a.Version); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRoute(ctx, "a", ""); !errors.Is(err, route.ErrNotFound) {
		t.Errorf("deleting a route no more: %v, want ErrNotFound", err)
	}
	if _, err := s.PutRoute(ctx, dm("b", "bob")); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRoute(ctx, "b", ""); err != nil {
		t.Errorf("a delete of any version: %v", err)
	}
	if all, _ := s.Routes(ctx); len(all) != 0 {
		t.Errorf("after the deletes Routes = %+v", all)
	}
}

func watch(t testing.TB, open func() route.Store) {
	s := open()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := s.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	drain := func() { // what the watch heard before; not past its end
		for {
			select {
			case _, ok := <-ch:
				if !ok {
					return
				}
			default:
				return
			}
		}
	}
	hear := func(what string) {
		t.Helper()
		select {
		case _, ok := <-ch:
			if !ok {
				t.Fatalf("the watch ended before %s", what)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the watch heard nothing of %s in 10s", what)
		}
	}
	drain()
	a, err := s.PutRoute(context.Background(), dm("a", "alice"))
	if err != nil {
		t.Fatal(err)
	}
	hear("a PutRoute")
	drain()
	if err := s.DeleteRoute(context.Background(), "a", a.Version); err != nil {
		t.Fatal(err)
	}
	hear("a DeleteRoute")
	cancel()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("the watch's channel was not closed once its context ended")
		}
	}
}

func concurrentWrites(t testing.TB, open func() route.Store) {
	s, ctx := open(), context.Background()
	a, err := s.PutRoute(ctx, dm("a", "alice"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := range 8 {
		wg.Go(func() {
			r := a
			r.Name = strings.Repeat("n", i+1)
			if _, err := s.PutRoute(ctx, r); err == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			} else if !errors.Is(err, route.ErrConflict) {
				t.Errorf("a losing write: %v, want ErrConflict", err)
			}
		})
	}
	wg.Wait()
	if wins != 1 {
		t.Errorf("%d of 8 writes of one Version won, want exactly 1", wins)
	}
}

// Receive is c's next message, failing t after ten seconds without one:
// for the tests of adapters.
func Receive(t testing.TB, c route.Conn) route.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := c.Receive(ctx)
	if err != nil {
		t.Fatalf("no message came: %v", err)
	}
	return m
}
