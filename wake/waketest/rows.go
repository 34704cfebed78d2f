package waketest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/wake"
)

// Rows is a wake.Rows under test.
type Rows struct {
	// Open returns rows on new, empty storage of their own, for one
	// check. Required.
	Open func(t *testing.T) wake.Rows
	// Reopen returns rows on the storage old was opened on. Nil when the
	// storage does not outlive its rows (memory): the reopen check is
	// then skipped.
	Reopen func(t *testing.T, old wake.Rows) wake.Rows
}

// RunRows runs the conformance suite of wake.Rows against the rows h
// opens: a row comes back as it was put (its time to the millisecond), one
// row per (bot, person, name), a Put replaces, concurrent Puts of
// different keys all stay, RemoveBot removes the bot's rows and no
// other's, and rows survive a reopen.
func RunRows(t *testing.T, h Rows) {
	if h.Open == nil {
		t.Fatal("waketest: Rows.Open is nil")
	}
	t.Run("PutThenGetGivesTheRowBack", func(t *testing.T) {
		rows := h.Open(t)
		want := sampleRow("motion", "user:soft", "work")
		put(t, rows, want)
		sameRow(t, get(t, rows, want), want)
	})
	t.Run("GetOfNoRowIsNotOK", func(t *testing.T) {
		if r, ok, err := h.Open(t).Get(rowsCtx(t), "motion", "user:soft", "work"); err != nil || ok {
			t.Fatalf("Get with no row: %+v, %v, %v", r, ok, err)
		}
	})
	t.Run("OneRowPerBotPersonAndName", func(t *testing.T) {
		rows := h.Open(t)
		all := []wake.Row{
			sampleRow("motion", "user:soft", "work"), sampleRow("motion", "user:tess", "work"),
			sampleRow("motion", "user:soft", "w-2"), sampleRow("other", "user:soft", "work"),
		}
		for i := range all {
			all[i].Session = fmt.Sprintf("ahp-session:/row-%d", i)
			put(t, rows, all[i])
		}
		for _, r := range all {
			sameRow(t, get(t, rows, r), r)
		}
	})
	t.Run("PutReplacesTheRowOfItsKey", func(t *testing.T) {
		rows := h.Open(t)
		r := sampleRow("motion", "user:soft", "work")
		put(t, rows, r)
		r.Session, r.Provider, r.Preset = "ahp-session:/newer", "", "quick"
		r.UpdatedAt = r.UpdatedAt.Add(time.Minute)
		put(t, rows, r)
		sameRow(t, get(t, rows, r), r)
	})
	t.Run("ConcurrentPutsOfManyKeysAllStay", func(t *testing.T) {
		rows := h.Open(t)
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := rows.Put(rowsCtx(t), sampleRow("motion", "user:soft", fmt.Sprintf("w-%d", i))); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		for i := range 20 {
			r := sampleRow("motion", "user:soft", fmt.Sprintf("w-%d", i))
			sameRow(t, get(t, rows, r), r)
		}
	})
	t.Run("RemoveBotRemovesEveryRowOfTheBotAlone", func(t *testing.T) {
		rows := h.Open(t)
		gone := []wake.Row{sampleRow("motion", "user:soft", "work"), sampleRow("motion", "user:tess", "w-2")}
		kept := sampleRow("motionless", "user:soft", "work")
		for _, r := range append(gone, kept) {
			put(t, rows, r)
		}
		if err := rows.RemoveBot(rowsCtx(t), "motion"); err != nil {
			t.Fatal(err)
		}
		check := []wake.Rows{rows}
		if h.Reopen != nil {
			check = append(check, h.Reopen(t, rows))
		}
		for _, on := range check {
			for _, r := range gone {
				if got, ok, err := on.Get(rowsCtx(t), r.Bot, r.Person, r.Name); err != nil || ok {
					t.Errorf("after RemoveBot, Get %s/%s/%s = %+v, %v, %v; want none", r.Bot, r.Person, r.Name, got, ok, err)
				}
			}
			sameRow(t, get(t, on, kept), kept)
		}
		if err := rows.RemoveBot(rowsCtx(t), "nobody"); err != nil {
			t.Errorf("RemoveBot of a bot with no row: %v", err)
		}
	})
	t.Run("RowsSurviveAReopen", func(t *testing.T) {
		if h.Reopen == nil {
			t.Skip("Rows.Reopen is nil: the storage does not outlive its rows")
		}
		rows := h.Open(t)
		want := sampleRow("motion", "user:soft", "work")
		put(t, rows, want)
		sameRow(t, get(t, h.Reopen(t, rows), want), want)
	})
}

func rowsCtx(t *testing.T) context.Context { return testCtx(t, DefaultWait) }

// sampleRow is a row with every field set, its time to the millisecond.
func sampleRow(bot, person, name string) wake.Row {
	return wake.Row{Bot: bot, Person: person, Name: name, Session: "ahp-session:/" + bot + "-" + name,
		Provider: "echo", UpdatedAt: time.Date(2026, 11, 30, 9, 0, 0, 123e6, time.UTC)}
}

func put(t *testing.T, rows wake.Rows, r wake.Row) {
	t.Helper()
	if err := rows.Put(rowsCtx(t), r); err != nil {
		t.Fatalf("Put %s/%s/%s: %v", r.Bot, r.Person, r.Name, err)
	}
}

func get(t *testing.T, rows wake.Rows, key wake.Row) wake.Row {
	t.Helper()
	r, ok, err := rows.Get(rowsCtx(t), key.Bot, key.Person, key.Name)
	if err != nil || !ok {
		t.Fatalf("Get %s/%s/%s: %v, %v", key.Bot, key.Person, key.Name, ok, err)
	}
	return r
}

func sameRow(t *testing.T, got, want wake.Row) {
	t.Helper()
	if !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Fatalf("row %s/%s/%s updated at %v, want %v", want.Bot, want.Person, want.Name, got.UpdatedAt, want.UpdatedAt)
	}
	got.UpdatedAt = want.UpdatedAt
	if got != want {
		t.Fatalf("row %+v, want %+v", got, want)
	}
}
