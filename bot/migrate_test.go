package bot_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/filerecord"
)

// legacyEnv is a configuration folder holding one bot, motion, whose
// bot.md was written before AGENTS.md was the one copy of its persona.
type legacyEnv struct {
	base, configDir, root, workspace, agents string
	log                                      *waittest.Log
}

func newLegacy(t *testing.T) *legacyEnv {
	t.Helper()
	base := t.TempDir()
	e := &legacyEnv{base: base, configDir: filepath.Join(base, "config"), root: filepath.Join(base, "bots"), log: &waittest.Log{}}
	e.workspace = filepath.Join(e.root, "motion")
	e.agents = filepath.Join(e.workspace, "AGENTS.md")
	writeFile(t, filepath.Join(e.configDir, "bots", "motion", "bot.md"), "---\nid: motion\nname: Motion\ndescription: Reads pull requests.\n"+
		"body: robot\ncolor: teal\nsession: work\nworkspace: "+e.workspace+"\nowner: user:soft\n"+
		"createdAt: 2025-01-02T03:04:05.000Z\nupdatedAt: 2025-01-02T03:04:05.000Z\n---\n\nYou review pull requests.\nSay what would break.\n")
	return e
}

// start opens the file store and the service over it, as a daemon's load.
func (e *legacyEnv) start(t *testing.T, watch bool) (*bot.Service, *filerecord.Store) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: slog.LevelWarn}))
	store, err := filerecord.Open(ctx(t), filerecord.Config{ConfigDir: e.configDir, Logger: log, Watch: watch})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	svc, err := bot.New(ctx(t), bot.Config{Store: store, ConfigDir: e.configDir, HostName: "testhost", Options: bot.Options{Root: e.root}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc, store
}

func stored(t *testing.T, s record.Store) record.Record {
	t.Helper()
	e, err := s.Get(ctx(t), "motion")
	if err != nil {
		t.Fatal(err)
	}
	return e.Record
}

func TestLoadMovesAPersonaFromTheRecordIntoAgentsMD(t *testing.T) {
	t.Parallel()
	e := newLegacy(t)
	svc, store := e.start(t, false)
	if r := stored(t, store); r.Name != "" || r.Description != "" || r.Instructions != "" {
		t.Fatalf("the record still carries its persona: %+v", r)
	}
	if strings.Contains(readFile(t, filepath.Join(e.configDir, "bots", "motion", "bot.md")), "Motion") {
		t.Fatal("bot.md still holds the name")
	}
	file := readFile(t, e.agents)
	for _, want := range []string{"name: Motion", "description: Reads pull requests.", "## Instructions\nYou review pull requests.\nSay what would break."} {
		if !strings.Contains(file, want) {
			t.Fatalf("AGENTS.md lacks %q:\n%s", want, file)
		}
	}
	b := e.readBot(t, svc)
	if b.Name != "Motion" || b.Description != "Reads pull requests." || b.Instructions != "You review pull requests.\nSay what would break." {
		t.Fatalf("read answers %+v", b)
	}
	if p := store.Problems(); len(p) != 0 {
		t.Fatalf("problems: %+v", p)
	}
	// A second load has nothing to move.
	before := readFile(t, e.agents)
	e.start(t, false)
	if readFile(t, e.agents) != before {
		t.Fatal("a second load rewrote AGENTS.md")
	}
}

func (e *legacyEnv) readBot(t *testing.T, svc *bot.Service) record.Record {
	t.Helper()
	b, err := svc.Read(ctx(t), root, "motion")
	if err != nil {
		t.Fatal(err)
	}
	return b.Record
}

func TestLoadKeepsTheInstructionsSectionAFileHasAndDropsTheRecordsCopy(t *testing.T) {
	t.Parallel()
	e := newLegacy(t)
	writeFile(t, e.agents, "---\nname: Old name\n---\n## Instructions\nWritten in the file.\n## Notes\nThe bot's own.\n")
	svc, store := e.start(t, false)
	if r := stored(t, store); r.Name != "" || r.Instructions != "" {
		t.Fatalf("the record still carries its persona: %+v", r)
	}
	b := e.readBot(t, svc)
	if b.Instructions != "Written in the file." || b.Name != "Motion" || b.Description != "Reads pull requests." {
		t.Fatalf("read answers %+v", b)
	}
	if file := readFile(t, e.agents); !strings.Contains(file, "## Notes\nThe bot's own.\n") || strings.Contains(file, "You review") {
		t.Fatalf("AGENTS.md:\n%s", file)
	}
}

func TestLoadLeavesAFileItCannotReadAndAnswersThePersonaFromTheRecord(t *testing.T) {
	t.Parallel()
	e := newLegacy(t)
	broken := "---\nname: [never closed\n---\n## Instructions\nMine.\n"
	writeFile(t, e.agents, broken)
	svc, store := e.start(t, false)
	if readFile(t, e.agents) != broken {
		t.Fatal("the file the load could not read was written")
	}
	if r := stored(t, store); r.Name != "Motion" || r.Instructions == "" {
		t.Fatalf("the persona left the record: %+v", r)
	}
	b := e.readBot(t, svc)
	if b.Name != "Motion" || b.Description != "Reads pull requests." || b.Instructions != "You review pull requests.\nSay what would break." {
		t.Fatalf("read answers %+v, want the record's persona", b)
	}
	list, err := svc.List(ctx(t), root)
	if err != nil || len(list) != 1 || list[0].Record.Name != "Motion" {
		t.Fatalf("list answers %+v, %v", list, err)
	}
	problems := store.Problems()
	if len(problems) != 1 || problems[0].Path != e.agents || !strings.Contains(problems[0].Reason, "the persona stays in the record: the file cannot be read") {
		t.Fatalf("problems %+v", problems)
	}
	if log := e.log.String(); !strings.Contains(log, "level=WARN") || !strings.Contains(log, e.agents) {
		t.Fatalf("no Warn line names %s:\n%s", e.agents, log)
	}
	// Mended, the next load moves it and the problem goes.
	if err := os.WriteFile(e.agents, []byte("## Instructions\nMine.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	store.Close()
	_, store = e.start(t, false)
	if r := stored(t, store); r.Name != "" || len(store.Problems()) != 0 {
		t.Fatalf("after the mend: %+v, problems %+v", r, store.Problems())
	}
}

func TestAChangeToAgentsMDAloneIsAnsweredByTheNextRead(t *testing.T) {
	t.Parallel()
	e := newLegacy(t)
	svc, _ := e.start(t, true)
	e.readBot(t, svc)
	file := readFile(t, e.agents)
	writeFile(t, e.agents, strings.Replace(strings.Replace(file, "You review pull requests.", "Edited in AGENTS.md alone.", 1), "name: Motion", "name: Motion Two", 1))
	b := e.readBot(t, svc)
	if b.Name != "Motion Two" || !strings.HasPrefix(b.Instructions, "Edited in AGENTS.md alone.") {
		t.Fatalf("the next read answers %+v", b)
	}
}
