// Package filerows keeps back-session rows (wake.Rows) as files under a
// host's configuration folder, beside each bot's back-session logs.
package filerows

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agenthost/bots/internal/keyfile"
	"github.com/agenthost/bots/wake"
)

// Rows keeps each row as a small JSON file,
// <configDir>/bots/<bot>/sessions/<name>@<base64url(person)>.json, written
// crash-safely. Rows read once are cached; the files are the truth across
// restarts.
type Rows struct {
	botsDir string
	files   *keyfile.Store[rowKey, wake.Row]
}

// rowKey names a row: (bot, person, name).
type rowKey struct{ bot, person, name string }

// New returns the rows kept under configDir.
func New(configDir string) *Rows {
	f := &Rows{botsDir: filepath.Join(configDir, "bots")}
	f.files = keyfile.New(keyfile.Config[rowKey, wake.Row]{
		Path: func(k rowKey) (string, error) {
			if err := checkRowKey(k.bot, k.name); err != nil {
				return "", err
			}
			return f.Path(k.bot, k.person, k.name), nil
		},
		Decode: decodeRow,
		Cache:  true,
	})
	return f
}

// decodeRow reads a row's file; one that names no session is not a row.
func decodeRow(data []byte) (wake.Row, bool, error) {
	var r wake.Row
	if err := json.Unmarshal(data, &r); err != nil {
		return wake.Row{}, false, err
	}
	if r.Session == "" {
		return wake.Row{}, false, errors.New("names no session")
	}
	return r, true, nil
}

// Path is the file of the row of (bot, person, name).
func (f *Rows) Path(bot, person, name string) string {
	return filepath.Join(f.botsDir, bot, "sessions", name+"@"+base64.RawURLEncoding.EncodeToString([]byte(person))+".json")
}

// Get returns the row of (bot, person, name). A file that is not a row is
// an error naming it.
func (f *Rows) Get(ctx context.Context, bot, person, name string) (wake.Row, bool, error) {
	r, ok, err := f.files.Get(rowKey{bot, person, name})
	if err != nil {
		return wake.Row{}, false, fmt.Errorf("read session row: %w", err)
	}
	if ok {
		r.Bot, r.Person, r.Name = bot, person, name
	}
	return r, ok, nil
}

// Put writes the row's file crash-safely, making the sessions folder when
// missing.
func (f *Rows) Put(ctx context.Context, row wake.Row) error {
	if err := f.files.Put(rowKey{row.Bot, row.Person, row.Name}, row); err != nil {
		return fmt.Errorf("write session row: %w", err)
	}
	return nil
}

// RemoveBot removes the row files of bot (its sessions folder's
// <name>@<person>.json; the back sessions' logs beside them are the chat
// logs'), and the folder when that leaves it empty.
func (f *Rows) RemoveBot(ctx context.Context, bot string) error {
	if err := checkRowKey(bot, "x"); err != nil {
		return err
	}
	dir := filepath.Join(f.botsDir, bot, "sessions")
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the session rows of %s: %w", bot, err)
	}
	for _, e := range entries {
		if name := e.Name(); strings.HasSuffix(name, ".json") && strings.Contains(name, "@") {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove the session rows of %s: %w", bot, err)
			}
		}
	}
	f.files.Forget(func(k rowKey) bool { return k.bot == bot })
	os.Remove(dir) // only when empty
	return nil
}

// checkRowKey refuses a bot or name that would leave the bots folder.
func checkRowKey(bot, name string) error {
	for _, s := range []string{bot, name} {
		if s == "" || s == "." || s == ".." || strings.ContainsAny(s, `/\`) {
			return fmt.Errorf("session row: %q cannot name a file", s)
		}
	}
	return nil
}

var _ wake.Rows = (*Rows)(nil)
