// Package recordtest is the conformance suite of record.Store: every
// implementation runs Run from its own tests, so that "works in memory"
// means "works on disk".
package recordtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/record"
)

// NewStore returns a fresh, empty store for one test. The suite closes it.
type NewStore func(t *testing.T) record.Store

// waitFor bounds every wait on a change feed.
const waitFor = 10 * time.Second

// Run runs the conformance suite against stores made by newStore.
func Run(t *testing.T, newStore NewStore) {
	tests := []struct {
		name string
		fn   func(*testing.T, record.Store)
	}{
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
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			t.Cleanup(func() { s.Close() })
			tc.fn(t, s)
		})
	}
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

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), waitFor)
	t.Cleanup(cancel)
	return c
}

func mustCreate(t *testing.T, s record.Store, r record.Record) record.Entry {
	t.Helper()
	e, err := s.Create(ctx(t), r)
	if err != nil {
		t.Fatalf("Create(%s): %v", r.ID, err)
	}
	return e
}

func sameRecord(t *testing.T, got, want record.Record) {
	t.Helper()
	if !got.Equal(want) {
		t.Fatalf("record differs\n got: %+v\nwant: %+v", got, want)
	}
}

func testCreateThenGet(t *testing.T, s record.Store) {
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

func testCreateTaken(t *testing.T, s record.Store) {
	mustCreate(t, s, Sample("motion"))
	_, err := s.Create(ctx(t), Sample("motion"))
	if !errors.Is(err, record.ErrExists) {
		t.Fatalf("second Create: %v, want ErrExists", err)
	}
}

func testCreateBadSlug(t *testing.T, s record.Store) {
	for _, id := range []string{"", "Motion", "../x", "a/b", "9lives"} {
		if _, err := s.Create(ctx(t), record.Record{ID: id, Name: "x"}); err == nil {
			t.Errorf("Create(%q) succeeded", id)
		}
	}
}

func testGetMissing(t *testing.T, s record.Store) {
	if _, err := s.Get(ctx(t), "nobody"); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("Get: %v, want ErrNotFound", err)
	}
}

func testListOrdered(t *testing.T, s record.Store) {
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
		t.Fatalf("List ids %v", ids)
	}
}

func testUpdateCurrent(t *testing.T, s record.Store) {
	e := mustCreate(t, s, Sample("motion"))
	r := e.Record
	r.Color = "#2f6fdf"
	r.Labels = nil
	u, err := s.Update(ctx(t), r, e.ETag)
	if err != nil {
		t.Fatal(err)
	}
	if u.ETag == e.ETag || u.ETag == "" {
		t.Fatalf("Update etag %q after %q", u.ETag, e.ETag)
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

func testUpdateStale(t *testing.T, s record.Store) {
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

func testUpdateNoETag(t *testing.T, s record.Store) {
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

func testUpdateMissing(t *testing.T, s record.Store) {
	if _, err := s.Update(ctx(t), Sample("nobody"), ""); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("Update: %v, want ErrNotFound", err)
	}
}

func testETagStable(t *testing.T, s record.Store) {
	mustCreate(t, s, Sample("motion"))
	a, _ := s.Get(ctx(t), "motion")
	b, _ := s.Get(ctx(t), "motion")
	list, _ := s.List(ctx(t))
	if a.ETag != b.ETag || len(list) != 1 || list[0].ETag != a.ETag {
		t.Fatalf("etags without writes: %s %s %v", a.ETag, b.ETag, list)
	}
}

func testDeleteTombstone(t *testing.T, s record.Store) {
	e := mustCreate(t, s, Sample("motion"))
	if err := s.Delete(ctx(t), "motion", e.ETag); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx(t), "motion"); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
	if gone, err := s.Gone(ctx(t), "motion"); err != nil || !gone {
		t.Fatalf("Gone: %v, %v", gone, err)
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

func testDeleteMissing(t *testing.T, s record.Store) {
	if err := s.Delete(ctx(t), "nobody", ""); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("Delete: %v, want ErrNotFound", err)
	}
}

func testDeleteStale(t *testing.T, s record.Store) {
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

func testCopies(t *testing.T, s record.Store) {
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
	sameRecord(t, again.Record, Sample("motion"))
}

func next(t *testing.T, ch <-chan record.Change) record.Change {
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

func testWatchOrder(t *testing.T, s record.Store) {
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
		c := next(t, ch)
		if c.Kind != w.kind || c.ID != "motion" || c.Entry.ETag != w.etag || c.Entry.Record.Name != w.name {
			t.Fatalf("change %d: %v %s etag %s name %q, want %v etag %s name %q",
				i, c.Kind, c.ID, c.Entry.ETag, c.Entry.Record.Name, w.kind, w.etag, w.name)
		}
	}
}

func testWatchSlow(t *testing.T, s record.Store) {
	ch, err := s.Watch(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	const n = 60
	for i := range n {
		mustCreate(t, s, Sample(fmt.Sprintf("bot-%03d", i)))
	}
	for i := range n {
		c := next(t, ch)
		if want := fmt.Sprintf("bot-%03d", i); c.ID != want || c.Kind != record.Created {
			t.Fatalf("change %d: %v %s, want created %s", i, c.Kind, c.ID, want)
		}
	}
}

func testWatchCancel(t *testing.T, s record.Store) {
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

func testConcurrentCreate(t *testing.T, s record.Store) {
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

func testConcurrentUpdate(t *testing.T, s record.Store) {
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

func testClose(t *testing.T, s record.Store) {
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
