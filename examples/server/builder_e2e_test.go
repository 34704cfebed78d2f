package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/internal/waittest"
)

// The end-to-end tests of issue 14: the builder bot and the workspace
// tools, bundled bots, and tools lists that only narrow, through the
// built server with the fake ACP agent calling the MCP tools.

// builderUsers writes a users file: soft may make bots, tess may only
// read them, both may chat.
func builderUsers(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users.json")
	data, _ := json.Marshal(map[string]any{"root": map[string]string{"token": "root-token-0123456789"}, "users": []map[string]any{
		{"id": "soft", "token": "soft-token-0123456789", "grants": []string{"bot:put", "bot:get", "session:create"}},
		{"id": "tess", "token": "tess-token-0123456789", "grants": []string{"bot:get", "session:create"}},
	}})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// one says words in chat and returns the one text the main turn holds.
func one(t *testing.T, c *ahpClient, chat, id, words string) string {
	t.Helper()
	got := say(t, c, chat, id, words)
	if len(got) != 1 {
		t.Fatalf("%q: the main turn says %q, want one text", words, got)
	}
	return got[0]
}

func TestEndToEndBuilderMakesABotInThePersonsCatalogueWithItsAgentsFile(t *testing.T) {
	t.Parallel()
	setup := newACPSetup(t, "-users", builderUsers(t), "-agent", "fake")
	srv := setup.start(t)
	soft := dialChat(t, srv.addr+"/?tkn=soft-token-0123456789", "soft")
	soft.subscribe("x-ahpd-bots://")
	chat := soft.openChat("ahp-session:/build", "bot-builder")

	said := one(t, soft, chat, "t1", `call bot_validate {"slug": "go-reviewer", "bot": {"name": "Go Reviewer", "color": "mauve", "instructions": "Read /home/soft/notes.md first."}}`)
	for _, want := range []string{"nothing was written", `color "mauve" is neither`, "instructions names a path on this host (/home/soft/notes.md)"} {
		if !strings.Contains(said, want) {
			t.Errorf("bot_validate says %q, want %q in it", said, want)
		}
	}
	if _, err := os.Stat(filepath.Join(setup.root, "go-reviewer")); !os.IsNotExist(err) {
		t.Errorf("bot_validate made the bot's folder (%v)", err)
	}

	list := one(t, soft, chat, "t2", `call bot_list {}`)
	if !strings.Contains(list, `"slug":"bot-builder"`) {
		t.Errorf("bot_list says %q, want the builder in it", list)
	}
	for _, dir := range []string{setup.root, setup.config, "/"} {
		if strings.Contains(strings.TrimPrefix(list, "tool: "), dir) {
			t.Errorf("bot_list says %q, which names the host path %s", list, dir)
		}
	}

	// The same request from a person who may only read bots is refused
	// with the permission sentence, and makes nothing.
	const makeGo = `call bot_make {"slug": "go-reviewer", "bot": {"name": "Go Reviewer", "instructions": "You review pull requests in Go."}}`
	tess := dialChat(t, srv.addr+"/?tkn=tess-token-0123456789", "tess")
	tchat := tess.openChat("ahp-session:/tess-build", "bot-builder")
	if refused := one(t, tess, tchat, "t1", makeGo); refused != "tool failed: Permission denied: bot://go-reviewer: making a bot needs bot:put" {
		t.Errorf("a person with bot:get alone has bot_make say %q, want the permission sentence", refused)
	}
	if _, err := os.Stat(filepath.Join(setup.root, "go-reviewer")); !os.IsNotExist(err) {
		t.Errorf("the refused make left a folder (%v)", err)
	}

	made := one(t, soft, chat, "t3", makeGo)
	if !strings.HasPrefix(made, "tool: Made bot://go-reviewer") {
		t.Fatalf("bot_make says %q", made)
	}
	wire := setup.wire.Bytes()
	added := regexp.MustCompile(`"type":"x-ahpd-bots/added","bot":\{"id":"go-reviewer"`).FindIndex(wire)
	ended := regexp.MustCompile(`"type":"chat/turnComplete","turnId":"t3"`).FindIndex(wire)
	if added == nil || ended == nil || added[0] > ended[0] {
		t.Errorf("the catalogue's added go-reviewer is at %v and the turn's end at %v: want the bot in the catalogue within the turn", added, ended)
	}
	agents, err := os.ReadFile(filepath.Join(setup.root, "go-reviewer", "AGENTS.md"))
	if err != nil || !strings.Contains(string(agents), "You review pull requests in Go.") {
		t.Errorf("the new bot's AGENTS.md is %q (%v), want the instructions given", agents, err)
	}
	var read struct {
		Data string `json:"data"`
	}
	soft.must("resourceRead", map[string]any{"channel": ahp.RootURI, "uri": "bot://go-reviewer"}, &read)
	if !strings.Contains(read.Data, `"owner":"user:soft"`) {
		t.Errorf("the new bot reads %s, want it soft's", read.Data)
	}

	srv.stop(t)
}

// writeBundle writes a bundle folder holding one bot, house-rules.
func writeBundle(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"house-rules/bot.md":          "---\nname: House Rules\ndescription: Says the rules.\ncolor: teal\n---\n",
		"house-rules/AGENTS.md":       "---\nname: House Rules\ndescription: Says the rules.\n---\n## Instructions\nYou say the house rules.\n",
		"house-rules/notes/rules.txt": "Be kind.\n",
	}
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestEndToEndBundledBotsAreListedReadOnlyAndWinOverAHandMadeFolder(t *testing.T) {
	t.Parallel()
	bundle := writeBundle(t)
	setup := newACPSetup(t, "-bundled", bundle)
	hand := filepath.Join(setup.config, "bots", "bot-builder", "bot.md")
	if err := os.MkdirAll(filepath.Dir(hand), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hand, []byte("---\nname: Impostor\nworkspace: "+filepath.Join(setup.root, "impostor")+"\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := setup.start(t)
	c := dialChat(t, srv.addr, "bundled")

	var listed struct {
		Entries []struct {
			Name string `json:"name"`
		} `json:"entries"`
	}
	c.must("resourceList", map[string]any{"channel": ahp.RootURI, "uri": "bot://"}, &listed)
	var names []string
	for _, it := range listed.Entries {
		names = append(names, it.Name)
	}
	for _, want := range []string{"bot-builder", "house-rules"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("the listing holds %q, want %s in it", names, want)
		}
	}
	var read struct {
		Data string `json:"data"`
	}
	c.must("resourceRead", map[string]any{"channel": ahp.RootURI, "uri": "bot://bot-builder"}, &read)
	if !strings.Contains(read.Data, `"name":"Bot Builder"`) || !strings.Contains(read.Data, `"owner":"root:chathost"`) {
		t.Errorf("bot://bot-builder reads %s: want the bundled builder, the host's", read.Data)
	}
	if e := c.call("resourceWrite", map[string]any{"channel": ahp.RootURI, "uri": "bot://bot-builder", "encoding": "utf-8", "data": `{"color": "teal"}`}, nil, nil); e == nil || !strings.Contains(e.Message, "bundled with this host, so it cannot be edited") {
		t.Errorf("an edit of the builder answers %+v, want a refusal saying it is bundled", e)
	}
	if e := c.call("resourceDelete", map[string]any{"channel": ahp.RootURI, "uri": "bot://house-rules"}, nil, nil); e == nil || !strings.Contains(e.Message, "bundled with this host, so it cannot be deleted") {
		t.Errorf("a delete of house-rules answers %+v, want a refusal saying it is bundled", e)
	}
	if e := c.call("resourceWrite", map[string]any{"channel": ahp.RootURI, "uri": "bot://bot-builder", "encoding": "utf-8", "createOnly": true, "data": `{"name": "Mine"}`}, nil, nil); e == nil || !strings.Contains(e.Message, "bundled with this host: its slug is never made") {
		t.Errorf("a make of the builder's slug answers %+v, want a refusal saying it is bundled", e)
	}
	warned := false
	for _, line := range strings.Split(string(setup.logs.Bytes()), "\n") {
		warned = warned || strings.Contains(line, "level=WARN") && strings.Contains(line, "path="+hand) && strings.Contains(line, "built in/bot-builder")
	}
	if !warned {
		t.Errorf("no Warn line naming %s and the bundled builder in the logs:\n%s", hand, setup.logs.Bytes())
	}

	chat := c.openChat("ahp-session:/rules", "house-rules")
	if got := one(t, c, chat, "t1", "hello"); got != "House Rules heard: hello" {
		t.Errorf("the bundled bot on the echo agent says %q", got)
	}
	if data, err := os.ReadFile(filepath.Join(setup.root, ".bundled", "house-rules", "notes", "rules.txt")); string(data) != "Be kind.\n" {
		t.Errorf("the bundled bot's work folder holds notes/rules.txt = %q (%v), want the bundle's", data, err)
	}
	bchat := c.openChat("ahp-session:/builder", "bot-builder")
	if got := one(t, c, bchat, "t1", "hello"); got != "Bot Builder heard: hello" {
		t.Errorf("the builder on the echo agent says %q", got)
	}
	if data, err := os.ReadFile(filepath.Join(setup.root, ".bundled", "bot-builder", "AGENTS.md")); err != nil || !bytes.Contains(data, []byte("bot_make")) {
		t.Errorf("the builder's work folder AGENTS.md is %q (%v), want the bundle's", data, err)
	}
	srv.stop(t)
}

func TestEndToEndToolsListOnlyNarrowsWhatARunningBackSessionHolds(t *testing.T) {
	t.Parallel()
	setup := newACPSetup(t)
	srv := setup.start(t)
	c := dialChat(t, srv.addr, "narrow")

	c.makeBot("quiet", `{"name": "Quiet", "provider": "fake", "tools": ["post_message"]}`)
	qchat := c.openChat("ahp-session:/quiet", "quiet")
	if got := one(t, c, qchat, "t1", "post-tools"); got != "post_message" {
		t.Errorf("a bot whose tools name post_message alone sees %q over MCP", got)
	}

	c.makeBot("wide", `{"name": "Wide", "provider": "fake", "connectors": {"crm": "connectors://http/crm"}}`)
	chat := c.openChat("ahp-session:/wide", "wide")
	if got := one(t, c, chat, "t1", "post-tools"); got != "ask_question,crm,post_message" {
		t.Fatalf("a bot listing no tools sees %q, want the host's default set with its connector", got)
	}
	c.must("resourceWrite", map[string]any{"channel": ahp.RootURI, "uri": "bot://wide", "encoding": "utf-8", "data": `{"tools": ["post_message", "ask_question"]}`}, nil)
	if got := one(t, c, chat, "t2", "call crm {}"); !strings.HasPrefix(got, "tool failed:") {
		t.Errorf("a connector call after connectors was taken out says %q", got)
	}
	if got := one(t, c, chat, "t3", "post-tools"); got != "ask_question,post_message" {
		t.Errorf("after the narrowing the running session sees %q", got)
	}
	c.must("resourceWrite", map[string]any{"channel": ahp.RootURI, "uri": "bot://wide", "encoding": "utf-8", "data": `{"tools": ["post_message", "ask_question", "connectors", "bots"]}`}, nil)
	if got := one(t, c, chat, "t4", "post-tools"); got != "ask_question,post_message" {
		t.Errorf("after a widening edit the running session sees %q: an edit never widens it", got)
	}

	e := c.call("resourceWrite", map[string]any{"channel": ahp.RootURI, "uri": "bot://odd", "encoding": "utf-8", "createOnly": true, "data": `{"name": "Odd", "tools": ["telepathy"]}`}, nil, nil)
	if e == nil || !strings.Contains(e.Message, `tools names "telepathy", which this host does not offer`) {
		t.Errorf("a make naming an unknown tool answers %+v", e)
	}
	e = c.call("resourceWrite", map[string]any{"channel": ahp.RootURI, "uri": "bot://wide", "encoding": "utf-8", "data": `{"tools": ["telepathy"]}`}, nil, nil)
	if e == nil || !strings.Contains(e.Message, `"telepathy"`) {
		t.Errorf("an edit naming an unknown tool answers %+v", e)
	}
	srv.stop(t)
}

// toolJSON decodes the JSON a tool answered in the main turn ("tool: …").
func toolJSON(t *testing.T, said string, v any) {
	t.Helper()
	text, ok := strings.CutPrefix(said, "tool: ")
	if !ok {
		t.Fatalf("the tool answered %q", said)
	}
	if err := json.Unmarshal([]byte(text), v); err != nil {
		t.Fatalf("the tool answered %q: %v", said, err)
	}
}

func TestEndToEndWorkspaceToolsRefuseSecretsUnknownToolsAndBundledSlugsAndFollowTheEtag(t *testing.T) {
	t.Parallel()
	setup := newACPSetup(t, "-users", builderUsers(t), "-agent", "fake")
	srv := setup.start(t)
	soft := dialChat(t, srv.addr+"/?tkn=soft-token-0123456789", "soft")
	soft.subscribe("x-ahpd-bots://")
	chat := soft.openChat("ahp-session:/tools", "bot-builder")
	turn := 0
	ask := func(words string) string {
		turn++
		return one(t, soft, chat, "t"+strconv.Itoa(turn), words)
	}
	refused := func(words string, want ...string) {
		t.Helper()
		said := ask(words)
		if !strings.HasPrefix(said, "tool failed: ") {
			t.Errorf("%s answers %q, want a refusal", words, said)
		}
		for _, w := range want {
			if !strings.Contains(said, w) {
				t.Errorf("%s answers %q, want %q in it", words, said, w)
			}
		}
	}
	noFolder := func(slug string) {
		t.Helper()
		if _, err := os.Stat(filepath.Join(setup.root, slug)); !os.IsNotExist(err) {
			t.Errorf("a refused write left %s a folder (%v)", slug, err)
		}
		if _, err := os.Stat(filepath.Join(setup.config, "bots", slug)); !os.IsNotExist(err) {
			t.Errorf("a refused write left %s a record (%v)", slug, err)
		}
	}

	// Secret-looking values are refused as the wire refuses them, by
	// field and kind, never echoed.
	const token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"
	said := ask(`call bot_make {"slug": "leaky", "bot": {"name": "Leaky", "description": "uses ` + token + `"}}`)
	if !strings.HasPrefix(said, "tool failed: ") || !strings.Contains(said, "description holds what looks like a secret (a GitHub token)") || strings.Contains(said, token) {
		t.Errorf("a make holding a token answers %q: want the wire's refusal, the token not in it", said)
	}
	noFolder("leaky")
	e := soft.call("resourceWrite", map[string]any{"channel": ahp.RootURI, "uri": "bot://leaky", "encoding": "utf-8", "createOnly": true,
		"data": `{"name": "Leaky", "description": "uses ` + token + `"}`}, nil, nil)
	if e == nil || !strings.Contains(said, e.Message) {
		t.Errorf("the wire refuses the same make with %+v; the tool said %q", e, said)
	}

	// A tools list naming a tool this host does not offer is refused at
	// make and at edit, naming the tool.
	refused(`call bot_make {"slug": "odd", "bot": {"name": "Odd", "tools": ["telepathy"]}}`, `tools names "telepathy", which this host does not offer`)
	noFolder("odd")

	// The bundled builder: readable, never made, edited or deleted, each
	// refusal naming why.
	var read struct {
		Bot struct {
			ID    string   `json:"id"`
			Owner string   `json:"owner"`
			Tools []string `json:"tools"`
		} `json:"bot"`
		ETag string `json:"etag"`
	}
	toolJSON(t, ask(`call bot_read {"slug": "bot-builder"}`), &read)
	if read.Bot.Owner != "root:chathost" || len(read.Bot.Tools) == 0 {
		t.Errorf("bot_read of the builder answers %+v, want the host's bot and its tools", read)
	}
	refused(`call bot_make {"slug": "bot-builder", "bot": {"name": "Mine"}}`, "bot://bot-builder is bundled with this host")
	refused(`call bot_edit {"slug": "bot-builder", "bot": {"color": "teal"}}`, "bot://bot-builder is bundled with this host")
	refused(`call bot_delete {"slug": "bot-builder"}`, "bot://bot-builder is bundled with this host, so it cannot be deleted")
	if said := ask(`call bot_edit {"slug": "bot-builder", "bot": {"color": "teal"}}`); strings.Contains(said, "must have a name") {
		t.Errorf("an edit of the builder answers %q: an edit needs no name", said)
	}

	// Make, then edit with ifMatch: a stale etag is refused, the current
	// one is taken, and the catalogue hears both at once; then delete.
	if said := ask(`call bot_make {"slug": "notes", "bot": {"name": "Notes", "instructions": "You keep notes."}}`); !strings.HasPrefix(said, "tool: Made bot://notes") {
		t.Fatalf("bot_make says %q", said)
	}
	toolJSON(t, ask(`call bot_read {"slug": "notes"}`), &read)
	first := read.ETag
	if said := ask(`call bot_edit {"slug": "notes", "ifMatch": ` + strconv.Quote(first) + `, "bot": {"color": "teal"}}`); !strings.HasPrefix(said, "tool: Edited bot://notes") {
		t.Fatalf("bot_edit with the current etag says %q", said)
	}
	editTurn := "t" + strconv.Itoa(turn)
	refused(`call bot_edit {"slug": "notes", "ifMatch": `+strconv.Quote(first)+`, "bot": {"color": "red"}}`, "bot://notes changed since the etag")
	toolJSON(t, ask(`call bot_read {"slug": "notes"}`), &read)
	if read.ETag == first {
		t.Error("the edit left the etag as it was")
	}
	refused(`call bot_edit {"slug": "notes", "bot": {"tools": ["post_message", "telepathy"]}}`, `"telepathy"`)
	if said := ask(`call bot_delete {"slug": "notes", "ifMatch": ` + strconv.Quote(read.ETag) + `}`); !strings.HasPrefix(said, "tool: Deleted bot://notes") {
		t.Fatalf("bot_delete says %q", said)
	}
	deleteTurn := "t" + strconv.Itoa(turn)
	wire := setup.wire.Bytes()
	within := func(event, turnID string) {
		t.Helper()
		at := regexp.MustCompile(event).FindIndex(wire)
		end := regexp.MustCompile(`"type":"chat/turnComplete","turnId":"` + turnID + `"`).FindIndex(wire)
		if at == nil || end == nil || at[0] > end[0] {
			t.Errorf("%s is at %v and the end of turn %s at %v: want it within the turn", event, at, turnID, end)
		}
	}
	within(`"type":"x-ahpd-bots/changed","bot":\{"id":"notes"[^}]*"color":"teal"`, editTurn)
	within(`"type":"x-ahpd-bots/removed","id":"notes"`, deleteTurn)
	if _, err := os.Stat(filepath.Join(setup.config, "bots", "notes")); !os.IsNotExist(err) {
		t.Errorf("bot_delete left the record's folder (%v)", err)
	}

	// One who may only read bots reads the bundled builder, and lists it.
	tess := dialChat(t, srv.addr+"/?tkn=tess-token-0123456789", "tess")
	var got struct {
		Data string `json:"data"`
	}
	tess.must("resourceRead", map[string]any{"channel": ahp.RootURI, "uri": "bot://bot-builder"}, &got)
	if !strings.Contains(got.Data, `"owner":"root:chathost"`) {
		t.Errorf("tess reads the builder as %s", got.Data)
	}
	tchat := tess.openChat("ahp-session:/tess-tools", "bot-builder")
	var list []struct {
		Slug, Owner string
		Bundled     bool
	}
	toolJSON(t, one(t, tess, tchat, "t1", `call bot_list {}`), &list)
	if len(list) != 1 || list[0].Slug != "bot-builder" || !list[0].Bundled || list[0].Owner != "root:chathost" {
		t.Errorf("tess's bot_list answers %+v, want the bundled builder", list)
	}
	srv.stop(t)
}

// readUntil reads bot://slug until its JSON holds want, within a deadline.
func readUntil(t *testing.T, c *ahpClient, slug, want string) {
	t.Helper()
	var read struct {
		Data string `json:"data"`
	}
	if !waittest.Within(15*time.Second, func() bool {
		c.must("resourceRead", map[string]any{"channel": ahp.RootURI, "uri": "bot://" + slug}, &read)
		return strings.Contains(read.Data, want)
	}) {
		t.Fatalf("bot://%s reads %s, never %s", slug, read.Data, want)
	}
}

func TestEndToEndPostMessageIsNeverNarrowedAwayAndHandAndToolEditsOnlyNarrow(t *testing.T) {
	t.Parallel()
	setup := newACPSetup(t, "-agent", "fake")
	srv := setup.start(t)
	c := dialChat(t, srv.addr, "narrow")

	// A list that leaves post_message out still holds it: the main turn
	// waits on it, and hears this answer through it.
	c.makeBot("asker", `{"name": "Asker", "tools": ["ask_question"]}`)
	achat := c.openChat("ahp-session:/asker", "asker")
	if got := one(t, c, achat, "t1", "post-tools"); got != "ask_question,post_message" {
		t.Errorf("a bot whose tools name ask_question alone sees %q over MCP, want post_message too", got)
	}

	c.makeBot("wide", `{"name": "Wide", "connectors": {"crm": "connectors://http/crm"}}`)
	chat := c.openChat("ahp-session:/wide", "wide")
	if got := one(t, c, chat, "t1", "post-tools"); got != "ask_question,crm,post_message" {
		t.Fatalf("a bot listing no tools sees %q", got)
	}

	// By hand: a tools list in bot.md that leaves out connectors and adds
	// the workspace tools narrows the running session, never widens it.
	file := filepath.Join(setup.config, "bots", "wide", "bot.md")
	data, err := os.ReadFile(file)
	if err != nil || !bytes.HasPrefix(data, []byte("---\n")) || bytes.Contains(data, []byte("\ntools:")) {
		t.Fatalf("bot.md is %q (%v)", data, err)
	}
	writeAtomic(t, file, "---\ntools: [post_message, ask_question, bots]\n"+strings.TrimPrefix(string(data), "---\n"))
	readUntil(t, c, "wide", `"tools":["post_message","ask_question","bots"]`)
	if got := one(t, c, chat, "t2", "call crm {}"); !strings.HasPrefix(got, "tool failed:") {
		t.Errorf("a connector call after a hand edit took connectors out says %q", got)
	}
	if got := one(t, c, chat, "t3", "post-tools"); got != "ask_question,post_message" {
		t.Errorf("after the hand edit the running session sees %q: want connectors gone and no workspace tools", got)
	}

	// By a tool: the builder narrows wide further, from another session.
	bchat := c.openChat("ahp-session:/builder", "bot-builder")
	if got := one(t, c, bchat, "t1", `call bot_edit {"slug": "wide", "bot": {"tools": ["post_message", "connectors"]}}`); !strings.HasPrefix(got, "tool: Edited bot://wide") {
		t.Fatalf("bot_edit says %q", got)
	}
	if got := one(t, c, chat, "t4", "post-tools"); got != "post_message" {
		t.Errorf("after the builder's edit the running session sees %q, want post_message alone", got)
	}
	srv.stop(t)
}

func TestEndToEndAHandMadeFolderOfABundledSlugWhileServingIsLoggedWithBothPathsAndIgnored(t *testing.T) {
	t.Parallel()
	bundle := writeBundle(t)
	setup := newACPSetup(t, "-bundled", bundle)
	srv := setup.start(t)
	c := dialChat(t, srv.addr, "hand")
	readUntil(t, c, "house-rules", `"owner":"root:chathost"`)

	hand := filepath.Join(setup.config, "bots", "house-rules", "bot.md")
	if err := os.MkdirAll(filepath.Dir(hand), 0o755); err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, hand, "---\nname: Impostor\nowner: root:chathost\nworkspace: "+filepath.Join(setup.root, "impostor")+"\n---\n")
	origin := filepath.Join(bundle, "house-rules")
	if !waittest.Within(15*time.Second, func() bool {
		for line := range strings.Lines(string(setup.logs.Bytes())) {
			if strings.Contains(line, "level=WARN") && strings.Contains(line, hand) && strings.Contains(line, origin) {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no Warn line naming %s and %s in the logs:\n%s", hand, origin, setup.logs.Bytes())
	}
	readUntil(t, c, "house-rules", `"name":"House Rules"`)
	chat := c.openChat("ahp-session:/rules", "house-rules")
	if got := one(t, c, chat, "t1", "hello"); got != "House Rules heard: hello" {
		t.Errorf("the bundled bot says %q after a hand-made folder took its slug", got)
	}
	if _, err := os.Stat(filepath.Join(setup.root, "impostor")); !os.IsNotExist(err) {
		t.Errorf("the hand-made bot's folder was made (%v)", err)
	}
	srv.stop(t)
}

func TestEndToEndABundleUpgradeWritesOnlyWhatTheBotLeftAsThePreviousVersionWroteIt(t *testing.T) {
	t.Parallel()
	bundle := writeBundle(t)
	setup := newACPSetup(t, "-bundled", bundle)
	dir := filepath.Join(setup.root, ".bundled", "house-rules")
	srv := setup.start(t)
	c := dialChat(t, srv.addr, "upgrade")
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the bundled bot's folder exists before its first message (%v)", err)
	}
	chat := c.openChat("ahp-session:/rules", "house-rules")
	one(t, c, chat, "t1", "hello")
	rules := filepath.Join(dir, "notes", "rules.txt")
	if data, err := os.ReadFile(rules); string(data) != "Be kind.\n" {
		t.Fatalf("rules.txt after the first message is %q (%v)", data, err)
	}
	// The bot's person changes one file.
	if err := os.WriteFile(rules, []byte("Mine.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv.stop(t)

	// The same bundle again writes nothing.
	srv = setup.start(t)
	c = dialChat(t, srv.addr, "again")
	chat = c.openChat("ahp-session:/rules-again", "house-rules")
	one(t, c, chat, "t1", "hello")
	if data, _ := os.ReadFile(rules); string(data) != "Mine.\n" {
		t.Errorf("rules.txt after a restart on the same bundle is %q, want the person's", data)
	}
	srv.stop(t)

	// A new version writes what is new or unchanged, and keeps, logged at
	// Warn, what was changed in the folder.
	for name, content := range map[string]string{
		"house-rules/notes/rules.txt": "Be kinder.\n",
		"house-rules/notes/more.txt":  "Be brief.\n",
		"house-rules/AGENTS.md":       "---\nname: House Rules\ndescription: Says the rules.\n---\n## Instructions\nYou say the house rules, briefly.\n",
	} {
		writeAtomic(t, filepath.Join(bundle, filepath.FromSlash(name)), content)
	}
	srv = setup.start(t)
	c = dialChat(t, srv.addr, "upgraded")
	chat = c.openChat("ahp-session:/rules-upgraded", "house-rules")
	one(t, c, chat, "t1", "hello")
	if data, _ := os.ReadFile(rules); string(data) != "Mine.\n" {
		t.Errorf("rules.txt after an upgrade is %q: a file changed in the folder is never overwritten", data)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "notes", "more.txt")); string(data) != "Be brief.\n" {
		t.Errorf("more.txt after the upgrade is %q (%v), want the new version's", data, err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "AGENTS.md")); !strings.Contains(string(data), "briefly") {
		t.Errorf("AGENTS.md after the upgrade is %q: the file the bundle wrote and no one changed takes the new version", data)
	}
	warned := false
	for _, line := range strings.Split(string(setup.logs.Bytes()), "\n") {
		warned = warned || strings.Contains(line, "level=WARN") && strings.Contains(line, rules)
	}
	if !warned {
		t.Errorf("the kept rules.txt is not in a Warn line:\n%s", setup.logs.Bytes())
	}
	srv.stop(t)
}

// problemsSeen subscribes c to the problems channel and returns the
// problems its snapshot holds, but the builder's on echo.
func problemsSeen(t *testing.T, c *ahpClient) []map[string]any {
	t.Helper()
	return withoutBuilderOnEcho(everyProblemSeen(t, c))
}

// everyProblemSeen is problemsSeen with the builder's problem.
func everyProblemSeen(t *testing.T, c *ahpClient) []map[string]any {
	t.Helper()
	var out struct {
		Snapshot struct {
			State struct {
				Problems []map[string]any `json:"problems"`
			} `json:"state"`
		} `json:"snapshot"`
	}
	c.must("subscribe", map[string]any{"channel": "x-ahpd-problems://"}, &out)
	return out.Snapshot.State.Problems
}

func TestEndToEndABundledBotNeverRunsInThePersonsFolderOfItsSlugWhichIsKeptWholeAndReportedToItsOwner(t *testing.T) {
	t.Parallel()
	// soft and tess may read every bot, soft make them; nemo may only chat.
	users := filepath.Join(t.TempDir(), "users.json")
	data, _ := json.Marshal(map[string]any{"root": map[string]string{"token": "root-token-0123456789"}, "users": []map[string]any{
		{"id": "soft", "token": "soft-token-0123456789", "grants": []string{"bot:put", "bot:get", "session:create"}},
		{"id": "tess", "token": "tess-token-0123456789", "grants": []string{"bot:get", "session:create"}},
		{"id": "nemo", "token": "nemo-token-0123456789", "grants": []string{"session:create"}},
	}})
	if err := os.WriteFile(users, data, 0o600); err != nil {
		t.Fatal(err)
	}
	setup := newACPSetup(t, "-users", users)
	srv := setup.start(t)
	soft := dialChat(t, srv.addr+"/?tkn=soft-token-0123456789", "soft")
	soft.makeBot("house-rules", `{"name": "Squatter", "instructions": "You obey the squatter."}`)
	mine := soft.openChat("ahp-session:/mine", "house-rules")
	if got := one(t, soft, mine, "t1", "hello"); got != "Squatter heard: hello" {
		t.Fatalf("the person's bot says %q", got)
	}
	srv.stop(t)
	squatterAgents, err := os.ReadFile(filepath.Join(setup.root, "house-rules", "AGENTS.md"))
	if err != nil {
		t.Fatal(err)
	}

	// The host now ships a bot of that slug.
	setup.extra = append(setup.extra, "-bundled", writeBundle(t))
	srv = setup.start(t)
	tess := dialChat(t, srv.addr+"/?tkn=tess-token-0123456789", "tess")
	rules := tess.openChat("ahp-session:/rules", "house-rules")
	if got := one(t, tess, rules, "t1", "hello"); got != "House Rules heard: hello" {
		t.Errorf("the bundled bot says %q: it runs on another persona than its bundle's", got)
	}
	if data, err := os.ReadFile(filepath.Join(setup.root, "house-rules", "AGENTS.md")); err != nil || !bytes.Equal(data, squatterAgents) {
		t.Errorf("the person's AGENTS.md now holds %q (%v), want it kept as it was", data, err)
	}
	if _, err := os.Stat(filepath.Join(setup.root, "house-rules", "notes")); !os.IsNotExist(err) {
		t.Errorf("the bundle wrote its files into the person's folder (%v)", err)
	}
	if data, err := os.ReadFile(filepath.Join(setup.root, ".bundled", "house-rules", "notes", "rules.txt")); string(data) != "Be kind.\n" {
		t.Errorf("the bundled bot's own folder holds notes/rules.txt = %q (%v)", data, err)
	}

	soft = dialChat(t, srv.addr+"/?tkn=soft-token-0123456789", "soft")
	ps := problemsSeen(t, soft)
	if len(ps) != 1 || ps[0]["bot"] != "house-rules" || !strings.Contains(asString(ps[0]["reason"]), "bundled with this host") || !strings.Contains(asString(ps[0]["reason"]), "kept") {
		t.Errorf("the owner of the hidden bot sees the problems %v, want one saying its bot is kept and why it is hidden", ps)
	}
	// The person's chat with their bot is not merged into the bundled
	// bot's: a message there is refused, saying why, and wakes nothing.
	if _, listed := listedSession(soft, "ahp-session:/mine"); !listed {
		t.Error("while their bot is hidden the person's chat is not in their list")
	}
	soft.subscribe("ahp-session:/mine")
	soft.subscribe(mine)
	if got := soft.turn(mine, "t1"); len(texts(got)) != 1 || texts(got)[0] != "Squatter heard: hello" {
		t.Errorf("while their bot is hidden the person's chat holds %v, want its history kept and readable", texts(got))
	}
	if got := sayFails(t, soft, mine, "t2", "hello"); !strings.Contains(got, "bundled with this host") || !strings.Contains(got, "kept") {
		t.Errorf("a message in the person's chat while their bot is hidden fails with %q, want why", got)
	}
	// A new chat of the person's with the bundled bot is the bundled bot's,
	// never a back session the person's bot left.
	fresh := soft.openChat("ahp-session:/fresh", "house-rules")
	if got := one(t, soft, fresh, "t1", "hello"); got != "House Rules heard: hello" {
		t.Errorf("a new chat of the person's with the bundled bot says %q", got)
	}
	if ps := problemsSeen(t, dialChat(t, srv.addr+"/?tkn=nemo-token-0123456789", "nemo")); len(ps) != 0 {
		t.Errorf("a person who may read no bot sees the problems %v", ps)
	}
	root := dialChat(t, srv.addr+"/?tkn=root-token-0123456789", "root")
	for slug, want := range map[string]string{
		filepath.Join(setup.root, ".bundled", "mine"): "bundled with this host",
		filepath.Join(setup.root, "house-rules"):      "is taken",
	} {
		body := `{"name": "Mine", "workspace": "` + slug + `"}`
		e := root.call("resourceWrite", map[string]any{"channel": ahp.RootURI, "uri": "bot://mine-" + filepath.Base(slug), "encoding": "utf-8", "createOnly": true, "data": body}, nil, nil)
		if e == nil || !strings.Contains(e.Message, want) {
			t.Errorf("a make of %s answers %+v, want a refusal saying %q", body, e, want)
		}
	}
	srv.stop(t)

	// The bundle goes: the person's bot is back, whole, with its chat.
	setup.extra = setup.extra[:len(setup.extra)-2]
	srv = setup.start(t)
	soft = dialChat(t, srv.addr+"/?tkn=soft-token-0123456789", "soft")
	var read struct {
		Data string `json:"data"`
	}
	soft.must("resourceRead", map[string]any{"channel": ahp.RootURI, "uri": "bot://house-rules"}, &read)
	if !strings.Contains(read.Data, `"name":"Squatter"`) || !strings.Contains(read.Data, `"owner":"user:soft"`) {
		t.Errorf("the person's bot reads %s after the bundle went, want it as it was", read.Data)
	}
	soft.subscribe("ahp-session:/mine")
	soft.subscribe(mine)
	if got := soft.turn(mine, "t1"); len(texts(got)) != 1 || texts(got)[0] != "Squatter heard: hello" {
		t.Errorf("the person's chat holds %v, want its first turn", texts(got))
	}
	if got := one(t, soft, mine, "t3", "again"); got != "Squatter heard: again" {
		t.Errorf("the person's bot says %q", got)
	}
	srv.stop(t)
}

// asString is v when it is a string, else "".
func asString(v any) string { s, _ := v.(string); return s }

// TestEndToEndABotOnAnAgentTheHostDoesNotRunIsAProblemAtOnce: on a server
// with no agents file, a bot made on claude is accepted and its problem,
// which the page shows on its card and in its chats, names claude and the
// agents offered; and the builder, whose tools echo cannot call and whose
// provider nobody edits, says the host needs a real default agent and
// where the README says how.
func TestEndToEndABotOnAnAgentTheHostDoesNotRunIsAProblemAtOnce(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	s := startChatServer(t, filepath.Join(base, "config"), filepath.Join(base, "bots"))
	c := dialChat(t, s.addr, "far")
	c.makeBot("far", `{"name": "Far", "provider": "claude"}`)
	c.makeBot("near", `{"name": "Near", "tools": ["post_message", "ask_question"]}`)
	ps := everyProblemSeen(t, c)
	if len(ps) != 2 {
		t.Fatalf("the problems are %v, want the builder's and far's", ps)
	}
	if builder := asString(ps[0]["reason"]); ps[0]["bot"] != "bot-builder" || !strings.Contains(builder, "runs on echo") || !strings.Contains(builder, "(bots, channels)") ||
		!strings.Contains(builder, `"Real agents"`) || !strings.Contains(builder, "-agent NAME") || ps[0]["since"] == "" {
		t.Errorf("the builder's problem is %v, want it to say echo cannot call bots and channels, that the host's default agent is the fix (it is bundled), and where to read", ps[0])
	}
	if far := asString(ps[1]["reason"]); ps[1]["bot"] != "far" || !strings.Contains(far, `provider "claude"`) || !strings.Contains(far, "it offers echo") {
		t.Errorf("far's problem is %v, want it to name claude and the offered echo", ps[1])
	}
}
