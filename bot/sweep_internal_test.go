package bot

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agenthost/bots/access"
)

// TestTheSweepTakesPersonaTempFilesTooYoungAtStartOnceTheyAreOldEnough:
// a kill -9 just before a quick restart leaves temp files younger than
// atomicfile.StaleAfter, which the start must leave (they may be a write
// in progress); the sweep looks at their folders again once they are old
// enough and takes them then, keeping the bot's own temp files.
func TestTheSweepTakesPersonaTempFilesTooYoungAtStartOnceTheyAreOldEnough(t *testing.T) {
	t.Parallel()
	s, _ := newGateService(t)
	ctx := context.Background()
	if _, err := s.Make(ctx, access.RootPrincipal(), "motion", []byte(`{"name":"Motion"}`)); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(s.Root(), "motion")
	var temps []string
	for _, name := range []string{".tmp-AGENTS.md-1", ".tmp-CLAUDE.md-2", ".tmp-notes-3"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("half a write"), 0o644); err != nil {
			t.Fatal(err)
		}
		temps = append(temps, path)
	}
	exists := func(path string) bool { _, err := os.Lstat(path); return err == nil }
	clock := time.Now().Add(time.Second) // just after the kill
	now := func() time.Time { return clock }
	waited := false
	after := func(d time.Duration) <-chan time.Time {
		for _, p := range temps {
			if !exists(p) {
				t.Errorf("the first pass took %s, which may be a write in progress", p)
			}
		}
		waited = true
		clock = clock.Add(d)
		ch := make(chan time.Time, 1)
		ch <- clock
		return ch
	}
	if err := s.clearPersonaTemps(ctx, now, after); err != nil {
		t.Fatal(err)
	}
	if !waited {
		t.Fatal("the sweep did not come back for the young temp files")
	}
	for _, p := range temps[:2] {
		if exists(p) {
			t.Errorf("%s is still there once it is old enough", p)
		}
	}
	if !exists(temps[2]) {
		t.Error("the bot's own temp file was taken")
	}
}
