package persona

import (
	"errors"
	"strings"
	"testing"

	"github.com/agenthost/bots/internal/frontmatter"
)

// specExample is the example AGENTS.md of spec/BOTS.md, "The persona".
const specExample = "---\n" +
	"name: Motion\n" +
	"description: Reads pull requests and says what would break.\n" +
	"---\n" +
	"## Instructions\n" +
	"You review pull requests. Say what would break, in one paragraph.\n" +
	"## How you work\n" +
	"This file is your rules. You are Motion, a persistent bot assistant on `ahpd`, and this folder is yours.\n"

func mustRead(t *testing.T, src string, m Mode) Parts {
	t.Helper()
	p, err := Read([]byte(src), m)
	if err != nil {
		t.Fatalf("Read(%q): %v", src, err)
	}
	return p
}

func mustEdit(t *testing.T, src string, p Parts, m Mode) string {
	t.Helper()
	out, err := Edit([]byte(src), p, m)
	if err != nil {
		t.Fatalf("Edit(%q, %#v): %v", src, p, err)
	}
	got := mustRead(t, string(out), m)
	if want := Normalize(p); got != want {
		t.Fatalf("Read of the edit = %#v, want %#v\n%s", got, want, out)
	}
	return string(out)
}

func TestReadAnswersTheSpecExample(t *testing.T) {
	t.Parallel()
	got := mustRead(t, specExample, InSection)
	want := Parts{
		Name:         "Motion",
		Description:  "Reads pull requests and says what would break.",
		Instructions: "You review pull requests. Say what would break, in one paragraph.",
	}
	if got != want {
		t.Fatalf("Read = %#v, want %#v", got, want)
	}
}

func TestEditKeepsOtherKeysCommentsAndSectionsByteForByte(t *testing.T) {
	t.Parallel()
	src := "---\n" +
		"# who this bot is\n" +
		"name: Motion # shown in the list\n" +
		"tools: ['read', 'search']   # the bot's own\n" +
		"description: |\n" +
		"  Reads pull requests\n" +
		"  and says what would break.\n" +
		"\n" +
		"# the bot added this:\n" +
		"handoffs:\n" +
		"  - label: Fix\n" +
		"    agent: fixer\n" +
		"---\n" +
		"Some text the bot wrote before the section.\n" +
		"## Instructions\n" +
		"\n" +
		"Old instructions.\n" +
		"\n" +
		"## How you work\n" +
		"Keep this.\n" +
		"### Notes\n" +
		"And this.\n"
	out := mustEdit(t, src, Parts{"Motion 2", "Reads diffs.", "New instructions.\nTwo lines."}, InSection)
	want := "---\n" +
		"# who this bot is\n" +
		"name: Motion 2 # shown in the list\n" +
		"tools: ['read', 'search']   # the bot's own\n" +
		"description: Reads diffs.\n" +
		"\n" +
		"# the bot added this:\n" +
		"handoffs:\n" +
		"  - label: Fix\n" +
		"    agent: fixer\n" +
		"---\n" +
		"Some text the bot wrote before the section.\n" +
		"## Instructions\n" +
		"\n" +
		"New instructions.\n" +
		"Two lines.\n" +
		"\n" +
		"## How you work\n" +
		"Keep this.\n" +
		"### Notes\n" +
		"And this.\n"
	if out != want {
		t.Fatalf("Edit =\n%s\nwant\n%s", out, want)
	}
}

func TestEditLeavesAPartThatAlreadyReadsTheSameByteForByte(t *testing.T) {
	t.Parallel()
	// 'Motion' and the block description read as the parts already: only the
	// instructions change, and the frontmatter keeps its odd spellings.
	src := "---\nname:   'Motion'   # c\ndescription: >-\n  folded\n  text\n---\n## Instructions\nold\n"
	out := mustEdit(t, src, Parts{"Motion", "folded text", "new"}, InSection)
	want := "---\nname:   'Motion'   # c\ndescription: >-\n  folded\n  text\n---\n## Instructions\nnew\n"
	if out != want {
		t.Fatalf("Edit =\n%q\nwant\n%q", out, want)
	}
	same := mustEdit(t, src, Parts{"Motion", "folded text", "\n\nold \n"}, InSection)
	if same != src {
		t.Fatalf("an edit to what the file says changed it:\n%q", same)
	}
}

func TestReadOfMissingPartsIsEmptyAndTheNextEditWritesThemBack(t *testing.T) {
	t.Parallel()
	src := "A bot that removed its frontmatter and its Instructions section.\n## Notes\nmine\n"
	if got := mustRead(t, src, InSection); got != (Parts{}) {
		t.Fatalf("Read = %#v, want empty parts", got)
	}
	out := mustEdit(t, src, Parts{"Motion", "", "Review."}, InSection)
	want := "---\nname: Motion\n---\n" + src + "## Instructions\nReview.\n"
	if out != want {
		t.Fatalf("Edit =\n%q\nwant\n%q", out, want)
	}
}

func TestEditAddsAMissingKeyBesideTheOtherAndDescriptionOnlyWhenNotEmpty(t *testing.T) {
	t.Parallel()
	src := "---\ntools: [a]\ndescription: d\n---\nbody\n"
	out := mustEdit(t, src, Parts{Name: "Motion", Description: "d"}, InSection)
	if want := "---\ntools: [a]\nname: Motion\ndescription: d\n---\nbody\n"; out != want {
		t.Fatalf("name: Edit =\n%q\nwant\n%q", out, want)
	}
	src = "---\nname: Motion\ntools: [a]\n---\n"
	if out := mustEdit(t, src, Parts{Name: "Motion"}, InSection); out != src {
		t.Fatalf("an empty description was added: %q", out)
	}
	out = mustEdit(t, src, Parts{Name: "Motion", Description: "new"}, InSection)
	if want := "---\nname: Motion\ndescription: new\ntools: [a]\n---\n"; out != want {
		t.Fatalf("description: Edit =\n%q\nwant\n%q", out, want)
	}
}

func TestEditReplacesAnEmptiedSectionAndAnEmptyOne(t *testing.T) {
	t.Parallel()
	for _, src := range []string{
		"## Instructions\n## Next\n",
		"## Instructions\n\n\n## Next\n",
		"## Instructions",
		"## instructions   \n  \n",
	} {
		out := mustEdit(t, src, Parts{Instructions: "Do it."}, InSection)
		if strings.Count(out, "Do it.") != 1 || strings.Count(strings.ToLower(out), "## instructions") != 1 {
			t.Errorf("Edit(%q) = %q", src, out)
		}
		out = mustEdit(t, out, Parts{}, InSection)
		if strings.Contains(out, "Do it.") {
			t.Errorf("emptying the instructions left them: %q", out)
		}
	}
}

func TestCheckInstructionsRefusesALineStartingWithHashesNamingIt(t *testing.T) {
	t.Parallel()
	err := CheckInstructions("Review code.\nBe brief.\n## Secret section\nmore", InSection)
	if err == nil {
		t.Fatal("CheckInstructions took a ## line")
	}
	for _, want := range []string{"line 3", `"## Secret section"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %s", err, want)
		}
	}
	if _, err := Edit([]byte(specExample), Parts{Instructions: "a\n### sub"}, InSection); err == nil || !strings.Contains(err.Error(), "### sub") {
		t.Errorf("Edit with a ### line: %v", err)
	}
	// Lines are counted as written: leading blank lines dropped.
	if err := CheckInstructions("\n\n## x", InSection); err == nil || !strings.Contains(err.Error(), "line 1 ") {
		t.Errorf("CheckInstructions after blank lines: %v", err)
	}
	for _, ok := range []string{"# one hash", "  ## indented inside", "text ## not at the start", "   ## an indented first line"} {
		if err := CheckInstructions("first\n"+ok, InSection); err != nil {
			t.Errorf("CheckInstructions(%q): %v", ok, err)
		}
	}
}

func TestCheckInstructionsTakesAnyLineInBodyMode(t *testing.T) {
	t.Parallel()
	if err := CheckInstructions("## Anything\n## Goes", InBody); err != nil {
		t.Fatal(err)
	}
}

func TestInBodyModeRoundTrip(t *testing.T) {
	t.Parallel()
	src := "---\nname: Motion\ntools: [x]\n---\nOld body.\n## With sections\n"
	if got := mustRead(t, src, InBody); got.Instructions != "Old body.\n## With sections" {
		t.Fatalf("Read in body mode = %q", got.Instructions)
	}
	instr := "## Role\nYou review.\n\n## Rules\nBe kind."
	out := mustEdit(t, src, Parts{"Motion", "", instr}, InBody)
	if want := "---\nname: Motion\ntools: [x]\n---\n" + instr + "\n"; out != want {
		t.Fatalf("Edit =\n%q\nwant\n%q", out, want)
	}
	// Instructions that start with --- get an empty frontmatter in front of
	// them rather than reading as one.
	out = mustEdit(t, "", Parts{Instructions: "---\nnot: yaml\n---\nrest"}, InBody)
	if !strings.HasPrefix(out, "---\n---\n---\n") {
		t.Fatalf("Edit = %q", out)
	}
}

func TestEditKeepsCRLFLineEndings(t *testing.T) {
	t.Parallel()
	src := strings.ReplaceAll(specExample, "\n", "\r\n")
	p := mustRead(t, src, InSection)
	if strings.Contains(p.Instructions, "\r") {
		t.Fatalf("instructions read with \\r: %q", p.Instructions)
	}
	out := mustEdit(t, src, Parts{"Motion", "", "Line one.\nLine two."}, InSection)
	if strings.Count(out, "\n") != strings.Count(out, "\r\n") {
		t.Fatalf("the edit mixed line endings: %q", out)
	}
	out = mustEdit(t, "plain\r\n", Parts{"New", "d", "x\ny"}, InSection)
	if want := "---\r\nname: New\r\ndescription: d\r\n---\r\nplain\r\n## Instructions\r\nx\r\ny\r\n"; out != want {
		t.Fatalf("Edit = %q, want %q", out, want)
	}
}

func TestYAMLHostileNamesRoundTrip(t *testing.T) {
	t.Parallel()
	for _, v := range []string{
		"a: b", "key:", "#hash", "a #b", `"quoted"`, "'single'", "it's", "- dash", "? q", "[list]", "{map}",
		"*alias", "&anchor", "!tag", "|", ">", "%", "@", "`", "line one\nline two", "trailing\n", "\ttab",
		" leading", "trailing ", "true", "null", "~", "123", "1.10", "0x1F", "2024-01-01", "y", "---", "...",
		"back\\slash", "\x00nul", "bell\a", "é ü 日本 😀", "\u0085\u2028\ufeff", "crlf\r\n", "",
	} {
		src := specExample
		out := mustEdit(t, src, Parts{Name: v, Description: v, Instructions: "x"}, InSection)
		if !strings.Contains(out, "## How you work\n") {
			t.Errorf("name %q: the rest of the file went: %q", v, out)
		}
		// The file stays a valid frontmatter for other readers too.
		doc, err := frontmatter.Split([]byte(out))
		if err != nil {
			t.Fatalf("name %q: %v", v, err)
		}
		m, err := frontmatter.Decode(doc.Front)
		if err != nil {
			t.Fatalf("name %q: %v", v, err)
		}
		if m["name"] != v && !(v == "" && m["name"] == nil) {
			t.Errorf("name %q decodes as %#v", v, m["name"])
		}
	}
}

func TestEditRefusesANameThatIsNotUTF8(t *testing.T) {
	t.Parallel()
	if _, err := Edit([]byte(specExample), Parts{Name: "a\xffb"}, InSection); err == nil {
		t.Fatal("Edit took a name that is not UTF-8")
	}
}

func TestEditRefusesAFlowMappingFrontmatterItCannotChangeInPlace(t *testing.T) {
	t.Parallel()
	src := "---\n{name: a, tools: [x]}\n---\n"
	if got := mustRead(t, src, InSection); got.Name != "a" {
		t.Fatalf("Read = %#v", got)
	}
	_, err := Edit([]byte(src), Parts{Name: "b"}, InSection)
	if !errors.Is(err, errUneditable) {
		t.Fatalf("Edit = %v, want the uneditable error", err)
	}
	// Its instructions can still change.
	mustEdit(t, src, Parts{Name: "a", Instructions: "ok"}, InSection)
}

func TestReadTakesScalarsAsTextAndRefusesAListName(t *testing.T) {
	t.Parallel()
	got := mustRead(t, "---\nname: 2024\ndescription: true\n---\n", InSection)
	if got.Name != "2024" || got.Description != "true" {
		t.Fatalf("Read = %#v", got)
	}
	if _, err := Read([]byte("---\nname: [a, b]\n---\n"), InSection); err == nil || !strings.Contains(err.Error(), "name is a list") {
		t.Fatalf("Read of a list name: %v", err)
	}
}

func TestReadRefusesAnUnclosedFrontmatterAndAnOversizedDocument(t *testing.T) {
	t.Parallel()
	if _, err := Read([]byte("---\nname: a\n"), InSection); !errors.Is(err, frontmatter.ErrUnclosed) {
		t.Errorf("unclosed: %v", err)
	}
	big := make([]byte, frontmatter.MaxSize+1)
	if _, err := Read(big, InSection); !errors.Is(err, frontmatter.ErrTooLarge) {
		t.Errorf("oversized: %v", err)
	}
}

func TestReadRefusesYAMLAliases(t *testing.T) {
	t.Parallel()
	if _, err := Read([]byte("---\na: &x v\nname: *x\n---\n"), InSection); err == nil {
		t.Fatal("Read took an alias")
	}
}

func TestReadTakesTheFirstInstructionsHeadingOnly(t *testing.T) {
	t.Parallel()
	src := "# Title\n##Instructions is not a heading\n### Instructions is a subheading\n## Instructions\nreal\n## Instructions\nsecond\n"
	if got := mustRead(t, src, InSection).Instructions; got != "real" {
		t.Fatalf("Instructions = %q", got)
	}
}

func TestParseModeTakesSectionAndBodyOnly(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]Mode{"section": InSection, "body": InBody, "": InSection} {
		if m, err := ParseMode(s); err != nil || m != want {
			t.Errorf("ParseMode(%q) = %v, %v", s, m, err)
		}
	}
	if _, err := ParseMode("Body"); err == nil || !strings.Contains(err.Error(), `"Body"`) {
		t.Errorf("ParseMode(Body): %v", err)
	}
	if InBody.String() != "body" || InSection.String() != "section" {
		t.Error("Mode.String does not give the option's words")
	}
}

func TestFillLeavesAnUnknownWordAlone(t *testing.T) {
	t.Parallel()
	got := Fill("{{name}} {{ name }} {{Name}} {{model}} {{description}}{{instructions}} {{", Parts{"N", "D", "I"})
	if want := "N {{ name }} {{Name}} {{model}} DI {{"; got != want {
		t.Fatalf("Fill = %q, want %q", got, want)
	}
}

func TestFillNeverFillsAPartsOwnText(t *testing.T) {
	t.Parallel()
	got := Fill("{{name}}|{{instructions}}", Parts{Name: "{{instructions}}", Instructions: "{{name}}"})
	if want := "{{instructions}}|{{name}}"; got != want {
		t.Fatalf("Fill = %q, want %q", got, want)
	}
}

func TestMakeFromTheDefaultTemplateFollowsTheSpecExample(t *testing.T) {
	t.Parallel()
	p := Parts{"Motion", "Reads pull requests and says what would break.", "You review pull requests. Say what would break, in one paragraph."}
	out, err := Make(DefaultTemplate, p, InSection)
	if err != nil {
		t.Fatal(err)
	}
	want := "---\nname: Motion\ndescription: Reads pull requests and says what would break.\n---\n" +
		"## Instructions\nYou review pull requests. Say what would break, in one paragraph.\n## How you work\n" +
		"This file is your rules. You are Motion, a persistent bot assistant on this host, and this folder is yours. Answer as Motion,"
	if !strings.HasPrefix(string(out), want) {
		t.Fatalf("Make =\n%s", out)
	}
	if strings.Contains(string(out), "{{") {
		t.Fatalf("a word was left unfilled:\n%s", out)
	}
}

func TestMakeWritesAHostileNameSafelyIntoTheTemplatesFrontmatter(t *testing.T) {
	t.Parallel()
	p := Parts{"a: b # c\nd", "", "x"}
	out, err := Make(DefaultTemplate, p, InSection)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, string(out), InSection); got != p {
		t.Fatalf("Read of the made file = %#v\n%s", got, out)
	}
	if strings.Contains(string(out), "description: \n") {
		t.Fatalf("an empty description left a trailing space:\n%q", out)
	}
}

func TestMakeInBodyModeTakesOnlyTheTemplatesFrontmatter(t *testing.T) {
	t.Parallel()
	out, err := Make(DefaultTemplate, Parts{"Motion", "d", "## Role\nReview."}, InBody)
	if err != nil {
		t.Fatal(err)
	}
	if want := "---\nname: Motion\ndescription: d\n---\n## Role\nReview.\n"; string(out) != want {
		t.Fatalf("Make =\n%q\nwant\n%q", out, want)
	}
}

func TestMakeAppendsTheSectionATemplateLacks(t *testing.T) {
	t.Parallel()
	out, err := Make("You are {{name}}. {{instructions}}\n", Parts{"Motion", "", "Review."}, InSection)
	if err != nil {
		t.Fatal(err)
	}
	if want := "---\nname: Motion\n---\nYou are Motion. Review.\n## Instructions\nReview.\n"; string(out) != want {
		t.Fatalf("Make =\n%q\nwant\n%q", out, want)
	}
}

func TestEditFindsKeysAfterACommentInACRLFFrontmatter(t *testing.T) {
	t.Parallel()
	src := "---\r\n# a comment\r\nname: Old\r\ntools: [a]\r\n---\r\n"
	out := mustEdit(t, src, Parts{Name: "New", Description: "d"}, InSection)
	if want := "---\r\n# a comment\r\nname: New\r\ndescription: d\r\ntools: [a]\r\n---\r\n"; out != want {
		t.Fatalf("Edit = %q, want %q", out, want)
	}
}

func TestEditOfALongValueIsQuick(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("---\ndescription: |\n")
	for range 5000 {
		b.WriteString("  a line of a long description\n")
	}
	b.WriteString("# kept\nother: 1\n---\n")
	out := mustEdit(t, b.String(), Parts{Description: "short"}, InSection)
	if want := "---\ndescription: short\n# kept\nother: 1\n---\n"; out != want {
		t.Fatalf("Edit = %q", out)
	}
}

func TestReadKeepsTheIndentationOfTheFirstLine(t *testing.T) {
	t.Parallel()
	src := "## Instructions\n\n    indented code\n    more\n\n## Next\n"
	if got := mustRead(t, src, InSection).Instructions; got != "    indented code\n    more" {
		t.Fatalf("Instructions = %q", got)
	}
	// " ##" does not end the section, and reads back as written.
	out := mustEdit(t, "## Instructions\n ##\n", Parts{Instructions: " ##"}, InSection)
	if out != "## Instructions\n ##\n" {
		t.Fatalf("Edit = %q", out)
	}
}
