// Package filechatlog keeps chat logs (chatlog.Logs) as files of JSON
// lines under a host's configuration folder.
package filechatlog

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/maphash"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/internal/atomicfile"
	"github.com/agenthost/bots/internal/jsonl"
	"github.com/agenthost/bots/telemetry"
)

// Logs keeps each log as a file of JSON lines,
// <configDir>/bots/<bot>/<kind>/<base64url(session)>.jsonl: its lines
// appended with one write each (fsynced with sync), a torn last line cut
// off when it is read (internal/jsonl). Create makes the folders; Append
// never does, so a bot whose folder was removed gets no new one. One
// process writes a configuration folder: within it, a Read and an Append
// of one log never overlap, so a Read never cuts off a line being written.
type Logs struct {
	ops     *telemetry.Series // bots_chatlog_operation_duration_seconds{store="file"}
	botsDir string
	seed    maphash.Seed
	locks   [64]sync.Mutex
}

var _ chatlog.Logs = (*Logs)(nil)

// New returns the logs kept under configDir. It touches no file.
func New(configDir string) *Logs {
	return &Logs{botsDir: filepath.Join(configDir, "bots"), seed: maphash.MakeSeed()}
}

// Measure times the logs' operations into hub (store="file"). Call it
// before the logs are used.
func (f *Logs) Measure(hub *telemetry.Hub) { f.ops = hub.LogSeries("file") }

// timed records an operation begun at began, when measured.
func (f *Logs) timed(op string, began time.Time) {
	if f.ops != nil {
		f.ops.Since(began, op)
	}
}

// now is the time when the logs are measured, else zero.
func (f *Logs) now() time.Time {
	if f.ops == nil {
		return time.Time{}
	}
	return time.Now()
}

// lock locks the stripe of path's log and returns its unlock.
func (f *Logs) lock(path string) func() {
	m := &f.locks[maphash.String(f.seed, path)%uint64(len(f.locks))]
	m.Lock()
	return m.Unlock
}

// Path is the file of key's log.
func (f *Logs) Path(key chatlog.Key) string {
	return filepath.Join(f.botsDir, key.Bot, string(key.Kind), base64.RawURLEncoding.EncodeToString([]byte(key.Session))+".jsonl")
}

// path checks key and returns its file.
func (f *Logs) path(key chatlog.Key) (string, error) {
	if err := key.Check(); err != nil {
		return "", err
	}
	return f.Path(key), nil
}

// Create makes the log's folder (mode 0700) and its file with first.
func (f *Logs) Create(ctx context.Context, key chatlog.Key, first []byte) error {
	defer f.timed("create", f.now())
	path, err := f.path(key)
	if err != nil {
		return err
	}
	if err := chatlog.CheckLine(first); err != nil {
		return err
	}
	if err := atomicfile.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("make the chat log's folder: %w", err)
	}
	defer f.lock(path)()
	return jsonl.Create(path, first)
}

// Append appends line with one write, fsynced with sync.
func (f *Logs) Append(ctx context.Context, key chatlog.Key, line []byte, sync bool) error {
	defer f.timed(telemetry.AppendOp(sync), f.now())
	path, err := f.path(key)
	if err != nil {
		return err
	}
	if err := chatlog.CheckLine(line); err != nil {
		return err
	}
	defer f.lock(path)()
	return jsonl.Append(path, line, sync)
}

// Read reads the log's file, cutting off a torn last line.
func (f *Logs) Read(ctx context.Context, key chatlog.Key) ([][]byte, []string, error) {
	defer f.timed("read", f.now())
	path, err := f.path(key)
	if err != nil {
		return nil, nil, err
	}
	unlock := f.lock(path)
	lines, bad, err := jsonl.Read(path)
	unlock()
	if err != nil {
		return nil, bad, fmt.Errorf("read chat log %s: %w", path, err)
	}
	return lines, bad, nil
}

// List lists bots/*/<kind>/*.jsonl: every file whose name is the base64url
// of a session URI, leaving out hidden bot folders and temporary files. A
// bot folder known to hold no folder (holdsNoFolder) is not looked into.
func (f *Logs) List(ctx context.Context, kind chatlog.Kind) ([]chatlog.Key, error) {
	listed, err := f.ListKinds(ctx, kind)
	return listed[kind], err
}

// ListKinds lists the logs of each of kinds as List does, in one pass over
// the bot folders: the look at each bot folder (a system call, most of a
// listing at 100,000 bots) serves every kind. The answer has an entry
// for every kind asked, nil for one that has no log.
func (f *Logs) ListKinds(ctx context.Context, kinds ...chatlog.Kind) (map[chatlog.Kind][]chatlog.Key, error) {
	defer f.timed("list", f.now())
	for _, kind := range kinds {
		if err := (chatlog.Key{Kind: kind, Bot: "x", Session: "x"}).Check(); err != nil {
			return nil, err
		}
	}
	out := make(map[chatlog.Kind][]chatlog.Key, len(kinds))
	for _, kind := range kinds {
		out[kind] = nil
	}
	dir, err := os.Open(f.botsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list chat logs: %w", err)
	}
	defer dir.Close()
	bots, err := dir.ReadDir(-1)
	if err != nil {
		return nil, fmt.Errorf("list chat logs: %w", err)
	}
	empty := foldersHoldingNone(dir, bots)
	for i, b := range bots {
		if empty[i] {
			continue
		}
		for _, kind := range kinds {
			logs, err := os.ReadDir(filepath.Join(f.botsDir, b.Name(), string(kind)))
			if err != nil {
				continue
			}
			for _, l := range logs {
				name, ok := strings.CutSuffix(l.Name(), ".jsonl")
				if l.IsDir() || !ok || atomicfile.IsTemp(l.Name()) {
					continue
				}
				session, err := base64.RawURLEncoding.DecodeString(name)
				if err != nil {
					continue
				}
				k := chatlog.Key{Kind: kind, Bot: b.Name(), Session: string(session)}
				if k.Check() == nil {
					out[kind] = append(out[kind], k)
				}
			}
		}
	}
	return out, nil
}

// listers bounds the goroutines foldersHoldingNone looks with.
const listers = 4

// foldersHoldingNone reports, for each of the entries of dir, whether it
// is no bot folder that can hold logs: not a folder, a dot folder, or one
// that holds no subfolder (holdsNoFolder). A look at each folder is a
// system call; at 100,000 bots they are most of a listing, so a few
// goroutines share them, and end before it returns.
func foldersHoldingNone(dir *os.File, ents []os.DirEntry) []bool {
	none := make([]bool, len(ents))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(listers, 2*runtime.GOMAXPROCS(0), len(ents)/256+1) {
		wg.Go(func() {
			const chunk = 64 // entries taken at once, so that no two goroutines write one cache line
			for {
				from := int(next.Add(chunk) - chunk)
				if from >= len(ents) {
					return
				}
				for i := from; i < min(from+chunk, len(ents)); i++ {
					b := ents[i]
					none[i] = !b.IsDir() || strings.HasPrefix(b.Name(), ".") || holdsNoFolder(dir, b.Name())
				}
			}
		})
	}
	wg.Wait()
	return none
}

// Remove removes the log's file.
func (f *Logs) Remove(ctx context.Context, key chatlog.Key) error {
	defer f.timed("remove", f.now())
	path, err := f.path(key)
	if err != nil {
		return err
	}
	defer f.lock(path)()
	return jsonl.Remove(path)
}
