//go:build !linux

package bot

import "github.com/agenthost/bots/persona"

// folderWatch is the Linux watch that spares folder checks a look at the
// path; elsewhere every check looks.
type folderWatch struct{}

func newFolderWatch(string) *folderWatch { return nil }

func (w *folderWatch) known(string) (bool, uint64) { return false, 0 }

func (w *folderWatch) knownIdentity(string) (bool, uint64, persona.Identity, bool) {
	return false, 0, persona.Identity{}, false
}

func (w *folderWatch) remember(string, uint64) {}

func (w *folderWatch) close() {}

func (w *folderWatch) learnRoot() {}

func (w *folderWatch) identify(string) (persona.Identity, bool) { return persona.Identity{}, false }

func (w *folderWatch) freeze() func() { return func() {} }
