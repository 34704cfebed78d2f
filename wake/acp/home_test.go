package acp

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agenthost/bots/wake"
)

// openBot opens a back session of bot, made at created, on h.
func openBot(t *testing.T, h *Harness, bot, created string) *agent {
	t.Helper()
	meta := map[string]any{wake.BackSessionMeta: map[string]any{"bot": bot, "person": "user:soft", "name": "work", "created": created}}
	a, err := h.Open(testCtx(t), wake.SessionInfo{URI: "ahp-session:/" + bot + created, Provider: "fake", Dir: t.TempDir(), Meta: meta})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a.(*agent)
}

func TestEachBotRunsWithAHomeOfItsOwnAndASlugMadeAgainNeverInheritsOne(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	login, homes := filepath.Join(base, "home"), filepath.Join(base, "bots")
	h := newHarness(t, func(c *Config) { c.Home, c.BotHomes = login, homes })
	motion, other := openBot(t, h, "motion", "100"), openBot(t, h, "other", "100")
	if motion.home != filepath.Join(homes, "motion", "100") || other.home != filepath.Join(homes, "other", "100") {
		t.Fatalf("the HOMEs are %s and %s, want one per bot under %s", motion.home, other.home, homes)
	}
	mustTurn(t, motion, "probe-write "+filepath.Join(motion.home, "rollout.jsonl"))
	if _, err := os.Stat(filepath.Join(motion.home, "rollout.jsonl")); err != nil {
		t.Fatalf("the bot's agent wrote nothing in its HOME: %v", err)
	}
	motion.Close()

	// motion is deleted elsewhere (its HOME left here) and made again:
	// the new bot starts with a HOME of its own, without the old one's.
	again := openBot(t, h, "motion", "200")
	if again.home == motion.home {
		t.Fatalf("the bot made again runs in the deleted one's HOME %s", again.home)
	}
	if _, err := os.Stat(filepath.Join(again.home, "rollout.jsonl")); !os.IsNotExist(err) {
		t.Errorf("the bot made again finds the deleted one's transcript (%v)", err)
	}
	// Deleted here, every HOME of the slug goes; another bot's stays.
	if err := h.ForgetBot(testCtx(t), "motion"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(homes, "motion")); !os.IsNotExist(err) {
		t.Errorf("ForgetBot left the bot's HOMEs (%v)", err)
	}
	if _, err := os.Stat(other.home); err != nil {
		t.Errorf("ForgetBot of another bot took %s: %v", other.home, err)
	}
}

func TestASessionOfNoBotGetsATemporaryHomeRemovedWhenItCloses(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	h := newHarness(t, func(c *Config) { c.Home, c.BotHomes = filepath.Join(base, "home"), filepath.Join(base, "bots") })
	a := open(t, h, "")
	if !a.temp || filepath.Dir(a.home) == filepath.Join(base, "bots") {
		t.Fatalf("a session of no bot runs with HOME %s", a.home)
	}
	a.Close()
	if _, err := os.Stat(a.home); !os.IsNotExist(err) {
		t.Errorf("its HOME %s outlives it (%v)", a.home, err)
	}
}

// writeAt writes content to path, making its folder, dated at.
func writeAt(t *testing.T, path, content string, at time.Time) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

func readText(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(data)
}

func TestTheLoginIsCopiedIntoABotsHomeNeverBackAndWithoutWhatSessionsLeftInIt(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	login, home, outside := filepath.Join(base, "login"), filepath.Join(base, "home"), filepath.Join(base, "outside")
	for _, dir := range []string{home, outside} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	then := time.Now().Add(-time.Hour)
	writeAt(t, filepath.Join(login, ".codex", "auth.json"), "login v1", then)
	writeAt(t, filepath.Join(login, ".codex", "sessions", "2026", "rollout-1.jsonl"), "alice's prompts", then)
	writeAt(t, filepath.Join(login, ".claude", "projects", "p", "t.jsonl"), "alice's prompts", then)
	writeAt(t, filepath.Join(login, "tmp", "scratch"), "scratch", then)
	writeAt(t, filepath.Join(login, ".gemini", "creds.json"), "gemini login", then)
	// The agent left a link in its HOME, to lead a copy out of it.
	if err := os.Symlink(outside, filepath.Join(home, ".gemini")); err != nil {
		t.Fatal(err)
	}

	err := copyLogin(login, home)
	if err == nil {
		t.Error("a copy through a link the agent left in its HOME went without a word")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("the copy wrote through the agent's link into %s: %v", outside, entries)
	}
	os.Remove(filepath.Join(home, ".gemini"))
	if err := copyLogin(login, home); err != nil {
		t.Fatal(err)
	}
	if got := readText(t, filepath.Join(home, ".codex", "auth.json")); got != "login v1" {
		t.Errorf("the bot's HOME holds the login %q", got)
	}
	if got := readText(t, filepath.Join(home, ".gemini", "creds.json")); got != "gemini login" {
		t.Errorf("the bot's HOME holds the gemini login %q", got)
	}
	for _, left := range []string{".codex/sessions", ".claude/projects", "tmp"} {
		if _, err := os.Stat(filepath.Join(home, filepath.FromSlash(left))); !os.IsNotExist(err) {
			t.Errorf("%s of the login's HOME was copied into the bot's (%v)", left, err)
		}
	}

	// The agent refreshes its copy: the login stays, and the next start
	// keeps the agent's newer copy.
	writeAt(t, filepath.Join(home, ".codex", "auth.json"), "refreshed by the agent", time.Now())
	if err := copyLogin(login, home); err != nil {
		t.Fatal(err)
	}
	if got := readText(t, filepath.Join(login, ".codex", "auth.json")); got != "login v1" {
		t.Errorf("the login now holds %q: a bot's HOME wrote back into it", got)
	}
	if got := readText(t, filepath.Join(home, ".codex", "auth.json")); got != "refreshed by the agent" {
		t.Errorf("the agent's newer copy became %q", got)
	}
	// The person logs in again: the next start takes the new login.
	writeAt(t, filepath.Join(login, ".codex", "auth.json"), "login v2", time.Now().Add(time.Minute))
	if err := copyLogin(login, home); err != nil {
		t.Fatal(err)
	}
	if got := readText(t, filepath.Join(home, ".codex", "auth.json")); got != "login v2" {
		t.Errorf("after a new login the bot's HOME holds %q", got)
	}
}

func TestAStartPrunesTheBackupsClaudeCodeLeavesInItsHomeAndCopiesNone(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	login, home := filepath.Join(base, "login"), filepath.Join(base, "home")
	now := time.Now()
	writeAt(t, filepath.Join(login, ".claude.json"), "settings", now.Add(-time.Hour))
	writeAt(t, filepath.Join(login, ".claude.json.backup.1"), "a backup of the login's", now.Add(-time.Hour))
	for i := range 5 {
		writeAt(t, filepath.Join(home, fmt.Sprintf(".claude.json.backup.%d", 100+i)), "backup", now.Add(time.Duration(i-10)*time.Minute))
	}
	if err := copyLogin(login, home); err != nil {
		t.Fatal(err)
	}
	if err := pruneHome(home); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(home)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if want := []string{".claude.json", ".claude.json.backup.104"}; !slices.Equal(names, want) {
		t.Errorf("the HOME holds %q, want %q: the settings and the newest backup alone", names, want)
	}
}

// TestAHarnessMakesItsHomeFoldersAbsolute: a relative Home or BotHomes
// would be taken from the bot's folder, where the agent starts, and put
// its HOME in the person's files.
func TestAHarnessMakesItsHomeFoldersAbsolute(t *testing.T) {
	t.Parallel()
	h, err := New(Config{Provider: "fake", Agent: Command{Command: "fake-acp"}, Home: "cfg/agents/fake/home", BotHomes: "cfg/agents/fake/bots"})
	if err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(wd, "cfg", "agents", "fake", "home"); h.cfg.Home != want {
		t.Errorf("Home is %s, want %s", h.cfg.Home, want)
	}
	if want := filepath.Join(wd, "cfg", "agents", "fake", "bots"); h.cfg.BotHomes != want {
		t.Errorf("BotHomes is %s, want %s", h.cfg.BotHomes, want)
	}
}
