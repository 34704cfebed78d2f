// Package waketest holds the conformance suites of wake's ports, run from
// the tests of every implementation, the embedder's own included. RunRows
// checks a wake.Rows.
package waketest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/wake"
)

// Rows opens the rows RunRows checks.
type Rows struct {
	// Open returns empty rows on storage of their own, for one test.
	// Required.
	Open func(t *testing.T) wake.Rows
	// Reopen returns rows on the storage old keeps, as a restart would
	// open them. Nil when the storage does not outlive its rows, as
	// memory does not: the reopen check is then skipped.
	Reopen func(t *testing.T, old wake.Rows) wake.Rows
}

// RunRows checks that rows keep one row per (bot, person, name), give back
// every field, replace a row on a second Put, keep rows of keys that differ
// in one part apart, take concurrent Puts, and (with Reopen) outlive a
// restart.
func RunRows(t *testing.T, h Rows) {
	if h.Open == nil {
		t.Fatal("waketest: Rows.Open is nil")
	}
	checks := []struct {
		name string
		fn   func(*testing.T, Rows)
	}{
		{"GetOfAMissingRowIsNotOK", testRowMissing},
		{"PutThenGetGivesBackEveryField", testRowRoundTrip},
		{"PutReplacesTheRowOfTheSameKey", testRowReplace},
		{"KeysThatDifferInOnePartAreApart", testRowKeys},
		{"ConcurrentPutsOfDistinctKeysAreAllKept", testRowConcurrent},
		{"RowsOutliveAReopen", testRowReopen},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) { c.fn(t, h) })
	}
}

// SampleRow is a row with every field set, its time at millisecond
// precision.
func SampleRow(bot, person, name string) wake.Row {
	return wake.Row{
		Bot: bot, Person: person, Name: name,
		Session:  "ahp-session:/back-" + bot + "-" + name,
		Provider: "claude", Preset: "careful",
		UpdatedAt: time.Date(2026, 10, 11, 9, 0, 0, 123e6, time.UTC),
	}
}

// rowsCtx bounds each call of the rows suite.
func rowsCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func sameRow(t *testing.T, got, want wake.Row) {
	t.Helper()
	if got.Bot != want.Bot || got.Person != want.Person || got.Name != want.Name || got.Session != want.Session ||
		got.Provider != want.Provider || got.Preset != want.Preset || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Fatalf("row differs\n got: %+v\nwant: %+v", got, want)
	}
}

func mustGet(t *testing.T, rows wake.Rows, bot, person, name string) wake.Row {
	t.Helper()
	r, ok, err := rows.Get(rowsCtx(t), bot, person, name)
	if err != nil || !ok {
		t.Fatalf("Get(%s, %s, %s): ok %v, %v", bot, person, name, ok, err)
	}
	return r
}

func mustPut(t *testing.T, rows wake.Rows, r wake.Row) {
	t.Helper()
	if err := rows.Put(rowsCtx(t), r); err != nil {
		t.Fatalf("Put(%s, %s, %s): %v", r.Bot, r.Person, r.Name, err)
	}
}

func testRowMissing(t *testing.T, h Rows) {
	rows := h.Open(t)
	if r, ok, err := rows.Get(rowsCtx(t), "motion", "user:soft", "work"); err != nil || ok {
		t.Fatalf("Get of no row: %+v, ok %v, %v", r, ok, err)
	}
}

func testRowRoundTrip(t *testing.T, h Rows) {
	rows := h.Open(t)
	want := SampleRow("motion", "user:soft", "work")
	mustPut(t, rows, want)
	sameRow(t, mustGet(t, rows, "motion", "user:soft", "work"), want)
}

func testRowReplace(t *testing.T, h Rows) {
	rows := h.Open(t)
	mustPut(t, rows, SampleRow("motion", "user:soft", "work"))
	want := SampleRow("motion", "user:soft", "work")
	want.Session, want.Provider, want.Preset = "ahp-session:/another", "gemini", ""
	want.UpdatedAt = want.UpdatedAt.Add(time.Minute)
	mustPut(t, rows, want)
	sameRow(t, mustGet(t, rows, "motion", "user:soft", "work"), want)
}

func testRowKeys(t *testing.T, h Rows) {
	rows := h.Open(t)
	keys := [][3]string{
		{"motion", "user:soft", "work"},
		{"motion", "user:kim", "work"},
		{"motion", "user:soft", "w-01j9"},
		{"review", "user:soft", "work"},
		{"motion", "root:e2e", "work"},
		{"motion", "user:soft@x/../y é", "work"},
	}
	for i, k := range keys {
		r := SampleRow(k[0], k[1], k[2])
		r.Session = fmt.Sprintf("ahp-session:/s%d", i)
		mustPut(t, rows, r)
	}
	for i, k := range keys {
		if got := mustGet(t, rows, k[0], k[1], k[2]); got.Session != fmt.Sprintf("ahp-session:/s%d", i) {
			t.Errorf("row %v names session %s, want s%d", k, got.Session, i)
		}
	}
}

func testRowConcurrent(t *testing.T, h Rows) {
	rows := h.Open(t)
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			errs <- rows.Put(rowsCtx(t), SampleRow("motion", fmt.Sprintf("user:u%d", i), "work"))
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a concurrent Put: %v", err)
		}
	}
	for i := range n {
		sameRow(t, mustGet(t, rows, "motion", fmt.Sprintf("user:u%d", i), "work"), SampleRow("motion", fmt.Sprintf("user:u%d", i), "work"))
	}
}

func testRowReopen(t *testing.T, h Rows) {
	if h.Reopen == nil {
		t.Skip("these rows do not outlive their storage")
	}
	rows := h.Open(t)
	want := SampleRow("motion", "user:soft", "work")
	mustPut(t, rows, want)
	again := h.Reopen(t, rows)
	sameRow(t, mustGet(t, again, "motion", "user:soft", "work"), want)
}
