package routetest

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"

	"github.com/agenthost/bots/route/relay"
)

// MemoryHarness opens the relay memories RunMemory checks:
//
//	func TestMemoryConformance(t *testing.T) {
//		routetest.RunMemory(t, routetest.MemoryHarness{
//			Open: func(*testing.T) relay.Memory { return &mymemory.Memory{} },
//		})
//	}
type MemoryHarness struct {
	// Open opens a memory on new storage of its own.
	Open func(t *testing.T) relay.Memory
	// Again opens another memory on the storage of m, as a restart does;
	// nil when the storage does not outlive its memory.
	Again func(t *testing.T, m relay.Memory) relay.Memory
}

// MemoryChecks are RunMemory's checks by name. Each is given a memory and,
// for a storage that outlives it, a way to open that storage again (nil
// otherwise).
var MemoryChecks = map[string]func(t testing.TB, m relay.Memory, again func(relay.Memory) relay.Memory){
	"AKeyNeverWrittenIsNil":                neverWritten,
	"UpdateIsGivenTheValueItReplaces":      updateGivenOld,
	"AnUpdateWhoseFuncFailsWritesNothing":  failedUpdate,
	"ConcurrentUpdatesOfOneKeyLoseNone":    concurrentUpdates,
	"WhatIsWrittenIsReadOnceOpenedAgain":   openedAgain,
	"KeysWithASlashAreApartFromOneAnother": slashKeys,
}

// RunMemory runs every check of MemoryChecks against memories h opens,
// one check at a time.
func RunMemory(t *testing.T, h MemoryHarness) {
	for name, check := range MemoryChecks {
		t.Run(name, func(t *testing.T) {
			var again func(relay.Memory) relay.Memory
			if h.Again != nil {
				again = func(m relay.Memory) relay.Memory { return h.Again(t, m) }
			}
			check(t, h.Open(t), again)
		})
	}
}

// set writes value at key through Update.
func set(t testing.TB, m relay.Memory, key, value string) {
	t.Helper()
	if err := m.Update(context.Background(), key, func([]byte) ([]byte, error) { return []byte(value), nil }); err != nil {
		t.Fatalf("Update %s: %v", key, err)
	}
}

// get reads key, "<nil>" when it has no value.
func get(t testing.TB, m relay.Memory, key string) string {
	t.Helper()
	v, err := m.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get %s: %v", key, err)
	}
	if v == nil {
		return "<nil>"
	}
	return string(v)
}

func neverWritten(t testing.TB, m relay.Memory, _ func(relay.Memory) relay.Memory) {
	if got := get(t, m, "conn/libera"); got != "<nil>" {
		t.Errorf("a key never written reads %q, want nil", got)
	}
}

func updateGivenOld(t testing.TB, m relay.Memory, _ func(relay.Memory) relay.Memory) {
	var seen []string
	for _, v := range []string{`{"n":1}`, `{"n":2}`} {
		err := m.Update(context.Background(), "pairings", func(old []byte) ([]byte, error) {
			if old == nil {
				seen = append(seen, "<nil>")
			} else {
				seen = append(seen, string(old))
			}
			return []byte(v), nil
		})
		if err != nil {
			t.Fatalf("Update: %v", err)
		}
	}
	if len(seen) != 2 || seen[0] != "<nil>" || seen[1] != `{"n":1}` {
		t.Errorf("the updates were given %q, want nil then the first one's value", seen)
	}
	if got := get(t, m, "pairings"); got != `{"n":2}` {
		t.Errorf("after two updates the key reads %q", got)
	}
}

func failedUpdate(t testing.TB, m relay.Memory, _ func(relay.Memory) relay.Memory) {
	set(t, m, "codes", "kept")
	refused := errors.New("no such code")
	err := m.Update(context.Background(), "codes", func([]byte) ([]byte, error) { return []byte("written anyway"), refused })
	if !errors.Is(err, refused) {
		t.Errorf("an update whose func failed answered %v, want its error", err)
	}
	if got := get(t, m, "codes"); got != "kept" {
		t.Errorf("after a failed update the key reads %q, want what it held", got)
	}
}

func concurrentUpdates(t testing.TB, m relay.Memory, _ func(relay.Memory) relay.Memory) {
	const writers, each = 8, 10
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range each {
				err := m.Update(context.Background(), "conn/count", func(old []byte) ([]byte, error) {
					n, _ := strconv.Atoi(string(old))
					return []byte(strconv.Itoa(n + 1)), nil
				})
				if err != nil {
					t.Errorf("Update: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got, want := get(t, m, "conn/count"), strconv.Itoa(writers*each); got != want {
		t.Errorf("after %s updates by %d goroutines the count is %s", want, writers, got)
	}
}

func openedAgain(t testing.TB, m relay.Memory, again func(relay.Memory) relay.Memory) {
	if again == nil {
		t.Skip("MemoryHarness.Again is nil: the storage ends with its memory")
	}
	set(t, m, "conn/libera", "chats")
	if got := get(t, again(m), "conn/libera"); got != "chats" {
		t.Errorf("opened again, the key reads %q", got)
	}
}

func slashKeys(t testing.TB, m relay.Memory, _ func(relay.Memory) relay.Memory) {
	set(t, m, "conn/libera", "a")
	set(t, m, "conn/oftc", "b")
	if a, b := get(t, m, "conn/libera"), get(t, m, "conn/oftc"); a != "a" || b != "b" {
		t.Errorf("two keys read %q and %q, want a and b", a, b)
	}
}
