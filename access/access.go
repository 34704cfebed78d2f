// Package access says who is asking and what they may do: a Principal with
// its grants and memberships, grant matching (exact, wildcard and group), and
// owner strings (user:, team:, project:, root:).
//
// It knows nothing of bots; the bot service applies the spec's table of who
// may do what on top of it.
package access

import (
	"slices"
	"strings"
)

// Principal is the identity a request is made with.
//
// The zero value is a signed-in nobody: no grants, no memberships. A root
// connection, and a connection with the local token of a host with no
// users file (Local), is Root.
type Principal struct {
	// User is the person's id, as in user:<id>. Empty for Root.
	User string
	// Root is a root connection: it may do anything.
	Root bool
	// Grants are "<scheme>:<operation>" strings; "*" matches any scheme or
	// operation, and the groups "read" and "write" name several operations.
	Grants []string
	// Memberships are teams ("backend") and projects ("shop:website").
	Memberships []string
}

// RootPrincipal is the principal of a root connection: it may do
// anything. An embedder acts as root in process with it, as in
// srv.Service().Make(ctx, access.RootPrincipal(), "motion", body), and
// what it makes is owned by root:<host>.
func RootPrincipal() Principal { return Principal{Root: true} }

// User is the principal of the person id holding grants (their teams
// and projects go in Memberships), as a connection with their token is:
// for an embedder acting in process as that person, as in
// srv.Service().Make(ctx, access.User("soft", "bot:put"), "motion", body),
// which makes a bot owned by user:soft. A call in process is judged by
// the grants given here: give the ones the users file holds.
func User(id string, grants ...string) Principal {
	return Principal{User: id, Grants: grants}
}

// Groups of operations a grant may name at once.
var groups = map[string][]string{
	"read":  {"get", "list", "resolve", "watch"},
	"write": {"put", "delete", "mkdir", "move", "copy", "request"},
}

// Has reports whether p holds the grant "<scheme>:<operation>": a root
// principal holds every grant; otherwise a grant of p matches when it names
// the same scheme (or "*") and the same operation (or "*", or a group that
// holds it).
func (p Principal) Has(grant string) bool {
	if p.Root {
		return true
	}
	scheme, op, ok := strings.Cut(grant, ":")
	if !ok {
		return false
	}
	for _, g := range p.Grants {
		gs, gop, ok := strings.Cut(g, ":")
		if !ok || (gs != "*" && gs != scheme) {
			continue
		}
		if gop == "*" || gop == op || slices.Contains(groups[gop], op) {
			return true
		}
	}
	return false
}

// Any reports whether p may do anything on any resource: a root connection
// or a holder of "*:*".
func (p Principal) Any() bool {
	return p.Root || slices.Contains(p.Grants, "*:*")
}

// MemberOf reports whether p belongs to the team or project, named as in the
// users file ("backend", "shop:website").
func (p Principal) MemberOf(group string) bool {
	return group != "" && slices.Contains(p.Memberships, group)
}

// Owner is the owner string p makes things as when it names none: user:<id>,
// or root:<hostName> for a root principal.
func (p Principal) Owner(hostName string) string {
	if p.Root || p.User == "" {
		return "root:" + hostName
	}
	return "user:" + p.User
}

// String names p as ahpd does on the wire: user:<id>, or "root".
func (p Principal) String() string {
	if p.Root {
		return "root"
	}
	return "user:" + p.User
}

// Owned returns every owner string a principal that is not root owns -
// its user's, and each of its teams' and projects' - so that a check of
// many owners compares strings rather than parsing each: for such a p,
// Owns(o) reports true exactly when o is one of them. A root principal
// owns every root:<host>, which no list holds: Owned answers nil for it.
func (p Principal) Owned() []string {
	if p.Root {
		return nil
	}
	out := make([]string, 0, 1+2*len(p.Memberships))
	if p.User != "" {
		out = append(out, "user:"+p.User)
	}
	for _, m := range p.Memberships {
		if m != "" {
			out = append(out, "team:"+m, "project:"+m)
		}
	}
	return out
}

// Owns reports whether the owner string is p's own or that of a team or
// project p belongs to. Nobody but a root principal owns a root: owner, and
// a root principal owns only those.
func (p Principal) Owns(owner string) bool {
	kind, rest, ok := strings.Cut(owner, ":")
	if !ok {
		return false
	}
	switch kind {
	case "user":
		return !p.Root && p.User != "" && rest == p.User
	case "team", "project":
		return p.MemberOf(rest)
	case "root":
		return p.Root
	}
	return false
}

// Watcher is a users directory that tells when it changes, so that what
// people may do is judged anew at once: open catalogues, chats and
// connections. An embedder's own directory implements it to report its
// changes as the users file does (usersfile.Directory).
type Watcher interface {
	// WatchUsers calls fn after each change of the directory, with the
	// ids of the users added, removed, or whose grants or memberships
	// changed (none when only tokens changed), one call at a time, in
	// order. fn must not block for long. cancel ends the watch.
	WatchUsers(fn func(changed []string)) (cancel func())
}
