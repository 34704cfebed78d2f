package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/route"
)

// routeDesk is what the service knows of the host's chat-network routes:
// the store, and how each connection stands.
type routeDesk struct {
	store    route.Store
	states   func() map[string]route.State
	pair     func(ctx context.Context, person, code string) (string, error)
	paired   func(ctx context.Context, identity string) (string, bool)
	pairings func(ctx context.Context, person string) ([]route.Pairing, error)
	unpair   func(ctx context.Context, person, identity string) error
	probe    func(ctx context.Context, connection string) error
}

// The AHP methods of the routes, the host's extensions of the protocol:
// each takes and answers a JSON object (see the README).
const (
	MethodRouteConnections = "x-ahpd/routeConnections" // {} → {connections: [route.Safe]}
	MethodRouteList        = "x-ahpd/routeList"        // {bot?} → {routes: [route.Route]}
	MethodRoutePreflight   = "x-ahpd/routePreflight"   // {route, broad?} → route.Preflight
	MethodRouteDeploy      = "x-ahpd/routeDeploy"      // {route, broad?, disableConflictingRoutes?} → {route, disabled}
	MethodRouteDelete      = "x-ahpd/routeDelete"      // {id, version?} → {}
	MethodRoutePair        = "x-ahpd/routePair"        // {code} → {identity}
	MethodRoutePairings    = "x-ahpd/routePairings"    // {} → {pairings: [route.Pairing]}
	MethodRouteUnpair      = "x-ahpd/routeUnpair"      // {identity} → {}
)

// errNoRoutes answers the route operations of a host that keeps none.
func errNoRoutes() error {
	return errcode.New(errcode.Unsupported, "this host keeps no chat-network routes")
}

func (s *Service) desk() (*routeDesk, error) {
	if s.routes == nil {
		return nil, errNoRoutes()
	}
	return s.routes, nil
}

// RouteConnections lists the host's chat-network connections as anyone
// may see them: ids, networks, safe settings and how each stands; never a
// credential nor its reference.
func (s *Service) RouteConnections(ctx context.Context, p access.Principal) ([]route.Safe, error) {
	d, err := s.desk()
	if err != nil {
		return nil, err
	}
	conns, err := d.store.Connections(ctx)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot list the connections")
	}
	states := d.statesNow()
	out := make([]route.Safe, len(conns))
	for i, c := range conns {
		out[i] = route.SafeOf(c, states[c.ID])
	}
	return out, nil
}

func (d *routeDesk) statesNow() map[string]route.State {
	if d.states == nil {
		return nil
	}
	return d.states()
}

// RouteList lists the routes to the bots p may read, or to the bot slug
// alone when it is not empty.
func (s *Service) RouteList(ctx context.Context, p access.Principal, slug string) ([]route.Route, error) {
	d, err := s.desk()
	if err != nil {
		return nil, err
	}
	if slug != "" {
		if _, err := s.Read(ctx, p, slug); err != nil {
			return nil, err
		}
	}
	all, err := d.store.Routes(ctx)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot list the routes")
	}
	out := []route.Route{}
	for _, r := range all {
		if (slug == "" || r.Bot == slug) && s.mayReadBot(ctx, p, r.Bot) {
			out = append(out, r)
		}
	}
	return out, nil
}

// RoutePreflight checks a route before it is saved: route.PreflightRoute,
// and that its bot exists and p may route to it (p may edit it). broad
// allows a scope wider than one person's direct messages.
func (s *Service) RoutePreflight(ctx context.Context, p access.Principal, r route.Route, broad bool) (route.Preflight, error) {
	d, err := s.desk()
	if err != nil {
		return route.Preflight{}, err
	}
	conns, err := d.store.Connections(ctx)
	if err != nil {
		return route.Preflight{}, errcode.Wrap(errcode.Internal, err, "cannot list the connections")
	}
	routes, err := d.store.Routes(ctx)
	if err != nil {
		return route.Preflight{}, errcode.Wrap(errcode.Internal, err, "cannot list the routes")
	}
	scene := route.Scene{Connections: conns, Routes: routes, States: d.statesNow(), Broad: broad}
	if d.probe != nil {
		scene.Probe = func(id string) error { return d.probe(ctx, id) }
	}
	pre := route.PreflightRoute(r, scene)
	if r.Bot != "" {
		if problem := s.mayRouteTo(ctx, p, r.Bot); problem != "" {
			pre.Problems = append(pre.Problems, problem)
		} else {
			pre.Warnings = append(pre.Warnings, s.whoMayChat(ctx, r, conns)...)
		}
	}
	if old := slices.IndexFunc(routes, func(o route.Route) bool { return o.ID == r.ID }); old >= 0 && (routes[old].Bot != r.Bot || s.isBundled(r.Bot)) {
		if problem := s.mayChangeRoute(ctx, p, routes[old]); problem != "" {
			pre.Problems = append(pre.Problems, fmt.Sprintf("The route %q exists and is not yours to change: %s", r.ID, problem))
		}
	}
	if problem := s.directOf(ctx, d, p, r, conns); problem != "" {
		pre.Problems = append(pre.Problems, problem)
	}
	return pre, nil
}

// directOf is "" when r's scope is not one account's direct messages, or
// the account is p's (the users directory's identities, or a pairing), or
// p is root; else why p may not route it: that person's private messages
// would reach a bot of p's choosing.
func (s *Service) directOf(ctx context.Context, d *routeDesk, p access.Principal, r route.Route, conns []route.Connection) string {
	if r.Scope.Kind != route.Direct || r.Scope.ID == "" || p.Any() {
		return ""
	}
	i := slices.IndexFunc(conns, func(c route.Connection) bool { return c.ID == r.Connection })
	if i < 0 {
		return "" // the preflight says the connection is not there
	}
	identity, broad := conns[i].Identity(r.Scope.ID)
	person, ok := "", false
	if people, is := s.users.(route.People); is {
		person, ok = people.Person(identity)
		if !ok && broad != "" {
			person, ok = people.Person(broad)
		}
	}
	if !ok && d.paired != nil {
		person, ok = d.paired(ctx, identity)
	}
	if ok && p.User != "" && person == p.User {
		return ""
	}
	return fmt.Sprintf("The scope is the direct messages of %s, which is not an account of yours (an identity of yours in the users file, or one you paired): only root routes another person's messages.", identity)
}

// mayChangeRoute is "" when p may change, disable or remove the saved
// route o: p may route to its bot, and when the bot is bundled (which
// anyone who reads it may route to, and nobody edits) o is p's own; else
// why not.
func (s *Service) mayChangeRoute(ctx context.Context, p access.Principal, o route.Route) string {
	if problem := s.mayRouteTo(ctx, p, o.Bot); problem != "" {
		return problem
	}
	if s.isBundled(o.Bot) && !p.Any() && o.Owner != p.Owner(s.hostName) {
		return fmt.Sprintf("The route %q to the bundled bot %s is another person's.", o.ID, uri(o.Bot))
	}
	return ""
}

// whoMayChat warns of the people a route would pass messages on for who
// may not read its bot (they will be answered so), or that no person has
// an identity on the route's network at all, where the users directory
// can list its identities (route.Identities).
func (s *Service) whoMayChat(ctx context.Context, r route.Route, conns []route.Connection) []string {
	dir, ok := s.users.(route.Identities)
	i := slices.IndexFunc(conns, func(c route.Connection) bool { return c.ID == r.Connection })
	if !ok || i < 0 {
		return nil
	}
	network := conns[i].Network
	e, err := s.get(ctx, r.Bot)
	if err != nil {
		return nil
	}
	var out, cannot []string
	mapped := 0
	for identity, person := range dir.Identities() {
		if !conns[i].Meets(identity) {
			continue
		}
		mapped++
		if pr, ok := s.users.Principal(person); !ok || !CanRead(pr, e.Record) {
			cannot = append(cannot, fmt.Sprintf("%s (%s)", person, identity))
		}
	}
	slices.Sort(cannot)
	if mapped == 0 && r.Unmapped != route.Pair {
		out = append(out, fmt.Sprintf("No person of the users file has an identity on %s: every message will be refused until one does (identities in the users file), or the route pairs unmapped users.", network))
	}
	if len(cannot) > 0 {
		out = append(out, fmt.Sprintf("%s may not read %s: their messages will be answered that the bot cannot be reached.", strings.Join(cannot, ", "), uri(r.Bot)))
	}
	return out
}

// mayRouteTo is "" when p may route a network's messages to the bot: it
// exists and p may edit it, or it is bundled and p may read it; else the
// sentence that says why not.
func (s *Service) mayRouteTo(ctx context.Context, p access.Principal, slug string) string {
	b, err := s.Read(ctx, p, slug)
	switch {
	case errcode.Of(err) == errcode.NotFound || errcode.Of(err) == errcode.PermissionDenied:
		return fmt.Sprintf("There is no bot %s you may read.", uri(slug))
	case err != nil:
		return fmt.Sprintf("Cannot read %s: %s", uri(slug), errcode.Message(err))
	case !CanWrite(p, b.Record) && !s.isBundled(slug):
		return fmt.Sprintf("You may not edit %s, so you may not route a network to it.", uri(slug))
	}
	return ""
}

// DeployOptions say what a deploy may do beyond saving the route.
type DeployOptions struct {
	// Broad allows a scope wider than one person's direct messages.
	Broad bool
	// DisableConflictingRoutes disables the other enabled routes that
	// claim the route's scope, instead of refusing the deploy.
	DisableConflictingRoutes bool
}

// RouteDeploy preflights r and saves it as p's: it refuses with the
// preflight's sentences when anything stops it, and an active conflict
// unless o.DisableConflictingRoutes, which then disables the other routes
// first and answers their ids.
func (s *Service) RouteDeploy(ctx context.Context, p access.Principal, r route.Route, o DeployOptions) (route.Route, []string, error) {
	d, err := s.desk()
	if err != nil {
		return route.Route{}, nil, err
	}
	pre, err := s.RoutePreflight(ctx, p, r, o.Broad)
	if err != nil {
		return route.Route{}, nil, err
	}
	if len(pre.Problems) > 0 {
		return route.Route{}, nil, errcode.New(errcode.Invalid, "the route %q was not saved: %s", r.ID, strings.Join(pre.Problems, " "))
	}
	if len(pre.Conflicts) > 0 && !o.DisableConflictingRoutes {
		return route.Route{}, nil, errcode.New(errcode.Conflict, "the route %q was not saved: the enabled route(s) %s already claim its scope; pass disableConflictingRoutes to disable them", r.ID, strings.Join(pre.Conflicts, ", "))
	}
	var disabled []string
	if len(pre.Conflicts) > 0 {
		routes, err := d.store.Routes(ctx)
		if err != nil {
			return route.Route{}, nil, errcode.Wrap(errcode.Internal, err, "cannot list the routes")
		}
		for _, o := range routes {
			if !slices.Contains(pre.Conflicts, o.ID) {
				continue
			}
			if problem := s.mayChangeRoute(ctx, p, o); problem != "" {
				return route.Route{}, disabled, errcode.New(errcode.PermissionDenied, "the route %q was not saved: the conflicting route %q is not yours to disable: %s", r.ID, o.ID, problem)
			}
			o.Enabled = false
			if _, err := d.store.PutRoute(ctx, o); err != nil {
				return route.Route{}, disabled, routeErr(err, o.ID)
			}
			disabled = append(disabled, o.ID)
		}
	}
	if r.Owner == "" || !p.Any() { // a route is its deployer's; root may name another owner
		r.Owner = p.Owner(s.hostName)
	}
	saved, err := d.store.PutRoute(ctx, r)
	if err != nil {
		return route.Route{}, disabled, routeErr(err, r.ID)
	}
	return saved, disabled, nil
}

// RouteDelete removes the route id, of that version ("" for any), when p
// may edit its bot.
func (s *Service) RouteDelete(ctx context.Context, p access.Principal, id, version string) error {
	d, err := s.desk()
	if err != nil {
		return err
	}
	routes, err := d.store.Routes(ctx)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot list the routes")
	}
	i := slices.IndexFunc(routes, func(o route.Route) bool { return o.ID == id })
	if i < 0 || !s.mayReadBot(ctx, p, routes[i].Bot) {
		return errcode.New(errcode.NotFound, "there is no route %q", id)
	}
	if problem := s.mayChangeRoute(ctx, p, routes[i]); problem != "" {
		return errcode.New(errcode.PermissionDenied, "Permission denied: the route %q: %s", id, problem)
	}
	return routeErr(d.store.DeleteRoute(ctx, id, version), id)
}

// RoutePair makes the chat-network account that was given code p's (a
// route whose unmapped users pair answers them with one): the routes then
// pass on its messages as p's. It answers the account's identity
// ("irc:mallory"). Only a person of the users directory pairs: root is
// no one a network account could be.
func (s *Service) RoutePair(ctx context.Context, p access.Principal, code string) (string, error) {
	d, err := s.desk()
	if err != nil {
		return "", err
	}
	switch {
	case p.User == "":
		return "", errcode.New(errcode.PermissionDenied, "Permission denied: pairing makes a chat account one person's; connect as a person of the users file")
	case d.pair == nil:
		return "", errcode.New(errcode.Unsupported, "no chat-network route runs on this host, so no code waits")
	}
	identity, err := d.pair(ctx, p.User, code)
	if err != nil {
		return "", errcode.Wrap(errcode.NotFound, err, "%s", err.Error())
	}
	return identity, nil
}

// RoutePairings lists the chat-network accounts paired with p, or every
// pairing for a principal that may do anything (root, *:*).
func (s *Service) RoutePairings(ctx context.Context, p access.Principal) ([]route.Pairing, error) {
	d, err := s.desk()
	if err != nil {
		return nil, err
	}
	person := p.User
	if p.Any() {
		person = ""
	}
	if d.pairings == nil || (person == "" && !p.Any()) {
		return []route.Pairing{}, nil
	}
	list, err := d.pairings(ctx, person)
	if err != nil {
		return nil, errcode.Wrap(errcode.Unavailable, err, "%s", err.Error())
	}
	return list, nil
}

// RouteUnpair lets go of the pairing of the chat-network account identity
// with p, or with anyone for a principal that may do anything: the
// routes no longer pass on its messages as p's, and ask it to pair again.
// Its chats stay p's.
func (s *Service) RouteUnpair(ctx context.Context, p access.Principal, identity string) error {
	d, err := s.desk()
	if err != nil {
		return err
	}
	person := p.User
	switch {
	case p.Any():
		person = ""
	case person == "":
		return errcode.New(errcode.PermissionDenied, "Permission denied: only a person of the users file has chat accounts paired")
	}
	if d.unpair == nil {
		return errcode.New(errcode.NotFound, "no chat account %q is paired on this host", identity)
	}
	if err := d.unpair(ctx, person, identity); err != nil {
		if errors.Is(err, route.ErrNotPaired) {
			return errcode.Wrap(errcode.NotFound, err, "the chat account %q is not paired with you", identity)
		}
		return errcode.Wrap(errcode.Unavailable, err, "%s", err.Error())
	}
	return nil
}

// routeErr maps a route store's error to the code the wire answers.
func routeErr(err error, id string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, route.ErrNotFound):
		return errcode.Wrap(errcode.NotFound, err, "there is no route %q", id)
	case errors.Is(err, route.ErrConflict):
		return errcode.Wrap(errcode.Conflict, err, "the route %q changed since it was read", id)
	}
	return errcode.Wrap(errcode.Invalid, err, "the route %q was not saved: %v", id, err)
}

// routeParams are the params of the route methods and tools.
type routeParams struct {
	Bot                      string      `json:"bot"`
	Code                     string      `json:"code"`
	Identity                 string      `json:"identity"`
	ID                       string      `json:"id"`
	Version                  string      `json:"version"`
	Route                    route.Route `json:"route"`
	Broad                    bool        `json:"broad"`
	DisableConflictingRoutes bool        `json:"disableConflictingRoutes"`
}

// routeCall answers a route method or tool for p.
func (s *Service) routeCall(ctx context.Context, p access.Principal, method string, raw json.RawMessage) (any, error) {
	var in routeParams
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, errcode.New(errcode.Invalid, "%s takes a JSON object (bot, id, version, route, broad, disableConflictingRoutes, code, identity): %v", method, err)
		}
	}
	switch method {
	case MethodRouteConnections:
		c, err := s.RouteConnections(ctx, p)
		return map[string]any{"connections": c}, err
	case MethodRouteList:
		r, err := s.RouteList(ctx, p, in.Bot)
		return map[string]any{"routes": r}, err
	case MethodRoutePreflight:
		return s.RoutePreflight(ctx, p, in.Route, in.Broad)
	case MethodRouteDeploy:
		r, disabled, err := s.RouteDeploy(ctx, p, in.Route, DeployOptions{Broad: in.Broad, DisableConflictingRoutes: in.DisableConflictingRoutes})
		if err != nil {
			return nil, err
		}
		return map[string]any{"route": r, "disabled": disabled}, nil
	case MethodRouteDelete:
		return struct{}{}, s.RouteDelete(ctx, p, in.ID, in.Version)
	case MethodRoutePair:
		identity, err := s.RoutePair(ctx, p, in.Code)
		if err != nil {
			return nil, err
		}
		return map[string]string{"identity": identity}, nil
	case MethodRoutePairings:
		list, err := s.RoutePairings(ctx, p)
		return map[string]any{"pairings": list}, err
	case MethodRouteUnpair:
		return struct{}{}, s.RouteUnpair(ctx, p, in.Identity)
	}
	return nil, errcode.New(errcode.Unsupported, "method not found: %s", method)
}

// handleRouteMethod answers the route methods on the wire.
func (s *Service) handleRouteMethod(ctx context.Context, call engine.Call) (any, error) {
	return s.routeCall(ctx, s.current(call.Principal), call.Method, call.Params)
}
