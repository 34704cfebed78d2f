package bot

import (
	"context"
	"log/slog"
	"slices"
	"strings"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/bot/internal/mainchat"
	"github.com/agenthost/bots/catalog"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/persona"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/wake"
)

// Users is the users directory a service authenticates connections with:
// usersfile.Directory, or the embedding host's own.
type Users interface {
	// Authenticate returns the principal of a token, comparing in constant
	// time; ok is false for a token nobody holds.
	Authenticate(token string) (p access.Principal, ok bool)
	// Principal returns a user's principal as the directory has it now.
	Principal(id string) (p access.Principal, ok bool)
}

var _ engine.Host = (*Service)(nil)

// Authenticate returns the principal of a connection's token. With no users
// directory no connection is anyone: a host of one person passes
// access.NewLocal(token), so that a web page or a local process without
// the token never acts as root.
func (s *Service) Authenticate(token string) (access.Principal, bool) {
	if s.users == nil {
		return access.Principal{}, false
	}
	return s.users.Authenticate(token)
}

var _ engine.AuthWatcher = (*Service)(nil)

// WatchAuth calls fn after each change of the users directory, when it
// tells of its changes (access.Watcher), so that the transport closes the
// connections whose token no longer holds.
func (s *Service) WatchAuth(fn func()) (stop func()) {
	if d, ok := s.users.(access.Watcher); ok {
		return d.WatchUsers(func([]string) { fn() })
	}
	return func() {}
}

// principalNow is who a subscriber is now: its user's current memberships
// and grants, where the users directory knows them.
func (s *Service) principalNow(sub *engine.Subscriber) access.Principal {
	return s.current(sub.Principal)
}

// current is who the principal a connection authenticated as is now: a
// change of the users file reaches the connections already open.
func (s *Service) current(p access.Principal) access.Principal {
	if s.users != nil && !p.Root && p.User != "" {
		if now, ok := s.users.Principal(p.User); ok {
			return now
		}
		return access.Principal{User: p.User}
	}
	return p
}

// Resources returns the provider of a URI scheme: the bot: scheme, or nil.
func (s *Service) Resources(scheme string) engine.ResourceProvider {
	if scheme == Scheme {
		return s.Provider()
	}
	return nil
}

// Meta is the _meta of the initialize result and the root state: the bot:
// scheme and the catalogue channel, and who the caller is.
func (s *Service) Meta(ctx context.Context, c engine.Caller) (map[string]any, error) {
	m := s.meta(ctx, c.Principal)
	s.addProblems(ctx, m, s.current(c.Principal))
	return m, nil
}

func (s *Service) meta(ctx context.Context, p access.Principal) map[string]any {
	return advertised(s.hostName, s.tools, s.choices(ctx), p)
}

// choices are the agents and templates a make may name now.
func (s *Service) choices(ctx context.Context) Choices {
	return choicesOf(ctx, s.offered, s.personas, s.log)
}

// HostChoices are the Choices of a host whose session host runs agents
// and whose templates are under configDir, as a loaded Service answers
// them: for StartingMeta.
func HostChoices(ctx context.Context, configDir string, agents []string, log *slog.Logger) Choices {
	agents = slices.Compact(slices.Sorted(slices.Values(agents)))
	files, err := persona.New(persona.Config{ConfigDir: configDir, Logger: log})
	if err != nil {
		return Choices{Agents: agents}
	}
	return choicesOf(ctx, agents, files, log)
}

// choicesOf lists the templates by their files' names alone: it runs at
// every initialize, so it reads no template.
func choicesOf(ctx context.Context, agents []string, files *persona.Files, log *slog.Logger) Choices {
	names, err := files.TemplateNames(ctx)
	if err != nil && log != nil {
		log.Warn("bot: the templates could not be listed for the make form", "err", err)
	}
	return Choices{Agents: agents, Templates: names}
}

// advertised is the _meta every initialize result and root state holds
// for p: the bot: scheme, the channels, and who p is on hostName.
func advertised(hostName string, tools wake.ToolPolicy, choices Choices, p access.Principal) map[string]any {
	return map[string]any{
		"ahpd.resourceProviders": map[string]any{Scheme: schemeInfo(hostName, tools, choices)},
		"ahpd.channels":          []any{catalog.Info(), problemsInfo()},
		"ahpd.principal":         p.Owner(hostName),
	}
}

// LoadingMeta is the _meta key, set to true, of an initialize result
// answered while the host was still loading its bots (StartingMeta).
// Such a result lists no problems, none being known yet: they reach a
// client on the problems channel, whose subscribe waits for the load.
const LoadingMeta = "ahpd.loading"

// StartingMeta is the _meta of the initialize result for p of a host
// that serves before New has returned over its bots, as the module's
// Server does: what Meta answers (the bot: scheme for hostName and
// tools, the channels, p's owner string) but for the problems, with
// LoadingMeta set instead. Pass the HostName and Tools New is given
// (with DefaultHostName for an empty HostName).
func StartingMeta(hostName string, tools wake.ToolPolicy, choices Choices, p access.Principal) map[string]any {
	m := advertised(hostName, tools, choices, p)
	m[LoadingMeta] = true
	return m
}

// ProblemsMeta is the _meta key of the initialize result and the root
// state that lists the problems of the bots the caller may read, when
// there are any: [{bot, reason, since}], with path for root and *:*, who
// also see the problems of bots that are left out and of no bot.
const ProblemsMeta = "ahpd.problems"

// addProblems puts the problems p may see into m under ProblemsMeta.
func (s *Service) addProblems(ctx context.Context, m map[string]any, p access.Principal) {
	if out := seenBy(p, s.standingProblems(ctx)); len(out) > 0 {
		m[ProblemsMeta] = out
	}
}

// Problems returns what is wrong with the bots now, ordered by bot then
// path: the store's, when it keeps problems (a bot.md that is not a bot
// record, a refused hand edit, a bot left out at load), and the service's
// own (a work folder that has left root). Each was logged at Warn when it
// was found.
func (s *Service) Problems() []record.Problem {
	var out []record.Problem
	if r, ok := s.raw.(record.ProblemReporter); ok {
		out = r.Problems()
	}
	_, kept := s.raw.(problemKeeper)
	if !kept {
		s.badFolders.mu.Lock()
		for id, b := range s.badFolders.byID {
			out = append(out, record.Problem{ID: id, Path: b.dir, Reason: b.reason, Since: b.since})
		}
		s.badFolders.mu.Unlock()
	}
	if s.bundles.hiding != nil {
		out = append(out, s.bundles.hiding.hiddenProblems()...)
	}
	if !kept || s.bundles.hiding != nil {
		record.SortProblems(out)
	}
	return out
}

// schemeInfo advertises the bot: scheme: its title, root, operations and
// the JSON Schema of the body a make takes.
func schemeInfo(hostName string, tools wake.ToolPolicy, choices Choices) map[string]any {
	return map[string]any{
		"title":       "Bots",
		"description": "Bots: records with a work folder and a persona, talked to in a chat of their own.",
		"root":        schemeRoot,
		"operations":  []string{"get", "list", "resolve", "watch", "put", "delete"},
		"manifest":    makeSchema(hostName, tools, choices),
	}
}

// Channel returns the state channel at uri: the root, the catalogue, a
// resource watch, a bot chat's session or chat, or a back session's
// channel the session host serves.
func (s *Service) Channel(ctx context.Context, c engine.Caller, uri string) (engine.Channel, error) {
	if ch, err := s.sessionChannel(ctx, c, uri); errcode.Of(err) != errcode.NotFound {
		return ch, err
	}
	switch {
	case uri == ahp.RootURI:
		return rootChannel{s}, nil
	case uri == catalog.URI:
		return s.catalog.Channel(), nil
	case uri == ProblemsURI:
		return problemsChannel{s}, nil
	case strings.HasPrefix(uri, catalog.WatchPrefix):
		if ch, ok := s.catalog.WatchChannel(uri); ok {
			return ch, nil
		}
	}
	return nil, errcode.New(errcode.NotFound, "no channel %s", uri)
}

// sessionChannel returns the channel at uri when it is a bot chat's
// session or chat, or a channel of a back session the session host serves;
// an errcode.NotFound error otherwise.
func (s *Service) sessionChannel(ctx context.Context, c engine.Caller, uri string) (engine.Channel, error) {
	if s.chats != nil {
		if ch, ok, err := s.chats.Channel(ctx, c, uri); ok {
			return ch, err
		}
		if src, ok := s.chats.Host().(channelSource); ok {
			cc := c
			cc.Principal = s.current(c.Principal)
			ch, err := src.Channel(ctx, cc, uri)
			if err == nil && !s.keepsBackSession(ctx, cc.Principal, uri) {
				return nil, errcode.New(errcode.PermissionDenied, "Permission denied: %s", uri)
			}
			if errcode.Of(err) != errcode.NotFound {
				return ch, err
			}
		}
	}
	return nil, errcode.New(errcode.NotFound, "no channel %s", uri)
}

// Chats returns the bot-chat provider, for a host that serves sessions
// by provider (see Apply): createSession of a chat with a bot, its
// disposeSession, listSessions and fetchTurns, and the channels of its
// chats and of their back sessions when the session host serves them (as
// wake/local's Host does). It is nil when the service has no session host.
func (s *Service) Chats() SessionProvider {
	if s.chats == nil {
		return nil
	}
	return chatProvider{s}
}

// chatProvider is the bot-chat provider as a host's SessionProvider.
type chatProvider struct{ s *Service }

func (p chatProvider) HandleMethod(ctx context.Context, call engine.Call) (any, error) {
	return p.s.HandleMethod(ctx, call)
}

func (p chatProvider) Channel(ctx context.Context, c engine.Caller, uri string) (engine.Channel, error) {
	return p.s.sessionChannel(ctx, c, uri)
}

// rootChannel is ahp-root://: the agents sessions run on, and the host's
// _meta.
type rootChannel struct{ s *Service }

func (r rootChannel) URI() string { return ahp.RootURI }

func (r rootChannel) Subscribe(ctx context.Context, sub *engine.Subscriber) (engine.Snapshot, error) {
	agents := []ahp.AgentInfo{}
	if r.s.chats != nil {
		agents = append(agents, mainchat.Agent())
	}
	agents = append(agents, r.s.agents...)
	meta := r.s.meta(ctx, sub.Principal)
	r.s.addProblems(ctx, meta, r.s.current(sub.Principal))
	return engine.Snapshot{State: ahp.RootState{
		Agents: agents,
		Meta:   meta,
	}}, nil
}

// channelSource is a session host that serves its sessions' channels, as
// wake/local's Host does.
type channelSource interface {
	Channel(ctx context.Context, c engine.Caller, uri string) (engine.Channel, error)
}

var _ engine.Methods = (*Service)(nil)

// HandleMethod answers the session methods: createSession (the bot-chat
// provider), disposeSession, listSessions, and fetchTurns on a bot chat
// (older turns read from its log). A service with no session
// host answers them -32601, as it does every other session method.
func (s *Service) HandleMethod(ctx context.Context, call engine.Call) (any, error) {
	if strings.HasPrefix(call.Method, "x-ahpd/route") {
		return s.handleRouteMethod(ctx, call)
	}
	if s.chats == nil {
		return nil, errcode.New(errcode.Unsupported, "method not found: %s", call.Method)
	}
	switch call.Method {
	case "createSession":
		return nil, s.chats.Create(ctx, call)
	case "disposeSession":
		return struct{}{}, s.chats.Dispose(ctx, call)
	case "listSessions":
		return s.chats.List(ctx, call)
	case "fetchTurns":
		return struct{}{}, s.chats.FetchTurns(ctx, call)
	}
	return nil, errcode.New(errcode.Unsupported, "method not found: %s", call.Method)
}

// Bots returns every bot as a listing by root answers it, for the
// catalogue. The catalogue lists in the background while the service
// serves, so ctx ending (Close) stops it between two bots rather than
// letting each bot left fail its persona read.
func (s *Service) Bots(ctx context.Context) ([]record.Record, error) {
	list, err := record.ListShared(ctx, s.store, nil)
	if err != nil {
		return nil, storeError("", err)
	}
	out := make([]record.Record, 0, len(list))
	for _, shared := range list {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		e := record.Entry{Record: shared.Record.Clone(), ETag: shared.ETag} // the catalogue's own
		b, err := s.withPersona(ctx, e, false)
		if err != nil {
			s.log.Warn("bot: listing without persona", "bot", e.Record.ID, "err", err)
			b = Bot{Record: e.Record}
		}
		out = append(out, b.Record)
	}
	return out, nil
}

// Watch returns the store's changes with each record as a read answers it,
// for the catalogue and watches.
func (s *Service) Watch(ctx context.Context) (<-chan record.Change, error) {
	in, err := s.store.Watch(ctx)
	if err != nil {
		return nil, err
	}
	out := make(chan record.Change)
	go func() {
		defer close(out)
		for c := range in {
			b, err := s.withPersona(ctx, c.Entry, c.Kind != record.Deleted)
			if err != nil {
				s.log.Warn("bot: change without persona", "bot", c.ID, "err", err)
			} else {
				c.Entry.Record = b.Record
			}
			select {
			case out <- c:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}
