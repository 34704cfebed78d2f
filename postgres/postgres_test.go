package postgres_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agenthost/bots"
	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/internal/pgtest"
	"github.com/agenthost/bots/postgres"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/pgrecord"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestServersOnOneDatabaseShareTheirBotsAndRefuseARootOfTheirOwn(t *testing.T) {
	ctx := t.Context()
	db, base := pgtest.URL(t), t.TempDir()
	root := filepath.Join(base, "bots")
	on := func(name, root string) *bots.Server {
		s := &bots.Server{ConfigDir: filepath.Join(base, name), HostName: "test", Options: bot.Options{Root: root}, Database: postgres.Database{URL: db}}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := on("a", root), on("b", root)
	for _, s := range []*bots.Server{a, b} {
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Service().Make(ctx, access.RootPrincipal(), "motion", []byte(`{"name":"Motion"}`)); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Service().Read(ctx, access.RootPrincipal(), "motion"); err != nil || got.Record.Name != "Motion" {
		t.Fatalf("the other server reads %+v, %v", got.Record, err)
	}
	err := on("c", filepath.Join(base, "elsewhere")).Start(ctx)
	if !errors.Is(err, pgrecord.ErrRootNotShared) {
		t.Fatalf("a server whose root is not the shared one started: %v", err)
	}
	// The server closes the store it opened.
	store := a.Service().Store()
	a.Close()
	if _, err := store.Get(ctx, "motion"); !errors.Is(err, record.ErrClosed) {
		t.Errorf("the database store answers %v after Close, want ErrClosed", err)
	}
}
