package filerecord_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/filerecord"
)

// TestStormOfHandEditsWhileTheStoreWrites makes 200 hand edits to 50 bots
// within a few seconds, in every save pattern, while the store writes the
// same bots. A person edits the model, the store the provider. It checks:
// no lost update (each bot ends with its last hand model and the store's
// last provider, on disk and in memory); no torn read (every record read or
// heard is one that was saved whole); no echo (each of the store's writes
// is heard once, and each hand save at most once); goroutines and heap back
// to where they were after Close.
//
// A bot's hand save and the store's write of it do not run in the same
// microseconds: nothing can keep a person's write(2) from landing on a file
// in the instant it is being replaced, and the test holds a lock per bot
// around each so that the editor's read-modify-write does not undo the
// store's write either. What it exercises is the race that matters: the
// store writing a bot whose hand edit it has not taken yet.
func TestStormOfHandEditsWhileTheStoreWrites(t *testing.T) {
	const bots, edits = 50, 200
	openWatched(t, t.TempDir()).s.Close() // notify's own goroutines start once per process
	waitGoroutines(t, runtime.NumGoroutine())
	baseGoroutines := runtime.NumGoroutine()
	baseHeap := heapNow()

	dir := t.TempDir()
	w := openWatched(t, dir)
	ctx := context.Background()
	ids := make([]string, bots)
	for i := range ids {
		ids[i] = fmt.Sprintf("storm-%02d", i)
		w.create(handBot(ids[i]))
	}
	locks := make([]sync.Mutex, bots)

	// Everything heard, read on.
	var heard []record.Change
	heardDone := make(chan struct{})
	stopHearing := make(chan struct{})
	go func() {
		defer close(heardDone)
		for {
			select {
			case c := <-w.changes:
				heard = append(heard, c)
			case <-stopHearing:
				return
			}
		}
	}()

	// A reader checks that nothing read is torn.
	var errMu sync.Mutex
	var readErr error
	fail := func(err error) {
		errMu.Lock()
		if readErr == nil {
			readErr = err
		}
		errMu.Unlock()
	}
	stopReading := make(chan struct{})
	var bg sync.WaitGroup
	bg.Go(func() {
		for {
			select {
			case <-stopReading:
				return
			default:
			}
			list, err := w.s.List(ctx)
			if err != nil {
				fail(err)
				return
			}
			for _, e := range list {
				if err := whole(e.Record); err != nil && e.Record.ID != sentinel {
					fail(err)
					return
				}
			}
			runtime.Gosched()
		}
	})

	// The store writes providers until the person is done.
	ownETags := map[string]string{} // etag → the provider the store wrote
	lastProvider := map[string]string{}
	conflicts := 0
	stopWriting := make(chan struct{})
	bg.Go(func() {
		rng := rand.New(rand.NewPCG(1, 2))
		for n := 0; ; n++ {
			select {
			case <-stopWriting:
				return
			default:
			}
			i := rng.IntN(bots)
			locks[i].Lock()
			for {
				e, err := w.s.Get(ctx, ids[i])
				if err != nil {
					fail(err)
					break
				}
				r := e.Record
				r.Provider = fmt.Sprintf("svc-%d", n)
				ne, err := w.s.Update(ctx, r, e.ETag)
				if errors.Is(err, record.ErrConflict) {
					conflicts++
					continue
				}
				if err != nil {
					fail(err)
					break
				}
				ownETags[ne.ETag] = r.Provider
				lastProvider[ids[i]] = r.Provider
				break
			}
			locks[i].Unlock()
			time.Sleep(2 * time.Millisecond) // pacing, not waiting
		}
	})

	// The person saves 200 edits, in turn in each editor's way.
	lastModel := map[string]string{}
	saves := []func(path string, data []byte) error{
		func(path string, data []byte) error { return os.WriteFile(path, data, 0o600) },
		func(path string, data []byte) error {
			tmp := filepath.Join(filepath.Dir(path), ".bot.md.swp")
			if err := os.WriteFile(tmp, data, 0o600); err != nil {
				return err
			}
			return os.Rename(tmp, path)
		},
		func(path string, data []byte) error {
			if err := os.Rename(path, path+"~"); err != nil {
				return err
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				return err
			}
			return os.Remove(path + "~")
		},
	}
	start := time.Now()
	for k := range edits {
		i := (k * 7) % bots
		path := botFile(dir, ids[i])
		model := fmt.Sprintf("hand-%d", k)
		locks[i].Lock()
		data, err := os.ReadFile(path)
		if err == nil {
			lines := strings.Split(string(data), "\n")
			for j, l := range lines {
				if strings.HasPrefix(l, "model: ") {
					lines[j] = "model: " + model
				}
			}
			err = saves[k%len(saves)](path, []byte(strings.Join(lines, "\n")))
		}
		locks[i].Unlock()
		if err != nil {
			t.Fatal(err)
		}
		lastModel[ids[i]] = model
		time.Sleep(10 * time.Millisecond) // a person's pace, not a wait
	}
	close(stopWriting)
	close(stopReading)
	bg.Wait()
	t.Logf("%d hand edits in %v; the store wrote %d times, %d of them refused as conflicts and tried again",
		edits, time.Since(start), len(ownETags), conflicts)
	if readErr != nil {
		t.Fatal(readErr)
	}

	close(stopHearing)
	<-heardDone
	heard = append(heard, w.quiet()...)

	// No echo: each of the store's writes heard once; each hand save at
	// most once.
	seenOwn := map[string]int{}
	seenHand := map[string]int{}
	for _, c := range heard {
		if c.ID == sentinel {
			continue
		}
		if c.Kind != record.Updated {
			t.Fatalf("change %v of %s in a storm of edits", c.Kind, c.ID)
		}
		if err := whole(c.Entry.Record); err != nil {
			t.Fatalf("torn record heard: %v", err)
		}
		if _, own := ownETags[c.Entry.ETag]; own {
			seenOwn[c.Entry.ETag]++
			continue
		}
		key := c.ID + " " + c.Entry.Record.Model + " " + c.Entry.Record.Provider
		seenHand[key]++
	}
	for etag, n := range seenOwn {
		if n != 1 {
			t.Errorf("the store's write %s heard %d times", etag, n)
		}
	}
	if len(seenOwn) != len(ownETags) {
		t.Errorf("heard %d of the store's %d writes", len(seenOwn), len(ownETags))
	}
	for key, n := range seenHand {
		if n != 1 {
			t.Errorf("hand save %s heard %d times", key, n)
		}
	}
	if len(seenHand) > edits {
		byModel := map[string][]string{}
		for key := range seenHand {
			f := strings.Fields(key)
			byModel[f[0]+" "+f[1]] = append(byModel[f[0]+" "+f[1]], f[2])
		}
		for m, providers := range byModel {
			if len(providers) > 1 || !strings.HasPrefix(strings.Fields(m)[1], "hand-") {
				t.Logf("hand change %s heard with providers %v", m, providers)
			}
		}
		t.Errorf("%d hand changes heard for %d saves", len(seenHand), edits)
	}

	// No lost update, in memory and on disk.
	for _, id := range ids {
		e := w.get(id)
		wantProvider := lastProvider[id]
		if wantProvider == "" {
			wantProvider = handBot(id).Provider
		}
		if e.Record.Model != lastModel[id] || e.Record.Provider != wantProvider {
			t.Errorf("%s ends with model %s provider %s, want %s and %s", id, e.Record.Model, e.Record.Provider, lastModel[id], wantProvider)
		}
		onDisk, err := filerecord.Decode(id, readBytes(t, botFile(dir, id)))
		if err != nil || !onDisk.Equal(e.Record) {
			t.Errorf("%s on disk %+v (%v), in memory %+v", id, onDisk, err, e.Record)
		}
	}
	if p := w.s.Problems(); len(p) != 0 {
		t.Errorf("problems: %+v", p)
	}

	if err := w.s.Close(); err != nil {
		t.Fatal(err)
	}
	waitGoroutines(t, baseGoroutines)
	w = nil
	heard, ownETags = nil, nil
	if grown := heapNow() - baseHeap; grown > 1<<20 {
		t.Errorf("heap grew by %d bytes after Close", grown)
	}
}

// whole checks that a record is one a save made whole: the bot's own
// fields, a model and a provider that were written.
func whole(r record.Record) error {
	want := handBot(r.ID)
	modelOK := r.Model == want.Model || strings.HasPrefix(r.Model, "hand-")
	providerOK := r.Provider == want.Provider || strings.HasPrefix(r.Provider, "svc-")
	if !modelOK || !providerOK || r.Owner != want.Owner || r.Workspace != want.Workspace || r.Color != want.Color {
		return fmt.Errorf("torn record %+v", r)
	}
	return nil
}

func heapNow() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
