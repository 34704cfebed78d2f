package fileroute_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/bots/route"
	"github.com/agenthost/bots/route/fileroute"
	"github.com/agenthost/bots/route/relay"
	"github.com/agenthost/bots/route/routetest"
)

// open is a store on a new folder holding conns in connections.json.
func open(t *testing.T, conns []route.Connection) (*fileroute.Store, string) {
	t.Helper()
	dir := t.TempDir()
	data, err := json.Marshal(map[string]any{"connections": conns})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, fileroute.ConnectionsFile), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return fileroute.New(dir, fileroute.Options{Interval: 5 * time.Millisecond}), dir
}

func TestConformance(t *testing.T) {
	t.Parallel()
	routetest.Run(t, func(t *testing.T, conns []route.Connection) route.Store {
		s, _ := open(t, conns)
		return s
	})
}

func TestAHandEditIsReadAndWatched(t *testing.T) {
	t.Parallel()
	s, dir := open(t, routetest.Conns)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := s.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, fileroute.RoutesDir), 0o700); err != nil {
		t.Fatal(err)
	}
	hand := `{"id": "room", "enabled": true, "connection": "libera", "bot": "motion", "scope": {"kind": "group", "id": "#motion"}}`
	if err := os.WriteFile(filepath.Join(dir, fileroute.RoutesDir, "room.json"), []byte(hand), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not hear a hand-written route")
	}
	all, err := s.Routes(ctx)
	if err != nil || len(all) != 1 || all[0].Scope.ID != "#motion" || all[0].Version == "" {
		t.Fatalf("Routes = %+v, %v", all, err)
	}
}

func TestAFileThatDoesNotParseIsLeftAsItIsAndReportedByName(t *testing.T) {
	t.Parallel()
	s, dir := open(t, routetest.Conns)
	ctx := context.Background()
	if _, err := s.PutRoute(ctx, route.Route{ID: "good", Connection: "libera", Bot: "motion", Scope: route.Scope{Kind: route.Direct, ID: "alice"}}); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, fileroute.RoutesDir, "broken.json")
	if err := os.WriteFile(bad, []byte(`{"id": "broken", "scope": `), 0o600); err != nil {
		t.Fatal(err)
	}
	all, err := s.Routes(ctx)
	if err != nil || len(all) != 1 || all[0].ID != "good" {
		t.Fatalf("Routes = %+v, %v; want the good one alone", all, err)
	}
	if why := s.Problems()[bad]; !strings.Contains(why, bad) || !strings.Contains(why, "does not parse") {
		t.Errorf("the broken file's problem: %q", why)
	}
	if data, err := os.ReadFile(bad); err != nil || string(data) != `{"id": "broken", "scope": ` {
		t.Errorf("the broken file was touched: %q, %v", data, err)
	}
	if err := os.WriteFile(filepath.Join(dir, fileroute.ConnectionsFile), []byte(`{"connections": [{"id": "Bad"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Connections(ctx); err == nil || !strings.Contains(err.Error(), `"Bad"`) {
		t.Errorf("a bad connection: %v", err)
	}
}

func TestRoutesAreWrittenForTheOwnerAlone(t *testing.T) {
	t.Parallel()
	s, dir := open(t, routetest.Conns)
	if _, err := s.PutRoute(context.Background(), route.Route{ID: "dm", Connection: "libera", Bot: "motion", Scope: route.Scope{Kind: route.Direct, ID: "alice"}}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, fileroute.RoutesDir, "dm.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("dm.json: %v, %v; want mode 0600", fi.Mode(), err)
	}
}

func TestMemoryConformance(t *testing.T) {
	t.Parallel()
	dirs := map[relay.Memory]string{} // RunMemory opens one memory at a time
	routetest.RunMemory(t, routetest.MemoryHarness{
		Open: func(t *testing.T) relay.Memory {
			dir := filepath.Join(t.TempDir(), "routes-state")
			m := fileroute.NewMemory(dir)
			dirs[m] = dir
			return m
		},
		Again: func(_ *testing.T, m relay.Memory) relay.Memory { return fileroute.NewMemory(dirs[m]) },
	})
}
