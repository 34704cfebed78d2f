package bots

import (
	"context"
	"sync"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/access/usersfile"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/wake"
)

// gate is the engine.Host the wire serves from the moment the server is
// wired, before the bots are loaded. What needs no bot it answers at
// once: who a token is (from the users directory, opened before the
// wire) and the _meta of an initialize (bot.StartingMeta: no problems yet,
// and ahpd.loading). Every other request - a resource method, a
// subscribe, a session method - waits until the load has ended and is
// then answered by the bot service, loaded in full, as if it had come
// after; when the load failed it is answered Unavailable. So no answer
// ever comes from a half-loaded store.
type gate struct {
	users    bot.Users // nil: the local token makes a connection root
	local    string    // the local token, with no users directory
	hostName string
	tools    wake.ToolPolicy
	choices  func(context.Context) bot.Choices // what a make may name, before the load

	done chan struct{} // closed once the load has ended
	once sync.Once
	svc  *bot.Service // the loaded service, set before done is closed; nil when the load failed
}

var (
	_ engine.Host        = (*gate)(nil)
	_ engine.Methods     = (*gate)(nil)
	_ engine.AuthWatcher = (*gate)(nil)
)

func newGate(users bot.Users, local, hostName string, tools wake.ToolPolicy, choices func(context.Context) bot.Choices) *gate {
	return &gate{users: users, local: local, hostName: hostName, tools: tools, choices: choices, done: make(chan struct{})}
}

// open lets every request through to svc, or, with svc nil, answers
// them Unavailable: the load has ended. Only the first call counts.
func (g *gate) open(svc *bot.Service) {
	g.once.Do(func() {
		g.svc = svc
		close(g.done)
	})
}

// loaded returns the service once the load has ended well, else nil at
// once.
func (g *gate) loaded() *bot.Service {
	select {
	case <-g.done:
		return g.svc
	default:
		return nil
	}
}

// wait returns the loaded service once the load has ended: an
// Unavailable error when it failed, ctx's when ctx ended first.
func (g *gate) wait(ctx context.Context) (*bot.Service, error) {
	select {
	case <-g.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if g.svc == nil {
		return nil, errcode.New(errcode.Unavailable, "the bots server could not load its bots")
	}
	return g.svc, nil
}

// Authenticate is what the service answers, and before it is loaded the
// same from the users directory. Without one no connection is anonymous:
// the local token alone makes a connection, and makes it root.
func (g *gate) Authenticate(token string) (access.Principal, bool) {
	if g.users == nil {
		return access.NewLocal(g.local).Authenticate(token)
	}
	if svc := g.loaded(); svc != nil {
		return svc.Authenticate(token)
	}
	return g.users.Authenticate(token)
}

// WatchAuth follows the users directory, as the service does: the wire
// asks it once, when it is made, before the service exists.
func (g *gate) WatchAuth(fn func()) (stop func()) {
	if d, ok := g.users.(interface {
		Subscribe(fn func(prev, next *usersfile.Users)) (cancel func())
	}); ok {
		return d.Subscribe(func(_, _ *usersfile.Users) { fn() })
	}
	return func() {}
}

// Meta is the service's once it is loaded; before, bot.StartingMeta. It
// does not wait, so an initialize is answered while the bots load.
func (g *gate) Meta(ctx context.Context, c engine.Caller) (map[string]any, error) {
	if svc := g.loaded(); svc != nil {
		return svc.Meta(ctx, c)
	}
	return bot.StartingMeta(g.hostName, g.tools, g.choices(ctx), c.Principal), nil
}

// Resources is the service's provider of scheme, which waits for the load
// before each call; nil for a scheme the service does not serve.
func (g *gate) Resources(scheme string) engine.ResourceProvider {
	if svc := g.loaded(); svc != nil {
		return svc.Resources(scheme)
	}
	if scheme != bot.Scheme {
		return nil
	}
	return gatedResources{g, scheme}
}

// Channel waits for the load, then answers what the service does.
func (g *gate) Channel(ctx context.Context, c engine.Caller, uri string) (engine.Channel, error) {
	svc, err := g.wait(ctx)
	if err != nil {
		return nil, err
	}
	return svc.Channel(ctx, c, uri)
}

// HandleMethod waits for the load, then answers what the service does.
func (g *gate) HandleMethod(ctx context.Context, call engine.Call) (any, error) {
	svc, err := g.wait(ctx)
	if err != nil {
		return nil, err
	}
	return svc.HandleMethod(ctx, call)
}

// gatedResources is the service's provider of a scheme, waiting for the
// load before each call.
type gatedResources struct {
	g      *gate
	scheme string
}

func (r gatedResources) ServeResource(ctx context.Context, call engine.Call) (any, error) {
	svc, err := r.g.wait(ctx)
	if err != nil {
		return nil, err
	}
	p := svc.Resources(r.scheme)
	if p == nil {
		return nil, errcode.New(errcode.Unsupported, "no provider serves the %s: scheme", r.scheme)
	}
	return p.ServeResource(ctx, call)
}
