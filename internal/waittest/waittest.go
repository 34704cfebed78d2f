// Package waittest holds what tests wait with: a condition polled until a
// deadline, and a log that goroutines write while a test reads it and
// waits for a line. Tests never sleep to wait (the developers' guide);
// they wait for what they need, or fail naming it.
package waittest

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// Timeout is how long For waits before failing: long enough for a slow
// machine under -race, short enough to fail a hung test before the
// package's timeout.
const Timeout = 10 * time.Second

// every is how often For looks again.
const every = 2 * time.Millisecond

// For polls cond until it holds, failing tb with what it waited for
// after Timeout.
func For(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	forWithin(tb, Timeout, what, cond)
}

// forWithin is For waiting d.
func forWithin(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	if !Within(d, cond) {
		tb.Fatalf("timed out after %v waiting for %s", d, what)
	}
}

// Within polls cond until it holds or d has passed, and reports whether
// it held: for a test that says more than For does when it fails.
func Within(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return cond()
		}
		time.Sleep(every) // polling with a deadline
	}
	return true
}

// Log is a buffer that any goroutine may write (a slog handler, a child
// process's output) while a test reads it. The zero value is ready.
type Log struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is what was written.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Bytes is a copy of what was written.
func (l *Log) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

// Len is how many bytes were written.
func (l *Log) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Len()
}

// Reset forgets what was written.
func (l *Log) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Reset()
}

// Logger is a text logger writing to l the records at level or above.
func (l *Log) Logger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: level}))
}

// For waits until what was written contains s, failing tb with the log
// after Timeout.
func (l *Log) For(tb testing.TB, s string) {
	tb.Helper()
	l.forWithin(tb, Timeout, s)
}

// forWithin is For waiting d.
func (l *Log) forWithin(tb testing.TB, d time.Duration, s string) {
	tb.Helper()
	if !Within(d, func() bool { return strings.Contains(l.String(), s) }) {
		tb.Fatalf("timed out after %v waiting for %q in the log:\n%s", d, s, l.String())
	}
}
