package bot

import (
	"context"
	"fmt"
	"testing"

	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/memrecord"
)

func localBot(id, dir string) record.Record {
	return record.Record{ID: id, Name: "B", Owner: "user:soft", Workspace: dir}
}

func wantTaken(t *testing.T, x *folderIndex, id, dir, wantOther, wantDir string) {
	t.Helper()
	other, otherDir, ok := x.takenBy(id, dir)
	if wantOther == "" {
		if ok {
			t.Fatalf("takenBy(%s, %s) = %s in %s, want free", id, dir, other, otherDir)
		}
		return
	}
	if !ok || other != wantOther || otherDir != wantDir {
		t.Fatalf("takenBy(%s, %s) = %q, %q, %v; want %s in %s", id, dir, other, otherDir, ok, wantOther, wantDir)
	}
}

func TestFolderIndexFollowsEditsDeletesAndMovesToAComputer(t *testing.T) {
	t.Parallel()
	store := memrecord.New()
	defer store.Close()
	ctx := t.Context()
	if _, err := store.Create(ctx, localBot("old", "/r/old")); err != nil {
		t.Fatal(err)
	}
	x, err := startFolderIndex(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	defer x.stop()
	wantTaken(t, x, "new", "/r/old", "old", "/r/old")

	if _, err := store.Create(ctx, localBot("b", "/r/b")); err != nil {
		t.Fatal(err)
	}
	waitTaken(t, x, "/r/b", true)
	moved := localBot("b", "/r/b")
	moved.Computer = "box"
	if _, err := store.Update(ctx, moved, ""); err != nil {
		t.Fatal(err)
	}
	waitTaken(t, x, "/r/b", false)
	if err := store.Delete(ctx, "old", ""); err != nil {
		t.Fatal(err)
	}
	// The tombstone keeps the slug, not the folder.
	waitTaken(t, x, "/r/old", false)
}

// waitTaken waits until the index says dir is taken (or free), as the
// feed it follows arrives a moment after each write.
func waitTaken(t *testing.T, x *folderIndex, dir string, taken bool) {
	t.Helper()
	waittest.For(t, fmt.Sprintf("%s taken to be %v", dir, taken), func() bool {
		_, _, ok := x.takenBy("someone-else", dir)
		return ok == taken
	})
}

func TestFolderIndexHoldsAClaimUntilTheFeedDeliversItsWrite(t *testing.T) {
	t.Parallel()
	x := newFolderIndex()
	x.claim("b", `"1"`, localBot("b", "/r/b"))
	wantTaken(t, x, "c", "/r/b", "b", "/r/b")
	// A change of b the feed delivers before the claimed write does not
	// drop the claim.
	x.apply(record.Change{Kind: record.Updated, ID: "b", Entry: record.Entry{ETag: `"0"`, Record: record.Record{ID: "b", Computer: "box"}}})
	wantTaken(t, x, "c", "/r/b", "b", "/r/b")
	x.apply(record.Change{Kind: record.Updated, ID: "b", Entry: record.Entry{ETag: `"1"`, Record: localBot("b", "/r/b")}})
	wantTaken(t, x, "c", "/r/b", "b", "/r/b")
	if len(x.pending) != 0 {
		t.Fatalf("pending %v after the feed delivered the write", x.pending)
	}
	x.apply(record.Change{Kind: record.Deleted, ID: "b"})
	wantTaken(t, x, "c", "/r/b", "", "")
	if n := x.claims.Len(); n != 0 {
		t.Fatalf("the index keeps %d claims after every bot left", n)
	}
}

func TestFolderIndexStopEndsTheFollower(t *testing.T) {
	t.Parallel()
	store := memrecord.New()
	defer store.Close()
	x, err := startFolderIndex(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	x.stop()
	x.stop()
	select {
	case <-x.done:
	default:
		t.Fatal("the follower is still running")
	}
}

func TestFolderIndexAwaitReturnsOnceTheChangeIsApplied(t *testing.T) {
	t.Parallel()
	x := newFolderIndex()
	done := make(chan struct{})
	go func() {
		x.await(t.Context(), "b", "")
		close(done)
	}()
	x.apply(record.Change{Kind: record.Updated, ID: "b", Entry: record.Entry{ETag: `"1"`, Record: localBot("b", "/r/b")}})
	select {
	case <-done:
		t.Fatal("await returned before the deletion was applied")
	default:
	}
	x.apply(record.Change{Kind: record.Deleted, ID: "b"})
	<-done
	x.await(t.Context(), "b", `"1"`) // applied before: returns at once
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	x.await(ctx, "c", `"9"`) // never applied: returns with ctx
	if len(x.waiters) != 0 {
		t.Fatalf("waiters left: %v", x.waiters)
	}
}
