package bot

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agenthost/bots/persona"
	"github.com/agenthost/bots/wake"
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
	MainTurnPostMessageAbsent wake.PostMessageAbsent
	// InstructionsIn is where a bot's instructions are in its AGENTS.md:
	// section (default) or body.
	InstructionsIn string
	// ContextIn is where a woken message's context goes: text (default) or
	// meta.
	ContextIn wake.ContextIn
	// AskIn is where a back session's question or approval is shown: main
	// (default) or own.
	AskIn wake.AskIn
}

// check refuses an option value that is not one of its constants, in one
// sentence naming the option, the value and the values allowed. The empty
// value is each option's default.
func (o Options) check() error {
	if _, err := persona.ParseMode(o.InstructionsIn); err != nil {
		return err
	}
	for _, v := range []interface{ Check() error }{o.MainTurnPostMessageAbsent, o.ContextIn, o.AskIn} {
		if err := v.Check(); err != nil {
			return err
		}
	}
	return nil
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
