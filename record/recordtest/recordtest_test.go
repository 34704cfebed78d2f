package recordtest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/internal/checktest"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/memrecord"
)

// lossyStore is a store whose change feed buffers a fixed number of
// changes and drops the rest while its reader is slow: the kind of store
// the suite must refuse. Each write hands its change to the buffers before
// it returns, so what is lost does not depend on timing.
type lossyStore struct {
	*memrecord.Store
	buffer int

	mu   sync.Mutex
	subs []chan record.Change
}

func newLossy(buffer int) *lossyStore {
	return &lossyStore{Store: memrecord.New(), buffer: buffer}
}

func (s *lossyStore) publish(c record.Change) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ch := range s.subs {
		select {
		case ch <- c:
		default: // full: the change is lost
		}
	}
}

func (s *lossyStore) Create(ctx context.Context, r record.Record) (record.Entry, error) {
	e, err := s.Store.Create(ctx, r)
	if err == nil {
		s.publish(record.Change{Kind: record.Created, ID: r.ID, Entry: e})
	}
	return e, err
}

func (s *lossyStore) Update(ctx context.Context, r record.Record, ifMatch string) (record.Entry, error) {
	e, err := s.Store.Update(ctx, r, ifMatch)
	if err == nil {
		s.publish(record.Change{Kind: record.Updated, ID: r.ID, Entry: e})
	}
	return e, err
}

func (s *lossyStore) Watch(ctx context.Context) (<-chan record.Change, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan record.Change, s.buffer)
	s.subs = append(s.subs, ch)
	return ch, nil
}

// run runs check against s and answers what it reported. A change the
// check waits for a second without hearing is lost.
func run(t *testing.T, check func(testing.TB, record.Store), s record.Store) []string {
	defer func(was time.Duration) { waitFor = was }(waitFor)
	waitFor = time.Second
	return checktest.Failures(t, func(t testing.TB) { check(t, s) })
}

func TestWatchCheckFailsAStoreThatDropsChangesPastABuffer(t *testing.T) {
	s := newLossy(1000)
	defer s.Close()
	msgs := run(t, testWatchSlow, s)
	if len(msgs) == 0 {
		t.Fatal("the watch check passed a store that keeps only 1000 changes for a slow reader")
	}
	t.Logf("the check said: %s", msgs[0])
}

func TestWatchCheckPassesAStoreThatKeepsEveryChange(t *testing.T) {
	s := memrecord.New()
	defer s.Close()
	if msgs := run(t, testWatchSlow, s); len(msgs) != 0 {
		t.Fatalf("the watch check failed memrecord: %v", msgs)
	}
}

func TestWatchCheckNeedsEveryOneOfItsChanges(t *testing.T) {
	// A buffer as big as the check's burst hides the loss from it; one
	// change fewer does not.
	s := newLossy(WatchChanges)
	defer s.Close()
	if msgs := run(t, testWatchSlow, s); len(msgs) != 0 {
		t.Fatalf("the watch check failed a store whose buffer holds all %d changes: %v", WatchChanges, msgs)
	}
	s2 := newLossy(WatchChanges - 1)
	defer s2.Close()
	if msgs := run(t, testWatchSlow, s2); len(msgs) == 0 {
		t.Fatalf("the watch check passed a store whose buffer holds %d changes", WatchChanges-1)
	}
}

// sharingStore hands every Get of a bot the one entry it keeps for it: a
// caller's change to what one Get returned reaches the next.
type sharingStore struct {
	*memrecord.Store
	mu   sync.Mutex
	kept map[string]record.Entry
}

func (s *sharingStore) Get(ctx context.Context, id string) (record.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.kept[id]; ok {
		return e, nil
	}
	e, err := s.Store.Get(ctx, id)
	if err == nil {
		s.kept[id] = e
	}
	return e, err
}

func TestCopiesCheckFailsAStoreThatHandsOutWhatItKeepsSayingSo(t *testing.T) {
	s := &sharingStore{Store: memrecord.New(), kept: map[string]record.Entry{}}
	defer s.Close()
	msgs := run(t, testCopies, s)
	if len(msgs) == 0 || !strings.Contains(msgs[0], "copies of its own") {
		t.Fatalf("the copies check said %q of a store that hands out what it keeps, want it to say the store must keep copies", msgs)
	}
}
