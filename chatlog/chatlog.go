// Package chatlog is the port behind every chat log the bots keep: a bot
// chat's log (bot) and a back session's log (wake). A log is an
// append-only list of lines, each one JSON value, named by a Key: which
// kind of log, the bot it is with, and the session URI it records. Its
// first line is written by Create, the others by Append, and Read gives
// them back in order, so that a restarted or another instance replays the
// chat exactly as the one that wrote it.
//
// Files (one file of JSON lines per log, under a configuration folder)
// and Mem implement it here; chatlog/pgchatlog keeps logs in PostgreSQL.
// chatlog/chatlogtest is the conformance suite every implementation
// passes.
package chatlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
)

// Kind says which log a Key names. It is the name of the folder the file
// implementation keeps such logs in, under the bot's folder.
type Kind string

// The kinds of log.
const (
	// Chat is a bot chat's log: its open line, then the actions of the
	// chat and its session (package bot).
	Chat Kind = "logs"
	// Back is a back session's log: its open line, then the actions
	// applied to its chat and session (package wake/local).
	Back Kind = "sessions"
)

// Key names one log.
type Key struct {
	// Kind is Chat or Back.
	Kind Kind
	// Bot is the slug of the bot the log's session is with.
	Bot string
	// Session is the session URI the log records.
	Session string
}

// String is the key as a log message names it.
func (k Key) String() string { return string(k.Kind) + ":" + k.Bot + ":" + k.Session }

// MaxSession bounds a key's session URI: its base64url names a file.
const MaxSession = 180

// Check reports what is wrong with k, in one sentence: an unknown kind, a
// bot slug that cannot name a folder, or an empty or too long session.
func (k Key) Check() error {
	if k.Kind != Chat && k.Kind != Back {
		return fmt.Errorf("chat log: %q is not a kind of log", k.Kind)
	}
	if k.Bot == "" || k.Bot == "." || k.Bot == ".." || strings.ContainsAny(k.Bot, "/\\\x00") || strings.HasPrefix(k.Bot, ".") {
		return fmt.Errorf("chat log: the bot %q cannot name a folder", k.Bot)
	}
	if k.Session == "" || len(k.Session) > MaxSession {
		return fmt.Errorf("chat log: a session URI of %d bytes cannot name a log (1 to %d)", len(k.Session), MaxSession)
	}
	return nil
}

// CheckLine reports what is wrong with a line a log is given: it must be
// one JSON value on one line.
func CheckLine(line []byte) error {
	if len(bytes.TrimSpace(line)) == 0 {
		return fmt.Errorf("chat log: an empty line")
	}
	if bytes.ContainsAny(line, "\n\r") {
		return fmt.Errorf("chat log: a line holds a line break")
	}
	return nil
}

// Logs keeps chat logs. Its methods may be called concurrently; appends
// to one log are serialised by their caller (one writer per log, or, with
// Shared, appends at a count that the log orders), and a log's lines come
// back in the order they were appended.
type Logs interface {
	// Create makes the log of key with first as its first line, durably.
	// A log already there is an error wrapping fs.ErrExist; a bad key or
	// line is an error naming what is wrong.
	Create(ctx context.Context, key Key, first []byte) error
	// Append appends line to the log of key. It never makes the log: one
	// removed (its chat disposed, its bot deleted) gets no new one, and
	// the error wraps fs.ErrNotExist. With sync the line is durable when
	// Append returns; without, a killed process keeps it but a power loss
	// may not. A failed Append leaves none of the line behind.
	Append(ctx context.Context, key Key, line []byte, sync bool) error
	// Read returns the lines of the log of key, in order, without their
	// line breaks. bad lists, in one sentence each, what was wrong and
	// left out or repaired (a last line torn by a crash mid-append is cut
	// off, so the next append starts a whole line). No log is an error
	// wrapping fs.ErrNotExist.
	Read(ctx context.Context, key Key) (lines [][]byte, bad []string, err error)
	// List returns the keys of every log of kind, in no set order.
	List(ctx context.Context, kind Kind) ([]Key, error)
	// Remove removes the log of key; one already gone is no error.
	Remove(ctx context.Context, key Key) error
}

// ErrConflict is what AppendAt answers when the log holds lines its
// caller has not read: another process appended first, and nothing was
// written.
var ErrConflict = errors.New("chat log: another writer appended first")

// Shared is a Logs that several processes write at once (instances on one
// database). One log then has many writers, ordered by the log itself: a
// writer appends at the number of lines it has read (AppendAt), so that
// of two appends made on the same lines exactly one goes in, and the
// other writer reads what it missed (ReadAfter) and decides again. Follow
// tells each process what the others wrote.
type Shared interface {
	Logs
	// AppendAt appends line as the log's line n+1 when the log holds
	// exactly n lines; otherwise it writes nothing and answers
	// ErrConflict. Otherwise it is Append.
	AppendAt(ctx context.Context, key Key, n int64, line []byte, sync bool) error
	// ReadAfter returns the lines of the log of key after its first n, in
	// order. No log is an error wrapping fs.ErrNotExist.
	ReadAfter(ctx context.Context, key Key, n int64) ([][]byte, error)
	// Heads returns how many lines every log of kind holds.
	Heads(ctx context.Context, kind Kind) (map[Key]int64, error)
	// Follow calls changed with a log of kind and the number of lines it
	// holds after each write to it by any process (0 once it is
	// removed), in the order they were made, from one goroutine, until
	// ctx ends; then it returns. Each time it begins to listen (the first
	// time, and after a gap such as a dropped connection) it calls
	// changed with the zero Key: any log may have changed since, and
	// Heads tells how.
	Follow(ctx context.Context, kind Kind, changed func(Key, int64)) error
}
