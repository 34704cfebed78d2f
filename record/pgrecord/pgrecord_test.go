package pgrecord_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/bots/internal/pgtest"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/pgrecord"
	"github.com/agenthost/bots/record/recordtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// open opens a store on url, closed when t ends.
func open(t testing.TB, url string) *pgrecord.Store {
	t.Helper()
	s, err := pgrecord.Open(context.Background(), pgrecord.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	urls := map[record.Store]string{}
	openOn := func(url string) (record.Store, error) {
		s, err := pgrecord.Open(context.Background(), pgrecord.Config{URL: url})
		if err != nil {
			return nil, err
		}
		urls[s] = url
		return s, nil
	}
	recordtest.Run(t, recordtest.Harness{
		Open:   func(t *testing.T) (record.Store, error) { return openOn(pgtest.URL(t)) },
		Reopen: func(t *testing.T, old record.Store) (record.Store, error) { return openOn(urls[old]) },
	})
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func next(t *testing.T, ch <-chan record.Change) record.Change {
	t.Helper()
	select {
	case c, ok := <-ch:
		if !ok {
			t.Fatal("change feed closed")
		}
		return c
	case <-time.After(20 * time.Second):
		t.Fatal("timed out waiting for a change")
	}
	return record.Change{}
}

func TestConcurrentEditsWithOneETagOverThreeInstancesLetExactlyOneThrough(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	stores := []*pgrecord.Store{open(t, url), open(t, url), open(t, url)}
	e, err := stores[0].Create(ctx(t), recordtest.Sample("motion"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			r := e.Record.Clone()
			r.Name = fmt.Sprintf("editor %d", i)
			_, err := stores[i%len(stores)].Update(ctx(t), r, e.ETag)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	won := 0
	for err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, record.ErrConflict):
			t.Errorf("losing edit: %v, want ErrConflict", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d edits won, want 1", won)
	}
}

func TestAWriteOnOneInstanceIsHeardAndReadOnTheOthers(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	a, b := open(t, url), open(t, url)
	ch, err := b.Watch(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	e, err := a.Create(ctx(t), recordtest.Sample("motion"))
	if err != nil {
		t.Fatal(err)
	}
	c := next(t, ch)
	if c.Kind != record.Created || c.ID != "motion" || c.Entry.ETag != e.ETag || !c.Entry.Record.Equal(e.Record) {
		t.Fatalf("b heard %v %s %s, want created motion %s", c.Kind, c.ID, c.Entry.ETag, e.ETag)
	}
	got, err := b.Get(ctx(t), "motion")
	if err != nil || got.ETag != e.ETag {
		t.Fatalf("b read %v %v, want etag %s", got.ETag, err, e.ETag)
	}
	if err := b.Delete(ctx(t), "motion", got.ETag); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Create(ctx(t), recordtest.Sample("motion")); !errors.Is(err, record.ErrGone) {
		t.Fatalf("a made a slug b deleted: %v, want ErrGone", err)
	}
}

func TestTheFeedLosesNoChangeWhenItsConnectionDrops(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	a, writer := open(t, url), open(t, url)
	ch, err := a.Watch(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	for i := range n {
		if i == n/4 {
			// Drop the listening connection, and keep writing while it is
			// gone: the feed reads on from where it was.
			if _, err := writer.Pool().Exec(ctx(t), `SELECT pg_terminate_backend($1)`, a.ListenerPID()); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := writer.Create(ctx(t), recordtest.Sample(fmt.Sprintf("bot-%03d", i))); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		c := next(t, ch)
		if want := fmt.Sprintf("bot-%03d", i); c.ID != want || c.Kind != record.Created {
			t.Fatalf("change %d: %v %s, want created %s", i, c.Kind, c.ID, want)
		}
	}
}

func TestInstancesOpeningAtOnceMigrateTheSchemaOnce(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	const n = 6
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			s, err := pgrecord.Open(ctx(t), pgrecord.Config{URL: url})
			if err == nil {
				s.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("an instance failed to open: %v", err)
		}
	}
	s := open(t, url)
	var versions, v int
	if err := s.Pool().QueryRow(ctx(t), `SELECT count(*), max(version) FROM bots_schema WHERE component = 'record'`).Scan(&versions, &v); err != nil {
		t.Fatal(err)
	}
	if versions != 1 || v != pgrecord.SchemaVersion() {
		t.Fatalf("bots_schema holds %d rows for the record store, version %d; want one, %d", versions, v, pgrecord.SchemaVersion())
	}
}

func TestASchemaNewerThanTheProgramIsRefused(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	s := open(t, url)
	if _, err := s.Pool().Exec(ctx(t), `UPDATE bots_schema SET version = 99 WHERE component = 'record'`); err != nil {
		t.Fatal(err)
	}
	_, err := pgrecord.Open(ctx(t), pgrecord.Config{URL: url})
	if err == nil || !strings.Contains(err.Error(), "record schema is version 99, newer than this program's") {
		t.Fatalf("Open on a newer schema: %v", err)
	}
}

func TestAnETagOfAnotherFormIsAConflictNotAnError(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.URL(t))
	e, err := s.Create(ctx(t), recordtest.Sample("motion"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{`W/"1"`, `"x"`, `"-1"`, `"0"`, `1`, `""`} {
		if _, err := s.Update(ctx(t), e.Record, tag); !errors.Is(err, record.ErrConflict) {
			t.Errorf("Update with etag %s: %v, want ErrConflict", tag, err)
		}
	}
}

func TestTheFirstInstanceMarksTheRootAndTheOthersFindIt(t *testing.T) {
	t.Parallel()
	url, root := pgtest.URL(t), t.TempDir()
	a, b := open(t, url), open(t, url)
	if err := a.ClaimRoot(ctx(t), root); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, pgrecord.MarkerFile)); err != nil {
		t.Fatalf("no marker in the root: %v", err)
	}
	if err := b.ClaimRoot(ctx(t), root); err != nil {
		t.Fatalf("a second instance on the shared root: %v", err)
	}
	if err := a.ClaimRoot(ctx(t), root); err != nil {
		t.Fatalf("a restart on the shared root: %v", err)
	}
}

func TestARootWithoutTheDatabasesMarkerIsRefused(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	a, b := open(t, url), open(t, url)
	if err := a.ClaimRoot(ctx(t), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	local := t.TempDir()
	err := b.ClaimRoot(ctx(t), local)
	if !errors.Is(err, pgrecord.ErrRootNotShared) || !strings.Contains(err.Error(), "holds no "+pgrecord.MarkerFile) {
		t.Fatalf("ClaimRoot on a root of its own: %v, want ErrRootNotShared", err)
	}
	if entries, _ := os.ReadDir(local); len(entries) != 0 {
		t.Fatalf("the refused root was written: %v", entries)
	}
}

func TestARootMarkedByAnotherDatabaseIsRefused(t *testing.T) {
	t.Parallel()
	one, two := open(t, pgtest.URL(t)), open(t, pgtest.URL(t))
	rootOne := t.TempDir()
	if err := one.ClaimRoot(ctx(t), rootOne); err != nil {
		t.Fatal(err)
	}
	// A database with no marker yet does not take over another's root,
	if err := two.ClaimRoot(ctx(t), rootOne); !errors.Is(err, pgrecord.ErrRootNotShared) {
		t.Fatalf("a new database claimed another's root: %v", err)
	}
	// nor does one with a marker of its own.
	if err := two.ClaimRoot(ctx(t), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	err := two.ClaimRoot(ctx(t), rootOne)
	if !errors.Is(err, pgrecord.ErrRootNotShared) || !strings.Contains(err.Error(), "names another database") {
		t.Fatalf("ClaimRoot on another database's root: %v", err)
	}
}

func TestAChangeTooLargeForANotificationIsReadFromTheChangeTable(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	a, b := open(t, url), open(t, url)
	ch, err := b.Watch(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	small := recordtest.Sample("small")
	large := recordtest.Sample("large")
	large.Instructions = strings.Repeat("Say what would break. ", 1000) // over a notification's 8000 bytes
	for _, r := range []record.Record{small, large, recordtest.Sample("after")} {
		if _, err := a.Create(ctx(t), r); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []record.Record{small, large, recordtest.Sample("after")} {
		c := next(t, ch)
		if c.ID != want.ID || !c.Entry.Record.Equal(want) {
			t.Fatalf("heard %s (%d bytes of instructions), want %s (%d)", c.ID, len(c.Entry.Record.Instructions), want.ID, len(want.Instructions))
		}
	}
}

// TestOpenOnADatabaseThatDoesNotAnswerSaysSoWithoutItsPassword: pgx
// reports each address it tried on a line of its own; Open says, in one
// line, which database at which address as whom, the cause in a few
// words and what to check - never the password - and keeps the cause for
// errors.Is.
func TestOpenOnADatabaseThatDoesNotAnswerSaysSoWithoutItsPassword(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now: connections are refused
	_, err = pgrecord.Open(ctx(t), pgrecord.Config{URL: "postgres://alice:s3cret-word@" + addr + "/team?sslmode=disable"})
	if err == nil {
		t.Fatal("Open of a database nobody serves succeeded")
	}
	msg := err.Error()
	for _, want := range []string{`"team"`, addr, `"alice"`, "connection refused", "check that PostgreSQL runs there"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "\n") || strings.Contains(msg, "s3cret-word") {
		t.Errorf("the error is more than one line or names the password: %q", msg)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("the cause is lost: %v", err)
	}
}

func TestTheFeedKeepsHearingAcrossManyPollsWithoutNotifications(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	// A poll of a millisecond times out its wait for a notification
	// between nearly every two writes: the connection must stay usable.
	s, err := pgrecord.Open(ctx(t), pgrecord.Config{URL: url, Poll: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	writer := open(t, url)
	ch, err := s.Watch(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	pid := s.ListenerPID()
	const n = 30
	for i := range n {
		if _, err := writer.Create(ctx(t), recordtest.Sample(fmt.Sprintf("bot-%03d", i))); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if c := next(t, ch); c.ID != fmt.Sprintf("bot-%03d", i) {
			t.Fatalf("change %d is %s", i, c.ID)
		}
	}
	if _, err := writer.Create(ctx(t), recordtest.Sample("last")); err != nil {
		t.Fatal(err)
	}
	if c := next(t, ch); c.ID != "last" || s.ListenerPID() != pid {
		t.Fatalf("heard %s; listener %d, was %d: the polls cost the connection", c.ID, s.ListenerPID(), pid)
	}
}

func TestTakenFindsTheBotInTheFolderAboveOrBelowAndNoOther(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	a, b := open(t, url), open(t, url)
	at := func(id, ws, computer string) record.Record {
		r := recordtest.Sample(id)
		r.Workspace, r.Computer = ws, computer
		return r
	}
	for _, r := range []record.Record{
		at("outer", "/srv/bots/team", ""),
		at("inner", "/srv/bots/solo/deep/down", ""),
		at("remote", "/srv/bots/remote", "box"), // on a computer: claims nothing here
		at("sibling", "/srv/bots/team-b", ""),
	} {
		if _, err := a.Create(ctx(t), r); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		id, dir       string
		other, folder string
	}{
		{"new", "/srv/bots/team", "outer", "/srv/bots/team"},           // the same folder
		{"new", "/srv/bots/team/x", "outer", "/srv/bots/team"},         // inside another's
		{"new", "/srv/bots/solo", "inner", "/srv/bots/solo/deep/down"}, // holding another's
		{"new", "/", "inner", "/srv/bots/solo/deep/down"},              // the root holds them all
		{"outer", "/srv/bots/team", "", ""},                            // its own folder
		{"new", "/srv/bots/remote", "", ""},                            // a computer's folder is not here
		{"new", "/srv/bots/tea", "", ""},                               // a prefix by name only
		{"new", "/srv/bots/solo/deep/downstairs", "", ""},
	} {
		// Asked on another instance: the answer is the database's.
		other, folder, ok, err := b.Taken(ctx(t), c.id, c.dir)
		if err != nil {
			t.Fatal(err)
		}
		if ok != (c.other != "") || (ok && (c.dir != "/" && other != c.other || c.dir != "/" && folder != c.folder)) {
			t.Errorf("Taken(%s, %s) = %s %s %v, want %q %q", c.id, c.dir, other, folder, ok, c.other, c.folder)
		}
	}
	// An edit that moves a bot moves its claim.
	e, _ := a.Get(ctx(t), "outer")
	e.Record.Workspace = "/srv/bots/elsewhere"
	if _, err := a.Update(ctx(t), e.Record, ""); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, _ := b.Taken(ctx(t), "new", "/srv/bots/team"); ok {
		t.Error("a moved bot still claims its old folder")
	}
	if err := a.Delete(ctx(t), "inner", ""); err != nil {
		t.Fatal(err)
	}
	if other, _, ok, _ := b.Taken(ctx(t), "new", "/srv/bots/solo"); ok {
		t.Errorf("a deleted bot %s still claims its folder", other)
	}
}

func TestChangesOlderThanKeepAreRemovedAtOpenAndTheBotsStay(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	a := open(t, url)
	for _, id := range []string{"one", "two", "three"} {
		if _, err := a.Create(ctx(t), recordtest.Sample(id)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := pgrecord.Open(ctx(t), pgrecord.Config{URL: url, Keep: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var changes int
	if err := b.Pool().QueryRow(ctx(t), `SELECT count(*) FROM bots_changes`).Scan(&changes); err != nil {
		t.Fatal(err)
	}
	if changes != 1 {
		t.Fatalf("%d changes left, want the latest alone", changes)
	}
	if list, err := b.List(ctx(t)); err != nil || len(list) != 3 {
		t.Fatalf("the bots after the changes went: %d, %v", len(list), err)
	}
	// The feeds go on from the head.
	ch, err := a.Watch(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx(t), recordtest.Sample("four")); err != nil {
		t.Fatal(err)
	}
	if c := next(t, ch); c.ID != "four" {
		t.Fatalf("heard %s, want four", c.ID)
	}
}

func TestTheDatabaseGivesAFolderToOneBotOfManyInstances(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	stores := []*pgrecord.Store{open(t, url), open(t, url), open(t, url)}
	in := func(id, ws string) record.Record {
		r := recordtest.Sample(id)
		r.Workspace, r.Computer = ws, ""
		return r
	}
	const n = 30
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			_, err := stores[i%3].Create(ctx(t), in(fmt.Sprintf("maker-%02d", i), "/srv/bots/shared"))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	won := 0
	for err := range errs {
		var taken *record.FolderTakenError
		switch {
		case err == nil:
			won++
		case !errors.As(err, &taken) || taken.Folder != "/srv/bots/shared" || taken.OtherFolder != "/srv/bots/shared" || !strings.HasPrefix(taken.Other, "maker-"):
			t.Errorf("a losing make: %v, want the folder taken by the winner", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d bots were given one folder, want 1", won)
	}
	// A folder inside it, or holding it, is taken too; a move into one
	// is refused, and an edit that keeps its folder is not checked again.
	s := stores[0]
	if _, err := s.Create(ctx(t), in("inside", "/srv/bots/shared/sub")); !errors.As(err, new(*record.FolderTakenError)) {
		t.Errorf("a make inside a taken folder: %v", err)
	}
	if _, err := s.Create(ctx(t), in("holder", "/srv/bots")); !errors.As(err, new(*record.FolderTakenError)) {
		t.Errorf("a make holding a taken folder: %v", err)
	}
	e, err := s.Create(ctx(t), in("elsewhere", "/srv/bots/elsewhere"))
	if err != nil {
		t.Fatal(err)
	}
	moved := e.Record.Clone()
	moved.Workspace = "/srv/bots/shared"
	if _, err := s.Update(ctx(t), moved, e.ETag); !errors.As(err, new(*record.FolderTakenError)) {
		t.Errorf("a move into a taken folder: %v", err)
	}
	if _, err := s.Update(ctx(t), e.Record, e.ETag); err != nil {
		t.Errorf("an edit that keeps its folder: %v", err)
	}
	remote := in("remote", "/srv/bots/shared")
	remote.Computer = "box" // on a computer: claims nothing on this host
	if _, err := s.Create(ctx(t), remote); err != nil {
		t.Errorf("a bot on a computer naming the folder: %v", err)
	}
}
