package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/bot/access"
	"github.com/agenthost/bots/connector"
	"github.com/agenthost/bots/connector/envvault"
	"github.com/agenthost/bots/connector/filevault"
	"github.com/agenthost/bots/connector/httpadapter"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/acp"
)

// fallbackVault asks its vaults in order: the next is asked only when one
// holds no credential for the connector.
type fallbackVault []connector.Vault

// Resolve answers the first credential found.
func (f fallbackVault) Resolve(ctx context.Context, ref connector.Ref) (connector.Credential, error) {
	var errs []error
	for _, v := range f {
		c, err := v.Resolve(ctx, ref)
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, connector.ErrNoCredential) {
			return connector.Credential{}, err
		}
		errs = append(errs, err)
	}
	return connector.Credential{}, errors.Join(errs...)
}

// openVault is the vault of -vault (a file that must be mode 0600 and
// outside the config and root folders), falling back to environment
// variables (envvault); with no -vault, environment variables alone.
func openVault(path, configDir, root string, log *slog.Logger) (connector.Vault, error) {
	env := envvault.New(envvault.Config{})
	if path == "" {
		return env, nil
	}
	fv, err := filevault.New(filevault.Config{Path: path, ConfigDir: configDir, Root: root, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("-vault: %w", err)
	}
	return fallbackVault{fv, env}, nil
}

// botConnectors gives back sessions their bot's connectors as tools: it
// reads the bot's record from the store at every list and call, so an edit
// of its connectors map reaches a running session, and a call carries the
// person the session answers, with their rights as the users file has them
// now.
type botConnectors struct {
	store    record.Store
	users    bot.Users // nil: no users file, everybody is root
	registry *connector.Registry
	vault    connector.Vault
	scrub    *connector.Scrubber
	log      *slog.Logger
}

var _ acp.Connectors = (*botConnectors)(nil)

// tools reads the session's bot's connectors map now and makes its tools.
func (b *botConnectors) tools(ctx context.Context, s wake.SessionInfo) (*connector.Tools, error) {
	id, _, _, ok := wake.BackSession(s.Meta)
	if !ok {
		return nil, errors.New("the session is no bot's back session")
	}
	e, err := b.store.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("bot %s: %w", id, err)
	}
	m := e.Record.Connectors
	return connector.NewTools(connector.ToolsConfig{
		Bot: id, Connectors: func() map[string]string { return m },
		Registry: b.registry, Vault: b.vault, Scrubber: b.scrub, Logger: b.log,
	})
}

// List answers the tools of the bot's connectors as its record is now.
func (b *botConnectors) List(ctx context.Context, s wake.SessionInfo) ([]connector.Tool, error) {
	t, err := b.tools(ctx, s)
	if err != nil {
		return nil, err
	}
	return t.List(), nil
}

// Call calls the connector under alias as the bot's record is now, for the
// person the session answers.
func (b *botConnectors) Call(ctx context.Context, s wake.SessionInfo, alias string, args json.RawMessage) (connector.Result, error) {
	t, err := b.tools(ctx, s)
	if err != nil {
		return connector.Result{}, err
	}
	return t.Call(ctx, b.principal(s.Owner), alias, args)
}

// principal is the person an owner string names, as the users file has
// them now: root:<host> (and everybody, with no users file) is root; a
// user the file no longer holds is nobody.
func (b *botConnectors) principal(owner string) access.Principal {
	if b.users == nil || strings.HasPrefix(owner, "root:") {
		return access.RootPrincipal()
	}
	id, ok := strings.CutPrefix(owner, "user:")
	if !ok {
		return access.Principal{}
	}
	if p, ok := b.users.Principal(id); ok {
		return p
	}
	return access.Principal{}
}

// newRegistry registers the adapters this server offers: http.
func newRegistry(log *slog.Logger) (*connector.Registry, error) {
	reg := &connector.Registry{}
	h, err := httpadapter.New(httpadapter.Config{Logger: log})
	if err != nil {
		return nil, err
	}
	if err := reg.Register(httpadapter.Name, h); err != nil {
		return nil, err
	}
	return reg, nil
}
