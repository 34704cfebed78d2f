package bot

import (
	"context"
	"errors"
	"fmt"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/bot/internal/mainchat"
	"github.com/agenthost/bots/catalog"
	"github.com/agenthost/bots/engine"
)

// Host is the part of an embedding agent host that Apply plugs bots into:
// what the host is, and where it serves resources, channels and sessions.
// A host that has no registry of its own embeds the whole system with the
// module's top-level package instead (bots.Server).
type Host interface {
	// BotConfig is the configuration the host gives its bots: its record
	// store (required), configuration folder, name, logger, users
	// directory, the bus its wire delivers from, and the session host
	// back sessions live on (nil serves no chats). Apply sets Options.
	BotConfig() Config
	// RegisterResourceProvider serves every URI of the scheme with p.
	RegisterResourceProvider(scheme string, p engine.ResourceProvider) error
	// RegisterChannel serves the channels whose URI starts with prefix:
	// open returns the channel at a URI, or an errcode.NotFound error.
	RegisterChannel(prefix string, open func(ctx context.Context, c engine.Caller, uri string) (engine.Channel, error)) error
	// RegisterSessions serves the sessions of the agent provider
	// agent.Provider with p: the host lists agent in its root state's
	// agents; answers with p a createSession naming the provider, and a
	// disposeSession or fetchTurns on a session p serves; merges the
	// items of p's listSessions with its own; and asks p.Channel for a
	// channel URI no prefix of its own serves.
	RegisterSessions(agent ahp.AgentInfo, p SessionProvider) error
	// SetMeta adds a key to the _meta of the initialize result and the
	// root state.
	SetMeta(key string, value any) error
}

// SessionProvider serves the sessions of one agent provider in a host:
// the bot-chat provider is one (Service.Chats).
type SessionProvider interface {
	// HandleMethod answers createSession, disposeSession, listSessions
	// and fetchTurns; errcode.NotFound when the session is not the
	// provider's.
	engine.Methods
	// Channel returns the channel of a session or chat the provider
	// serves, or an errcode.NotFound error for any other URI.
	Channel(ctx context.Context, c engine.Caller, uri string) (engine.Channel, error)
}

// Apply is the plugin entry for hosts with a registry of their own. It
// makes the bot service with the host's configuration and the plugin's
// options, and registers everything with the host: the bot: scheme; the
// bot-chat provider, with its chats' session and chat channels, when the
// host gives a session host; the x-ahpd-bots:// catalogue and resource
// watch channels; and the _meta advertisements of the scheme and the
// catalogue. The host closes the returned service when it stops; the
// store is the host's to close.
//
// Everything the service publishes goes on Config.Bus, which must be the
// bus the host's wire delivers from (nil makes one: Service.Bus returns it).
func Apply(ctx context.Context, h Host, opts Options) (*Service, error) {
	cfg := h.BotConfig()
	if cfg.Store == nil {
		return nil, errors.New("bot: apply: the host's BotConfig has no Store (filerecord.Open keeps bot.md files under ConfigDir)")
	}
	cfg.Options = opts
	svc, err := New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := register(ctx, h, svc); err != nil {
		svc.Close()
		return nil, fmt.Errorf("bot: apply: %w", err)
	}
	return svc, nil
}

// register registers svc's scheme, sessions, channels and _meta with h.
func register(ctx context.Context, h Host, svc *Service) error {
	if err := h.RegisterResourceProvider(Scheme, svc.Provider()); err != nil {
		return fmt.Errorf("register %s: %w", Scheme, err)
	}
	if p := svc.Chats(); p != nil {
		if err := h.RegisterSessions(mainchat.Agent(), p); err != nil {
			return fmt.Errorf("register %s: %w", ChatProvider, err)
		}
	}
	for _, prefix := range []string{catalog.URI, catalog.WatchPrefix, ProblemsURI} {
		if err := h.RegisterChannel(prefix, svc.Channel); err != nil {
			return fmt.Errorf("register %s: %w", prefix, err)
		}
	}
	meta := svc.meta(ctx, access.RootPrincipal())
	for _, key := range []string{"ahpd.resourceProviders", "ahpd.channels"} {
		if err := h.SetMeta(key, meta[key]); err != nil {
			return fmt.Errorf("meta %s: %w", key, err)
		}
	}
	return nil
}
