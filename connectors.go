package bots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/connector"
	"github.com/agenthost/bots/connector/envvault"
	"github.com/agenthost/bots/connector/filevault"
	"github.com/agenthost/bots/connector/httpadapter"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/agents"
)

// openVault is the vault of path (a file that must be mode 0600 and
// outside the config and root folders), falling back to environment
// variables (envvault); with no path, environment variables alone. scrub
// learns every value both hold now, and the file's again whenever it is
// read, so that no text leaving a back session carries one, resolved or
// not.
func openVault(ctx context.Context, path, configDir, root string, scrub *connector.Scrubber, log *slog.Logger) (connector.Vault, error) {
	var v connector.Vault = envvault.New(envvault.Config{})
	if path != "" {
		fv, err := filevault.New(filevault.Config{Path: path, ConfigDir: configDir, Root: root, Logger: log, Scrubber: scrub})
		if err != nil {
			return nil, fmt.Errorf("vault: %w", err)
		}
		v = connector.Chain{fv, v}
	}
	if err := connector.Learn(ctx, v, scrub); err != nil {
		log.Warn("the vault could not be read at the start; its values are learnt when it is", "err", err)
	}
	level := slog.LevelDebug // said where a vault file is given, whose entries it is about
	if path != "" {
		level = slog.LevelInfo
	}
	log.Log(ctx, level, "connector credentials: a vault entry's owners (or "+envvault.DefaultPrefix+"<ADAPTER>_<ID>__OWNERS) say who may use it; an entry naming none is root's alone")
	return v, nil
}

// httpRegistry registers the adapters a Server offers by default: http.
func httpRegistry(log *slog.Logger) (*connector.Registry, error) {
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

// botConnectors gives back sessions their bot's connectors as tools: it
// reads the bot's record from the store at every list and call, so an edit
// of its connectors map reaches a running session, and a call carries the
// bot's owner and the person the session answers, with their memberships
// as the users directory has them now: the vault entry's owners must hold
// both.
type botConnectors struct {
	store    record.Store
	users    bot.Users // nil: no users directory, everybody is root
	registry *connector.Registry
	vault    connector.Vault
	scrub    *connector.Scrubber
	log      *slog.Logger
}

var _ agents.Connectors = (*botConnectors)(nil)

// tools reads the session's bot's record now and makes its tools; r is
// the record.
func (b *botConnectors) tools(ctx context.Context, s wake.SessionInfo) (t *connector.Tools, r record.Record, err error) {
	id, _, _, ok := wake.BackSession(s.Meta)
	if !ok {
		return nil, record.Record{}, errors.New("the session is no bot's back session")
	}
	e, err := b.store.Get(ctx, id)
	if err != nil {
		return nil, record.Record{}, fmt.Errorf("bot %s: %w", id, err)
	}
	m := e.Record.Connectors
	t, err = connector.NewTools(connector.ToolsConfig{
		Bot: id, Connectors: func() map[string]string { return m },
		Registry: b.registry, Vault: b.vault, Scrubber: b.scrub, Logger: b.log,
	})
	return t, e.Record, err
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
// are one per bot, person and name). A person who may no longer read the
// bot (a membership or grant taken away, the bot given to another owner)
// is refused before the vault is asked.
func (b *botConnectors) Call(ctx context.Context, s wake.SessionInfo, alias string, args json.RawMessage) (connector.Result, error) {
	t, r, err := b.tools(ctx, s)
	if err != nil {
		return connector.Result{}, err
	}
	var users access.Lookup
	if b.users != nil {
		users = b.users
	}
	person := access.OwnerPrincipal(s.Owner, users)
	if !bot.CanRead(person, r) {
		return connector.Result{}, fmt.Errorf("connector %q: %s may no longer read bot://%s: %w", alias, s.Owner, r.ID, connector.ErrDenied)
	}
	return t.Call(ctx, access.OwnerPrincipal(r.Owner, users), person, alias, args)
}
