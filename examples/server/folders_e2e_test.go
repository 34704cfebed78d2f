package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readAgents returns the AGENTS.md in dir.
func readAgents(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "AGENTS.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestEndToEndAComputerCannotCarryABotIntoAnothersFolder(t *testing.T) {
	ctx := testCtx(t)
	d := newDirs(t)
	srv := startServer(t, d.args())
	root := dial(ctx, t, srv, rootToken, byQuery)
	root.initialize(t, "root")
	soft := dial(ctx, t, srv, softToken, byQuery)
	soft.initialize(t, "soft")

	root.makeBot(t, "alice-bot", `{"name":"Alice","owner":"user:kim","instructions":"Keep the ledger."}`)
	alice := filepath.Join(d.root, "alice-bot")
	before := readAgents(t, alice)

	// A make on a computer names a folder on that machine, so it is not
	// checked here; the edit that brings the bot to this host is.
	soft.makeBot(t, "flip", `{"name":"Flip","computer":"box1","workspace":"`+alice+`"}`)
	soft.fail(t, "resourceWrite", write("bot://flip", `{"computer":null}`), codeInvalidParams, alice)
	if got := readAgents(t, alice); got != before {
		t.Fatalf("Alice's AGENTS.md was rewritten:\n%s", got)
	}
	if f := soft.readBot(t, "flip"); f["computer"] != "box1" || f["name"] != "Flip" {
		t.Fatalf("flip after the refused edit = %v", f)
	}
	if a := root.readBot(t, "alice-bot"); a["name"] != "Alice" || a["instructions"] != "Keep the ledger." {
		t.Fatalf("alice-bot after the refused edit = %v", a)
	}

	outside := t.TempDir()
	soft.makeBot(t, "away", `{"name":"Away","computer":"box1","workspace":"`+outside+`"}`)
	soft.fail(t, "resourceWrite", write("bot://away", `{"computer":null}`), codeDenied, outside)
	if _, err := os.Stat(filepath.Join(outside, "AGENTS.md")); !os.IsNotExist(err) {
		t.Fatalf("an AGENTS.md was written outside root: %v", err)
	}

	// A bot whose folder is its own comes to this host whole.
	soft.makeBot(t, "comer", `{"name":"Comer","computer":"box1","instructions":"Come home."}`)
	soft.editBot(t, "comer", `{"computer":null}`, "")
	if c := soft.readBot(t, "comer"); c["computer"] != nil || c["name"] != "Comer" || c["instructions"] != "Come home." {
		t.Fatalf("comer after it came to this host = %v", c)
	}
	if a := readAgents(t, filepath.Join(d.root, "comer")); !strings.Contains(a, "Come home.") {
		t.Fatalf("comer's AGENTS.md:\n%s", a)
	}
}
