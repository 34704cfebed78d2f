package bot

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/record/memrecord"
	"github.com/agenthost/bots/route"
	"github.com/agenthost/bots/route/memroute"
	"github.com/agenthost/bots/wake"
)

// newRouteService is a service with soft (who makes bots) and bob (who
// does not), the bot mail of soft's, and an IRC connection that works.
func newRouteService(t *testing.T) (*Service, *memroute.Store) {
	t.Helper()
	return newRouteServiceOf(t, nil)
}

// newRouteServiceOf is newRouteService with soft and bob given identities
// ids (none when nil), in a users directory that lists them. The host
// bundles the bot house.
func newRouteServiceOf(t *testing.T, ids map[string]string) (*Service, *memroute.Store) {
	t.Helper()
	base := t.TempDir()
	routes := memroute.New([]route.Connection{{ID: "libera", Network: "irc", Enabled: true,
		Settings: map[string]string{"server": "irc.example.org:6697", "nick": "mailbot"},
		Secrets:  map[string]string{"password": "connectors://irc/libera"}}})
	users := someUsers{"soft": {User: "soft", Grants: []string{"bot:put"}}, "bob": {User: "bob"}}
	var dir Users = users
	if ids != nil {
		dir = identUsers{users, ids}
	}
	s, err := New(context.Background(), Config{Store: memrecord.New(), ConfigDir: filepath.Join(base, "config"), HostName: "h",
		Options: Options{Root: filepath.Join(base, "bots")}, Users: dir, PersonaIn: PersonaInFiles, Routes: routes, Bundled: []Bundle{houseBundle("n", "k")},
		RouteStates: func() map[string]route.State { return map[string]route.State{"libera": {State: route.Connected}} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Make(context.Background(), users["soft"], "mail", []byte(`{"name":"Mail"}`)); err != nil {
		t.Fatal(err)
	}
	return s, routes
}

func TestChannelToolsDeployARouteAndListItWithoutACredential(t *testing.T) {
	t.Parallel()
	s, routes := newRouteServiceOf(t, map[string]string{"irc:soft": "soft"})
	g, ctx, si := gate{s}, context.Background(), softSession("builder")
	said, err := g.Call(ctx, si, wake.BotDeployChannel, json.RawMessage(`{"route":{"id":"mail-dm","enabled":true,"connection":"libera","bot":"mail","scope":{"kind":"direct","id":"soft"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(said, `"id":"mail-dm"`) || !strings.Contains(said, `"owner":"user:soft"`) {
		t.Errorf("bot_deploy_channel said %s, want the route saved as soft's", said)
	}
	if got, _ := routes.Routes(ctx); len(got) != 1 || got[0].Owner != "user:soft" {
		t.Errorf("the store holds %+v", got)
	}
	list, err := g.Call(ctx, si, wake.ChannelRouteList, json.RawMessage(`{"bot":"mail"}`))
	if err != nil || !strings.Contains(list, `"mail-dm"`) {
		t.Errorf("channel_route_list said %s (%v)", list, err)
	}
	conns, err := g.Call(ctx, si, wake.ChannelConnectionList, nil)
	if err != nil || !strings.Contains(conns, `"state":"connected"`) || !strings.Contains(conns, `"credentials":["password"]`) {
		t.Errorf("channel_connection_list said %s (%v)", conns, err)
	}
	if strings.Contains(conns, "connectors://") {
		t.Errorf("channel_connection_list shows a credential's reference: %s", conns)
	}
}

func TestDeployRefusesAConflictNamingTheOtherRouteUnlessToldToDisableIt(t *testing.T) {
	t.Parallel()
	s, routes := newRouteService(t)
	ctx, soft := context.Background(), access.Principal{User: "soft", Grants: []string{"bot:put"}}
	room := route.Route{ID: "old", Enabled: true, Connection: "libera", Bot: "mail", Scope: route.Scope{Kind: route.Group, ID: "#mail"}}
	if _, _, err := s.RouteDeploy(ctx, soft, room, DeployOptions{}); err == nil || !strings.Contains(err.Error(), "the group #mail") {
		t.Fatalf("a group route without broad: %v", err)
	}
	if _, _, err := s.RouteDeploy(ctx, soft, room, DeployOptions{Broad: true}); err != nil {
		t.Fatal(err)
	}
	room.ID = "new"
	_, _, err := s.RouteDeploy(ctx, soft, room, DeployOptions{Broad: true})
	if errcode.Of(err) != errcode.Conflict || !strings.Contains(err.Error(), `"new"`) || !strings.Contains(err.Error(), "old") {
		t.Fatalf("a conflicting deploy: %v, want a conflict naming new and old", err)
	}
	saved, disabled, err := s.RouteDeploy(ctx, soft, room, DeployOptions{Broad: true, DisableConflictingRoutes: true})
	if err != nil || !slices.Equal(disabled, []string{"old"}) || !saved.Enabled {
		t.Fatalf("a deploy that disables the conflict: %+v %v %v", saved, disabled, err)
	}
	all, _ := routes.Routes(ctx)
	for _, r := range all {
		if r.ID == "old" && r.Enabled {
			t.Error("the conflicting route is still enabled")
		}
	}
}

func TestRoutesToABotThePersonMayNotEditAreRefused(t *testing.T) {
	t.Parallel()
	s, _ := newRouteService(t)
	ctx := context.Background()
	bob := access.Principal{User: "bob"}
	r := route.Route{ID: "sneak", Enabled: true, Connection: "libera", Bot: "mail", Scope: route.Scope{Kind: route.Direct, ID: "bob"}}
	if _, _, err := s.RouteDeploy(ctx, bob, r, DeployOptions{}); err == nil || !strings.Contains(err.Error(), "no bot bot://mail you may read") {
		t.Errorf("bob routing to soft's bot: %v", err)
	}
	if got, err := s.RouteList(ctx, bob, ""); err != nil || len(got) != 0 {
		t.Errorf("bob lists %+v (%v), want nothing", got, err)
	}
}

// TestADirectRouteNamesOnlyAnAccountOfTheDeployers: a route of one
// account's direct messages sends that person's private messages to the
// route's bot; a person may name only an account of theirs (an identity
// in the users directory, or one they paired), and root any.
func TestADirectRouteNamesOnlyAnAccountOfTheDeployers(t *testing.T) {
	t.Parallel()
	s, _ := newRouteServiceOf(t, map[string]string{"irc:soft": "soft", "irc:bob": "bob"})
	// An IRC pairing is one server's: soft paired softphone on libera's,
	// and other on a server the host meets through another connection.
	s.routes.paired = func(_ context.Context, identity string) (string, bool) {
		return "soft", identity == "irc:softphone@irc.example.org" || identity == "irc:other@irc.elsewhere.example"
	}
	ctx, soft := context.Background(), access.Principal{User: "soft", Grants: []string{"bot:put"}}
	dm := func(id, account string) route.Route {
		return route.Route{ID: id, Enabled: true, Connection: "libera", Bot: "mail", Scope: route.Scope{Kind: route.Direct, ID: account}}
	}
	if _, _, err := s.RouteDeploy(ctx, soft, dm("bobs", "bob"), DeployOptions{Broad: true}); err == nil || !strings.Contains(err.Error(), "irc:bob@irc.example.org, which is not an account of yours") {
		t.Errorf("soft routing bob's direct messages: %v, want it refused", err)
	}
	if _, _, err := s.RouteDeploy(ctx, soft, dm("others", "other"), DeployOptions{Broad: true}); err == nil || !strings.Contains(err.Error(), "irc:other@irc.example.org, which is not an account of yours") {
		t.Errorf("soft routing on libera the direct messages of a nick she paired on another server: %v, want it refused", err)
	}
	for _, account := range []string{"soft", "softphone"} {
		if _, _, err := s.RouteDeploy(ctx, soft, dm("softs-"+account, account), DeployOptions{}); err != nil {
			t.Errorf("soft routing the direct messages of %s, hers: %v", account, err)
		}
	}
	if _, _, err := s.RouteDeploy(ctx, access.RootPrincipal(), dm("bobs", "bob"), DeployOptions{}); err != nil {
		t.Errorf("root routing bob's direct messages: %v", err)
	}
}

// TestARouteToABundledBotIsItsDeployersAlone: anyone who reads a bundled
// bot may route to it, so its routes are each their deployer's: another
// person may neither change, disable nor remove one, nor save one as
// someone else's.
func TestARouteToABundledBotIsItsDeployersAlone(t *testing.T) {
	t.Parallel()
	s, routes := newRouteServiceOf(t, map[string]string{"irc:soft": "soft", "irc:bob": "bob"})
	ctx := context.Background()
	soft, bob := access.Principal{User: "soft", Grants: []string{"bot:put", "bot:get"}}, access.Principal{User: "bob", Grants: []string{"bot:get"}}
	room := route.Route{ID: "softs", Enabled: true, Connection: "libera", Bot: "house", Scope: route.Scope{Kind: route.Group, ID: "#house"}}
	if _, _, err := s.RouteDeploy(ctx, soft, room, DeployOptions{Broad: true}); err != nil {
		t.Fatal(err)
	}
	edit := room
	edit.Scope.ID = "#elsewhere"
	if _, _, err := s.RouteDeploy(ctx, bob, edit, DeployOptions{Broad: true}); err == nil || !strings.Contains(err.Error(), "another person's") {
		t.Errorf("bob changing soft's route to the bundled bot: %v", err)
	}
	theirs := room
	theirs.ID, theirs.Owner = "bobs", "user:soft"
	if _, _, err := s.RouteDeploy(ctx, bob, theirs, DeployOptions{Broad: true, DisableConflictingRoutes: true}); err == nil || !strings.Contains(err.Error(), "not yours to disable") {
		t.Errorf("bob disabling soft's route to the bundled bot: %v", err)
	}
	if err := s.RouteDelete(ctx, bob, "softs", ""); errcode.Of(err) != errcode.PermissionDenied {
		t.Errorf("bob deleting soft's route to the bundled bot: %v", err)
	}
	theirs.Scope.ID = "#bobs"
	saved, _, err := s.RouteDeploy(ctx, bob, theirs, DeployOptions{Broad: true})
	if err != nil || saved.Owner != "user:bob" {
		t.Errorf("bob's own route saved as %q (%v), want his whatever owner it named", saved.Owner, err)
	}
	all, _ := routes.Routes(ctx)
	for _, r := range all {
		if r.ID == "softs" && (!r.Enabled || r.Scope.ID != "#house" || r.Owner != "user:soft") {
			t.Errorf("soft's route is now %+v", r)
		}
	}
}

func TestRouteMethodsAreUnsupportedWhereTheHostKeepsNoRoutes(t *testing.T) {
	t.Parallel()
	s, _ := newGateService(t)
	if _, err := s.RouteConnections(context.Background(), access.Principal{User: "soft"}); errcode.Of(err) != errcode.Unsupported {
		t.Errorf("listing connections on a host without routes: %v", err)
	}
}

func TestARoutedBackSessionHoldsTheToolsOfHostBotAndRouteAlone(t *testing.T) {
	t.Parallel()
	s, routes := newRouteService(t)
	ctx, g := context.Background(), gate{s}
	soft := access.Principal{User: "soft", Grants: []string{"bot:put"}}
	if _, err := s.Edit(ctx, soft, "mail", []byte(`{"tools":["post_message","ask_question","bots"]}`), ""); err != nil {
		t.Fatal(err)
	}
	for _, r := range []route.Route{
		{ID: "narrow", Connection: "libera", Bot: "mail", Scope: route.Scope{Kind: route.Direct, ID: "a"}, Tools: []string{"post_message", "bot_list", "connectors"}},
		{ID: "open", Connection: "libera", Bot: "mail", Scope: route.Scope{Kind: route.Direct, ID: "b"}},
	} {
		if _, err := routes.PutRoute(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	session := func(route string) wake.SessionInfo {
		meta := map[string]any{"bot": "mail", "person": "user:soft", "name": "work"}
		if route != "" {
			meta["route"] = route
		}
		return wake.SessionInfo{Owner: "user:soft", Meta: map[string]any{wake.BackSessionMeta: meta}}
	}
	for route, want := range map[string][]string{
		"":       {"ask_question", "bot_delete", "bot_edit", "bot_list", "bot_make", "bot_read", "bot_validate", "post_message"},
		"narrow": {"bot_list", "post_message"}, // connectors: the bot holds none, a route adds none
		"open":   {"ask_question", "bot_delete", "bot_edit", "bot_list", "bot_make", "bot_read", "bot_validate", "post_message"},
		"gone":   {"post_message"},
	} {
		got, err := g.Allowed(ctx, session(route))
		if err != nil || !slices.Equal(got.Names(), want) {
			t.Errorf("route %q: the session holds %v (%v), want %v", route, got.Names(), err, want)
		}
	}
}

func TestRoutePairingsAreAPersonsOwnAndAnyonesForRoot(t *testing.T) {
	t.Parallel()
	s, _ := newRouteService(t)
	pairs := map[string]string{"irc:mallory@irc.example.org": "soft", "irc:eve@irc.example.org": "bob"}
	s.routes.pairings = func(_ context.Context, person string) ([]route.Pairing, error) {
		out := []route.Pairing{}
		for id, p := range pairs {
			if person == "" || p == person {
				out = append(out, route.Pairing{Identity: id, Person: p})
			}
		}
		slices.SortFunc(out, func(a, b route.Pairing) int { return strings.Compare(a.Identity, b.Identity) })
		return out, nil
	}
	s.routes.unpair = func(_ context.Context, person, identity string) error {
		if p, ok := pairs[identity]; !ok || (person != "" && p != person) {
			return route.ErrNotPaired
		}
		delete(pairs, identity)
		return nil
	}
	ctx, soft := context.Background(), access.Principal{User: "soft"}
	if got, err := s.RoutePairings(ctx, soft); err != nil || len(got) != 1 || got[0].Identity != "irc:mallory@irc.example.org" {
		t.Errorf("soft's pairings: %v, %v; want mallory alone", got, err)
	}
	if got, err := s.RoutePairings(ctx, access.RootPrincipal()); err != nil || len(got) != 2 {
		t.Errorf("root's view of the pairings: %v, %v; want both", got, err)
	}
	if err := s.RouteUnpair(ctx, soft, "irc:eve@irc.example.org"); errcode.Of(err) != errcode.NotFound {
		t.Errorf("soft letting go of bob's pairing: %v, want NotFound", err)
	}
	if err := s.RouteUnpair(ctx, access.Principal{}, "irc:eve@irc.example.org"); errcode.Of(err) != errcode.PermissionDenied {
		t.Errorf("no one in particular letting go of a pairing: %v, want PermissionDenied", err)
	}
	if err := s.RouteUnpair(ctx, soft, "irc:mallory@irc.example.org"); err != nil {
		t.Errorf("soft letting go of her own pairing: %v", err)
	}
	if err := s.RouteUnpair(ctx, access.RootPrincipal(), "irc:eve@irc.example.org"); err != nil {
		t.Errorf("root letting go of bob's pairing: %v", err)
	}
	if len(pairs) != 0 {
		t.Errorf("pairings left: %v", pairs)
	}
}

func TestRoutePairPairsAsThePersonAndOnlyAPerson(t *testing.T) {
	t.Parallel()
	s, _ := newRouteService(t)
	var asked []string
	s.routes.pair = func(_ context.Context, person, code string) (string, error) {
		asked = append(asked, person+" "+code)
		if code != "ABCD-EFGH" {
			return "", errors.New("no chat-network user waits with that code")
		}
		return "irc:mallory", nil
	}
	ctx := context.Background()
	got, err := s.RoutePair(ctx, access.Principal{User: "soft"}, "ABCD-EFGH")
	if err != nil || got != "irc:mallory" {
		t.Fatalf("RoutePair: %q, %v", got, err)
	}
	if _, err := s.RoutePair(ctx, access.Principal{User: "soft"}, "WRNG-CODE"); errcode.Of(err) != errcode.NotFound {
		t.Errorf("a wrong code: %v, want NotFound", err)
	}
	if _, err := s.RoutePair(ctx, access.RootPrincipal(), "ABCD-EFGH"); errcode.Of(err) != errcode.PermissionDenied {
		t.Errorf("root pairing: %v, want PermissionDenied", err)
	}
	if !slices.Equal(asked, []string{"soft ABCD-EFGH", "soft WRNG-CODE"}) {
		t.Errorf("the relay was asked %q", asked)
	}
}

// identUsers is someUsers with identities: a route.Identities.
type identUsers struct {
	someUsers
	ids map[string]string
}

func (u identUsers) Person(identity string) (string, bool) { p, ok := u.ids[identity]; return p, ok }
func (u identUsers) Identities() map[string]string         { return u.ids }

func TestPreflightWarnsOfMappedPeopleWhoMayNotChatWithTheBotAndOfNoneMapped(t *testing.T) {
	t.Parallel()
	s, _ := newRouteServiceOf(t, map[string]string{"irc:soft": "soft", "irc:bob": "bob", "xmpp:bob@example.org": "bob"})
	ctx := context.Background()
	soft := access.Principal{User: "soft", Grants: []string{"bot:put"}}
	r := route.Route{ID: "dm", Enabled: true, Connection: "libera", Bot: "mail", Scope: route.Scope{Kind: route.Direct, ID: "soft"}}
	pre, err := s.RoutePreflight(ctx, soft, r, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(pre.Warnings, func(w string) bool { return strings.HasPrefix(w, "bob (irc:bob) may not read bot://mail") }) || !pre.OK() {
		t.Errorf("preflight %+v, want a warning naming bob and no problem", pre)
	}
	// bob's nick on another IRC server is no one the connection meets.
	s, _ = newRouteServiceOf(t, map[string]string{"xmpp:bob@example.org": "bob", "irc:bob@irc.elsewhere.example": "bob"})
	pre, err = s.RoutePreflight(ctx, soft, r, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(pre.Warnings, func(w string) bool { return strings.HasPrefix(w, "No person of the users file has an identity on irc") }) {
		t.Errorf("preflight %+v, want a warning that nobody is on irc", pre)
	}
}
