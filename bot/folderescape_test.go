package bot

import (
	"strings"
	"testing"
)

// TestAFolderIsUnderRootOnlyBelowIt: a work folder must be a part below
// root, not root itself nor a sibling whose name starts with root's.
func TestAFolderIsUnderRootOnlyBelowIt(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	for _, c := range []struct {
		root, dir string
		under     bool
	}{
		{base + "/bots", base + "/bots/motion", true},
		{base + "/bots", base + "/bots/motion/deeper", true},
		{base + "/bots/", base + "/bots/motion", true},
		{base + "/bots", base + "/bots", false},
		{base + "/bots", base + "/botsy/motion", false},
		{base + "/bots", base + "/bot", false},
		{base + "/bots", base, false},
		{"/", "/motion", true},
		{"/", "/", false},
	} {
		s := &Service{root: c.root}
		reason, err := s.folderEscape(c.dir)
		if err != nil {
			t.Fatalf("root %s, folder %s: %v", c.root, c.dir, err)
		}
		if under := !strings.HasPrefix(reason, "is not under root"); under != c.under {
			t.Errorf("root %s, folder %s: %q, want under root %v", c.root, c.dir, reason, c.under)
		}
	}
}
