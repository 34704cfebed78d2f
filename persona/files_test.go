package persona

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/bots/internal/atomicfile"
	"github.com/agenthost/bots/internal/frontmatter"
)

func newFiles(t *testing.T, m Mode) (*Files, string) {
	t.Helper()
	cfg := t.TempDir()
	f, err := New(Config{ConfigDir: cfg, Mode: m})
	if err != nil {
		t.Fatal(err)
	}
	return f, cfg
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeText(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

var motion = Parts{"Motion", "Reads pull requests and says what would break.", "You review pull requests."}

func TestNewRefusesAnEmptyConfigDirAndAnUnknownMode(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{}); err == nil {
		t.Error("New took no configuration folder")
	}
	if _, err := New(Config{ConfigDir: t.TempDir(), Mode: Mode(7)}); err == nil {
		t.Error("New took an unknown mode")
	}
}

func TestLoadWritesTheDefaultTemplateWhenAbsent(t *testing.T) {
	t.Parallel()
	f, cfg := newFiles(t, InSection)
	if err := f.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(cfg, "templates", "bots", "AGENTS.md")
	if got := readText(t, path); got != DefaultTemplate {
		t.Fatalf("default template =\n%s", got)
	}
	if text, err := f.Template(t.Context(), ""); err != nil || text != DefaultTemplate {
		t.Fatalf("Template(\"\") = %q, %v", text, err)
	}
}

func TestLoadNeverWritesOverAPersonsEditOfTheDefaultTemplate(t *testing.T) {
	t.Parallel()
	f, cfg := newFiles(t, InSection)
	path := filepath.Join(cfg, "templates", "bots", "AGENTS.md")
	edited := "---\nname: {{name}}\n---\n## Instructions\n{{instructions}}\n## House rules\nBe terse.\n"
	writeText(t, path, edited)
	if err := f.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := readText(t, path); got != edited {
		t.Fatalf("Load wrote over the edited template:\n%s", got)
	}
	dir := t.TempDir()
	if err := f.Write(t.Context(), dir, motion, ""); err != nil {
		t.Fatal(err)
	}
	if got := readText(t, filepath.Join(dir, "AGENTS.md")); !strings.Contains(got, "## House rules\nBe terse.\n") {
		t.Fatalf("a new bot did not get the edited default:\n%s", got)
	}
}

func TestTemplateWithoutTheDefaultFileIsTheShippedText(t *testing.T) {
	t.Parallel()
	f, _ := newFiles(t, InSection)
	if text, err := f.Template(t.Context(), ""); err != nil || text != DefaultTemplate {
		t.Fatalf("Template(\"\") = %q, %v", text, err)
	}
}

func TestANamedTemplateGivesItsBodyAndItsTitle(t *testing.T) {
	t.Parallel()
	f, cfg := newFiles(t, InSection)
	writeText(t, filepath.Join(cfg, "templates", "short.md"), "---\ntitle: Short\n---\nYou are {{name}}. {{instructions}}\n")
	writeText(t, filepath.Join(cfg, "templates", "plain.md"), "No frontmatter.\n")
	writeText(t, filepath.Join(cfg, "templates", "Bad Name.md"), "---\ntitle: x\n---\n")
	writeText(t, filepath.Join(cfg, "templates", "notes.txt"), "not a template")
	text, err := f.Template(t.Context(), "short")
	if err != nil || text != "You are {{name}}. {{instructions}}\n" {
		t.Fatalf("Template(short) = %q, %v", text, err)
	}
	list, err := f.Templates(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []TemplateInfo{{"plain", ""}, {"short", "Short"}}
	if fmt.Sprint(list) != fmt.Sprint(want) {
		t.Fatalf("Templates = %v, want %v", list, want)
	}
	// Names alone, without reading: a file whose frontmatter does not
	// parse is named, and left out of Templates.
	writeText(t, filepath.Join(cfg, "templates", "broken.md"), "---\ntitle: [\n---\n")
	if names, err := f.TemplateNames(t.Context()); err != nil || fmt.Sprint(names) != "[broken plain short]" {
		t.Fatalf("TemplateNames = %v, %v; want broken, plain and short", names, err)
	}
	if list, _ := f.Templates(t.Context()); fmt.Sprint(list) != fmt.Sprint(want) {
		t.Fatalf("Templates with a broken one = %v, want %v", list, want)
	}
	dir := t.TempDir()
	if err := f.Write(t.Context(), dir, motion, "short"); err != nil {
		t.Fatal(err)
	}
	got := readText(t, filepath.Join(dir, "AGENTS.md"))
	if !strings.Contains(got, "You are Motion. You review pull requests.\n") || strings.Contains(got, "title") {
		t.Fatalf("AGENTS.md from short =\n%s", got)
	}
	if p, err := f.Read(t.Context(), dir); err != nil || p != motion {
		t.Fatalf("Read = %#v, %v", p, err)
	}
}

func TestAMissingNamedTemplateIsErrNoTemplateNamingIt(t *testing.T) {
	t.Parallel()
	f, _ := newFiles(t, InSection)
	_, err := f.Template(t.Context(), "gone")
	if !errors.Is(err, ErrNoTemplate) || !strings.Contains(err.Error(), `"gone"`) {
		t.Fatalf("Template(gone) = %v", err)
	}
}

func TestABotWhoseTemplateWasRemovedGetsTheDefault(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	f, err := New(Config{ConfigDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	want, err := Make(DefaultTemplate, motion, InSection)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := f.Write(t.Context(), dir, motion, "gone"); err != nil {
		t.Fatal(err)
	}
	if got := readText(t, filepath.Join(dir, "AGENTS.md")); got != string(want) {
		t.Fatalf("AGENTS.md =\n%s", got)
	}
	dir = t.TempDir()
	if wrote, err := f.Ensure(t.Context(), dir, motion, "gone"); err != nil || !wrote {
		t.Fatalf("Ensure = %v, %v", wrote, err)
	}
	if got := readText(t, filepath.Join(dir, "AGENTS.md")); got != string(want) {
		t.Fatalf("AGENTS.md =\n%s", got)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "template=gone") {
		t.Fatalf("the missing template was not reported: %s", logs.String())
	}
}

func TestWriteRefusesATemplateNameThatIsNotASlug(t *testing.T) {
	t.Parallel()
	f, _ := newFiles(t, InSection)
	dir := t.TempDir()
	if err := f.Write(t.Context(), dir, motion, "../x"); err == nil || !strings.Contains(err.Error(), "not a template name") {
		t.Fatalf("Write = %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "AGENTS.md")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("a refused write left an AGENTS.md")
	}
}

func TestATemplateNameThatIsNotASlugIsRefused(t *testing.T) {
	t.Parallel()
	f, cfg := newFiles(t, InSection)
	writeText(t, filepath.Join(cfg, "secret.md"), "---\ntitle: x\n---\nsecret\n")
	for _, name := range []string{"../secret", "a/b", "Short", "-x", "bots/AGENTS", "x.md", strings.Repeat("a", 41)} {
		_, err := f.Template(t.Context(), name)
		if err == nil || errors.Is(err, ErrNoTemplate) || !strings.Contains(err.Error(), "not a template name") {
			t.Errorf("Template(%q) = %v", name, err)
		}
	}
}

func TestATemplateLargerThanMaxSizeIsRefused(t *testing.T) {
	t.Parallel()
	f, cfg := newFiles(t, InSection)
	writeText(t, filepath.Join(cfg, "templates", "huge.md"), strings.Repeat("x", frontmatter.MaxSize+1))
	if _, err := f.Template(t.Context(), "huge"); !errors.Is(err, frontmatter.ErrTooLarge) {
		t.Fatalf("Template(huge) = %v", err)
	}
}

func TestTemplatesLeavesOutABrokenTemplateAndReportsIt(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	cfg := t.TempDir()
	f, err := New(Config{ConfigDir: cfg, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	writeText(t, filepath.Join(cfg, "templates", "broken.md"), "---\ntitle: [unclosed\n")
	writeText(t, filepath.Join(cfg, "templates", "fine.md"), "---\ntitle: Fine\n---\n{{name}}\n")
	writeText(t, filepath.Join(cfg, "templates", "odd.md"), "---\ntitle: [a list]\n---\n{{name}}\n")
	writeText(t, filepath.Join(cfg, "templates", "bots", "AGENTS.md"), DefaultTemplate)
	list, err := f.Templates(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if want := []TemplateInfo{{"fine", "Fine"}, {"odd", ""}}; fmt.Sprint(list) != fmt.Sprint(want) {
		t.Fatalf("Templates = %v, want %v", list, want)
	}
	if text, err := f.Template(t.Context(), "odd"); err != nil || text != "{{name}}\n" {
		t.Fatalf("a template with an odd title: %q, %v", text, err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "broken.md") || !strings.Contains(logs.String(), "odd.md") {
		t.Fatalf("the broken template was not reported: %s", logs.String())
	}
}

func TestWriteMakesAGENTSFromTheTemplateAndCLAUDEBesideIt(t *testing.T) {
	t.Parallel()
	f, _ := newFiles(t, InSection)
	dir := filepath.Join(t.TempDir(), "motion") // made by the write
	if err := f.Write(t.Context(), dir, motion, ""); err != nil {
		t.Fatal(err)
	}
	want, err := Make(DefaultTemplate, motion, InSection)
	if err != nil {
		t.Fatal(err)
	}
	if got := readText(t, filepath.Join(dir, "AGENTS.md")); got != string(want) {
		t.Fatalf("AGENTS.md =\n%s", got)
	}
	if got := readText(t, filepath.Join(dir, "CLAUDE.md")); got != "@AGENTS.md\n" {
		t.Fatalf("CLAUDE.md = %q", got)
	}
	if p, err := f.Read(t.Context(), dir); err != nil || p != motion {
		t.Fatalf("Read = %#v, %v", p, err)
	}
	assertNoTempFiles(t, dir)
}

func TestWriteToAFolderWithAnAGENTSKeepsItsTextAndChangesOnlyOurParts(t *testing.T) {
	t.Parallel()
	f, _ := newFiles(t, InSection)
	dir := t.TempDir()
	mine := "---\nname: Mine\nmodel: gpt-5 # the person's\n---\n# My own notes\n\nKeep all of this.\n"
	writeText(t, filepath.Join(dir, "AGENTS.md"), mine)
	if err := os.Chmod(filepath.Join(dir, "AGENTS.md"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := f.Write(t.Context(), dir, motion, "no-such-template-is-read"); err != nil {
		t.Fatal(err)
	}
	want := "---\nname: Motion\ndescription: Reads pull requests and says what would break.\nmodel: gpt-5 # the person's\n---\n# My own notes\n\nKeep all of this.\n## Instructions\nYou review pull requests.\n"
	if got := readText(t, filepath.Join(dir, "AGENTS.md")); got != want {
		t.Fatalf("AGENTS.md =\n%q\nwant\n%q", got, want)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "AGENTS.md")); fi.Mode().Perm() != 0o600 {
		t.Errorf("the edit changed the file's mode to %v", fi.Mode().Perm())
	}
}

func TestWriteDoesNotTouchAFileThatAlreadySaysTheParts(t *testing.T) {
	t.Parallel()
	f, _ := newFiles(t, InSection)
	dir := t.TempDir()
	if err := f.Write(t.Context(), dir, motion, ""); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(filepath.Join(dir, "AGENTS.md"))
	if err := f.Write(t.Context(), dir, motion, ""); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(filepath.Join(dir, "AGENTS.md"))
	if !os.SameFile(before, after) {
		t.Fatal("an edit that changes nothing replaced the file")
	}
}

func TestCLAUDEIsWrittenOnceAndNeverOverwritten(t *testing.T) {
	t.Parallel()
	f, _ := newFiles(t, InSection)
	dir := t.TempDir()
	if err := f.Write(t.Context(), dir, motion, ""); err != nil {
		t.Fatal(err)
	}
	claude := filepath.Join(dir, "CLAUDE.md")
	writeText(t, claude, "@AGENTS.md\nAnd my own Claude notes.\n")
	if err := f.Write(t.Context(), dir, Parts{"Other", "", "x"}, ""); err != nil {
		t.Fatal(err)
	}
	if ok, err := f.Ensure(t.Context(), dir, motion, ""); err != nil || ok {
		t.Fatalf("Ensure = %v, %v", ok, err)
	}
	if got := readText(t, claude); got != "@AGENTS.md\nAnd my own Claude notes.\n" {
		t.Fatalf("CLAUDE.md was written over: %q", got)
	}
}

func TestASymlinkedAGENTSIsRefusedAndReplacedNeverWrittenThrough(t *testing.T) {
	t.Parallel()
	f, _ := newFiles(t, InSection)
	dir, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "elsewhere.md")
	writeText(t, target, "---\nname: Elsewhere\n---\n")
	link := filepath.Join(dir, "AGENTS.md")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Read(t.Context(), dir); !errors.Is(err, ErrBadFile) || !strings.Contains(err.Error(), link) || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("Read through a symlink = %v", err)
	}
	if err := f.Write(t.Context(), dir, motion, ""); err != nil {
		t.Fatalf("Write over a symlink = %v", err)
	}
	if fi, err := os.Lstat(link); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("AGENTS.md after the write: %v, %v; want a regular file in place of the link", fi, err)
	}
	if p, err := f.Read(t.Context(), dir); err != nil || p != motion {
		t.Fatalf("Read after the write = %#v, %v", p, err)
	}
	if got := readText(t, target); got != "---\nname: Elsewhere\n---\n" {
		t.Fatalf("the symlink's target changed: %q", got)
	}
	// A dangling one too: nothing is made at its target.
	dir2 := t.TempDir()
	dangling := filepath.Join(outside, "made.md")
	if err := os.Symlink(dangling, filepath.Join(dir2, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	if ok, err := f.Ensure(t.Context(), dir2, motion, ""); err != nil || ok {
		t.Fatalf("Ensure over a dangling symlink = %v, %v", ok, err)
	}
	if err := f.Write(t.Context(), dir2, motion, ""); err != nil {
		t.Fatalf("Write over a dangling symlink = %v", err)
	}
	if _, err := os.Lstat(dangling); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("a file was made through a dangling symlink")
	}
}

func TestASymlinkedCLAUDEIsLeftAlone(t *testing.T) {
	t.Parallel()
	f, _ := newFiles(t, InSection)
	dir := t.TempDir()
	// The common CLAUDE.md -> AGENTS.md link: never written through.
	if err := os.Symlink("AGENTS.md", filepath.Join(dir, "CLAUDE.md")); err != nil {
		t.Fatal(err)
	}
	if err := f.Write(t.Context(), dir, motion, ""); err != nil {
		t.Fatal(err)
	}
	if link, err := os.Readlink(filepath.Join(dir, "CLAUDE.md")); err != nil || link != "AGENTS.md" {
		t.Fatalf("CLAUDE.md link = %q, %v", link, err)
	}
	if p, _ := f.Read(t.Context(), dir); p != motion {
		t.Fatalf("Read = %#v", p)
	}
}

func TestReadOfAFolderWithoutAGENTSIsEmptyParts(t *testing.T) {
	t.Parallel()
	f, _ := newFiles(t, InSection)
	for _, dir := range []string{t.TempDir(), filepath.Join(t.TempDir(), "never-made")} {
		if p, err := f.Read(t.Context(), dir); err != nil || p != (Parts{}) {
			t.Fatalf("Read(%s) = %#v, %v", dir, p, err)
		}
	}
}

func TestAnAGENTSLargerThanMaxSizeIsRefusedAndReplacedByAWrite(t *testing.T) {
	t.Parallel()
	f, _ := newFiles(t, InSection)
	dir := t.TempDir()
	writeText(t, filepath.Join(dir, "AGENTS.md"), strings.Repeat("x", frontmatter.MaxSize+1))
	if _, err := f.Read(t.Context(), dir); !errors.Is(err, frontmatter.ErrTooLarge) || !errors.Is(err, ErrBadFile) {
		t.Fatalf("Read = %v", err)
	}
	if err := f.Write(t.Context(), dir, motion, ""); err != nil {
		t.Fatalf("Write = %v", err)
	}
	if p, err := f.Read(t.Context(), dir); err != nil || p != motion {
		t.Fatalf("Read after the write = %#v, %v", p, err)
	}
}

func TestAnAGENTSWithNoPersonaInItsTextIsRefusedAndKept(t *testing.T) {
	t.Parallel()
	f, _ := newFiles(t, InSection)
	dir := t.TempDir()
	const broken = "---\nname: [unclosed\n---\nThe bot's own words.\n"
	path := filepath.Join(dir, "AGENTS.md")
	writeText(t, path, broken)
	if _, err := f.Read(t.Context(), dir); !errors.Is(err, ErrBadText) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Read = %v", err)
	}
	if err := f.Write(t.Context(), dir, motion, ""); err == nil {
		t.Fatal("Write over a file whose text holds no persona worked")
	}
	if got := readText(t, path); got != broken {
		t.Fatalf("the bot's file was written over: %q", got)
	}
}

func TestEnsureWritesOnlyWhenTheFolderHasNoAGENTS(t *testing.T) {
	t.Parallel()
	f, _ := newFiles(t, InSection)
	dir := t.TempDir()
	wrote, err := f.Ensure(t.Context(), dir, motion, "")
	if err != nil || !wrote {
		t.Fatalf("first Ensure = %v, %v", wrote, err)
	}
	if p, _ := f.Read(t.Context(), dir); p != motion {
		t.Fatalf("Read = %#v", p)
	}
	if got := readText(t, filepath.Join(dir, "CLAUDE.md")); got != "@AGENTS.md\n" {
		t.Fatalf("CLAUDE.md = %q", got)
	}
	// The bot rewrote its own file; the next wake keeps it, even emptied.
	for _, text := range []string{"My own rules now.\n", ""} {
		writeText(t, filepath.Join(dir, "AGENTS.md"), text)
		wrote, err = f.Ensure(t.Context(), dir, Parts{"Other", "", "x"}, "")
		if err != nil || wrote {
			t.Fatalf("Ensure over an existing file = %v, %v", wrote, err)
		}
		if got := readText(t, filepath.Join(dir, "AGENTS.md")); got != text {
			t.Fatalf("Ensure wrote over the file: %q", got)
		}
	}
}

func TestWriteRefusesInstructionsWithAHeadingLine(t *testing.T) {
	t.Parallel()
	f, _ := newFiles(t, InSection)
	dir := t.TempDir()
	err := f.Write(t.Context(), dir, Parts{Name: "a", Instructions: "x\n## y"}, "")
	if err == nil || !strings.Contains(err.Error(), `"## y"`) {
		t.Fatalf("Write = %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "AGENTS.md")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("a refused write left a file")
	}
}

func TestWriteInBodyModeMakesTheBodyTheInstructions(t *testing.T) {
	t.Parallel()
	f, cfg := newFiles(t, InBody)
	writeText(t, filepath.Join(cfg, "templates", "agent.md"), "---\ntitle: Agent\n---\n---\nname: {{name}}\ntools: [read]\n---\nThis body is not used.\n")
	dir := t.TempDir()
	p := Parts{"Motion", "", "## Role\nReview."}
	if err := f.Write(t.Context(), dir, p, "agent"); err != nil {
		t.Fatal(err)
	}
	if got, want := readText(t, filepath.Join(dir, "AGENTS.md")), "---\nname: Motion\ntools: [read]\n---\n## Role\nReview.\n"; got != want {
		t.Fatalf("AGENTS.md =\n%q\nwant\n%q", got, want)
	}
	if err := f.Write(t.Context(), dir, Parts{"Motion", "", "Other."}, ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.Read(t.Context(), dir); got.Instructions != "Other." {
		t.Fatalf("Read = %#v", got)
	}
}

func TestWriteKeepsACRLFFileCRLF(t *testing.T) {
	t.Parallel()
	f, _ := newFiles(t, InSection)
	dir := t.TempDir()
	writeText(t, filepath.Join(dir, "AGENTS.md"), strings.ReplaceAll(specExample, "\n", "\r\n"))
	if err := f.Write(t.Context(), dir, Parts{"New", "", "a\nb"}, ""); err != nil {
		t.Fatal(err)
	}
	got := readText(t, filepath.Join(dir, "AGENTS.md"))
	if strings.Count(got, "\n") != strings.Count(got, "\r\n") || !strings.Contains(got, "## Instructions\r\na\r\nb\r\n## How you work\r\n") {
		t.Fatalf("AGENTS.md = %q", got)
	}
}

func TestConcurrentWritesToOneFolderAreSerialised(t *testing.T) {
	t.Parallel()
	f, _ := newFiles(t, InSection)
	dir := t.TempDir()
	writeText(t, filepath.Join(dir, "AGENTS.md"), "---\nkeep: me\n---\n## Notes\nmine\n")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			p := Parts{fmt.Sprintf("bot %d", i), "", fmt.Sprintf("do %d", i)}
			if err := f.Write(context.Background(), dir, p, ""); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got := readText(t, filepath.Join(dir, "AGENTS.md"))
	p, err := Read([]byte(got), InSection)
	if err != nil || p.Name != "bot "+strings.TrimPrefix(p.Instructions, "do ") {
		t.Fatalf("parts of different writes mixed: %#v, %v", p, err)
	}
	if !strings.Contains(got, "keep: me\n") || !strings.Contains(got, "## Notes\nmine\n") || strings.Count(got, "## Instructions") != 1 {
		t.Fatalf("AGENTS.md =\n%s", got)
	}
	assertNoTempFiles(t, dir)
}

func TestWriteGivesUpWhenItsContextIsDone(t *testing.T) {
	t.Parallel()
	f, _ := newFiles(t, InSection)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := f.Write(ctx, t.TempDir(), motion, ""); !errors.Is(err, context.Canceled) {
		t.Fatalf("Write = %v", err)
	}
}

func TestTempFilesAreOnesAtomicfileKnows(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := writeNew(filepath.Join(dir, "x"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !atomicfile.IsTemp(tempPrefix + "x-123") {
		t.Fatal("atomicfile.IsTemp does not know persona's temp files")
	}
	assertNoTempFiles(t, dir)
}

func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if atomicfile.IsTemp(e.Name()) {
			t.Errorf("temp file left: %s", e.Name())
		}
	}
}
