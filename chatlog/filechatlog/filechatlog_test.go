package filechatlog_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/chatlog/chatlogtest"
	"github.com/agenthost/bots/chatlog/filechatlog"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	dirs := map[chatlog.Logs]string{}
	chatlogtest.Run(t, chatlogtest.Harness{
		Open: func(t *testing.T) chatlog.Logs {
			dir := t.TempDir()
			logs := filechatlog.New(dir)
			dirs[logs] = dir
			return logs
		},
		Reopen: func(t *testing.T, old chatlog.Logs) chatlog.Logs { return filechatlog.New(dirs[old]) },
		Tear: func(t *testing.T, logs chatlog.Logs, key chatlog.Key) {
			f, err := os.OpenFile(logs.(*filechatlog.Logs).Path(key), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString(`{"torn":`); err != nil {
				t.Fatal(err)
			}
		},
	})
}

func TestKeepALogWhereTheBotsFolderHasIt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := chatlog.Key{Kind: chatlog.Chat, Bot: "motion", Session: "ahp-session:/x"}
	if err := filechatlog.New(dir).Create(t.Context(), key, []byte(`{"kind":"open"}`)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "bots", "motion", "logs", "YWhwLXNlc3Npb246L3g.jsonl"))
	if err != nil || string(data) != "{\"kind\":\"open\"}\n" {
		t.Fatalf("the log file holds %q, %v", data, err)
	}
}

func TestListTheLogsOfBotsBesideBotFoldersWithoutLogs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	logs := filechatlog.New(dir)
	for _, bot := range []string{"bare", "notes"} { // a bot.md alone; a folder of the bot's own
		if err := os.MkdirAll(filepath.Join(dir, "bots", bot), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "bots", bot, "bot.md"), []byte("---\n---\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "bots", "notes", "drafts"), 0o700); err != nil {
		t.Fatal(err)
	}
	want := chatlog.Key{Kind: chatlog.Back, Bot: "motion", Session: "ahp-session:/x"}
	if err := logs.Create(t.Context(), want, []byte(`{"kind":"open"}`)); err != nil {
		t.Fatal(err)
	}
	keys, err := logs.List(t.Context(), chatlog.Back)
	if err != nil || len(keys) != 1 || keys[0] != want {
		t.Fatalf("List: %v, %v; want only %v", keys, err, want)
	}
}

// TestListKindsListsEachKindAsItsOwnListingDoes: one pass over the

// bot folders answers every kind asked as List answers it alone, with an

// entry for a kind that has no log; a kind no log may have is refused.

func TestListKindsListsEachKindAsItsOwnListingDoes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	logs := filechatlog.New(dir)
	for _, k := range []chatlog.Key{
		{Kind: chatlog.Back, Bot: "motion", Session: "ahp-session:/a"},
		{Kind: chatlog.Chat, Bot: "motion", Session: "ahp-session:/b"},
		{Kind: chatlog.Chat, Bot: "motion", Session: "ahp-session:/c"},
		{Kind: chatlog.Chat, Bot: "notes", Session: "ahp-session:/d"},
	} {
		if err := logs.Create(t.Context(), k, []byte(`{"kind":"open"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "bots", "bare"), 0o700); err != nil {
		t.Fatal(err)
	}
	both, err := logs.ListKinds(t.Context(), chatlog.Back, chatlog.Chat)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []chatlog.Kind{chatlog.Back, chatlog.Chat} {
		alone, err := logs.List(t.Context(), kind)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(alone, both[kind]); diff != "" || len(alone) == 0 {
			t.Errorf("%s in one pass differs from its own listing of %d (-alone +both):\n%s", kind, len(alone), diff)
		}
	}
	if len(both) != 2 {
		t.Errorf("ListKinds answered %d kinds, want 2", len(both))
	}
	if err := os.RemoveAll(filepath.Join(dir, "bots", "motion", string(chatlog.Back))); err != nil {
		t.Fatal(err)
	}
	none, err := logs.ListKinds(t.Context(), chatlog.Back)
	if keys, ok := none[chatlog.Back]; err != nil || !ok || len(keys) != 0 {
		t.Errorf("ListKinds of a kind with no log: %v (entry %v), %v; want an empty entry", keys, ok, err)
	}
	if _, err := logs.ListKinds(t.Context(), chatlog.Chat, "../x"); err == nil {
		t.Error("ListKinds took a kind no log may have")
	}
}
