package route_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/bots/route"
)

func TestCheckNamesEveryBadField(t *testing.T) {
	t.Parallel()
	bad := route.Check(route.Route{ID: "Bad Id", Scope: route.Scope{Kind: "everywhere"}, Unmapped: "ignore"})
	for _, want := range []string{`id "Bad Id"`, "no connection", "no bot", `kind "everywhere"`, `unmapped users "ignore"`} {
		if !slices.ContainsFunc(bad, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("Check's sentences %q name nothing of %q", bad, want)
		}
	}
	good := route.Route{ID: "dm", Connection: "irc", Bot: "motion", Scope: route.Scope{Kind: route.Direct, ID: "alice"}}
	if bad := route.Check(good); bad != nil {
		t.Errorf("a good route was refused: %q", bad)
	}
}

func TestPreflightRouteRefusesWhatCannotWorkAndNamesConflicts(t *testing.T) {
	t.Parallel()
	conns := []route.Connection{{ID: "irc", Network: "irc", Enabled: true}, {ID: "off", Network: "irc"}, {ID: "bad", Network: "xmpp", Enabled: true}}
	states := map[string]route.State{"irc": {State: route.Connected}, "bad": {State: route.Failing, Reason: "the server refused the password."}}
	dm := route.Scope{Kind: route.Direct, ID: "alice"}
	room := route.Scope{Kind: route.Group, ID: "#motion"}
	other := route.Route{ID: "old", Enabled: true, Connection: "irc", Bot: "helper", Scope: room}
	for _, c := range []struct {
		name      string
		r         route.Route
		broad     bool
		problem   string // a problem that holds it, "" for none
		warning   string
		conflicts []string
	}{
		{name: "a DM on a working connection", r: route.Route{ID: "r", Enabled: true, Connection: "irc", Bot: "motion", Scope: dm}},
		{name: "a missing connection", r: route.Route{ID: "r", Connection: "nope", Bot: "motion", Scope: dm}, problem: `no connection "nope" (there are irc, off, bad)`},
		{name: "a disabled connection", r: route.Route{ID: "r", Connection: "off", Bot: "motion", Scope: dm}, problem: `"off" is disabled`},
		{name: "a connection that fails", r: route.Route{ID: "r", Connection: "bad", Bot: "motion", Scope: dm}, problem: "does not work now: the server refused the password."},
		{name: "a group without broad", r: route.Route{ID: "r", Connection: "irc", Bot: "motion", Scope: room}, problem: "the group #motion"},
		{name: "every DM without broad", r: route.Route{ID: "r", Connection: "irc", Bot: "motion", Scope: route.Scope{Kind: route.Direct}}, problem: "every person's direct messages"},
		{name: "a conflict", r: route.Route{ID: "r", Enabled: true, Connection: "irc", Bot: "motion", Scope: room}, broad: true, conflicts: []string{"old"}},
		{name: "a conflict in another case", r: route.Route{ID: "r", Enabled: true, Connection: "irc", Bot: "motion", Scope: route.Scope{Kind: route.Group, ID: "#Motion"}}, broad: true, conflicts: []string{"old"}},
		{name: "a disabled route conflicts with nothing", r: route.Route{ID: "r", Connection: "irc", Bot: "motion", Scope: room}, broad: true},
		{name: "itself is no conflict", r: route.Route{ID: "old", Enabled: true, Connection: "irc", Bot: "motion", Scope: room}, broad: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := route.PreflightRoute(c.r, route.Scene{Connections: conns, Routes: []route.Route{other}, States: states, Broad: c.broad})
			if c.problem == "" && len(p.Problems) > 0 {
				t.Errorf("problems %q, want none", p.Problems)
			}
			if c.problem != "" && !slices.ContainsFunc(p.Problems, func(s string) bool { return strings.Contains(s, c.problem) }) {
				t.Errorf("problems %q, want one saying %q", p.Problems, c.problem)
			}
			if !slices.Equal(p.Conflicts, c.conflicts) {
				t.Errorf("conflicts %q, want %q", p.Conflicts, c.conflicts)
			}
			if p.OK() != (c.problem == "" && c.conflicts == nil) {
				t.Errorf("OK() = %v with %+v", p.OK(), p)
			}
		})
	}
}

func TestPreflightWarnsOfAConnectionNotDialledYet(t *testing.T) {
	t.Parallel()
	p := route.PreflightRoute(route.Route{ID: "r", Connection: "irc", Bot: "motion", Scope: route.Scope{Kind: route.Direct, ID: "alice"}},
		route.Scene{Connections: []route.Connection{{ID: "irc", Network: "irc", Enabled: true}}})
	if !p.OK() || len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "not connected yet") {
		t.Errorf("a connection with no state gave %+v, want one warning and OK", p)
	}
}

func TestSafeOfShowsNoCredentialReference(t *testing.T) {
	t.Parallel()
	s := route.SafeOf(route.Connection{ID: "irc", Network: "irc", Enabled: true, Settings: map[string]string{"nick": "motion"},
		Secrets: map[string]string{"password": "connectors://irc/libera"}}, route.State{State: route.Connected})
	if !slices.Equal(s.Credentials, []string{"password"}) || s.State != route.Connected || s.Settings["nick"] != "motion" {
		t.Errorf("SafeOf gave %+v", s)
	}
	if strings.Contains(strings.Join(s.Credentials, ""), "connectors://") {
		t.Error("a listing shows a credential's reference")
	}
}

func TestPreflightProbesAConnectionNoRouteRunsYet(t *testing.T) {
	t.Parallel()
	r := route.Route{ID: "r", Connection: "irc", Bot: "motion", Scope: route.Scope{Kind: route.Direct, ID: "alice"}}
	scene := route.Scene{Connections: []route.Connection{{ID: "irc", Network: "irc", Enabled: true}},
		Probe: func(string) error {
			return errors.New("the IRC server refused the login of motion: the nick motion is taken")
		}}
	p := route.PreflightRoute(r, scene)
	if p.OK() || !slices.ContainsFunc(p.Problems, func(s string) bool { return strings.Contains(s, "the nick motion is taken") }) {
		t.Errorf("a connection whose probe fails gave %+v", p)
	}
	scene.Probe = func(string) error { return nil }
	if p := route.PreflightRoute(r, scene); !p.OK() || len(p.Warnings) != 0 {
		t.Errorf("a connection whose probe works gave %+v", p)
	}
}
