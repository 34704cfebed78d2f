package route

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// idPattern is what a connection's or a route's id must match.
var idPattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// ValidID reports whether id may name a connection or a route: 1 to 40
// lowercase letters, digits and dashes, starting with a letter.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// Check says what a route must not be, field by field, in one sentence
// each: nil when it is well formed. It does not look at other routes or
// connections (see Preflight).
func Check(r Route) []string {
	var bad []string
	if !idPattern.MatchString(r.ID) {
		bad = append(bad, fmt.Sprintf("The route's id %q must be 1 to 40 lowercase letters, digits and dashes, starting with a letter.", r.ID))
	}
	if r.Connection == "" {
		bad = append(bad, "The route names no connection.")
	}
	if r.Bot == "" {
		bad = append(bad, "The route names no bot.")
	}
	switch r.Scope.Kind {
	case Direct, Group:
		if r.Scope.Thread != "" {
			bad = append(bad, fmt.Sprintf("A %s scope has no thread; use kind %q for one thread.", r.Scope.Kind, Thread))
		}
	case Thread:
		if r.Scope.ID == "" || r.Scope.Thread == "" {
			bad = append(bad, "A thread scope names its group (id) and its thread.")
		}
	default:
		bad = append(bad, fmt.Sprintf("The scope's kind %q is none of direct, group and thread.", r.Scope.Kind))
	}
	if r.Scope.Kind == Group && r.Scope.ID == "" {
		bad = append(bad, "A group scope names its group (id): a channel, room or chat.")
	}
	switch r.Unmapped {
	case "", Refuse, Pair:
	default:
		bad = append(bad, fmt.Sprintf("The policy for unmapped users %q is neither %q nor %q.", r.Unmapped, Refuse, Pair))
	}
	return bad
}

// Preflight is what a route's check before it is saved found.
type Preflight struct {
	// Problems are what stops the route from being saved or from working
	// now, one sentence each.
	Problems []string `json:"problems,omitempty"`
	// Warnings are what may surprise, one sentence each; they do not stop
	// a save.
	Warnings []string `json:"warnings,omitempty"`
	// Conflicts are the ids of the other enabled routes that claim the
	// same scope of the same connection.
	Conflicts []string `json:"conflicts,omitempty"`
}

// OK reports whether nothing stops the route: no problem and no conflict.
func (p Preflight) OK() bool { return len(p.Problems) == 0 && len(p.Conflicts) == 0 }

// Scene is what a preflight looks at besides the route: every connection
// and route, how each connection stands, and what the caller allows.
type Scene struct {
	Connections []Connection
	Routes      []Route
	// States are how the connections stand, by id (Relay.States); a
	// connection with none is taken as not dialled yet.
	States map[string]State
	// Broad allows a scope broader than one person's direct messages: a
	// group, a thread, or any person's direct messages.
	Broad bool
	// Probe, when set, tries a connection no route runs yet (the relay's
	// Probe): nil when it works now, else why not.
	Probe func(connection string) error
}

// PreflightRoute checks r against the scene: it is well formed (Check);
// its connection exists, is enabled and works now; its scope is no broader
// than a direct message unless the scene allows it; and no other enabled
// route claims the same scope. Whether the bot exists and its people may
// chat with it is the caller's to add, since it knows the bots.
func PreflightRoute(r Route, s Scene) Preflight {
	var p Preflight
	p.Problems = Check(r)
	i := slices.IndexFunc(s.Connections, func(c Connection) bool { return c.ID == r.Connection })
	switch {
	case r.Connection == "":
	case i < 0:
		ids := make([]string, len(s.Connections))
		for j, c := range s.Connections {
			ids[j] = c.ID
		}
		have := "there are none"
		if len(ids) > 0 {
			have = "there are " + strings.Join(ids, ", ")
		}
		p.Problems = append(p.Problems, fmt.Sprintf("There is no connection %q (%s): the host's operator adds connections.", r.Connection, have))
	case !s.Connections[i].Enabled:
		p.Problems = append(p.Problems, fmt.Sprintf("The connection %q is disabled: the host's operator enables it.", r.Connection))
	default:
		st, ok := s.States[r.Connection]
		switch {
		case ok && st.State == Failing:
			p.Problems = append(p.Problems, fmt.Sprintf("The connection %q does not work now: %s", r.Connection, st.Reason))
		case ok && (st.State == Connected || st.State == Connecting || st.State == Elsewhere):
		case s.Probe != nil:
			if err := s.Probe(r.Connection); err != nil {
				p.Problems = append(p.Problems, fmt.Sprintf("The connection %q does not work now: %v", r.Connection, err))
			}
		default:
			p.Warnings = append(p.Warnings, fmt.Sprintf("The connection %q is not connected yet: it dials once an enabled route uses it.", r.Connection))
		}
	}
	if !s.Broad {
		switch {
		case r.Scope.Kind == Group:
			p.Problems = append(p.Problems, fmt.Sprintf("The scope is the group %s: everyone there would talk to the bot; pass broad to mean it.", r.Scope.ID))
		case r.Scope.Kind == Thread:
			p.Problems = append(p.Problems, fmt.Sprintf("The scope is a thread of %s: everyone in it would talk to the bot; pass broad to mean it.", r.Scope.ID))
		case r.Scope.Kind == Direct && r.Scope.ID == "":
			p.Problems = append(p.Problems, "The scope is every person's direct messages to the connection; pass broad to mean it, or name one person's.")
		}
	}
	if r.Enabled {
		for _, o := range s.Routes {
			if o.ID != r.ID && o.Enabled && o.Connection == r.Connection && o.Scope.Is(r.Scope) {
				p.Conflicts = append(p.Conflicts, o.ID)
			}
		}
		slices.Sort(p.Conflicts)
	}
	return p
}

// Safe is a connection as anyone who may list connections sees it: its
// settings and the names of its credentials, never their references.
type Safe struct {
	ID       string            `json:"id"`
	Network  string            `json:"network"`
	Enabled  bool              `json:"enabled"`
	Settings map[string]string `json:"settings,omitempty"`
	// Credentials are the names of the credentials it dials with.
	Credentials []string  `json:"credentials,omitempty"`
	State       ConnState `json:"state"`
	Reason      string    `json:"reason,omitempty"`
}

// SafeOf is c as listings show it, with its state.
func SafeOf(c Connection, st State) Safe {
	s := Safe{ID: c.ID, Network: c.Network, Enabled: c.Enabled, Settings: c.Settings, State: st.State, Reason: st.Reason}
	for name := range c.Secrets {
		s.Credentials = append(s.Credentials, name)
	}
	slices.Sort(s.Credentials)
	if s.State == "" {
		s.State = Off
		if c.Enabled {
			s.Reason = "not dialled yet"
		}
	}
	return s
}
