package filerecord_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/internal/atomicfile"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/filerecord"
)

// crashChildEnv, set to a configuration folder and a slug prefix, makes the
// test binary the child of TestCrashMidWriteLeavesNoTornFiles.
const crashChildEnv = "FILERECORD_CRASH_CHILD"

// ack is one acknowledged write as the child prints it.
type ack struct {
	op   string // create, update or delete
	slug string
	gen  int // the write's number for its slug, kept in the description
	etag string
}

// TestCrashMidWriteLeavesNoTornFiles runs a child that makes, edits and
// deletes bots as fast as it can, printing each acknowledged write, and
// SIGKILLs it mid-flight, twice over the same folder. After each kill every
// bot.md must parse, and each bot must be at its last acknowledged write or
// at the one write after it that was never acknowledged.
func TestCrashMidWriteLeavesNoTornFiles(t *testing.T) {
	t.Parallel()
	if v := os.Getenv(crashChildEnv); v != "" {
		dir, prefix, _ := strings.Cut(v, "|")
		crashChild(dir, prefix)
		return
	}
	dir := t.TempDir()
	last := map[string]ack{}
	for round := range 2 {
		for _, a := range runChild(t, dir, fmt.Sprintf("r%d", round), 300) {
			last[a.slug] = a
		}
		checkAfterCrash(t, dir, last)
	}
}

// runChild runs the child until it has acknowledged at least n writes,
// kills it, and returns every write it acknowledged.
func runChild(t *testing.T, dir, prefix string, n int) []ack {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCrashMidWriteLeavesNoTornFiles$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir+"|"+prefix)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acks []ack
	r := bufio.NewReader(out)
	killed := false
	for {
		line, err := r.ReadString('\n')
		if err != nil { // io.EOF: a line cut by the kill is no acknowledgement
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
		f := strings.Fields(line)
		if len(f) != 5 || f[0] != "ack" {
			continue
		}
		gen, _ := strconv.Atoi(f[3])
		acks = append(acks, ack{op: f[1], slug: f[2], gen: gen, etag: f[4]})
		if len(acks) >= n && !killed {
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	cmd.Wait()
	if !killed {
		t.Fatalf("the child stopped after %d acknowledgements: %s", len(acks), stderr.String())
	}
	return acks
}

// crashChild writes with four workers, each on bots of its own: make one,
// edit it a few times, delete it, make the next. It prints each write once
// the store has acknowledged it, and runs until it is killed.
func crashChild(dir, prefix string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(3)
	}
	s, err := filerecord.Open(context.Background(), filerecord.Config{ConfigDir: dir})
	if err != nil {
		fail(err)
	}
	var mu sync.Mutex
	acked := func(op, slug string, gen int, etag string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, "ack %s %s %d %s\n", op, slug, gen, etag)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for b := 0; ; b++ {
				slug := fmt.Sprintf("%s-w%d-b%d", prefix, w, b)
				r := smallBot(slug)
				r.Description = "gen 0"
				e, err := s.Create(ctx, r)
				if err != nil {
					fail(err)
				}
				acked("create", slug, 0, e.ETag)
				gen := 1
				for ; gen <= 5; gen++ {
					r.Description = fmt.Sprintf("gen %d", gen)
					if e, err = s.Update(ctx, r, e.ETag); err != nil {
						fail(err)
					}
					acked("update", slug, gen, e.ETag)
				}
				if err := s.Delete(ctx, slug, e.ETag); err != nil {
					fail(err)
				}
				acked("delete", slug, gen, "-")
			}
		})
	}
	wg.Wait()
}

func checkAfterCrash(t *testing.T, dir string, last map[string]ack) {
	t.Helper()
	dirs, err := os.ReadDir(filepath.Join(dir, "bots"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if atomicfile.IsTemp(d.Name()) {
			continue
		}
		data, err := os.ReadFile(botFile(dir, d.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := filerecord.Decode(d.Name(), data); err != nil {
			t.Fatalf("%s is torn: %v\n%s", botFile(dir, d.Name()), err, data)
		}
	}
	s := open(t, dir, nil)
	defer s.Close()
	for _, p := range s.Problems() {
		// A kill between a delete's tombstone and its removal leaves a
		// spent name, which the load reports; nothing else may be wrong.
		if !strings.Contains(p.Reason, "spent") {
			t.Fatalf("problem after the crash: %+v", p)
		}
	}
	ctx := context.Background()
	for slug, a := range last {
		gone, err := s.Gone(ctx, slug)
		if err != nil {
			t.Fatal(err)
		}
		e, err := s.Get(ctx, slug)
		switch {
		case a.op == "delete":
			if !gone || !errors.Is(err, record.ErrNotFound) {
				t.Errorf("%s: acknowledged delete, but gone %v, Get %v", slug, gone, err)
			}
		case gone:
			// A later delete was under way: it got as far as the tombstone.
			if a.gen != 5 {
				t.Errorf("%s: tombstone after gen %d, but the delete comes after gen 5", slug, a.gen)
			}
		case err != nil:
			t.Errorf("%s: acknowledged %s gen %d, but Get: %v", slug, a.op, a.gen, err)
		default:
			gen, _ := strconv.Atoi(strings.TrimPrefix(e.Record.Description, "gen "))
			switch gen {
			case a.gen:
				if e.ETag != a.etag {
					t.Errorf("%s: gen %d with etag %s, acknowledged as %s", slug, gen, e.ETag, a.etag)
				}
			case a.gen + 1:
			default:
				t.Errorf("%s: reads gen %d, last acknowledged gen %d", slug, gen, a.gen)
			}
		}
	}
	t.Logf("after the crash: %d bots checked, %d problems", len(last), len(s.Problems()))
}
