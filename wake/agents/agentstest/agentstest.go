// Package agentstest is the conformance suite of agents.SessionStore, the port
// that keeps each back session's agent session record: every implementation
// (memsessions.Store, filesessions.Store, a host's own) runs
// RunSessionStore from its tests.
package agentstest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/wake/agents"
)

// SessionStore is an agents.SessionStore under test.
type SessionStore struct {
	// Open returns a store on new, empty storage of its own, for one
	// check. Required.
	Open func(t *testing.T) agents.SessionStore
	// Reopen returns a store on the storage old was opened on. Nil when
	// the storage does not outlive its store (memory): the reopen check is
	// then skipped.
	Reopen func(t *testing.T, old agents.SessionStore) agents.SessionStore
}

// RunSessionStore runs the conformance suite of agents.SessionStore against
// the stores h opens: a record comes back as it was saved (its times to the
// millisecond), keys are apart, a Save replaces, concurrent Saves of different
// keys all stay, and records survive a reopen.
func RunSessionStore(t *testing.T, h SessionStore) {
	if h.Open == nil {
		t.Fatal("agentstest: SessionStore.Open is nil")
	}
	t.Run("SaveThenLoadGivesTheRecordBack", func(t *testing.T) {
		s := h.Open(t)
		for _, r := range []agents.SessionRecord{sample("s-1"), {ID: "s-2", Fresh: true, Reason: agents.ReasonNoLoad}} {
			save(t, s, "key-"+r.ID, r)
			same(t, load(t, s, "key-"+r.ID), r)
		}
	})
	t.Run("LoadOfNoRecordIsNotOK", func(t *testing.T) {
		if r, ok, err := h.Open(t).Load(ctx(t), "motion/user:soft/work"); err != nil || ok {
			t.Fatalf("Load with no record: %+v, %v, %v", r, ok, err)
		}
	})
	t.Run("KeysAreApart", func(t *testing.T) {
		s := h.Open(t)
		keys := []string{"motion/user:soft/work", "motion/user:tess/work", "motion/user:soft/w-2", "a/b/c?&=#%"}
		for i, k := range keys {
			save(t, s, k, sample(fmt.Sprintf("s-%d", i)))
		}
		for i, k := range keys {
			same(t, load(t, s, k), sample(fmt.Sprintf("s-%d", i)))
		}
	})
	t.Run("SaveReplacesTheRecordOfItsKey", func(t *testing.T) {
		s := h.Open(t)
		save(t, s, "k", sample("s-1"))
		r := agents.SessionRecord{ID: "s-2", StartedAt: sample("").StartedAt.Add(time.Hour), Fresh: true, Reason: agents.ReasonLoadFailed + "no such session"}
		save(t, s, "k", r)
		same(t, load(t, s, "k"), r)
	})
	t.Run("ConcurrentSavesOfManyKeysAllStay", func(t *testing.T) {
		s := h.Open(t)
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := s.Save(ctx(t), fmt.Sprintf("k-%d", i), sample(fmt.Sprintf("s-%d", i))); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		for i := range 20 {
			same(t, load(t, s, fmt.Sprintf("k-%d", i)), sample(fmt.Sprintf("s-%d", i)))
		}
	})
	t.Run("RecordsSurviveAReopen", func(t *testing.T) {
		if h.Reopen == nil {
			t.Skip("Store.Reopen is nil: the storage does not outlive its store")
		}
		s := h.Open(t)
		save(t, s, "k", sample("s-1"))
		same(t, load(t, h.Reopen(t, s), "k"), sample("s-1"))
	})
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// sample is a record continued with session/load, its times to the
// millisecond.
func sample(id string) agents.SessionRecord {
	at := time.Date(2026, 11, 30, 9, 0, 0, 123e6, time.UTC)
	return agents.SessionRecord{ID: id, StartedAt: at, LoadedAt: at.Add(time.Hour)}
}

func save(t *testing.T, s agents.SessionStore, key string, r agents.SessionRecord) {
	t.Helper()
	if err := s.Save(ctx(t), key, r); err != nil {
		t.Fatalf("Save %q: %v", key, err)
	}
}

func load(t *testing.T, s agents.SessionStore, key string) agents.SessionRecord {
	t.Helper()
	r, ok, err := s.Load(ctx(t), key)
	if err != nil || !ok {
		t.Fatalf("Load %q: %v, %v", key, ok, err)
	}
	return r
}

func same(t *testing.T, got, want agents.SessionRecord) {
	t.Helper()
	if !got.StartedAt.Equal(want.StartedAt) || !got.LoadedAt.Equal(want.LoadedAt) {
		t.Fatalf("record times %v %v, want %v %v", got.StartedAt, got.LoadedAt, want.StartedAt, want.LoadedAt)
	}
	got.StartedAt, got.LoadedAt = want.StartedAt, want.LoadedAt
	if got != want {
		t.Fatalf("record %+v, want %+v", got, want)
	}
}
