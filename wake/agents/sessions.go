package agents

import (
	"context"
	"time"
)

// Reasons a SessionRecord gives for a fresh agent session.
const (
	// ReasonNoLoad: the agent does not advertise session/load.
	ReasonNoLoad = "agent does not support session/load"
	// ReasonNoEarlier: the SessionStore held no agent session for the key.
	ReasonNoEarlier = "no earlier session"
	// ReasonLoadFailed prefixes the error of a session/load that failed.
	ReasonLoadFailed = "session/load failed: "
)

// SessionRecord is what a SessionStore keeps of a back session's agent
// session: its id, and whether the last start of a child continued it with
// session/load or started it fresh, and why.
type SessionRecord struct {
	// ID is the agent session id.
	ID string `json:"id"`
	// StartedAt is when the agent session was started (session/new); zero
	// for a record read from an old one-line id file.
	StartedAt time.Time `json:"startedAt,omitzero"`
	// LoadedAt is when it was last continued with session/load; zero when
	// it never was.
	LoadedAt time.Time `json:"loadedAt,omitzero"`
	// Fresh is true when the last start of a child started a new agent
	// session, and Reason says why (ReasonNoLoad, ReasonNoEarlier or
	// ReasonLoadFailed and the error); false when it continued ID.
	Fresh  bool   `json:"fresh"`
	Reason string `json:"reason,omitempty"`
}

// SessionStore keeps the SessionRecord of each back session's agent session,
// by a key that names the back session (acp.Config.Key), so that a session
// started again continues the same agent session with session/load, and says
// when it could not. Its methods may be called concurrently.
type SessionStore interface {
	// Load returns the record kept for key; ok is false when there is
	// none.
	Load(ctx context.Context, key string) (r SessionRecord, ok bool, err error)
	// Save keeps r for key, over any record kept before.
	Save(ctx context.Context, key string, r SessionRecord) error
}
