package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/bot"
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

var _ connector.Lister = fallbackVault(nil)

// Values answers the values of every vault that lists them.
func (f fallbackVault) Values(ctx context.Context) ([]string, error) {
	var out []string
	var errs []error
	for _, v := range f {
		if l, ok := v.(connector.Lister); ok {
			values, err := l.Values(ctx)
			out = append(out, values...)
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

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
// variables (envvault); with no -vault, environment variables alone. scrub
// learns every value both hold now, and the file's again whenever it is
// read, so that no text leaving a back session carries one, resolved or
// not. A nil scrub learns nothing.
func openVault(ctx context.Context, path, configDir, root string, scrub *connector.Scrubber, log *slog.Logger) (connector.Vault, error) {
	if scrub == nil {
		scrub = &connector.Scrubber{}
	}
	var v connector.Vault = envvault.New(envvault.Config{})
	if path != "" {
		fv, err := filevault.New(filevault.Config{Path: path, ConfigDir: configDir, Root: root, Logger: log, Scrubber: scrub})
		if err != nil {
			return nil, fmt.Errorf("-vault: %w", err)
		}
		v = fallbackVault{fv, v}
	}
	if err := connector.Learn(ctx, v, scrub); err != nil {
		log.Warn("the vault could not be read at the start; its values are learnt when it is", "err", err)
	}
	log.Info("connector credentials: a vault entry's owners (or " + envvault.DefaultPrefix + "<ADAPTER>_<ID>__OWNERS) say who may use it; an entry naming none is root's alone")
	return v, nil
}

// botConnectors gives back sessions their bot's connectors as tools: it
// reads the bot's record from the store at every list and call, so an edit
// of its connectors map reaches a running session, and a call carries the
// bot's owner and the person the session answers, with their memberships
// as the users file has them now: the vault entry's owners must hold both.
type botConnectors struct {
	store    record.Store
	users    bot.Users // nil: no users file, everybody is root
	registry *connector.Registry
	vault    connector.Vault
	scrub    *connector.Scrubber
	log      *slog.Logger
}

var _ acp.Connectors = (*botConnectors)(nil)

// tools reads the session's bot's record now and makes its tools; owner
// is the bot's owner string.
func (b *botConnectors) tools(ctx context.Context, s wake.SessionInfo) (t *connector.Tools, owner string, err error) {
	id, _, _, ok := wake.BackSession(s.Meta)
	if !ok {
		return nil, "", errors.New("the session is no bot's back session")
	}
	e, err := b.store.Get(ctx, id)
	if err != nil {
		return nil, "", fmt.Errorf("bot %s: %w", id, err)
	}
	m := e.Record.Connectors
	t, err = connector.NewTools(connector.ToolsConfig{
		Bot: id, Connectors: func() map[string]string { return m },
		Registry: b.registry, Vault: b.vault, Scrubber: b.scrub, Logger: b.log,
	})
	return t, e.Record.Owner, err
}

// List answers the tools of the bot's connectors as its record is now.
func (b *botConnectors) List(ctx context.Context, s wake.SessionInfo) ([]connector.Tool, error) {
	t, _, err := b.tools(ctx, s)
	if err != nil {
		return nil, err
	}
	return t.List(), nil
}

// Call calls the connector under alias as the bot's record is now, for the
// bot's owner and the person the session answers (s.Owner: back sessions
// are one per bot, person and name).
func (b *botConnectors) Call(ctx context.Context, s wake.SessionInfo, alias string, args json.RawMessage) (connector.Result, error) {
	t, owner, err := b.tools(ctx, s)
	if err != nil {
		return connector.Result{}, err
	}
	return t.Call(ctx, b.principal(owner), b.principal(s.Owner), alias, args)
}

// principal is who an owner string names, as the users file has them now:
// root:<host> (and everybody, with no users file) is root; user:<id> is the
// user's principal, or nobody when the file no longer holds them;
// team:<name> and project:<name> are a member of that team or project
// alone; anything else is nobody.
func (b *botConnectors) principal(owner string) access.Principal {
	kind, rest, _ := strings.Cut(owner, ":")
	switch {
	case b.users == nil || kind == "root":
		return access.RootPrincipal()
	case rest == "":
		return access.Principal{}
	case kind == "team" || kind == "project":
		return access.Principal{Memberships: []string{rest}}
	case kind == "user":
		if p, ok := b.users.Principal(rest); ok {
			return p
		}
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
