package bot_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/memrecord"
)

// closeCounting is a store that counts its Closes.
type closeCounting struct {
	*memrecord.Store
	closes atomic.Int32
}

func (s *closeCounting) Close() error {
	s.closes.Add(1)
	return s.Store.Close()
}

// refusingHost is a host whose registry refuses everything.
type refusingHost struct{ dir string }

func (h refusingHost) BotConfig() bot.Config {
	return bot.Config{ConfigDir: filepath.Join(h.dir, "config"), HostName: "my-host"}
}
func (refusingHost) RegisterResourceProvider(string, engine.ResourceProvider) error {
	return errors.New("refused")
}
func (refusingHost) RegisterChannel(string, func(context.Context, engine.Caller, string) (engine.Channel, error)) error {
	return errors.New("refused")
}
func (refusingHost) SetMeta(string, any) error { return errors.New("refused") }

func TestApplyClosesTheStoreItOpenedWhenNewFails(t *testing.T) {
	store := &closeCounting{Store: memrecord.New()}
	open := func(context.Context, bot.Config) (record.Store, error) { return store, nil }
	dir := t.TempDir()
	_, err := bot.ApplyOpening(ctx(t), refusingHost{dir}, bot.Options{Root: filepath.Join(dir, "bots"), AskIn: "elsewhere"}, open)
	if err == nil {
		t.Fatal("Apply took an unknown askIn")
	}
	if n := store.closes.Load(); n != 1 {
		t.Fatalf("the store Apply opened was closed %d times after New failed, want 1", n)
	}
}

func TestApplyClosesTheStoreItOpenedWhenTheHostRefuses(t *testing.T) {
	store := &closeCounting{Store: memrecord.New()}
	open := func(context.Context, bot.Config) (record.Store, error) { return store, nil }
	dir := t.TempDir()
	if _, err := bot.ApplyOpening(ctx(t), refusingHost{dir}, bot.Options{Root: filepath.Join(dir, "bots")}, open); err == nil {
		t.Fatal("Apply succeeded on a host that refuses every registration")
	}
	if n := store.closes.Load(); n < 1 {
		t.Fatal("the store Apply opened was left open after the host refused")
	}
}
