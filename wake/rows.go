package wake

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
	"sync"
	"time"

	"github.com/agenthost/bots/internal/keyfile"
)

// Row says which back session a bot's (person, session name) is on: the
// session a message to that name continues.
type Row struct {
	// Bot is the bot's slug.
	Bot string `json:"bot"`
	// Person is the owner string of the person the session is for
	// (user:<id>, root:<host>).
	Person string `json:"person"`
	// Name is the filled session name (work, w-<turn>…).
	Name string `json:"name"`
	// Session is the back session's URI at the session host.
	Session string `json:"session"`
	// Provider is the agent provider the session was started on, "" when
	// it was started on a preset.
	Provider string `json:"provider,omitempty"`
	// Preset is the preset the session was started from, if any.
	Preset string `json:"preset,omitempty"`
	// UpdatedAt is when the row was last written.
	UpdatedAt time.Time `json:"updatedAt"`
}

// Rows keeps the rows of every bot: one per (bot, person, name). Its
// methods may be called concurrently. Put replaces the row of the same
// (bot, person, name).
type Rows interface {
	// Get returns the row of (bot, person, name); ok is false when there
	// is none.
	Get(ctx context.Context, bot, person, name string) (row Row, ok bool, err error)
	// Put writes the row, over any row of the same (bot, person, name).
	Put(ctx context.Context, row Row) error
	// RemoveBot removes every row of bot, as its deletion does: a Get
	// then finds none. A bot with no row is no error.
	RemoveBot(ctx context.Context, bot string) error
}

// MemRows keeps rows in memory. The zero value is ready to use.
type MemRows struct {
	mu   sync.Mutex
	rows map[rowKey]Row
}

type rowKey struct{ bot, person, name string }

// Get returns the row of (bot, person, name).
func (m *MemRows) Get(ctx context.Context, bot, person, name string) (Row, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[rowKey{bot, person, name}]
	return r, ok, nil
}

// Put writes the row.
func (m *MemRows) Put(ctx context.Context, row Row) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rows == nil {
		m.rows = map[rowKey]Row{}
	}
	m.rows[rowKey{row.Bot, row.Person, row.Name}] = row
	return nil
}

// RemoveBot removes every row of bot.
func (m *MemRows) RemoveBot(ctx context.Context, bot string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.rows {
		if k.bot == bot {
			delete(m.rows, k)
		}
	}
	return nil
}

// FileRows keeps each row as a small JSON file,
// <configDir>/bots/<bot>/sessions/<name>@<base64url(person)>.json, written
// crash-safely. Rows read once are cached; the files are the truth across
// restarts.
type FileRows struct {
	botsDir string
	files   *keyfile.Store[rowKey, Row]
}

// NewFileRows returns the rows kept under configDir.
func NewFileRows(configDir string) *FileRows {
	f := &FileRows{botsDir: filepath.Join(configDir, "bots")}
	f.files = keyfile.New(keyfile.Config[rowKey, Row]{
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
func decodeRow(data []byte) (Row, bool, error) {
	var r Row
	if err := json.Unmarshal(data, &r); err != nil {
		return Row{}, false, err
	}
	if r.Session == "" {
		return Row{}, false, errors.New("names no session")
	}
	return r, true, nil
}

// Path is the file of the row of (bot, person, name).
func (f *FileRows) Path(bot, person, name string) string {
	return filepath.Join(f.botsDir, bot, "sessions", name+"@"+base64.RawURLEncoding.EncodeToString([]byte(person))+".json")
}

// Get returns the row of (bot, person, name). A file that is not a row is
// an error naming it.
func (f *FileRows) Get(ctx context.Context, bot, person, name string) (Row, bool, error) {
	r, ok, err := f.files.Get(rowKey{bot, person, name})
	if err != nil {
		return Row{}, false, fmt.Errorf("read session row: %w", err)
	}
	if ok {
		r.Bot, r.Person, r.Name = bot, person, name
	}
	return r, ok, nil
}

// Put writes the row's file crash-safely, making the sessions folder when
// missing.
func (f *FileRows) Put(ctx context.Context, row Row) error {
	if err := f.files.Put(rowKey{row.Bot, row.Person, row.Name}, row); err != nil {
		return fmt.Errorf("write session row: %w", err)
	}
	return nil
}

// RemoveBot removes the row files of bot (its sessions folder's
// <name>@<person>.json; the back sessions' logs beside them are the chat
// logs'), and the folder when that leaves it empty.
func (f *FileRows) RemoveBot(ctx context.Context, bot string) error {
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
