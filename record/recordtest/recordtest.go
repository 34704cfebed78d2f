// Package recordtest is the conformance suite of record.Store: every
// implementation runs it from its own tests, so that "works in memory"
// means "works on disk" and "works in a database".
//
// A store's test hands Run a Harness: Open opens a store on new, empty
// storage of its own (a fresh folder, a fresh schema), and Reopen, when the
// storage outlives its store, opens another store on the storage of one the
// suite has closed:
//
//	func TestConformance(t *testing.T) {
//		dirs := map[record.Store]string{}
//		recordtest.Run(t, recordtest.Harness{
//			Open: func(t *testing.T) (record.Store, error) {
//				dir := t.TempDir()
//				s, err := mystore.Open(dir)
//				dirs[s] = dir
//				return s, err
//			},
//			Reopen: func(t *testing.T, old record.Store) (record.Store, error) {
//				return mystore.Open(dirs[old])
//			},
//		})
//	}
//
// The suite checks every method's contract as record.Store documents it:
// the sentinel errors, etags, tombstones, copies, concurrent writers, Close;
// that records, etags and tombstones survive a reopen; a change feed that
// hears 10,000 changes in order from a reader that reads none of them until
// the last write returned (a store that drops changes past a buffer fails
// it); and record.Filterer and record.SharedLister, when the store
// implements them. Run's subtests
// run one after the other (Harness functions need no locking) and the suite
// closes every store it opens.
package recordtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agenthost/bots/record"
)

// Harness opens the stores the suite runs against.
type Harness struct {
	// Open opens a store on new, empty storage of its own, for one test.
	// Required.
	Open func(t *testing.T) (record.Store, error)
	// Reopen opens a new store on the storage the store old was opened on
	// (by Open or by Reopen), after the suite has closed old. Nil when the
	// storage does not outlive its store, as memory does not: the reopen
	// checks are then skipped.
	Reopen func(t *testing.T, old record.Store) (record.Store, error)
}

// WatchChanges is how many changes the suite's change feed check makes
// before it reads the first.
const WatchChanges = 10_000

// waitFor bounds every wait on a change feed; the suite's own tests
// shorten it to see a lost change quickly.
var waitFor = 30 * time.Second

// check is one conformance check, run on a store of its own.
type check struct {
	name string
	fn   func(testing.TB, record.Store)
}

var checks = []check{
	{"CreateThenGetGivesBackEveryField", testCreateThenGet},
	{"CreateOnTakenSlugIsErrExists", testCreateTaken},
	{"CreateRefusesBadSlug", testCreateBadSlug},
	{"GetMissingIsErrNotFound", testGetMissing},
	{"ListIsOrderedByID", testListOrdered},
	{"UpdateWithCurrentETagMakesNewETag", testUpdateCurrent},
	{"UpdateWithStaleETagIsErrConflict", testUpdateStale},
	{"UpdateWithoutETagAlwaysApplies", testUpdateNoETag},
	{"UpdateMissingIsErrNotFound", testUpdateMissing},
	{"ETagIsStableWithoutWrites", testETagStable},
	{"DeleteLeavesTombstoneForever", testDeleteTombstone},
	{"DeleteMissingIsErrNotFound", testDeleteMissing},
	{"DeleteWithStaleETagIsErrConflict", testDeleteStale},
	{"ReturnedRecordsAreCopies", testCopies},
	{"WatchHearsEveryChangeInOrder", testWatchOrder},
	{"WatchNeverDropsChangesForSlowReader", testWatchSlow},
	{"WatchClosesWhenContextEnds", testWatchCancel},
	{"ConcurrentCreatesOfOneSlugLetExactlyOneWin", testConcurrentCreate},
	{"ConcurrentUpdatesWithOneETagLetExactlyOneWin", testConcurrentUpdate},
	{"CloseIsIdempotentAndLaterCallsAreErrClosed", testClose},
}

// filterChecks run when the store implements record.Filterer.
var filterChecks = []struct {
	name string
	fn   func(testing.TB, record.Filterer, record.Store)
}{
	{"ListFuncKeepsWhatKeepAcceptsOrderedByID", testListFunc},
	{"ListFuncAnswersCopies", testListFuncCopies},
	{"ListFuncAfterCloseIsErrClosed", testListFuncClosed},
}

// sharedChecks run when the store implements record.SharedLister.
var sharedChecks = []struct {
	name string
	fn   func(testing.TB, record.SharedLister, record.Store)
}{
	{"ListSharedKeepsWhatKeepAcceptsOrderedByID", testListShared},
	{"ListSharedEntriesKeepTheirValuesThroughLaterWrites", testListSharedImmutable},
	{"ListSharedRacesWritesSafely", testListSharedRace},
	{"ListSharedAfterCloseIsErrClosed", testListSharedClosed},
}

// Run runs the conformance suite against the stores h opens.
func Run(t *testing.T, h Harness) {
	if h.Open == nil {
		t.Fatal("recordtest: Harness.Open is nil")
	}
	open := func(t *testing.T) record.Store {
		t.Helper()
		s, err := h.Open(t)
		if err != nil {
			t.Fatalf("open a store: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open(t)) })
	}
	t.Run("Filterer", func(t *testing.T) {
		if _, ok := open(t).(record.Filterer); !ok {
			t.Skip("the store does not implement record.Filterer")
		}
		for _, c := range filterChecks {
			t.Run(c.name, func(t *testing.T) {
				s := open(t)
				c.fn(t, s.(record.Filterer), s)
			})
		}
	})
	t.Run("SharedLister", func(t *testing.T) {
		if _, ok := open(t).(record.SharedLister); !ok {
			t.Skip("the store does not implement record.SharedLister")
		}
		for _, c := range sharedChecks {
			t.Run(c.name, func(t *testing.T) {
				s := open(t)
				c.fn(t, s.(record.SharedLister), s)
			})
		}
	})
	t.Run("ListingsFollowMakesAndDeletes", func(t *testing.T) { testListingsFollowChanges(t, open(t)) })
	t.Run("Reopen", func(t *testing.T) {
		if h.Reopen == nil {
			t.Skip("Harness.Reopen is nil: the storage does not outlive its store")
		}
		reopen := func(t *testing.T, old record.Store) record.Store {
			t.Helper()
			if err := old.Close(); err != nil {
				t.Fatalf("close before reopening: %v", err)
			}
			s, err := h.Reopen(t, old)
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
		for _, c := range reopenChecks {
			t.Run(c.name, func(t *testing.T) { c.fn(t, open(t), reopen) })
		}
	})
}

// Sample returns a record with every field set, its times at millisecond
// precision as a record file keeps them.
func Sample(id string) record.Record {
	at := time.Date(2026, 10, 11, 9, 0, 0, 123e6, time.UTC)
	return record.Record{
		ID:           id,
		Name:         "Motion " + id,
		Labels:       []string{"review", "ci"},
		Description:  "Reads pull requests and says what would break.",
		Body:         "robot",
		Color:        "teal",
		Instructions: "You review pull requests.\nSay what would break, in one paragraph.",
		Template:     "short",
		Provider:     "claude",
		Model:        "claude-sonnet-5",
		Preset:       "careful",
		Workspace:    "/srv/bots/" + id,
		Session:      "work-{turn}",
		Computer:     "box",
		Connectors:   map[string]string{"mail": "connectors://resend/account-123"},
		Tools:        []string{"post_message", "bots"},
		Owner:        "user:soft",
		CreatedAt:    at,
		UpdatedAt:    at.Add(time.Hour),
	}
}

func ctx(t testing.TB) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), waitFor)
	t.Cleanup(cancel)
	return c
}

func mustCreate(t testing.TB, s record.Store, r record.Record) record.Entry {
	t.Helper()
	e, err := s.Create(ctx(t), r)
	if err != nil {
		t.Fatalf("Create(%s): %v", r.ID, err)
	}
	return e
}

func sameRecord(t testing.TB, got, want record.Record) {
	t.Helper()
	if !got.Equal(want) {
		t.Fatalf("record differs (-want +got):\n%s", cmp.Diff(want, got))
	}
}

func testCreateThenGet(t testing.TB, s record.Store) {
	want := Sample("motion")
	e := mustCreate(t, s, want)
	if e.ETag == "" {
		t.Fatal("Create answered an empty etag")
	}
	sameRecord(t, e.Record, want)
	got, err := s.Get(ctx(t), "motion")
	if err != nil {
		t.Fatal(err)
	}
	sameRecord(t, got.Record, want)
	if got.ETag != e.ETag {
		t.Fatalf("Get etag %s, Create etag %s", got.ETag, e.ETag)
	}
	minimal := record.Record{ID: "plain", Name: "Plain", Owner: "root:host"}
	mustCreate(t, s, minimal)
	got, err = s.Get(ctx(t), "plain")
	if err != nil {
		t.Fatal(err)
	}
	sameRecord(t, got.Record, minimal)
}

func testCreateTaken(t testing.TB, s record.Store) {
	mustCreate(t, s, Sample("motion"))
	_, err := s.Create(ctx(t), Sample("motion"))
	if !errors.Is(err, record.ErrExists) {
		t.Fatalf("second Create: %v, want ErrExists", err)
	}
}

func testCreateBadSlug(t testing.TB, s record.Store) {
	for _, id := range []string{"", "Motion", "../x", "a/b", "9lives"} {
		if _, err := s.Create(ctx(t), record.Record{ID: id, Name: "x"}); err == nil {
			t.Errorf("Create(%q) succeeded, want the error of record.CheckSlug, which refuses that slug", id)
		}
	}
}

func testGetMissing(t testing.TB, s record.Store) {
	if _, err := s.Get(ctx(t), "nobody"); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("Get: %v, want ErrNotFound", err)
	}
}

func testListOrdered(t testing.TB, s record.Store) {
	for _, id := range []string{"zed", "alpha", "mid"} {
		mustCreate(t, s, Sample(id))
	}
	list, err := s.List(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range list {
		ids = append(ids, e.Record.ID)
	}
	if !slices.Equal(ids, []string{"alpha", "mid", "zed"}) {
		t.Fatalf("List gave ids %v, want [alpha mid zed]: every bot, ordered by id", ids)
	}
}

func testUpdateCurrent(t testing.TB, s record.Store) {
	e := mustCreate(t, s, Sample("motion"))
	r := e.Record
	r.Color = "#2f6fdf"
	r.Labels = nil
	u, err := s.Update(ctx(t), r, e.ETag)
	if err != nil {
		t.Fatal(err)
	}
	if u.ETag == e.ETag || u.ETag == "" {
		t.Fatalf("Update gave etag %q after %q, want a new, non-empty one: every write changes the etag", u.ETag, e.ETag)
	}
	got, err := s.Get(ctx(t), "motion")
	if err != nil {
		t.Fatal(err)
	}
	sameRecord(t, got.Record, r)
	// Writing the same record again is still a new revision.
	u2, err := s.Update(ctx(t), r, u.ETag)
	if err != nil {
		t.Fatal(err)
	}
	if u2.ETag == u.ETag {
		t.Fatal("a second write kept the etag")
	}
}

func testUpdateStale(t testing.TB, s record.Store) {
	e := mustCreate(t, s, Sample("motion"))
	r := e.Record
	r.Name = "First"
	if _, err := s.Update(ctx(t), r, e.ETag); err != nil {
		t.Fatal(err)
	}
	r.Name = "Second"
	if _, err := s.Update(ctx(t), r, e.ETag); !errors.Is(err, record.ErrConflict) {
		t.Fatalf("stale Update: %v, want ErrConflict", err)
	}
	got, _ := s.Get(ctx(t), "motion")
	if got.Record.Name != "First" {
		t.Fatalf("stale Update changed the bot: name %q", got.Record.Name)
	}
}

func testUpdateNoETag(t testing.TB, s record.Store) {
	e := mustCreate(t, s, Sample("motion"))
	r := e.Record
	r.Name = "Renamed"
	if _, err := s.Update(ctx(t), r, ""); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Get(ctx(t), "motion")
	if got.Record.Name != "Renamed" {
		t.Fatalf("name %q", got.Record.Name)
	}
}

func testUpdateMissing(t testing.TB, s record.Store) {
	if _, err := s.Update(ctx(t), Sample("nobody"), ""); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("Update: %v, want ErrNotFound", err)
	}
}

func testETagStable(t testing.TB, s record.Store) {
	mustCreate(t, s, Sample("motion"))
	a, _ := s.Get(ctx(t), "motion")
	b, _ := s.Get(ctx(t), "motion")
	list, _ := s.List(ctx(t))
	if a.ETag != b.ETag || len(list) != 1 || list[0].ETag != a.ETag {
		t.Fatalf("etags without writes: %s %s %v", a.ETag, b.ETag, list)
	}
}

func testDeleteTombstone(t testing.TB, s record.Store) {
	e := mustCreate(t, s, Sample("motion"))
	if err := s.Delete(ctx(t), "motion", e.ETag); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx(t), "motion"); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("Get after Delete: %v, want an error wrapping record.ErrNotFound", err)
	}
	if gone, err := s.Gone(ctx(t), "motion"); err != nil || !gone {
		t.Fatalf("Gone after Delete: %v, %v; want true, nil: a delete leaves a tombstone", gone, err)
	}
	if gone, err := s.Gone(ctx(t), "other"); err != nil || gone {
		t.Fatalf("Gone(other): %v, %v", gone, err)
	}
	if _, err := s.Create(ctx(t), Sample("motion")); !errors.Is(err, record.ErrGone) {
		t.Fatalf("Create on tombstone: %v, want ErrGone", err)
	}
	if list, _ := s.List(ctx(t)); len(list) != 0 {
		t.Fatalf("List after Delete: %v", list)
	}
}

func testDeleteMissing(t testing.TB, s record.Store) {
	if err := s.Delete(ctx(t), "nobody", ""); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("Delete: %v, want ErrNotFound", err)
	}
}

func testDeleteStale(t testing.TB, s record.Store) {
	e := mustCreate(t, s, Sample("motion"))
	if _, err := s.Update(ctx(t), e.Record, e.ETag); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx(t), "motion", e.ETag); !errors.Is(err, record.ErrConflict) {
		t.Fatalf("Delete: %v, want ErrConflict", err)
	}
	if _, err := s.Get(ctx(t), "motion"); err != nil {
		t.Fatalf("stale Delete removed the bot: %v", err)
	}
}

func testCopies(t testing.TB, s record.Store) {
	r := Sample("motion")
	mustCreate(t, s, r)
	r.Labels[0] = "changed"
	r.Connectors["mail"] = "connectors://x/y"
	r.Tools[0] = "changed"
	got, _ := s.Get(ctx(t), "motion")
	got.Record.Tools[1] = "changed"
	got.Record.Labels[1] = "changed"
	got.Record.Connectors["new"] = "connectors://x/y"
	again, _ := s.Get(ctx(t), "motion")
	if want := Sample("motion"); !again.Record.Equal(want) {
		t.Fatalf("changes to the record given to Create and to the one Get returned reached the store, which must keep copies of its own (-want +got):\n%s", cmp.Diff(want, again.Record))
	}
}

func next(t testing.TB, ch <-chan record.Change) record.Change {
	t.Helper()
	select {
	case c, ok := <-ch:
		if !ok {
			t.Fatal("change feed closed")
		}
		return c
	case <-time.After(waitFor):
		t.Fatal("timed out waiting for a change")
	}
	return record.Change{}
}

func testWatchOrder(t testing.TB, s record.Store) {
	ch, err := s.Watch(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	e := mustCreate(t, s, Sample("motion"))
	r := e.Record
	r.Name = "Edited"
	u, err := s.Update(ctx(t), r, e.ETag)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx(t), "motion", ""); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		kind record.ChangeKind
		etag string
		name string
	}{{record.Created, e.ETag, Sample("motion").Name}, {record.Updated, u.ETag, "Edited"}, {record.Deleted, u.ETag, "Edited"}}
	for i, w := range want {
		var c record.Change
		select {
		case got, ok := <-ch:
			if !ok {
				t.Fatalf("the feed closed after %d of %d changes", i, len(want))
			}
			c = got
		case <-time.After(waitFor):
			t.Fatalf("change %d of %d never came: the feed lost it (a reader that waits must miss no change)", i+1, len(want))
		}
		if c.Kind != w.kind || c.ID != "motion" || c.Entry.ETag != w.etag || c.Entry.Record.Name != w.name {
			t.Fatalf("change %d: %v %s etag %s name %q, want %v etag %s name %q",
				i, c.Kind, c.ID, c.Entry.ETag, c.Entry.Record.Name, w.kind, w.etag, w.name)
		}
	}
}

// testWatchSlow makes WatchChanges changes before it reads the first: a
// feed that buffers a fixed number and drops the rest fails it. Ten
// writers each make one bot and edit it; the feed must hear every change,
// each bot's in the order they were made.
func testWatchSlow(t testing.TB, s record.Store) {
	wctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := s.Watch(wctx)
	if err != nil {
		t.Fatal(err)
	}
	const writers = 10
	type made struct {
		kind record.ChangeKind
		etag string
	}
	want := make([][]made, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A small record: the check is of the feed, not of encoding.
			e, err := s.Create(ctx(t), record.Record{ID: fmt.Sprintf("bot-%02d", w), Name: "Watched", Owner: "user:soft"})
			if err != nil {
				t.Errorf("create bot-%02d: %v", w, err)
				return
			}
			want[w] = append(want[w], made{record.Created, e.ETag})
			for i := 1; i < WatchChanges/writers; i++ {
				r := e.Record
				r.Name = fmt.Sprintf("edit %d", i)
				if e, err = s.Update(ctx(t), r, e.ETag); err != nil {
					t.Errorf("update %d of bot-%02d: %v", i, w, err)
					return
				}
				want[w] = append(want[w], made{record.Updated, e.ETag})
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	heard := make([]int, writers)
	for i := range WatchChanges {
		var c record.Change
		select {
		case got, ok := <-ch:
			if !ok {
				t.Fatalf("the feed closed after %d of %d changes", i, WatchChanges)
			}
			c = got
		case <-time.After(waitFor):
			t.Fatalf("change %d of %d never came: the feed lost it (a reader that waits must miss no change)", i+1, WatchChanges)
		}
		var w int
		if _, err := fmt.Sscanf(c.ID, "bot-%02d", &w); err != nil || w < 0 || w >= writers || heard[w] >= len(want[w]) {
			t.Fatalf("change %d of %d is %v %s, which no writer made", i+1, WatchChanges, c.Kind, c.ID)
		}
		if m := want[w][heard[w]]; c.Kind != m.kind || c.Entry.ETag != m.etag {
			t.Fatalf("change %d of %s: %v etag %s, want %v etag %s (a bot's changes come in the order they were made, and none is dropped: a feed that drops changes past a buffer skips ahead like this)",
				heard[w]+1, c.ID, c.Kind, c.Entry.ETag, m.kind, m.etag)
		}
		heard[w]++
	}
}

func testWatchCancel(t testing.TB, s record.Store) {
	c, cancel := context.WithCancel(ctx(t))
	ch, err := s.Watch(c)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	deadline := time.After(waitFor)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("feed still open after its context ended")
		}
	}
}

func testConcurrentCreate(t testing.TB, s record.Store) {
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := Sample("motion")
			r.Name = fmt.Sprintf("maker %d", i)
			_, err := s.Create(ctx(t), r)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	won := 0
	for err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, record.ErrExists):
			t.Errorf("losing Create: %v, want ErrExists", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d creates won, want 1", won)
	}
}

func testConcurrentUpdate(t testing.TB, s record.Store) {
	e := mustCreate(t, s, Sample("motion"))
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := e.Record.Clone()
			r.Name = fmt.Sprintf("editor %d", i)
			_, err := s.Update(ctx(t), r, e.ETag)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	won := 0
	for err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, record.ErrConflict):
			t.Errorf("losing Update: %v, want ErrConflict", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d updates won, want 1", won)
	}
}

func testClose(t testing.TB, s record.Store) {
	mustCreate(t, s, Sample("motion"))
	ch, err := s.Watch(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("feed delivered after Close")
		}
	case <-time.After(waitFor):
		t.Fatal("feed not closed by Close")
	}
	if _, err := s.Get(ctx(t), "motion"); !errors.Is(err, record.ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
	if _, err := s.Create(ctx(t), Sample("other")); !errors.Is(err, record.ErrClosed) {
		t.Fatalf("Create after Close: %v", err)
	}
}

// seedOwners makes zed and alpha, owned by user:soft, and mid and beta,
// owned by user:other.
func seedOwners(t testing.TB, s record.Store) {
	t.Helper()
	for _, id := range []string{"zed", "alpha", "mid", "beta"} {
		r := Sample(id)
		if id == "mid" || id == "beta" {
			r.Owner = "user:other"
		}
		mustCreate(t, s, r)
	}
}

// sameAsGet fails unless e, listed by how, is what Get answers for its
// bot: the same record and etag.
func sameAsGet(t testing.TB, s record.Store, how string, e record.Entry) {
	t.Helper()
	got, err := s.Get(ctx(t), e.Record.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ETag != e.ETag {
		t.Errorf("%s etag of %s %s, Get %s", how, e.Record.ID, e.ETag, got.ETag)
	}
	sameRecord(t, e.Record, got.Record)
}

func testListFunc(t testing.TB, f record.Filterer, s record.Store) {
	seedOwners(t, s)
	list, err := f.ListFunc(ctx(t), func(r record.Record) bool { return r.Owner == "user:soft" })
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range list {
		ids = append(ids, e.Record.ID)
		sameAsGet(t, s, "ListFunc", e)
	}
	if !slices.Equal(ids, []string{"alpha", "zed"}) {
		t.Fatalf("ListFunc ids %v, want [alpha zed]", ids)
	}
	none, err := f.ListFunc(ctx(t), func(record.Record) bool { return false })
	if err != nil || len(none) != 0 {
		t.Fatalf("ListFunc keeping nothing: %v, %v", none, err)
	}
}

func testListFuncCopies(t testing.TB, f record.Filterer, s record.Store) {
	mustCreate(t, s, Sample("motion"))
	list, err := f.ListFunc(ctx(t), func(record.Record) bool { return true })
	if err != nil || len(list) != 1 {
		t.Fatalf("ListFunc: %v, %v", list, err)
	}
	list[0].Record.Labels[0] = "changed"
	list[0].Record.Connectors["new"] = "connectors://x/y"
	again, err := s.Get(ctx(t), "motion")
	if err != nil {
		t.Fatal(err)
	}
	sameRecord(t, again.Record, Sample("motion"))
}

func testListFuncClosed(t testing.TB, f record.Filterer, s record.Store) {
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ListFunc(ctx(t), func(record.Record) bool { return true }); !errors.Is(err, record.ErrClosed) {
		t.Fatalf("ListFunc after Close: %v, want ErrClosed", err)
	}
}

func testListShared(t testing.TB, l record.SharedLister, s record.Store) {
	seedOwners(t, s)
	list, err := l.ListShared(ctx(t), func(r *record.Record) bool { return r.Owner == "user:soft" })
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range list {
		ids = append(ids, e.Record.ID)
		sameAsGet(t, s, "ListShared", *e)
	}
	if !slices.Equal(ids, []string{"alpha", "zed"}) {
		t.Fatalf("ListShared ids %v, want [alpha zed]", ids)
	}
	all, err := l.ListShared(ctx(t), nil)
	ids = ids[:0]
	for _, e := range all {
		ids = append(ids, e.Record.ID)
	}
	if err != nil || !slices.Equal(ids, []string{"alpha", "beta", "mid", "zed"}) {
		t.Fatalf("ListShared with a nil keep: %v, %v; want every bot", ids, err)
	}
	none, err := l.ListShared(ctx(t), func(*record.Record) bool { return false })
	if err != nil || len(none) != 0 {
		t.Fatalf("ListShared keeping nothing: %v, %v", none, err)
	}
}

// testListSharedImmutable: an entry a listing handed out is the bot as it
// was: an edit or a delete after it is a new entry, which the next
// listing answers, and leaves the one handed out as it was.
func testListSharedImmutable(t testing.TB, l record.SharedLister, s record.Store) {
	mustCreate(t, s, Sample("edited"))
	mustCreate(t, s, Sample("removed"))
	before, err := l.ListShared(ctx(t), nil)
	if err != nil || len(before) != 2 {
		t.Fatalf("ListShared: %v, %v", before, err)
	}
	etag := before[0].ETag
	r := Sample("edited")
	r.Model = "edited"
	r.Labels = []string{"new"}
	r.Connectors = map[string]string{"other": "connectors://x/y"}
	if _, err := s.Update(ctx(t), r, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx(t), "removed", ""); err != nil {
		t.Fatal(err)
	}
	if before[0].ETag != etag {
		t.Errorf("the listed entry's etag changed from %s to %s", etag, before[0].ETag)
	}
	sameRecord(t, before[0].Record, Sample("edited"))
	sameRecord(t, before[1].Record, Sample("removed"))
	after, err := l.ListShared(ctx(t), nil)
	if err != nil || len(after) != 1 {
		t.Fatalf("ListShared after the edit and the delete: %v, %v", after, err)
	}
	if after[0].ETag == etag {
		t.Errorf("the next listing answers the etag before the edit")
	}
	sameRecord(t, after[0].Record, r)
}

// testListSharedRace lists and reads every entry handed out while other
// goroutines edit, make and delete bots: under the race detector a write
// that changed an entry in place fails it.
func testListSharedRace(t testing.TB, l record.SharedLister, s record.Store) {
	const n = 8
	for i := range n {
		mustCreate(t, s, Sample(fmt.Sprintf("bot-%d", i)))
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			r := Sample(fmt.Sprintf("bot-%d", i%n))
			r.Model = fmt.Sprintf("model-%d", i)
			r.Labels = []string{r.Model}
			if _, err := s.Update(ctx(t), r, ""); err != nil {
				t.Error(err)
				return
			}
			if i%4 == 0 {
				id := fmt.Sprintf("more-%d", i)
				mustCreate(t, s, Sample(id))
				if err := s.Delete(ctx(t), id, ""); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	for range 50 {
		list, err := l.ListShared(ctx(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range list {
			if e.Record.Model == "" || len(e.Record.Labels) == 0 || e.ETag == "" {
				t.Errorf("listed %s with model %q, labels %v, etag %q", e.Record.ID, e.Record.Model, e.Record.Labels, e.ETag)
			}
		}
	}
	close(stop)
	wg.Wait()
}

func testListSharedClosed(t testing.TB, l record.SharedLister, s record.Store) {
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ListShared(ctx(t), nil); !errors.Is(err, record.ErrClosed) {
		t.Fatalf("ListShared after Close: %v, want ErrClosed", err)
	}
}

// reopenChecks run when the harness can reopen a store's storage.
var reopenChecks = []struct {
	name string
	fn   func(t *testing.T, s record.Store, reopen func(*testing.T, record.Store) record.Store)
}{
	{"RecordsAndETagsSurviveReopen", testReopenKeeps},
	{"TombstonesSurviveReopen", testReopenTombstones},
	{"ETagFromBeforeReopenStillGuardsWrites", testReopenETagGuards},
	{"ReopenedStoreWatchesItsOwnWrites", testReopenWatch},
}

func testReopenKeeps(t *testing.T, s record.Store, reopen func(*testing.T, record.Store) record.Store) {
	want := map[string]record.Entry{}
	for _, id := range []string{"zed", "alpha", "mid"} {
		want[id] = mustCreate(t, s, Sample(id))
	}
	r := want["mid"].Record
	r.Name = "Edited"
	r.Labels = nil
	u, err := s.Update(ctx(t), r, want["mid"].ETag)
	if err != nil {
		t.Fatal(err)
	}
	want["mid"] = u
	minimal := record.Record{ID: "plain", Name: "Plain", Owner: "root:host"}
	want["plain"] = mustCreate(t, s, minimal)

	again := reopen(t, s)
	list, err := again.List(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range list {
		ids = append(ids, e.Record.ID)
		w, ok := want[e.Record.ID]
		if !ok {
			continue
		}
		if e.ETag != w.ETag {
			t.Errorf("%s: etag %s after reopen, %s before", e.Record.ID, e.ETag, w.ETag)
		}
		sameRecord(t, e.Record, w.Record)
		got, err := again.Get(ctx(t), e.Record.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.ETag != w.ETag {
			t.Errorf("%s: Get etag %s after reopen, %s before", e.Record.ID, got.ETag, w.ETag)
		}
	}
	if !slices.Equal(ids, []string{"alpha", "mid", "plain", "zed"}) {
		t.Fatalf("List after reopen %v, want [alpha mid plain zed]", ids)
	}
}

func testReopenTombstones(t *testing.T, s record.Store, reopen func(*testing.T, record.Store) record.Store) {
	mustCreate(t, s, Sample("motion"))
	mustCreate(t, s, Sample("kept"))
	if err := s.Delete(ctx(t), "motion", ""); err != nil {
		t.Fatal(err)
	}
	again := reopen(t, s)
	if gone, err := again.Gone(ctx(t), "motion"); err != nil || !gone {
		t.Fatalf("Gone after reopen: %v, %v", gone, err)
	}
	if gone, err := again.Gone(ctx(t), "kept"); err != nil || gone {
		t.Fatalf("Gone(kept) after reopen: %v, %v", gone, err)
	}
	if _, err := again.Get(ctx(t), "motion"); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("Get of a deleted bot after reopen: %v, want ErrNotFound", err)
	}
	if _, err := again.Create(ctx(t), Sample("motion")); !errors.Is(err, record.ErrGone) {
		t.Fatalf("Create on a tombstone after reopen: %v, want ErrGone", err)
	}
}

func testReopenETagGuards(t *testing.T, s record.Store, reopen func(*testing.T, record.Store) record.Store) {
	e := mustCreate(t, s, Sample("motion"))
	stale := e.ETag
	r := e.Record
	r.Name = "Before"
	e, err := s.Update(ctx(t), r, e.ETag)
	if err != nil {
		t.Fatal(err)
	}
	again := reopen(t, s)
	r.Name = "Stale"
	if _, err := again.Update(ctx(t), r, stale); !errors.Is(err, record.ErrConflict) {
		t.Fatalf("Update with an etag older than the reopen's: %v, want ErrConflict", err)
	}
	r.Name = "After"
	u, err := again.Update(ctx(t), r, e.ETag)
	if err != nil {
		t.Fatalf("Update with the etag current at the reopen: %v", err)
	}
	if u.ETag == e.ETag {
		t.Fatal("a write after the reopen kept the etag")
	}
	if err := again.Delete(ctx(t), "motion", e.ETag); !errors.Is(err, record.ErrConflict) {
		t.Fatalf("Delete with a replaced etag: %v, want ErrConflict", err)
	}
}

func testReopenWatch(t *testing.T, s record.Store, reopen func(*testing.T, record.Store) record.Store) {
	mustCreate(t, s, Sample("motion"))
	again := reopen(t, s)
	ch, err := again.Watch(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	e, err := again.Get(ctx(t), "motion")
	if err != nil {
		t.Fatal(err)
	}
	r := e.Record
	r.Name = "Edited"
	u, err := again.Update(ctx(t), r, e.ETag)
	if err != nil {
		t.Fatal(err)
	}
	c := next(t, ch)
	if c.Kind != record.Updated || c.ID != "motion" || c.Entry.ETag != u.ETag {
		t.Fatalf("first change after reopen: %v %s etag %s, want updated motion etag %s", c.Kind, c.ID, c.Entry.ETag, u.ETag)
	}
}

// testListingsFollowChanges lists after every make, edit and delete, in
// any order: List, ListFunc and ListIDs (those the store implements) each
// answer exactly the bots the store holds, in slug order, as they are now.
func testListingsFollowChanges(t *testing.T, s record.Store) {
	want := map[string]string{} // id → model
	check := func(step string) {
		t.Helper()
		ids := slices.Sorted(maps.Keys(want))
		list, err := s.List(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range list {
			got = append(got, e.Record.ID)
			if e.Record.Model != want[e.Record.ID] {
				t.Fatalf("after %s: List gives %s model %q, want %q", step, e.Record.ID, e.Record.Model, want[e.Record.ID])
			}
		}
		if !slices.Equal(got, ids) {
			t.Fatalf("after %s: List %v, want %v", step, got, ids)
		}
		if f, ok := s.(record.Filterer); ok {
			list, err := f.ListFunc(ctx(t), func(record.Record) bool { return true })
			if err != nil || len(list) != len(ids) {
				t.Fatalf("after %s: ListFunc %d bots, %v; want %d", step, len(list), err, len(ids))
			}
		}
		if l, ok := s.(record.IDLister); ok {
			got, err := l.ListIDs(ctx(t), func(record.Record) bool { return true })
			if err != nil || !slices.Equal(got, ids) {
				t.Fatalf("after %s: ListIDs %v, %v; want %v", step, got, err, ids)
			}
		}
		if l, ok := s.(record.SharedLister); ok {
			list, err := l.ListShared(ctx(t), nil)
			if err != nil || len(list) != len(ids) {
				t.Fatalf("after %s: ListShared %d bots, %v; want %d", step, len(list), err, len(ids))
			}
			for i, e := range list {
				if e.Record.ID != ids[i] || e.Record.Model != want[e.Record.ID] {
					t.Fatalf("after %s: ListShared gives %s model %q at %d, want %s model %q", step, e.Record.ID, e.Record.Model, i, ids[i], want[ids[i]])
				}
			}
		}
	}
	check("nothing")
	for i, id := range []string{"m", "c", "x", "a", "q", "b"} {
		r := Sample(id)
		mustCreate(t, s, r)
		want[id] = r.Model
		if i%2 == 1 {
			check("make " + id)
		}
	}
	check("makes")
	r := Sample("q")
	r.Model = "edited"
	if _, err := s.Update(ctx(t), r, ""); err != nil {
		t.Fatal(err)
	}
	want["q"] = "edited"
	check("edit q")
	for _, id := range []string{"c", "a"} {
		if err := s.Delete(ctx(t), id, ""); err != nil {
			t.Fatal(err)
		}
		delete(want, id)
	}
	mustCreate(t, s, Sample("d"))
	want["d"] = Sample("d").Model
	check("deletes and a make")
}
