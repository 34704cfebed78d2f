package bot_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/memrecord"
)

// The people of the tests.
var (
	soft   = access.Principal{User: "soft", Grants: []string{"bot:put", "session:create"}, Memberships: []string{"backend", "shop:website"}}
	mate   = access.Principal{User: "mate", Memberships: []string{"backend"}}
	viewer = access.Principal{User: "viewer", Grants: []string{"bot:get"}}
	lister = access.Principal{User: "lister", Grants: []string{"bot:list"}}
	admin  = access.Principal{User: "admin", Grants: []string{"*:*"}}
	nobody = access.Principal{User: "nobody"}
	maker  = access.Principal{User: "maker", Grants: []string{"bot:write"}}
	root   = access.RootPrincipal()
)

type env struct {
	svc       *bot.Service
	store     record.Store
	root      string
	configDir string
}

type option func(*bot.Config)

func withPersonaIn(p bot.PersonaIn) option { return func(c *bot.Config) { c.PersonaIn = p } }
func withStore(s record.Store) option      { return func(c *bot.Config) { c.Store = s } }

// withOptions sets the plugin options. Options that name no root keep the
// test's temporary one: an empty root would be ~/.bots, the user's own.
func withOptions(o bot.Options) option {
	return func(c *bot.Config) {
		if o.Root == "" {
			o.Root = c.Options.Root
		}
		c.Options = o
	}
}
func withConfigDir(dir string) option     { return func(c *bot.Config) { c.ConfigDir = dir } }
func withNow(now func() time.Time) option { return func(c *bot.Config) { c.Now = now } }

// newEnv returns a service over memrecord that keeps personas in AGENTS.md
// files, in temp folders.
func newEnv(t *testing.T, opts ...option) *env {
	t.Helper()
	base := t.TempDir()
	cfg := bot.Config{
		Store:     memrecord.New(),
		ConfigDir: filepath.Join(base, "config"),
		HostName:  "testhost",
		Options:   bot.Options{Root: filepath.Join(base, "bots")},
		PersonaIn: bot.PersonaInFiles,
	}
	for _, o := range opts {
		o(&cfg)
	}
	svc, err := bot.New(ctx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		svc.Close()
		cfg.Store.Close()
	})
	if rel, err := filepath.Rel(os.TempDir(), svc.Root()); err != nil || strings.HasPrefix(rel, "..") {
		t.Fatalf("the service works under %s, outside the temporary folders: a test must never write into the user's own", svc.Root())
	}
	return &env{svc: svc, store: cfg.Store, root: svc.Root(), configDir: cfg.ConfigDir}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func (e *env) make(t *testing.T, p access.Principal, id, body string) bot.Bot {
	t.Helper()
	b, err := e.svc.Make(ctx(t), p, id, []byte(body))
	if err != nil {
		t.Fatalf("Make(%s, %s): %v", id, body, err)
	}
	return b
}

func (e *env) edit(t *testing.T, p access.Principal, id, body string) bot.Bot {
	t.Helper()
	b, err := e.svc.Edit(ctx(t), p, id, []byte(body), "")
	if err != nil {
		t.Fatalf("Edit(%s, %s): %v", id, body, err)
	}
	return b
}

func (e *env) read(t *testing.T, p access.Principal, id string) bot.Bot {
	t.Helper()
	b, err := e.svc.Read(ctx(t), p, id)
	if err != nil {
		t.Fatalf("Read(%s): %v", id, err)
	}
	return b
}

// wantCode checks that err carries code and that its message names every
// one of names.
func wantCode(t *testing.T, err error, code errcode.Code, names ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("succeeded, want %v", code)
	}
	if got := errcode.Of(err); got != code {
		t.Fatalf("code %v (%v), want %v", got, err, code)
	}
	msg := errcode.Message(err)
	for _, n := range names {
		if !strings.Contains(msg, n) {
			t.Errorf("message %q does not name %q", msg, n)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return !errors.Is(err, os.ErrNotExist)
}
