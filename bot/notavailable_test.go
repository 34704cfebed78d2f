package bot_test

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/internal/frontmatter"
	"github.com/agenthost/bots/record"
)

// curator makes bots and reads every bot.
var curator = access.Principal{User: "curator", Grants: []string{"bot:put", "bot:get"}}

// TestAMakeOnATakenSlugTellsAPersonWhoCannotReadItOnlyThatItIsNotAvailable:
// a maker who may read neither bot hears the same sentence for a slug a
// bot has and for a spent one, naming nothing but the slug they wrote;
// those who may read every bot hear why.
func TestAMakeOnATakenSlugTellsAPersonWhoCannotReadItOnlyThatItIsNotAvailable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.make(t, root, "kept", `{"name":"Kept"}`)
	e.make(t, root, "spent", `{"name":"Spent"}`)
	if err := e.svc.Delete(ctx(t), root, "spent", ""); err != nil {
		t.Fatal(err)
	}
	said := map[string]string{}
	for _, slug := range []string{"kept", "spent"} {
		_, err := e.svc.Make(ctx(t), maker, slug, []byte(`{"name":"Mine"}`))
		wantCode(t, err, errcode.AlreadyExists, "bot://"+slug)
		said[slug] = strings.ReplaceAll(errcode.Message(err), slug, "<slug>")
	}
	if said["kept"] != said["spent"] || !strings.Contains(said["kept"], "not available") {
		t.Errorf("a maker who reads neither hears %q and %q: want one sentence saying the slug is not available", said["kept"], said["spent"])
	}
	for _, p := range []access.Principal{root, admin, curator} {
		_, err := e.svc.Make(ctx(t), p, "kept", []byte(`{"name":"Mine"}`))
		wantCode(t, err, errcode.AlreadyExists, "bot://kept already exists")
		_, err = e.svc.Make(ctx(t), p, "spent", []byte(`{"name":"Mine"}`))
		wantCode(t, err, errcode.AlreadyExists, "bot://spent was deleted")
	}
}

// TestAMakeInAnotherBotsFolderNamesNeitherThatBotNorItsFolderToWhoCannotReadIt:
// a make whose workspace lies in, holds or is another bot's folder is
// refused; a person who may not read that bot hears that the folder they
// named is not available, and neither the bot's slug nor its folder.
func TestAMakeInAnotherBotsFolderNamesNeitherThatBotNorItsFolderToWhoCannotReadIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.make(t, root, "ag-put", `{"name":"Hidden","workspace":"`+filepath.Join(e.root, "srv", "hidden")+`"}`)
	theirs := filepath.Join(e.root, "srv", "hidden")
	for _, named := range []string{theirs, filepath.Join(theirs, "inside"), filepath.Join(e.root, "srv")} {
		_, err := e.svc.Make(ctx(t), maker, "mine", []byte(`{"name":"Mine","workspace":"`+named+`"}`))
		wantCode(t, err, errcode.Invalid, named, "not available")
		msg := errcode.Message(err)
		if strings.Contains(msg, "ag-put") || strings.Contains(strings.ReplaceAll(msg, named, ""), "hidden") {
			t.Errorf("a make in %s answers a maker who cannot read ag-put %q: it names that bot or its folder", named, msg)
		}
		_, err = e.svc.Make(ctx(t), curator, "mine", []byte(`{"name":"Mine","workspace":"`+named+`"}`))
		wantCode(t, err, errcode.Invalid, "bot ag-put works in "+theirs)
	}
	if _, err := e.svc.Read(ctx(t), root, "mine"); errcode.Of(err) != errcode.NotFound {
		t.Errorf("a refused make left a bot: %v", err)
	}
}

// TestACreateSessionOnAnotherPersonsSessionSaysOnlyThatItIsNotAvailable:
// a session URI another person's chat has is answered as not available,
// as is one of the host's back sessions; its owner, root and *:* hear
// that the session already exists.
func TestACreateSessionOnAnotherPersonsSessionSaysOnlyThatItIsNotAvailable(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, bot.Options{})
	e.makeBot(t, "motion", motionBody)
	soft := e.connect(t, "soft")
	soft.open("ahp-session:/soft-private", "motion")
	create := map[string]any{"channel": "ahp-session:/soft-private", "provider": bot.ChatProvider, "config": map[string]any{"bot": "motion"}}
	mate := e.connect(t, "mate")
	err := mate.call("createSession", create, nil)
	if err == nil || err.Code != -32003 || strings.Contains(err.Message, "already exists") || !strings.Contains(err.Message, "not available") {
		t.Errorf("mate's create on soft's session answers %v, want -32003 saying only that it is not available", err)
	}
	if err := soft.call("createSession", create, nil); err == nil || err.Code != -32003 || !strings.Contains(err.Message, "Session already exists") {
		t.Errorf("soft's own second create answers %v, want -32003 saying it already exists", err)
	}
	if err := e.connect(t, "root").call("createSession", create, nil); err == nil || !strings.Contains(err.Message, "Session already exists") {
		t.Errorf("root's create answers %v, want it told the session already exists", err)
	}
}

// TestAMakeOrEditWithInstructionsTooLargeForThePersonaFileIsInvalidAndLeavesNothing:
// instructions that fit a body under record.MaxBody but not a persona file
// are refused -32602 naming the limit; the make leaves no folder and the
// edit leaves AGENTS.md as it was.
func TestAMakeOrEditWithInstructionsTooLargeForThePersonaFileIsInvalidAndLeavesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	big := strings.Repeat("x", record.MaxBody-100)
	body := `{"name":"Big","instructions":"` + big + `"}`
	if len(body) > record.MaxBody {
		t.Fatalf("the body is %d bytes, over the limit it must fit", len(body))
	}
	limit := strconv.Itoa(frontmatter.MaxSize)
	_, err := e.svc.Make(ctx(t), soft, "big", []byte(body))
	wantCode(t, err, errcode.Invalid, "instructions", limit)
	if exists(filepath.Join(e.root, "big")) {
		t.Error("the refused make left its folder")
	}
	if _, err := e.svc.Read(ctx(t), root, "big"); errcode.Of(err) != errcode.NotFound {
		t.Errorf("the refused make left a bot: %v", err)
	}

	e.make(t, soft, "small", `{"name":"Small","instructions":"Be brief."}`)
	agents := filepath.Join(e.root, "small", "AGENTS.md")
	before := readFile(t, agents)
	_, err = e.svc.Edit(ctx(t), soft, "small", []byte(`{"instructions":"`+big+`"}`), "")
	wantCode(t, err, errcode.Invalid, "instructions", limit)
	if after := readFile(t, agents); after != before {
		t.Error("the refused edit changed AGENTS.md")
	}
	if got := e.read(t, soft, "small").Record.Instructions; got != "Be brief." {
		t.Errorf("after the refused edit the instructions are %.40q", got)
	}
}

// TestARecordTooLargeForItsFileIsInvalidNamingTheLimit: a bot that keeps
// its persona in its record (one on a computer) whose instructions would
// make bot.md larger than a record file may be is refused -32602 naming
// the limit, not answered with an internal error.
func TestARecordTooLargeForItsFileIsInvalidNamingTheLimit(t *testing.T) {
	t.Parallel()
	e := newFileEnv(t, false)
	big := strings.Repeat("x", record.MaxBody-200)
	_, err := e.svc.Make(ctx(t), soft, "far", []byte(`{"name":"Far","computer":"box","instructions":"`+big+`"}`))
	wantCode(t, err, errcode.Invalid, strconv.Itoa(frontmatter.MaxSize))
	if _, err := e.svc.Read(ctx(t), root, "far"); errcode.Of(err) != errcode.NotFound {
		t.Errorf("the refused make left a bot: %v", err)
	}
}
