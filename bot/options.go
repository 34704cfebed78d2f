package bot

import (
	"fmt"
	"os"
	"path/filepath"
)

// Options are the plugin's options, as an operator sets them.
type Options struct {
	// Root is the folder bots work under, as <root>/<slug>. Empty means
	// ~/.bots. A root that is the configuration folder or under it is
	// reported and the default used.
	Root string
	// MainTurnPostMessageAbsent is what a main turn does when the back
	// session's turn ends without post_message: post (default), notice,
	// silence or postNotice.
	MainTurnPostMessageAbsent string
	// InstructionsIn is where a bot's instructions are in its AGENTS.md:
	// section (default) or body.
	InstructionsIn string
	// ContextIn is where a woken message's context goes: text (default) or
	// meta.
	ContextIn string
	// AskIn is where a back session's question or approval is shown: main
	// (default) or own.
	AskIn string
}

// DefaultRoot returns ~/.bots, or .bots in the working folder when there is
// no home.
func DefaultRoot() string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		abs, _ := filepath.Abs(".bots")
		return abs
	}
	return filepath.Join(home, ".bots")
}

// within reports whether path is dir or inside it; both must be clean and
// absolute.
func within(path, dir string) bool {
	if path == dir {
		return true
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !filepath.IsAbs(rel) && !startsWithDotDot(rel)
}

func startsWithDotDot(rel string) bool {
	return len(rel) >= 3 && rel[:3] == ".."+string(filepath.Separator)
}

// resolveRoot applies the root option's rules and returns the root to use
// and, when the option was refused, the reason.
func resolveRoot(root, configDir string) (string, string) {
	def := DefaultRoot()
	if root == "" {
		return def, ""
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return def, fmt.Sprintf("root %q cannot be made absolute: %v", root, err)
	}
	if configDir != "" {
		cfg, err := filepath.Abs(configDir)
		if err == nil && within(abs, cfg) {
			return def, fmt.Sprintf("root %s is the configuration folder or under it", abs)
		}
	}
	return abs, ""
}
