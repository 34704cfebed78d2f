package chatlog_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/chatlog/chatlogtest"
)

func TestMemConformance(t *testing.T) {
	chatlogtest.Run(t, chatlogtest.Harness{Open: func(*testing.T) chatlog.Logs { return &chatlog.Mem{} }})
}

func TestFilesConformance(t *testing.T) {
	dirs := map[chatlog.Logs]string{}
	chatlogtest.Run(t, chatlogtest.Harness{
		Open: func(t *testing.T) chatlog.Logs {
			dir := t.TempDir()
			logs := chatlog.NewFiles(dir)
			dirs[logs] = dir
			return logs
		},
		Reopen: func(t *testing.T, old chatlog.Logs) chatlog.Logs { return chatlog.NewFiles(dirs[old]) },
		Tear: func(t *testing.T, logs chatlog.Logs, key chatlog.Key) {
			f, err := os.OpenFile(logs.(*chatlog.Files).Path(key), os.O_WRONLY|os.O_APPEND, 0)
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

func TestFilesKeepALogWhereTheBotsFolderHasIt(t *testing.T) {
	dir := t.TempDir()
	key := chatlog.Key{Kind: chatlog.Chat, Bot: "motion", Session: "ahp-session:/x"}
	if err := chatlog.NewFiles(dir).Create(t.Context(), key, []byte(`{"kind":"open"}`)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "bots", "motion", "logs", "YWhwLXNlc3Npb246L3g.jsonl"))
	if err != nil || string(data) != "{\"kind\":\"open\"}\n" {
		t.Fatalf("the log file holds %q, %v", data, err)
	}
}

func TestMemIsShared(t *testing.T) {
	chatlogtest.RunShared(t, chatlogtest.SharedHarness{Open: func(t *testing.T) (chatlog.Shared, chatlog.Shared) {
		m := &chatlog.Mem{}
		return m, m
	}})
}
