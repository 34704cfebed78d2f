package acp

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agenthost/bots/wake"
)

// sessionsKept are the folders of a login HOME (slash paths) that hold
// what agents keep of their sessions - transcripts with the prompts,
// logs, shell snapshots, temporary files - rather than the login. They
// are never copied into a bot's HOME: a login HOME that back sessions
// ran in before each bot had a HOME of its own holds every bot's.
var sessionsKept = []string{
	"tmp",
	".codex/sessions", ".codex/archived_sessions", ".codex/log", ".codex/shell_snapshots",
	".claude/projects", ".claude/todos", ".claude/shell-snapshots", ".claude/statsig",
	".gemini/tmp",
}

// backupsKept is how many of the backups of its settings Claude Code
// leaves in HOME at each start (.claude.json.backup.<time>) a HOME keeps:
// the newest, as Claude Code itself reads no older one.
const backupsKept = 1

// isBackup reports whether name is one of Claude Code's backups of its
// settings, which it leaves in HOME at every start and never removes.
func isBackup(name string) bool { return strings.HasPrefix(name, ".claude.json.backup") }

// pruneHome removes from home what the agents leave there without bound:
// Claude Code's backups of its settings, but the newest backupsKept. The
// rest of what agents keep (transcripts, logs, their settings) is the
// bot's, kept with its HOME and removed with the bot.
func pruneHome(home string) error {
	ents, err := os.ReadDir(home)
	if err != nil {
		return err
	}
	type backup struct {
		name string
		at   time.Time
	}
	var backups []backup
	for _, e := range ents {
		if !isBackup(e.Name()) || !e.Type().IsRegular() {
			continue
		}
		if info, err := e.Info(); err == nil {
			backups = append(backups, backup{e.Name(), info.ModTime()})
		}
	}
	slices.SortFunc(backups, func(a, b backup) int { return b.at.Compare(a.at) })
	for _, b := range backups[min(backupsKept, len(backups)):] {
		if err := os.Remove(filepath.Join(home, b.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// ForgetBot removes every HOME of bot, a deleted bot's slug, under
// Config.BotHomes: what its agents kept goes with it.
func (h *Harness) ForgetBot(ctx context.Context, bot string) error {
	if h.cfg.BotHomes == "" || !homeName(bot) {
		return nil
	}
	if err := os.RemoveAll(filepath.Join(h.cfg.BotHomes, bot)); err != nil {
		return fmt.Errorf("acp: agent %s: the HOME of bot %s: %w", h.cfg.Provider, bot, err)
	}
	return nil
}

// homeName reports whether name may name a folder of BotHomes.
func homeName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, `/\`+"\x00")
}

// sessionHome makes and returns the HOME of session s's agent: its bot's
// own, <BotHomes>/<bot>/<created> (see wake.BackSessionMeta), when s is a
// bot's back session and BotHomes is set - a bot made again with a
// deleted one's slug has another created, so it never inherits the
// deleted one's HOME, and a person's bot a bundled bot of its slug hides
// keeps its own - else a new temporary folder (temp), removed when the
// session closes.
func (cfg Config) sessionHome(s wake.SessionInfo) (home string, temp bool, err error) {
	if bot, _, _, ok := wake.BackSession(s.Meta); ok && cfg.BotHomes != "" && homeName(bot) {
		home = filepath.Join(cfg.BotHomes, bot, wake.BackSessionCreated(s.Meta))
		if err := os.MkdirAll(home, 0o700); err != nil {
			return "", false, fmt.Errorf("acp: the HOME of bot %s: %w", bot, err)
		}
		return home, false, nil
	}
	home, err = os.MkdirTemp("", "acp-home-")
	if err != nil {
		return "", false, fmt.Errorf("acp: a home for the agent: %w", err)
	}
	return home, true, nil
}

// copyLogin copies the login kept in login (Config.Home, where Login puts
// it) into home, a session's HOME, before its agent starts: each regular
// file that home lacks, or holds older than the login's; never a link,
// never what sessionsKept names. Writes go through an os.Root of home, so
// a link the agent left in its HOME leads no write out of it; the login
// itself is never in the agent's reach, so the agent changes its copy
// alone.
func copyLogin(login, home string) error {
	if login == "" || filepath.Clean(login) == filepath.Clean(home) {
		return nil
	}
	src, err := os.OpenRoot(login)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no login yet
	}
	if err != nil {
		return fmt.Errorf("acp: the login: %w", err)
	}
	defer src.Close()
	dst, err := os.OpenRoot(home)
	if err != nil {
		return fmt.Errorf("acp: the agent's home: %w", err)
	}
	defer dst.Close()
	return fs.WalkDir(src.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if slices.Contains(sessionsKept, p) {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || isBackup(p) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		name := filepath.FromSlash(p)
		if cur, err := dst.Lstat(name); err == nil && cur.Mode().IsRegular() && !cur.ModTime().Before(info.ModTime()) {
			return nil // the agent's copy is as new: it may have refreshed it
		}
		data, err := src.ReadFile(name)
		if err != nil {
			return err
		}
		if err := writeCopy(dst, name, data, info); err != nil {
			return fmt.Errorf("acp: copy the login's %s: %w", p, err)
		}
		return nil
	})
}

// writeCopy writes data to name in root by a temporary file of its own
// (two sessions of one bot may start at once) renamed over it, with the
// mode and time of info.
func writeCopy(root *os.Root, name string, data []byte, info fs.FileInfo) error {
	if d := filepath.Dir(name); d != "." {
		if err := root.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	tmp := filepath.Join(filepath.Dir(name), ".login-copy-"+rand.Text()+".tmp")
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm()&0o700)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Chtimes(tmp, info.ModTime(), info.ModTime())
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		root.Remove(tmp)
	}
	return err
}
