package catalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestAwaitReturnsOnceTheCatalogueHoldsTheChangeSoASubscribeSeesIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	ctx := context.Background()

	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := e.cat.Await(short, "alpha", "e1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Await of a change not made answered %v, want the context's deadline", err)
	}
	e.cat.mu.Lock()
	n := len(e.cat.waiters)
	e.cat.mu.Unlock()
	if n != 0 {
		t.Errorf("a waiter whose context ended is kept: %d", n)
	}

	for i := range 200 {
		id := fmt.Sprintf("bot%d", i)
		e.src.putTagged(bot(id, "user:alice"), "e1")
		if err := e.cat.Await(ctx, id, "e1"); err != nil {
			t.Fatal(err)
		}
		if got := botIDs(t, e.dial("alice").subscribe(URI).State); !slices.Contains(got, id) {
			t.Fatalf("iteration %d: the snapshot after Await lacks %s: %v", i, id, got)
		}
		e.src.del(id)
		if err := e.cat.Await(ctx, id, ""); err != nil {
			t.Fatal(err)
		}
		if got := botIDs(t, e.dial("alice").subscribe(URI).State); slices.Contains(got, id) {
			t.Fatalf("iteration %d: the snapshot after Await of the delete has %s", i, id)
		}
	}
	if err := e.cat.Await(ctx, "bot0", ""); err != nil {
		t.Errorf("Await of a change applied long ago answered %v", err)
	}
	e.cat.Close()
	if err := e.cat.Await(ctx, "never", "e9"); err != nil {
		t.Errorf("Await on a closed catalogue answered %v, want nil at once", err)
	}
}
