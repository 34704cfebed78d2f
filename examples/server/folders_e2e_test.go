package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/internal/frontmatter"
)

// readAgentsMD returns the AGENTS.md in dir.
func readAgentsMD(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "AGENTS.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// serve starts a server on fresh folders and returns them, the server and
// an initialized connection for each token.
func serve(t *testing.T, tokens ...string) (dirs, *testServer, []*client) {
	t.Helper()
	ctx := testCtx(t)
	d := newDirs(t)
	srv := startServer(t, d.args())
	cs := make([]*client, len(tokens))
	for i, token := range tokens {
		cs[i] = dial(ctx, t, srv, token, byQuery)
		cs[i].initialize(t, token)
	}
	return d, srv, cs
}

func TestEndToEndAComputerCannotCarryABotIntoAnothersFolder(t *testing.T) {
	t.Parallel()
	d, _, cs := serve(t, rootToken, softToken)
	root, soft := cs[0], cs[1]

	root.makeBot(t, "alice-bot", `{"name":"Alice","owner":"user:kim","instructions":"Keep the ledger."}`)
	alice := filepath.Join(d.root, "alice-bot")
	before := readAgentsMD(t, alice)

	// A make on a computer names a folder on that machine, so it is not
	// checked here; the edit that brings the bot to this host is.
	soft.makeBot(t, "flip", `{"name":"Flip","computer":"box1","workspace":"`+alice+`"}`)
	soft.fail(t, "resourceWrite", write("bot://flip", `{"computer":null}`), codeInvalidParams, alice)
	if got := readAgentsMD(t, alice); got != before {
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
	if a := readAgentsMD(t, filepath.Join(d.root, "comer")); !strings.Contains(a, "Come home.") {
		t.Fatalf("comer's AGENTS.md:\n%s", a)
	}
}

// turnError is the message of the error part of a turn, "" when it has none.
func turnError(t ahp.Turn) string {
	for _, p := range t.ResponseParts {
		if p.Error != nil {
			return p.Error.Error.Message
		}
	}
	return ""
}

func TestEndToEndABotFolderSwappedForALinkIsNeitherReadNorWoken(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root := filepath.Join(base, "bots")
	s := startChatServer(t, filepath.Join(base, "config"), root)
	c := dialChat(t, s.addr, "swap")
	c.makeBot("motion", `{"name":"Motion","instructions":"Stay home."}`)
	chat := c.openChat("ahp-session:/swap", "motion")

	outside := filepath.Join(base, "outside")
	const theirs = "---\nname: Elsewhere\n---\n## Instructions\nNot the bot's.\n"
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "AGENTS.md"), []byte(theirs), 0o644); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(root, "motion")
	if err := os.RemoveAll(folder); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, folder); err != nil {
		t.Fatal(err)
	}

	read := map[string]any{"channel": ahp.RootURI, "uri": "bot://motion"}
	if err := c.call("resourceRead", read, nil, nil); err == nil || err.Code != codeDenied || !strings.Contains(err.Message, folder) {
		t.Fatalf("a read through the link answered %+v, want %d naming %s", err, codeDenied, folder)
	}
	edit := map[string]any{"channel": ahp.RootURI, "uri": "bot://motion", "data": `{"instructions":"Go."}`, "encoding": "utf-8"}
	if err := c.call("resourceWrite", edit, nil, nil); err == nil || err.Code != codeDenied || !strings.Contains(err.Message, folder) {
		t.Fatalf("an edit through the link answered %+v, want %d naming %s", err, codeDenied, folder)
	}
	c.dispatch(chat, ahp.TurnStarted("t", time.Now(), ahp.UserMessage("hello")))
	got := c.turn(chat, "t")
	if got.State != ahp.TurnStateError || !strings.Contains(turnError(got), folder) {
		b, _ := json.Marshal(got)
		t.Fatalf("a wake through the link: %s, want a failed turn naming %s", b, folder)
	}
	ents, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || readAgentsMD(t, outside) != theirs {
		t.Fatalf("the folder outside root was written: %v", ents)
	}

	// Put back, the folder is the bot's again.
	if err := os.Remove(folder); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	c.dispatch(chat, ahp.TurnStarted("t2", time.Now(), ahp.UserMessage("hello")))
	if got := c.turn(chat, "t2"); got.State != ahp.TurnStateComplete {
		b, _ := json.Marshal(got)
		t.Fatalf("a wake in the folder put back: %s", b)
	}
}

func TestEndToEndAnAGENTSThatCannotHoldAPersonaIsNamedAndAnEditReplacesIt(t *testing.T) {
	t.Parallel()
	d, _, cs := serve(t, softToken)
	soft := cs[0]
	outside := filepath.Join(t.TempDir(), "secret.md")
	const secret = "---\nname: Secret\n---\n"
	if err := os.WriteFile(outside, []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := map[string]struct {
		plant func(path string) error
		why   string
	}{
		"linked": {func(p string) error { return os.Symlink(outside, p) }, "symlink"},
		"piped":  {func(p string) error { return syscall.Mkfifo(p, 0o644) }, "named pipe"},
		"huge": {func(p string) error {
			return os.WriteFile(p, []byte(strings.Repeat("x", frontmatter.MaxSize+1)), 0o644)
		}, "larger than"},
	}
	for slug, b := range bad {
		t.Run(slug, func(t *testing.T) {
			soft.makeBot(t, slug, `{"name":"Before"}`)
			path := filepath.Join(d.root, slug, "AGENTS.md")
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := b.plant(path); err != nil {
				t.Fatal(err)
			}
			soft.fail(t, "resourceRead", res("bot://"+slug), codeConflict, path, b.why)
			soft.fail(t, "resourceWrite", write("bot://"+slug, `{"description":"Only this."}`), codeConflict, path)
			soft.editBot(t, slug, `{"name":"After","instructions":"Mended."}`, "")
			if r := soft.readBot(t, slug); r["name"] != "After" || r["instructions"] != "Mended." {
				t.Fatalf("read after the mending edit = %v", r)
			}
			if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("AGENTS.md after the edit: %v, %v", fi, err)
			}
		})
	}
	if got, err := os.ReadFile(outside); err != nil || string(got) != secret {
		t.Fatalf("the link's target was written: %q, %v", got, err)
	}
}

func TestEndToEndAFolderThatLeftRootIsAProblemItsReadersSee(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	d, srv, cs := serve(t, softToken)
	soft := cs[0]
	soft.makeBot(t, "motion", `{"name":"Motion"}`)
	soft.subscribe(t, "x-ahpd-problems://", "problems")
	folder := filepath.Join(d.root, "motion")
	if err := os.RemoveAll(folder); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), folder); err != nil {
		t.Fatal(err)
	}
	soft.fail(t, "resourceRead", res("bot://motion"), codeDenied, folder)
	// The owner, subscribed to the problems, hears of it at once.
	if ps := problemsOf(t, soft); len(ps) != 1 || ps[0]["bot"] != "motion" || !strings.Contains(ps[0]["reason"].(string), "out of root") {
		t.Fatalf("the owner hears %v, want the folder that left root", ps)
	}

	problems := func(token string) []map[string]any {
		c := dial(ctx, t, srv, token, byQuery)
		r := c.initialize(t, token)
		raw, _ := json.Marshal(r.Meta["ahpd.problems"])
		var out []map[string]any
		json.Unmarshal(raw, &out)
		return withoutBuilderOnEcho(out)
	}
	if ps := problems(rootToken); len(ps) != 1 || ps[0]["bot"] != "motion" || ps[0]["path"] != folder || !strings.Contains(ps[0]["reason"].(string), "out of root") {
		t.Fatalf("root sees problems %v", ps)
	}
	if ps := problems(softToken); len(ps) != 1 || ps[0]["bot"] != "motion" || ps[0]["path"] != nil {
		t.Fatalf("the owner sees problems %v, want motion's without its path", ps)
	}
	if ps := problems(nemoToken); len(ps) != 0 {
		t.Fatalf("nemo, who may read no bot, sees problems %v", ps)
	}
	// The folder put back, the next read clears the problem, and the
	// owner hears that too.
	if err := os.Remove(folder); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	soft.readBot(t, "motion")
	if ps := problemsOf(t, soft); len(ps) != 0 {
		t.Fatalf("with the folder back the owner hears %v, want none", ps)
	}
}
