package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestEndToEndRefusalsNameNoBotFolderOrSessionThePersonMayNotRead: soft
// may make bots but read none of root's. A make in a folder of root's
// bot, a make of a slug root's bot has and of one root deleted, and a
// createSession on root's chat are refused over the wire with sentences
// that say "not available" and name neither the bot, nor its folder, nor
// why; the two slugs get the same sentence. Root, who may read the bot,
// hears what takes them.
func TestEndToEndRefusalsNameNoBotFolderOrSessionThePersonMayNotRead(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	d := newDirs(t)
	srv := startServer(t, d.args())
	root := dial(ctx, t, srv, rootToken, byQuery)
	root.initialize(t, "root")
	soft := dial(ctx, t, srv, softToken, byQuery)
	soft.initialize(t, "soft")

	hidden := filepath.Join(d.root, "srv", "hidden")
	root.makeBot(t, "ag-put", `{"name":"Hidden","workspace":"`+hidden+`"}`)
	root.makeBot(t, "old", `{"name":"Old"}`)
	root.deleteBot(t, "old")
	soft.makeBot(t, "soft-own", `{"name":"Own"}`)

	leaks := func(what, msg string, named ...string) {
		t.Helper()
		rest := msg
		for _, n := range named {
			rest = strings.ReplaceAll(rest, n, "")
		}
		for _, secret := range []string{"ag-put", "hidden", "root", "exists", "deleted", "taken"} {
			if strings.Contains(rest, secret) {
				t.Errorf("%s answers soft %q, which tells of %q", what, msg, secret)
			}
		}
	}

	inside := filepath.Join(hidden, "inside")
	e := soft.fail(t, "resourceWrite", res("bot://mine", "data", `{"name":"Mine","workspace":"`+inside+`"}`, "encoding", "utf-8", "createOnly", true),
		codeInvalidParams, inside, "not available")
	leaks("a make inside ag-put's folder", e.Message, inside)

	var said []string
	for _, slug := range []string{"ag-put", "old"} {
		e := soft.fail(t, "resourceWrite", res("bot://"+slug, "data", `{"name":"Mine"}`, "encoding", "utf-8", "createOnly", true),
			codeExists, "bot://"+slug, "not available")
		leaks("a createOnly of "+slug, e.Message, "bot://"+slug)
		said = append(said, strings.ReplaceAll(e.Message, slug, "<slug>"))
	}
	if said[0] != said[1] {
		t.Errorf("a slug a bot has answers %q and a deleted one %q: want one sentence", said[0], said[1])
	}

	const session = "ahp-session:/roots-chat"
	root.result(t, "createSession", map[string]any{"channel": session, "provider": "bot-chat", "config": map[string]any{"bot": "ag-put"}}, nil)
	e = soft.fail(t, "createSession", map[string]any{"channel": session, "provider": "bot-chat", "config": map[string]any{"bot": "soft-own"}},
		-32003, session, "not available")
	leaks("a createSession on root's chat", e.Message, session)

	root.fail(t, "resourceWrite", res("bot://mine", "data", `{"name":"Mine","workspace":"`+inside+`"}`, "encoding", "utf-8", "createOnly", true),
		codeInvalidParams, "bot ag-put works in "+hidden)
	root.fail(t, "resourceWrite", res("bot://old", "data", `{"name":"Mine"}`, "encoding", "utf-8", "createOnly", true),
		codeExists, "bot://old was deleted")
	root.fail(t, "createSession", map[string]any{"channel": session, "provider": "bot-chat", "config": map[string]any{"bot": "ag-put"}},
		-32003, "Session already exists")
}
