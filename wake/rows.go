package wake

import (
	"context"
	"time"
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
