package filerows_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/filerows"
	"github.com/agenthost/bots/wake/waketest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	dirs := map[wake.Rows]string{}
	waketest.RunRows(t, waketest.Rows{
		Open: func(t *testing.T) wake.Rows {
			dir := t.TempDir()
			r := filerows.New(dir)
			dirs[r] = dir
			return r
		},
		Reopen: func(_ *testing.T, old wake.Rows) wake.Rows { return filerows.New(dirs[old]) },
	})
}

func TestKeepOneRowPerPersonAndName(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rows := filerows.New(dir)
	r := wake.Row{Bot: "motion", Person: "user:soft", Name: "work", Session: "ahp-session:/1", UpdatedAt: time.Now().UTC()}
	if err := rows.Put(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	r.Session = "ahp-session:/2"
	if err := rows.Put(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	got, ok, err := filerows.New(dir).Get(t.Context(), "motion", "user:soft", "work")
	if err != nil || !ok || got.Session != "ahp-session:/2" {
		t.Fatalf("row %+v %v %v, want the second session", got, ok, err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "bots", "motion", "sessions"))
	if len(entries) != 1 {
		t.Errorf("%d files, want one row file", len(entries))
	}
	if _, ok, _ := filerows.New(dir).Get(t.Context(), "motion", "user:other", "work"); ok {
		t.Error("another person shares the row")
	}
	if err := rows.Put(t.Context(), wake.Row{Bot: "../x", Name: "work", Session: "s"}); err == nil {
		t.Error("a bot slug leaving the folder was written")
	}
}
