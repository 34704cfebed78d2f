package replica_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/chatlog/memchatlog"
	"github.com/agenthost/bots/replica"
)

// follower records what Follow tells it, holding the logs of held.
type follower struct {
	told chan string
	held []chatlog.Key
}

func (f follower) Heard(ctx context.Context, key chatlog.Key, n int64) {
	f.told <- fmt.Sprintf("heard %s %d", key.Session, n)
}

func (f follower) Held() []chatlog.Key { return f.held }

func TestFollowTellsEveryWriteAndAfterAGapEveryLog(t *testing.T) {
	t.Parallel()
	mem, a, _ := opened(t)
	other := chatlog.Key{Kind: chatlog.Back, Bot: "tess", Session: "ahp-session:/b1"}
	if err := mem.Create(t.Context(), other, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	gone := chatlog.Key{Kind: chatlog.Chat, Bot: "tess", Session: "ahp-session:/gone"}
	f := follower{told: make(chan string, 8), held: []chatlog.Key{gone}}
	ctx, cancel := context.WithCancel(t.Context())
	ended := make(chan error, 1)
	go func() { ended <- replica.Follow(ctx, mem, chatlog.Chat, f, nil) }()
	next := func(want string) {
		t.Helper()
		select {
		case got := <-f.told:
			if got != want {
				t.Fatalf("Follow told %q, want %q", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Follow told nothing; want %q", want)
		}
	}
	// The gap of the start: the log held and removed meanwhile, then the
	// one it does not hold (the back session's log is another kind).
	next("heard ahp-session:/gone 0")
	next("heard ahp-session:/c1 1")
	if err := a.Append(t.Context(), []byte(`{}`), false); err != nil {
		t.Fatal(err)
	}
	next("heard ahp-session:/c1 2")
	if err := mem.Append(t.Context(), other, []byte(`{}`), false); err != nil {
		t.Fatal(err)
	}
	if err := mem.Remove(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	next("heard ahp-session:/c1 0")
	cancel()
	if err := <-ended; err != nil {
		t.Fatalf("Follow ended with %v once its context ended, want nil", err)
	}
}

// racingHeads is a shared log store whose Heads answers the counts as
// they were read, and then runs made: a log made while the counts were
// read is not in them.
type racingHeads struct {
	*memchatlog.Logs
	made func()
}

func (r racingHeads) Heads(ctx context.Context, kind chatlog.Kind) (map[chatlog.Key]int64, error) {
	heads, err := r.Logs.Heads(ctx, kind)
	r.made()
	return heads, err
}

// holding is a follower whose held logs change as the test makes them.
type holding struct {
	told chan string
	mu   sync.Mutex
	held []chatlog.Key
}

func (h *holding) Heard(ctx context.Context, key chatlog.Key, n int64) {
	h.told <- fmt.Sprintf("heard %s %d", key.Session, n)
}

func (h *holding) Held() []chatlog.Key {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.held)
}

func TestALogMadeWhileAGapIsReadIsNotToldRemoved(t *testing.T) {
	t.Parallel()
	mem, _, _ := opened(t)
	h := &holding{told: make(chan string, 8), held: []chatlog.Key{key}}
	made := chatlog.Key{Kind: chatlog.Chat, Bot: "tess", Session: "ahp-session:/new"}
	var once sync.Once
	sh := racingHeads{Logs: mem, made: func() {
		once.Do(func() {
			if err := mem.Create(t.Context(), made, []byte(`{}`)); err != nil {
				t.Error(err)
			}
			h.mu.Lock()
			h.held = append(h.held, made)
			h.mu.Unlock()
		})
	}}
	ctx, cancel := context.WithCancel(t.Context())
	ended := make(chan error, 1)
	go func() { ended <- replica.Follow(ctx, sh, chatlog.Chat, h, nil) }()
	if got := <-h.told; got != "heard ahp-session:/c1 1" {
		t.Fatalf("Follow told %q first, want the log held before the gap", got)
	}
	// The log made meanwhile is told of by its write, not as removed.
	select {
	case got := <-h.told:
		if got != "heard ahp-session:/new 1" {
			t.Fatalf("Follow told %q of the log made while the gap was read, want its write (1 line)", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Follow told nothing of the log made while the gap was read")
	}
	cancel()
	if err := <-ended; err != nil {
		t.Fatalf("Follow ended with %v, want nil", err)
	}
}
