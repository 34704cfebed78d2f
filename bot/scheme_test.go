package bot_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/memrecord"
)

func TestMakeFromNameAloneFillsTheRest(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 30, 8, 0, 0, 123456789, time.UTC)
	e := newEnv(t, withNow(func() time.Time { return at }))
	b := e.make(t, soft, "motion", `{"name":"Motion"}`)
	r := b.Record
	if r.ID != "motion" || r.Name != "Motion" || r.SessionName() != "work" || r.Owner != "user:soft" {
		t.Fatalf("record %+v", r)
	}
	if !slices.Contains(record.Bodies(), r.Body) {
		t.Errorf("body %q is not a suggested body", r.Body)
	}
	if r.Color != "red" {
		t.Errorf("colour %q, want the first colour", r.Color)
	}
	if want := filepath.Join(e.root, "motion"); r.Workspace != want {
		t.Errorf("workspace %q, want %q", r.Workspace, want)
	}
	if fi, err := os.Stat(r.Workspace); err != nil || !fi.IsDir() {
		t.Errorf("work folder not made: %v", err)
	}
	wantAt := at.Truncate(time.Millisecond)
	if !r.CreatedAt.Equal(wantAt) || !r.UpdatedAt.Equal(wantAt) {
		t.Errorf("times %v %v, want %v", r.CreatedAt, r.UpdatedAt, wantAt)
	}
	if b.ETag == "" {
		t.Error("no etag")
	}
}

func TestMakeWithAllFieldsAnswersThemOnRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.make(t, soft, "motion", `{
		"name": "Motion", "labels": ["review", "ci"],
		"description": "Reads pull requests and says what would break.",
		"body": "robot", "color": "teal",
		"instructions": "You review pull requests. Say what would break, in one paragraph.",
		"provider": "claude", "model": "claude-sonnet-5", "preset": "careful",
		"session": "review-{turn}", "connectors": {"work": "connectors://ap-resend/account-123"}}`)
	r := e.read(t, soft, "motion").Record
	if r.Name != "Motion" || !slices.Equal(r.Labels, []string{"review", "ci"}) ||
		r.Description != "Reads pull requests and says what would break." || r.Body != "robot" ||
		r.Color != "teal" || r.Instructions != "You review pull requests. Say what would break, in one paragraph." ||
		r.Provider != "claude" || r.Model != "claude-sonnet-5" || r.Preset != "careful" ||
		r.Session != "review-{turn}" || r.Connectors["work"] != "connectors://ap-resend/account-123" {
		t.Fatalf("read %+v", r)
	}
}

func TestMakeRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cases := []struct {
		name, id, body string
		code           errcode.Code
		names          []string
	}{
		{"SlugWithCapitals", "Motion", `{"name":"M"}`, errcode.Invalid, []string{`"Motion"`}},
		{"SlugTooLong", strings.Repeat("a", 41), `{"name":"M"}`, errcode.Invalid, nil},
		{"SlugStartingWithDigit", "1bot", `{"name":"M"}`, errcode.Invalid, []string{`"1bot"`}},
		{"NoName", "motion", `{"color":"red"}`, errcode.Invalid, []string{"name"}},
		{"UnknownKey", "motion", `{"name":"M","harness":"x"}`, errcode.Invalid, []string{`"harness"`}},
		{"WrongType", "motion", `{"name":"M","labels":"ci"}`, errcode.Invalid, []string{"labels"}},
		{"BodyNotAWord", "motion", `{"name":"M","body":"two words"}`, errcode.Invalid, []string{`"two words"`}},
		{"ShortHexColor", "motion", `{"name":"M","color":"#fff"}`, errcode.Invalid, []string{`"#fff"`}},
		{"HexWithoutHash", "motion", `{"name":"M","color":"2f6fdf"}`, errcode.Invalid, []string{`"2f6fdf"`}},
		{"ConnectorsNotObject", "motion", `{"name":"M","connectors":[]}`, errcode.Invalid, []string{"connectors"}},
		{"ConnectorAliasNotSlug", "motion", `{"name":"M","connectors":{"My Mail":"connectors://a/b"}}`, errcode.Invalid, []string{`"My Mail"`}},
		{"ConnectorValueNotReference", "motion", `{"name":"M","connectors":{"mail":"https://x"}}`, errcode.Invalid, []string{`"https://x"`}},
		{"SessionNotAName", "motion", `{"name":"M","session":"Work Stuff"}`, errcode.Invalid, []string{`"Work Stuff"`}},
		{"AnotherID", "motion", `{"id":"other","name":"M"}`, errcode.Invalid, []string{`"other"`}},
		{"InstructionsWithHeading", "motion", "{\"name\":\"M\",\"instructions\":\"Be kind.\\n## Secret\\nmore\"}", errcode.Invalid, []string{"## Secret"}},
		{"MissingTemplate", "motion", `{"name":"M","template":"nosuch"}`, errcode.Invalid, []string{`"nosuch"`}},
		{"NotJSON", "motion", `{name}`, errcode.Invalid, []string{"JSON"}},
		{"ForeignOwner", "motion", `{"name":"M","owner":"user:other"}`, errcode.PermissionDenied, []string{"user:other"}},
		{"TeamNotAMemberOf", "motion", `{"name":"M","owner":"team:frontend"}`, errcode.PermissionDenied, []string{"team:frontend"}},
		{"RootOwnerByUser", "motion", `{"name":"M","owner":"root:testhost"}`, errcode.PermissionDenied, []string{"root:testhost"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.svc.Make(ctx(t), soft, tc.id, []byte(tc.body))
			wantCode(t, err, tc.code, tc.names...)
		})
	}
	if list, _ := e.store.List(ctx(t)); len(list) != 0 {
		t.Fatalf("refused makes left bots: %v", list)
	}
}

func TestMakeKeepsHexColourInLowerCase(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if c := e.make(t, soft, "motion", `{"name":"M","color":"#2F6FDF"}`).Record.Color; c != "#2f6fdf" {
		t.Fatalf("colour %q", c)
	}
}

func TestMakeKeepsABodyWordThatIsNoSuggestion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if b := e.make(t, soft, "motion", `{"name":"M","body":"octopus"}`).Record.Body; b != "octopus" {
		t.Fatalf("body %q", b)
	}
}

func TestMakeReadsButNeverObeysIDAndTimes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.make(t, soft, "motion", `{"id":"motion","name":"M","createdAt":"2001-01-01T00:00:00.000Z","updatedAt":"2001-01-01T00:00:00.000Z"}`)
	if b.Record.CreatedAt.Year() == 2001 || b.Record.UpdatedAt.Year() == 2001 {
		t.Fatalf("times obeyed: %v", b.Record.CreatedAt)
	}
}

func TestMakeOnTakenSlugIsAlreadyExists(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.make(t, soft, "motion", `{"name":"M"}`)
	_, err := e.svc.Make(ctx(t), soft, "motion", []byte(`{"name":"Again"}`))
	wantCode(t, err, errcode.AlreadyExists, "bot://motion")
	if n := e.read(t, soft, "motion").Record.Name; n != "M" {
		t.Fatalf("the failed make changed the bot: name %q", n)
	}
}

func TestMakeOnDeletedSlugIsAlreadyExistsForever(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.make(t, soft, "motion", `{"name":"M"}`)
	if err := e.svc.Delete(ctx(t), soft, "motion", ""); err != nil {
		t.Fatal(err)
	}
	for _, p := range []access.Principal{soft, admin, root} {
		_, err := e.svc.Make(ctx(t), p, "motion", []byte(`{"name":"M"}`))
		wantCode(t, err, errcode.AlreadyExists, "bot://motion")
	}
}

func TestMakeNeedsBotPut(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, p := range []access.Principal{nobody, viewer, lister, mate} {
		_, err := e.svc.Make(ctx(t), p, "motion", []byte(`{"name":"M"}`))
		wantCode(t, err, errcode.PermissionDenied, "bot:put")
	}
	for i, p := range []access.Principal{soft, maker, admin, root, {User: "w", Grants: []string{"bot:*"}}} {
		e.make(t, p, fmt.Sprintf("bot-%d", i), `{"name":"M"}`)
	}
}

func TestMakeOwnerMayBeTheMakerOrATeamOrProjectOfTheirs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for id, owner := range map[string]string{"a": "user:soft", "b": "team:backend", "c": "project:shop:website"} {
		if got := e.make(t, soft, id, `{"name":"M","owner":"`+owner+`"}`).Record.Owner; got != owner {
			t.Errorf("owner %q, want %q", got, owner)
		}
	}
}

func TestMakeByStarStarMayNameAnyOwnerAndRootIsWrittenUnderHostName(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if o := e.make(t, admin, "a", `{"name":"M","owner":"user:someone"}`).Record.Owner; o != "user:someone" {
		t.Errorf("owner %q", o)
	}
	if o := e.make(t, admin, "b", `{"name":"M","owner":"root:oldname"}`).Record.Owner; o != "root:testhost" {
		t.Errorf("root owner written as %q, want root:testhost", o)
	}
	if o := e.make(t, admin, "c", `{"name":"M"}`).Record.Owner; o != "user:admin" {
		t.Errorf("default owner %q", o)
	}
}

func TestWithoutUsersDirectoryEverythingIsAllowedAndBotsAreRoots(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.make(t, root, "motion", `{"name":"M"}`)
	if b.Record.Owner != "root:testhost" {
		t.Fatalf("owner %q", b.Record.Owner)
	}
	e.edit(t, root, "motion", `{"color":"blue"}`)
	if err := e.svc.Delete(ctx(t), root, "motion", ""); err != nil {
		t.Fatal(err)
	}
}

func TestMakeRefusesAFolderOutsideRoot(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	outside := filepath.Join(t.TempDir(), "elsewhere")
	_, err := e.svc.Make(ctx(t), soft, "motion", []byte(`{"name":"M","workspace":"`+outside+`"}`))
	wantCode(t, err, errcode.PermissionDenied, "Permission denied: "+outside)
	_, err = e.svc.Make(ctx(t), soft, "motion", []byte(`{"name":"M","workspace":"`+e.root+`/../x"}`))
	wantCode(t, err, errcode.PermissionDenied, "Permission denied: ")
	_, err = e.svc.Make(ctx(t), soft, "motion", []byte(`{"name":"M","workspace":"`+e.root+`"}`))
	wantCode(t, err, errcode.PermissionDenied, "Permission denied: "+e.root)
	if exists(outside) {
		t.Fatal("the refused folder was made")
	}
}

func TestMakeTakesANamedFolderUnderRoot(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := filepath.Join(e.root, "team", "motion-work")
	if ws := e.make(t, soft, "motion", `{"name":"M","workspace":"`+dir+`"}`).Record.Workspace; ws != dir {
		t.Fatalf("workspace %q", ws)
	}
	if !exists(filepath.Join(dir, "AGENTS.md")) {
		t.Fatal("AGENTS.md not written in the named folder")
	}
}

func TestMakeRefusesAFolderAnotherBotHas(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.make(t, soft, "motion", `{"name":"M"}`)
	taken := filepath.Join(e.root, "motion")
	for _, dir := range []string{taken, filepath.Join(taken, "inner")} {
		_, err := e.svc.Make(ctx(t), soft, "other", []byte(`{"name":"O","workspace":"`+dir+`"}`))
		wantCode(t, err, errcode.Invalid, dir, "motion")
	}
	// A bot whose default folder another bot already works in is refused too.
	e.make(t, soft, "third", `{"name":"T","workspace":"`+filepath.Join(e.root, "fourth")+`"}`)
	_, err := e.svc.Make(ctx(t), soft, "fourth", []byte(`{"name":"F"}`))
	wantCode(t, err, errcode.Invalid, "third")
}

func TestMakeRefusesASymlinkInsideRootThatLeadsOutside(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	outside := t.TempDir()
	if err := os.MkdirAll(e.root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(e.root, "escape")); err != nil {
		t.Fatal(err)
	}
	_, err := e.svc.Make(ctx(t), soft, "motion", []byte(`{"name":"M","workspace":"`+filepath.Join(e.root, "escape", "w")+`"}`))
	wantCode(t, err, errcode.PermissionDenied, "Permission denied")
	// The default folder of a slug that is a link out of root is refused too.
	_, err = e.svc.Make(ctx(t), soft, "escape", []byte(`{"name":"M"}`))
	wantCode(t, err, errcode.PermissionDenied, "Permission denied")
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("files were written outside root: %v", entries)
	}
}

func TestMakeWritesThePersonaToAgentsMDAndNotTheRecord(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.make(t, soft, "motion", `{"name":"Motion","description":"Reads PRs.","instructions":"Review them."}`)
	stored, err := e.store.Get(ctx(t), "motion")
	if err != nil {
		t.Fatal(err)
	}
	if r := stored.Record; r.Name != "" || r.Description != "" || r.Instructions != "" {
		t.Fatalf("the record keeps the persona: %+v", r)
	}
	agents := readFile(t, filepath.Join(b.Record.Workspace, "AGENTS.md"))
	for _, want := range []string{"name: Motion", "description: Reads PRs.", "## Instructions", "Review them."} {
		if !strings.Contains(agents, want) {
			t.Errorf("AGENTS.md lacks %q:\n%s", want, agents)
		}
	}
	if c := readFile(t, filepath.Join(b.Record.Workspace, "CLAUDE.md")); strings.TrimSpace(c) != "@AGENTS.md" {
		t.Errorf("CLAUDE.md is %q", c)
	}
}

func TestMakeIntoAFolderThatHasAnAgentsMDKeepsItsText(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := filepath.Join(e.root, "motion")
	own := "---\nname: Old\ntools: [grep]\n---\n# Motion's notes\n\nKeep this.\n"
	writeFile(t, filepath.Join(dir, "AGENTS.md"), own)
	e.make(t, soft, "motion", `{"name":"Motion","instructions":"Review."}`)
	agents := readFile(t, filepath.Join(dir, "AGENTS.md"))
	for _, want := range []string{"name: Motion", "tools: [grep]", "# Motion's notes\n\nKeep this.\n", "## Instructions", "Review."} {
		if !strings.Contains(agents, want) {
			t.Errorf("AGENTS.md lacks %q:\n%s", want, agents)
		}
	}
	if strings.Contains(agents, "Old") {
		t.Errorf("the old name stayed:\n%s", agents)
	}
}

func TestMakeFillsANamedTemplate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	writeFile(t, filepath.Join(e.configDir, "templates", "short.md"), "---\ntitle: Short\n---\nYou are {{name}}. {{unknown}} stays.\n")
	b := e.make(t, soft, "motion", `{"name":"Motion","template":"short"}`)
	agents := readFile(t, filepath.Join(b.Record.Workspace, "AGENTS.md"))
	if !strings.Contains(agents, "You are Motion. {{unknown}} stays.") {
		t.Fatalf("AGENTS.md:\n%s", agents)
	}
	if b.Record.Template != "short" || e.read(t, soft, "motion").Record.Name != "Motion" {
		t.Fatalf("read back %+v", b.Record)
	}
}

func TestMakeWritesTheDefaultTemplateWhichAPersonMayEdit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	path := filepath.Join(e.configDir, "templates", "bots", "AGENTS.md")
	if !exists(path) {
		t.Fatal("the default template was not written at load")
	}
	writeFile(t, path, "---\nname: x\n---\nHello {{name}}, from the edited template.\n")
	b := e.make(t, soft, "motion", `{"name":"Motion"}`)
	if a := readFile(t, filepath.Join(b.Record.Workspace, "AGENTS.md")); !strings.Contains(a, "Hello Motion, from the edited template.") {
		t.Fatalf("AGENTS.md:\n%s", a)
	}
	// A restart does not write over the person's edit.
	newEnv(t, withConfigDir(e.configDir))
	if !strings.Contains(readFile(t, path), "from the edited template") {
		t.Fatal("the default template was written over")
	}
}

func TestReadTakesThePersonaFromAgentsMDEachTime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.make(t, soft, "motion", `{"name":"Motion","instructions":"Old."}`)
	path := filepath.Join(b.Record.Workspace, "AGENTS.md")
	writeFile(t, path, strings.Replace(readFile(t, path), "Old.", "New, by the bot.", 1))
	if got := e.read(t, soft, "motion").Record.Instructions; got != "New, by the bot." {
		t.Fatalf("instructions %q", got)
	}
}

func TestAPartTheFileLacksReadsEmptyAndTheNextEditWritesItBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.make(t, soft, "motion", `{"name":"Motion","instructions":"Review."}`)
	path := filepath.Join(b.Record.Workspace, "AGENTS.md")
	writeFile(t, path, "---\nname: Motion\n---\n# Just notes\n")
	if got := e.read(t, soft, "motion").Record.Instructions; got != "" {
		t.Fatalf("instructions %q, want empty", got)
	}
	e.edit(t, soft, "motion", `{"instructions":"Back again."}`)
	a := readFile(t, path)
	if !strings.Contains(a, "# Just notes") || !strings.Contains(a, "## Instructions") || !strings.Contains(a, "Back again.") {
		t.Fatalf("AGENTS.md:\n%s", a)
	}
}

func TestBotOnAComputerKeepsItsPersonaInItsRecord(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.make(t, soft, "remote", `{"name":"Remote","instructions":"Far away.","computer":"box-1"}`)
	stored, _ := e.store.Get(ctx(t), "remote")
	if stored.Record.Name != "Remote" || stored.Record.Instructions != "Far away." {
		t.Fatalf("stored %+v", stored.Record)
	}
	if exists(filepath.Join(b.Record.Workspace, "AGENTS.md")) {
		t.Fatal("an AGENTS.md was written on this host for a bot on a computer")
	}
	e.edit(t, soft, "remote", `{"description":"Edited."}`)
	if r := e.read(t, soft, "remote").Record; r.Description != "Edited." || r.Name != "Remote" {
		t.Fatalf("read %+v", r)
	}
}

func TestStoreWithoutFilesKeepsThePersonaInTheRecord(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withPersonaIn(bot.PersonaAuto))
	b := e.make(t, soft, "motion", `{"name":"Motion","instructions":"Inside."}`)
	stored, _ := e.store.Get(ctx(t), "motion")
	if stored.Record.Name != "Motion" || stored.Record.Instructions != "Inside." {
		t.Fatalf("stored %+v", stored.Record)
	}
	if exists(filepath.Join(b.Record.Workspace, "AGENTS.md")) {
		t.Fatal("AGENTS.md written for a store that keeps no files")
	}
}

func TestInstructionsInBodyMayHoldHeadings(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withOptions(bot.Options{InstructionsIn: "body"}))
	b := e.make(t, soft, "motion", "{\"name\":\"Motion\",\"instructions\":\"# Role\\n\\n## Steps\\nDo it.\"}")
	if got := e.read(t, soft, "motion").Record.Instructions; got != "# Role\n\n## Steps\nDo it." {
		t.Fatalf("instructions %q", got)
	}
	a := readFile(t, filepath.Join(b.Record.Workspace, "AGENTS.md"))
	if strings.Contains(a, "## Instructions") {
		t.Fatalf("body mode wrote a section:\n%s", a)
	}
}

func TestResolveAnswersTimesAndETag(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.make(t, soft, "motion", `{"name":"M"}`)
	m, err := e.svc.Resolve(ctx(t), soft, "motion")
	if err != nil {
		t.Fatal(err)
	}
	if m.ETag != b.ETag || !m.CreatedAt.Equal(b.Record.CreatedAt) || !m.UpdatedAt.Equal(b.Record.UpdatedAt) {
		t.Fatalf("resolve %+v, bot %+v", m, b)
	}
	_, err = e.svc.Resolve(ctx(t), soft, "nosuch")
	wantCode(t, err, errcode.NotFound, "bot://nosuch")
}

func TestEditLeavesWhatItDoesNotName(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	before := e.make(t, soft, "motion", `{"name":"Motion","labels":["ci"],"description":"D","color":"teal","instructions":"I"}`)
	after := e.edit(t, soft, "motion", `{"provider":"claude","model":"claude-sonnet-5"}`)
	want := before.Record
	want.Provider, want.Model, want.UpdatedAt = "claude", "claude-sonnet-5", after.Record.UpdatedAt
	if !after.Record.Equal(want) {
		t.Fatalf("edit\n got %+v\nwant %+v", after.Record, want)
	}
	if after.ETag == before.ETag {
		t.Fatal("the etag did not change")
	}
}

func TestEditNullClearsAnOptionalField(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.make(t, soft, "motion", `{"name":"Motion","labels":["ci"],"description":"D","provider":"claude"}`)
	r := e.edit(t, soft, "motion", `{"labels":null,"description":null,"provider":null}`).Record
	if r.Labels != nil || r.Description != "" || r.Provider != "" {
		t.Fatalf("not cleared: %+v", r)
	}
	if r := e.read(t, soft, "motion").Record; r.Description != "" {
		t.Fatalf("description read back %q", r.Description)
	}
}

func TestEditRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.make(t, soft, "motion", `{"name":"M"}`)
	ws := filepath.Join(e.root, "motion")
	cases := []struct {
		name, body string
		code       errcode.Code
		names      []string
	}{
		{"ClearName", `{"name":null}`, errcode.Invalid, []string{"name"}},
		{"MoveOwner", `{"owner":"team:backend"}`, errcode.Invalid, []string{"owner"}},
		{"MoveWorkspace", `{"workspace":"` + filepath.Join(e.root, "elsewhere") + `"}`, errcode.Invalid, []string{"workspace"}},
		{"AnotherID", `{"id":"other"}`, errcode.Invalid, []string{`"other"`}},
		{"UnknownKey", `{"chat":"x"}`, errcode.Invalid, []string{`"chat"`}},
		{"MissingTemplate", `{"template":"gone"}`, errcode.Invalid, []string{`"gone"`}},
		{"Heading", "{\"instructions\":\"## Two\"}", errcode.Invalid, []string{"## Two"}},
		{"BadColour", `{"color":"#fff"}`, errcode.Invalid, []string{`"#fff"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.svc.Edit(ctx(t), soft, "motion", []byte(tc.body), "")
			wantCode(t, err, tc.code, tc.names...)
		})
	}
	// Naming the owner and folder it already has is no move.
	e.edit(t, soft, "motion", `{"owner":"user:soft","workspace":"`+ws+`"}`)
	_, err := e.svc.Edit(ctx(t), soft, "nosuch", []byte(`{}`), "")
	wantCode(t, err, errcode.NotFound, "bot://nosuch")
}

func TestEditWithStaleETagIsConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.make(t, soft, "motion", `{"name":"M"}`)
	if _, err := e.svc.Edit(ctx(t), soft, "motion", []byte(`{"color":"blue"}`), b.ETag); err != nil {
		t.Fatal(err)
	}
	_, err := e.svc.Edit(ctx(t), soft, "motion", []byte(`{"color":"green"}`), b.ETag)
	wantCode(t, err, errcode.Conflict, "bot://motion")
	if c := e.read(t, soft, "motion").Record.Color; c != "blue" {
		t.Fatalf("colour %q", c)
	}
}

func TestEditPassesWhenTheBotsTemplateWasDeleted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tpl := filepath.Join(e.configDir, "templates", "short.md")
	writeFile(t, tpl, "---\ntitle: Short\n---\nYou are {{name}}.\n")
	e.make(t, soft, "motion", `{"name":"Motion","template":"short"}`)
	if err := os.Remove(tpl); err != nil {
		t.Fatal(err)
	}
	if r := e.edit(t, soft, "motion", `{"color":"blue"}`).Record; r.Template != "short" {
		t.Fatalf("template %q, want the name kept", r.Template)
	}
}

func TestDeleteLeavesTheWorkFolderAndItsAgentsMD(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.make(t, soft, "motion", `{"name":"M"}`)
	if err := e.svc.Delete(ctx(t), soft, "motion", ""); err != nil {
		t.Fatal(err)
	}
	if !exists(filepath.Join(b.Record.Workspace, "AGENTS.md")) {
		t.Fatal("the delete removed AGENTS.md")
	}
	_, err := e.svc.Read(ctx(t), soft, "motion")
	wantCode(t, err, errcode.NotFound)
	wantCode(t, e.svc.Delete(ctx(t), soft, "motion", ""), errcode.NotFound)
}

func TestDeleteWithStaleETagIsConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.make(t, soft, "motion", `{"name":"M"}`)
	e.edit(t, soft, "motion", `{"color":"blue"}`)
	wantCode(t, e.svc.Delete(ctx(t), soft, "motion", b.ETag), errcode.Conflict)
}

// TestWhoMayDoWhat is the spec's table, row by row.
func TestWhoMayDoWhat(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.make(t, soft, "own", `{"name":"Own"}`)
	e.make(t, soft, "team", `{"name":"Team","owner":"team:backend"}`)
	e.make(t, soft, "project", `{"name":"Project","owner":"project:shop:website"}`)
	e.make(t, root, "host", `{"name":"Host"}`)
	type can struct{ read, edit bool }
	rows := []struct {
		who  string
		p    access.Principal
		bots map[string]can
	}{
		{"owner", soft, map[string]can{"own": {true, true}, "team": {true, true}, "project": {true, true}, "host": {}}},
		{"team member", mate, map[string]can{"own": {}, "team": {true, true}, "project": {}, "host": {}}},
		{"bot:get", viewer, map[string]can{"own": {true, false}, "team": {true, false}, "project": {true, false}, "host": {true, false}}},
		{"bot:list", lister, map[string]can{"own": {true, false}, "team": {true, false}, "project": {true, false}, "host": {true, false}}},
		{"bot:put", maker, map[string]can{"own": {}, "team": {}, "project": {}, "host": {}}},
		{"nobody", nobody, map[string]can{"own": {}, "team": {}, "project": {}, "host": {}}},
		{"*:*", admin, map[string]can{"own": {true, true}, "team": {true, true}, "project": {true, true}, "host": {true, true}}},
		{"root", root, map[string]can{"own": {true, true}, "team": {true, true}, "project": {true, true}, "host": {true, true}}},
	}
	for _, row := range rows {
		t.Run(row.who, func(t *testing.T) {
			var listed []string
			list, err := e.svc.List(ctx(t), row.p)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range list {
				listed = append(listed, b.Record.ID)
			}
			shared, err := e.svc.ListShared(ctx(t), row.p)
			if err != nil {
				t.Fatal(err)
			}
			var sharedIDs []string
			for _, e := range shared {
				sharedIDs = append(sharedIDs, e.Record.ID)
			}
			ids, err := e.svc.ListIDs(ctx(t), row.p)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(sharedIDs, listed) || !slices.Equal(ids, listed) {
				t.Errorf("ListShared %v and ListIDs %v, List %v", sharedIDs, ids, listed)
			}
			var readable []string
			for _, id := range []string{"host", "own", "project", "team"} {
				want := row.bots[id]
				_, err := e.svc.Read(ctx(t), row.p, id)
				if (err == nil) != want.read {
					t.Errorf("read %s: %v, want allowed=%v", id, err, want.read)
				}
				if err != nil {
					wantCode(t, err, errcode.PermissionDenied, "bot://"+id)
				} else {
					readable = append(readable, id)
				}
				_, err = e.svc.Edit(ctx(t), row.p, id, []byte(`{}`), "")
				if (err == nil) != want.edit {
					t.Errorf("edit %s: %v, want allowed=%v", id, err, want.edit)
				}
			}
			if !slices.Equal(listed, readable) {
				t.Errorf("listed %v, but may read %v", listed, readable)
			}
		})
	}
}

func TestDeleteByWhomTheTableAllows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, id := range []string{"a", "b", "c", "d"} {
		e.make(t, soft, id, `{"name":"M","owner":"team:backend"}`)
	}
	for _, p := range []access.Principal{viewer, lister, maker, nobody} {
		wantCode(t, e.svc.Delete(ctx(t), p, "a", ""), errcode.PermissionDenied, "bot://a")
	}
	for id, p := range map[string]access.Principal{"a": soft, "b": mate, "c": admin, "d": root} {
		if err := e.svc.Delete(ctx(t), p, id, ""); err != nil {
			t.Errorf("delete %s: %v", id, err)
		}
	}
}

func TestRootUnderTheConfigFolderFallsBackToTheDefault(t *testing.T) {
	t.Setenv("HOME", t.TempDir()) // the default root is ~/.bots: never the user's own
	base := t.TempDir()
	cfg := filepath.Join(base, "config")
	for _, r := range []string{cfg, filepath.Join(cfg, "bots")} {
		e := newEnv(t, withConfigDir(cfg), withOptions(bot.Options{Root: r}))
		if e.root != bot.DefaultRoot() {
			t.Errorf("root %q under the config folder became %q, want the default %q", r, e.root, bot.DefaultRoot())
		}
	}
}

func TestFiftyMakesOfOneSlugLetExactlyOneWin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.svc.Make(ctx(t), soft, "motion", []byte(fmt.Sprintf(`{"name":"Maker %d"}`, i)))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	won := 0
	for err := range errs {
		if err == nil {
			won++
		} else if errcode.Of(err) != errcode.AlreadyExists {
			t.Errorf("losing make: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d makes won", won)
	}
}

func TestFiftyEditsWithOneETagLetExactlyOneWin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.make(t, soft, "motion", `{"name":"M"}`)
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.svc.Edit(ctx(t), soft, "motion", []byte(fmt.Sprintf(`{"description":"edit %d"}`, i)), b.ETag)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	won := 0
	for err := range errs {
		if err == nil {
			won++
		} else if errcode.Of(err) != errcode.Conflict {
			t.Errorf("losing edit: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d edits won", won)
	}
}

func TestReadOfAMissingBotIsNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.svc.Read(ctx(t), root, "nosuch")
	wantCode(t, err, errcode.NotFound, "bot://nosuch")
	_, err = e.svc.Read(ctx(t), root, "Bad Slug")
	wantCode(t, err, errcode.Invalid, `"Bad Slug"`)
}

var _ = memrecord.New

func TestTwoMakesRacingForOneFolderExactlyOneWins(t *testing.T) {
	t.Parallel()
	for round := range 20 {
		e := newEnv(t)
		dir := filepath.Join(e.root, "shared")
		errs := make(chan error, 2)
		for _, id := range []string{"left", "right"} {
			go func() {
				_, err := e.svc.Make(ctx(t), soft, id, []byte(`{"name":"N","workspace":"`+dir+`"}`))
				errs <- err
			}()
		}
		won := 0
		for range 2 {
			if err := <-errs; err == nil {
				won++
			} else if errcode.Of(err) != errcode.Invalid || !strings.Contains(err.Error(), "taken") {
				t.Fatalf("round %d: the losing make: %v", round, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d makes won the folder", round, won)
		}
	}
}

func TestADeletedBotGivesUpItsFolderButNotItsSlug(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.make(t, soft, "motion", `{"name":"M"}`)
	if err := e.svc.Delete(ctx(t), soft, "motion", ""); err != nil {
		t.Fatal(err)
	}
	e.make(t, soft, "heir", `{"name":"H","workspace":"`+filepath.Join(e.root, "motion")+`"}`)
	_, err := e.svc.Make(ctx(t), soft, "motion", []byte(`{"name":"M","workspace":"`+filepath.Join(e.root, "elsewhere")+`"}`))
	wantCode(t, err, errcode.AlreadyExists, "motion")
}

func TestAnEditThatBringsABotToThisHostClaimsItsFolder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := filepath.Join(e.root, "wanted")
	e.make(t, soft, "flip", `{"name":"F","computer":"box1","workspace":"`+dir+`"}`)
	// On a computer, the bot claims no folder here.
	e.make(t, soft, "first", `{"name":"F","workspace":"`+filepath.Join(dir, "inner")+`"}`)
	_, err := e.svc.Edit(ctx(t), soft, "flip", []byte(`{"computer":null}`), "")
	wantCode(t, err, errcode.Invalid, "taken", "first")
	e.make(t, soft, "flop", `{"name":"F","computer":"box1","workspace":"`+filepath.Join(e.root, "free")+`"}`)
	e.edit(t, soft, "flop", `{"computer":null}`)
	_, err = e.svc.Make(ctx(t), soft, "late", []byte(`{"name":"L","workspace":"`+filepath.Join(e.root, "free")+`"}`))
	wantCode(t, err, errcode.Invalid, "flop")
}

// TestListSharedAnswersTheStoresEntriesWithoutReadingPersonas: the cheap
// listing answers each bot as the store holds it - a bot whose persona
// lives in AGENTS.md with no name, which a read gives as the file holds it
// now - and an entry it handed out keeps its values through a later edit,
// which the next listing shows.
func TestListSharedAnswersTheStoresEntriesWithoutReadingPersonas(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in       bot.PersonaIn
		wantName string
	}{{bot.PersonaInFiles, ""}, {bot.PersonaInRecord, "Own"}} {
		e := newEnv(t, withPersonaIn(c.in))
		e.make(t, soft, "own", `{"name":"Own","model":"m1"}`)
		before, err := e.svc.ListShared(ctx(t), soft)
		if err != nil || len(before) != 1 {
			t.Fatalf("ListShared: %v, %v", before, err)
		}
		if got := before[0].Record.Name; got != c.wantName {
			t.Errorf("persona in %v: listed name %q, want %q", c.in, got, c.wantName)
		}
		e.edit(t, soft, "own", `{"name":"Renamed","model":"m2"}`)
		if got := before[0].Record.Model; got != "m1" {
			t.Errorf("the entry listed before the edit now says model %q", got)
		}
		after, err := e.svc.ListShared(ctx(t), soft)
		if err != nil || len(after) != 1 || after[0].Record.Model != "m2" || after[0].ETag == before[0].ETag {
			t.Fatalf("ListShared after the edit: %+v, %v", after, err)
		}
		if got := e.read(t, soft, "own").Record.Name; got != "Renamed" {
			t.Errorf("read name %q after the edit, want Renamed", got)
		}
		if list, err := e.svc.ListShared(ctx(t), mate); err != nil || len(list) != 0 {
			t.Errorf("ListShared as someone who may read nothing: %v, %v", list, err)
		}
	}
}
