package bot_test

import (
	"context"
	"sync"
	"testing"

	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/memrecord"
)

// racedStore is a memrecord shared with another instance that writes the
// bot, through the store alone, just before each of this instance's next
// `races` updates, as a second server on one database does.
type racedStore struct {
	*memrecord.Store
	mu    sync.Mutex
	races int
	other func(context.Context, *memrecord.Store)
}

func (s *racedStore) Update(ctx context.Context, r record.Record, ifMatch string) (record.Entry, error) {
	s.mu.Lock()
	race := s.races > 0
	if race {
		s.races--
	}
	s.mu.Unlock()
	if race {
		s.other(ctx, s.Store)
	}
	return s.Store.Update(ctx, r, ifMatch)
}

func TestAnEditWithoutAnETagThatLosesARaceIsMergedOntoTheBotAsItBecame(t *testing.T) {
	t.Parallel()
	store := &racedStore{Store: memrecord.New(), races: 3}
	e := newEnv(t, withStore(store), withPersonaIn(bot.PersonaInRecord))
	if _, err := e.svc.Make(ctx(t), soft, "motion", []byte(`{"name":"Motion"}`)); err != nil {
		t.Fatal(err)
	}
	n := 0
	store.other = func(ctx context.Context, s *memrecord.Store) {
		cur, err := s.Get(ctx, "motion")
		if err != nil {
			t.Error(err)
			return
		}
		n++
		cur.Record.Labels = append(cur.Record.Labels, "other")
		if _, err := s.Update(ctx, cur.Record, cur.ETag); err != nil {
			t.Error(err)
		}
	}
	b, err := e.svc.Edit(ctx(t), soft, "motion", []byte(`{"description":"mine"}`), "")
	if err != nil {
		t.Fatalf("an edit without ifMatch that lost %d races: %v", n, err)
	}
	if b.Record.Description != "mine" || len(b.Record.Labels) != 3 {
		t.Fatalf("the edit answered description %q, labels %v: want its own and the other writer's three", b.Record.Description, b.Record.Labels)
	}
	// One with an etag is a conflict at once: the client asked for it.
	store.mu.Lock()
	store.races = 1
	store.mu.Unlock()
	if _, err := e.svc.Edit(ctx(t), soft, "motion", []byte(`{"description":"again"}`), b.ETag); err == nil {
		t.Fatal("an edit with an etag that lost a race went through")
	}
}
