package bot

import (
	"context"
	"fmt"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/catalog"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/record/filerecord"
)

// Host is the part of an embedding agent host that Apply plugs bots into:
// what the host is, and where it serves resources and channels.
type Host interface {
	// BotConfig is the configuration the host gives its bots: its record
	// store (nil keeps bot.md files under ConfigDir), configuration
	// folder, name, logger, users directory and bus. Apply sets Options.
	BotConfig() Config
	// RegisterResourceProvider serves every URI of the scheme with p.
	RegisterResourceProvider(scheme string, p engine.ResourceProvider) error
	// RegisterChannel serves the channels whose URI starts with prefix:
	// open returns the channel at a URI, or an errcode.NotFound error.
	RegisterChannel(prefix string, open func(ctx context.Context, c engine.Caller, uri string) (engine.Channel, error)) error
	// SetMeta adds a key to the _meta of the initialize result and the
	// root state.
	SetMeta(key string, value any) error
}

// Apply makes the bot service with the host's configuration and the
// plugin's options, and registers the bot: scheme, the x-ahpd-bots://
// catalogue and resource watch channels, and their advertisements with the
// host. The host closes the returned service (and a store Apply opened is
// closed with it) when it stops.
func Apply(ctx context.Context, h Host, opts Options) (*Service, error) {
	cfg := h.BotConfig()
	cfg.Options = opts
	if cfg.Store == nil {
		store, err := filerecord.Open(ctx, filerecord.Config{ConfigDir: cfg.ConfigDir, Logger: cfg.Logger})
		if err != nil {
			return nil, fmt.Errorf("bot: apply: %w", err)
		}
		cfg.Store = store
	}
	svc, err := New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if h.BotConfig().Store == nil {
		svc.closeStore = true
	}
	if err := h.RegisterResourceProvider(Scheme, svc.Provider()); err != nil {
		svc.Close()
		return nil, fmt.Errorf("bot: apply: register %s: %w", Scheme, err)
	}
	for _, prefix := range []string{catalog.URI, catalog.WatchPrefix} {
		if err := h.RegisterChannel(prefix, svc.Channel); err != nil {
			svc.Close()
			return nil, fmt.Errorf("bot: apply: register %s: %w", prefix, err)
		}
	}
	meta := svc.meta(access.RootPrincipal())
	for _, key := range []string{"ahpd.resourceProviders", "ahpd.channels"} {
		if err := h.SetMeta(key, meta[key]); err != nil {
			svc.Close()
			return nil, fmt.Errorf("bot: apply: meta %s: %w", key, err)
		}
	}
	return svc, nil
}
