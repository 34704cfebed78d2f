//go:build !linux

// Package rootwatch spares the bot service's folder checks a look at each
// path under root while nothing it depends on has changed, on Linux.
// Elsewhere a Watch knows nothing, and every check looks at the path.
package rootwatch

import "github.com/agenthost/bots/persona"

// Watch is the Linux watch that spares folder checks a look at the
// path; elsewhere it knows nothing and every check looks.
type Watch struct{}

// New is no watch.
func New(string) *Watch { return nil }

// Known knows no folder.
func (w *Watch) Known(string) (bool, uint64) { return false, 0 }

// KnownIdentity knows no folder and no identity.
func (w *Watch) KnownIdentity(string) (bool, uint64, persona.Identity, bool) {
	return false, 0, persona.Identity{}, false
}

// Remember remembers nothing.
func (w *Watch) Remember(string, uint64) {}

// Close has nothing to give back.
func (w *Watch) Close() {}

// LearnRoot learns nothing.
func (w *Watch) LearnRoot() {}

// Identify knows no identity: persona looks at the file.
func (w *Watch) Identify(string) (persona.Identity, bool) { return persona.Identity{}, false }

// Freeze has nothing to freeze.
func (w *Watch) Freeze() func() { return func() {} }
