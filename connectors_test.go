package bots

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/connector"
	"github.com/agenthost/bots/connector/envvault"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/memrecord"
	"github.com/agenthost/bots/wake"
)

func TestVaultFileIsRefusedNotMode0600OrInsideConfigOrRoot(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	config, root, outside := filepath.Join(base, "config"), filepath.Join(base, "root"), filepath.Join(base, "secrets")
	for _, d := range []string{config, root, outside} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path string, mode os.FileMode) string {
		if err := os.WriteFile(path, []byte(`{"connectors": {"http/crm": {"value": "tok-123456"}}}`), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	log := slog.New(slog.DiscardHandler)
	for name, path := range map[string]string{
		"mode 0644": write(filepath.Join(outside, "open.json"), 0o644),
		"in config": write(filepath.Join(config, "vault.json"), 0o600),
		"in root":   write(filepath.Join(root, "vault.json"), 0o600),
		"no file":   filepath.Join(outside, "none.json"),
	} {
		_, err := openVault(context.Background(), path, config, root, &connector.Scrubber{}, log)
		if !errors.Is(err, connector.ErrVault) {
			t.Errorf("%s: err = %v, want a refusal", name, err)
		} else if strings.Contains(err.Error(), "tok-123456") {
			t.Errorf("%s: the refusal holds the value: %v", name, err)
		}
	}
	v, err := openVault(context.Background(), write(filepath.Join(outside, "vault.json"), 0o600), config, root, &connector.Scrubber{}, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if c, err := v.Resolve(ctx, connector.Ref{Adapter: "http", ID: "crm"}); err != nil || c.Value() != "tok-123456" {
		t.Errorf("resolve from the file: %v, %v", c, err)
	}
}

func TestVaultFallsBackToEnvironmentVariables(t *testing.T) {
	t.Setenv("BOTS_CONNECTOR_HTTP_MAIL", "env-token-1")
	dir := t.TempDir()
	path := filepath.Join(dir, "vault.json")
	if err := os.WriteFile(path, []byte(`{"connectors": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, p := range []string{path, ""} {
		v, err := openVault(context.Background(), p, filepath.Join(dir, "config"), filepath.Join(dir, "root"), &connector.Scrubber{}, log)
		if err != nil {
			t.Fatal(err)
		}
		if c, err := v.Resolve(ctx, connector.Ref{Adapter: "http", ID: "mail"}); err != nil || c.Value() != "env-token-1" {
			t.Errorf("vault %q: resolve = %v, %v", p, c, err)
		}
		if _, err := v.Resolve(ctx, connector.Ref{Adapter: "http", ID: "none"}); !errors.Is(err, connector.ErrNoCredential) {
			t.Errorf("vault %q: an unknown connector: %v", p, err)
		}
	}
}

// usersNow is a users directory whose memberships a test changes.
type usersNow struct {
	mu    sync.Mutex
	users map[string]access.Principal
}

func (u *usersNow) Authenticate(string) (access.Principal, bool) { return access.Principal{}, false }

func (u *usersNow) Principal(id string) (access.Principal, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	p, ok := u.users[id]
	return p, ok
}

func (u *usersNow) set(id string, p *access.Principal) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if p == nil {
		delete(u.users, id)
		return
	}
	u.users[id] = *p
}

// recordingAdapter counts the calls that reach it.
type recordingAdapter struct {
	mu    sync.Mutex
	calls int
}

func (a *recordingAdapter) Call(context.Context, connector.Call) (connector.Result, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls++
	return connector.Result{Text: "ok"}, nil
}

// TestConnectorCallAsksTheUsersFileNow: a Server checks a call against
// the bot's owner (from its record) and the person the back session
// answers, with their memberships as the users file has them at the call:
// a person who leaves the team loses the connector at once, a person the
// file drops loses every connector, and a team-owned bot may use its
// team's entries.
func TestConnectorCallAsksTheUsersFileNow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := memrecord.New()
	for id, owner := range map[string]string{"motion": "user:soft", "shared": "team:backend"} {
		if _, err := store.Create(ctx, record.Record{ID: id, Name: id, Session: record.DefaultSession, Owner: owner,
			Connectors: map[string]string{"crm": "connectors://rec/crm"}, CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	users := &usersNow{users: map[string]access.Principal{
		"soft": {User: "soft", Memberships: []string{"backend"}},
		"tess": {User: "tess", Grants: []string{"bot:get"}, Memberships: []string{"backend"}},
	}}
	reg := &connector.Registry{}
	adapter := &recordingAdapter{}
	if err := reg.Register("rec", adapter); err != nil {
		t.Fatal(err)
	}
	vault := envvault.New(envvault.Config{Lookup: func(k string) (string, bool) {
		return map[string]string{"BOTS_CONNECTOR_REC_CRM": "tok-now-123456", "BOTS_CONNECTOR_REC_CRM__OWNERS": "team:backend"}[k], strings.HasPrefix(k, "BOTS_CONNECTOR_REC_CRM")
	}})
	b := &botConnectors{store: store, users: users, registry: reg, vault: vault, scrub: &connector.Scrubber{}, log: slog.New(slog.DiscardHandler)}
	session := func(bot, person string) wake.SessionInfo {
		return wake.SessionInfo{Owner: person, Meta: map[string]any{wake.BackSessionMeta: map[string]any{"bot": bot, "person": person, "name": "default"}}}
	}
	call := func(bot, person string) error {
		_, err := b.Call(ctx, session(bot, person), "crm", nil)
		return err
	}
	if err := call("motion", "user:tess"); err != nil {
		t.Fatalf("a member of the entry's team was refused: %v", err)
	}
	if err := call("shared", "user:tess"); err != nil {
		t.Fatalf("a team-owned bot was refused its team's entry: %v", err)
	}
	users.set("tess", &access.Principal{User: "tess", Grants: []string{"bot:get"}})
	if err := call("motion", "user:tess"); !errors.Is(err, connector.ErrDenied) || !strings.Contains(err.Error(), `connector "crm"`) {
		t.Errorf("after tess left the team: %v, want refused", err)
	}
	users.set("tess", &access.Principal{User: "tess", Grants: []string{"bot:get"}, Memberships: []string{"backend"}})
	users.set("soft", nil)
	if err := call("motion", "user:tess"); !errors.Is(err, connector.ErrDenied) || !strings.Contains(err.Error(), "this bot's owner") {
		t.Errorf("after the owner left the users file: %v, want refused", err)
	}
	if adapter.calls != 2 {
		t.Errorf("%d calls reached the adapter, want 2", adapter.calls)
	}
}

// TestConnectorCallIsRefusedToAPersonWhoMayNoLongerReadTheBot: a call on
// a person's behalf is refused, before the vault is asked, from the
// moment they may no longer read the session's bot - their team
// membership taken away, their bot:get grant taken away, the bot given
// to another owner - even with a vault entry that is theirs.
func TestConnectorCallIsRefusedToAPersonWhoMayNoLongerReadTheBot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := memrecord.New()
	for id, owner := range map[string]string{"team-bot": "team:backend", "soft-bot": "user:soft", "tess-bot": "user:tess"} {
		if _, err := store.Create(ctx, record.Record{ID: id, Name: id, Session: record.DefaultSession, Owner: owner,
			Connectors: map[string]string{"crm": "connectors://rec/crm"}, CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	member := access.Principal{User: "tess", Grants: []string{"bot:get"}, Memberships: []string{"backend"}}
	users := &usersNow{users: map[string]access.Principal{"soft": {User: "soft", Memberships: []string{"backend"}}, "tess": member}}
	reg := &connector.Registry{}
	adapter := &recordingAdapter{}
	if err := reg.Register("rec", adapter); err != nil {
		t.Fatal(err)
	}
	vault := envvault.New(envvault.Config{Lookup: func(k string) (string, bool) {
		return map[string]string{"BOTS_CONNECTOR_REC_CRM": "tok-now-123456", "BOTS_CONNECTOR_REC_CRM__OWNERS": "*"}[k], strings.HasPrefix(k, "BOTS_CONNECTOR_REC_CRM")
	}})
	b := &botConnectors{store: store, users: users, registry: reg, vault: vault, scrub: &connector.Scrubber{}, log: slog.New(slog.DiscardHandler)}
	call := func(bot string) error {
		_, err := b.Call(ctx, wake.SessionInfo{Owner: "user:tess", Meta: map[string]any{wake.BackSessionMeta: map[string]any{"bot": bot, "person": "user:tess", "name": "default"}}}, "crm", nil)
		return err
	}
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, connector.ErrDenied) || !strings.Contains(err.Error(), "may no longer read") {
			t.Errorf("%s: %v, want refused because tess may no longer read the bot", what, err)
		}
	}
	for _, bot := range []string{"team-bot", "soft-bot", "tess-bot"} {
		if err := call(bot); err != nil {
			t.Fatalf("%s while tess may read it: %v", bot, err)
		}
	}
	users.set("tess", &access.Principal{User: "tess", Grants: []string{"bot:get"}})
	if err := call("team-bot"); err != nil {
		t.Errorf("with bot:get, the team's bot after leaving the team: %v, want it allowed", err)
	}
	users.set("tess", &access.Principal{User: "tess", Memberships: []string{"backend"}})
	refused("soft's bot after bot:get was taken away", call("soft-bot"))
	users.set("tess", &access.Principal{User: "tess"})
	refused("the team's bot after leaving the team", call("team-bot"))
	e, err := store.Get(ctx, "tess-bot")
	if err != nil {
		t.Fatal(err)
	}
	e.Record.Owner = "user:soft"
	if _, err := store.Update(ctx, e.Record, e.ETag); err != nil {
		t.Fatal(err)
	}
	refused("her bot given to soft", call("tess-bot"))
	if adapter.calls != 4 {
		t.Errorf("%d calls reached the adapter, want the 4 made while tess could read the bot", adapter.calls)
	}
}
