package main

import (
	"bytes"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/bots"
	"github.com/agenthost/bots/bot"
)

const token = "chat-test-root-token"

// serve runs a bots server in process and returns its address.
func serve(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	users := filepath.Join(dir, "users.json")
	if err := os.WriteFile(users, []byte(`{"root":{"token":"`+token+`"},"users":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := &bots.Server{ConfigDir: filepath.Join(dir, "config"), HostName: "chat", Options: bot.Options{Root: filepath.Join(dir, "bots")}, UsersFile: users}
	web := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { web.Close(); srv.Close() })
	return strings.TrimPrefix(web.URL, "http://")
}

func TestChatMakesTheBotSaysTheMessageAndPrintsTheReply(t *testing.T) {
	t.Parallel()
	addr := serve(t)
	var out bytes.Buffer
	if err := run([]string{"-addr", addr, "-token", token, "-bot", "motion", "hello", "there"}, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{`said "hello there" to motion`, "chat/turnStarted", "chat/responsePart", "the turn ended complete", "reply: motion heard: hello there"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output does not hold %q:\n%s", want, out.String())
		}
	}
	// a second run talks to the bot as it is.
	out.Reset()
	err := run([]string{"-addr", addr, "-token", token, "-bot", "motion", "fail"}, &out)
	if err == nil || !strings.Contains(err.Error(), "the turn ended error") || !strings.Contains(out.String(), "using the bot as it is") {
		t.Errorf("a failing turn: run answered %v, printed:\n%s", err, out.String())
	}
}
