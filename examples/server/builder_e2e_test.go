package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agenthost/bots/ahp"
)

// The end-to-end tests of issue 14: the builder bot and the workspace
// tools, bundled bots, and tools lists that only narrow, through the
// built server with the fake ACP agent calling the MCP tools.

// builderUsers writes a users file: soft may make bots, tess may only
// read them, both may chat.
func builderUsers(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users.json")
	data, _ := json.Marshal(map[string]any{"root": map[string]string{"token": "root-token"}, "users": []map[string]any{
		{"id": "soft", "token": "soft-token", "grants": []string{"bot:put", "bot:get", "session:create"}},
		{"id": "tess", "token": "tess-token", "grants": []string{"bot:get", "session:create"}},
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
	setup := newACPSetup(t, "-users", builderUsers(t), "-agent", "fake")
	srv := setup.start(t)
	soft := dialChat(t, srv.addr+"/?tkn=soft-token", "soft")
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
	tess := dialChat(t, srv.addr+"/?tkn=tess-token", "tess")
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
	if data, err := os.ReadFile(filepath.Join(setup.root, "house-rules", "notes", "rules.txt")); string(data) != "Be kind.\n" {
		t.Errorf("the bundled bot's work folder holds notes/rules.txt = %q (%v), want the bundle's", data, err)
	}
	bchat := c.openChat("ahp-session:/builder", "bot-builder")
	if got := one(t, c, bchat, "t1", "hello"); got != "Bot Builder heard: hello" {
		t.Errorf("the builder on the echo agent says %q", got)
	}
	if data, err := os.ReadFile(filepath.Join(setup.root, "bot-builder", "AGENTS.md")); err != nil || !bytes.Contains(data, []byte("bot_make")) {
		t.Errorf("the builder's work folder AGENTS.md is %q (%v), want the bundle's", data, err)
	}
	srv.stop(t)
}

func TestEndToEndToolsListOnlyNarrowsWhatARunningBackSessionHolds(t *testing.T) {
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
