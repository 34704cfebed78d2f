package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// readmeSection returns the text of the README's section "## <title>",
// up to the next "## " heading.
func readmeSection(t *testing.T, readme, title string) string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, "\n## "+title+"\n")
	if !ok {
		t.Fatalf("the README has no section ## %s", title)
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// codeBlocks returns the bodies of the ```lang blocks of text, in order.
func codeBlocks(text, lang string) []string {
	var out []string
	for {
		_, rest, ok := strings.Cut(text, "```"+lang+"\n")
		if !ok {
			return out
		}
		body, after, ok := strings.Cut(rest, "\n```")
		if !ok {
			return out
		}
		out = append(out, body+"\n")
		text = after
	}
}

// TestREADMEEmbeddingProgramRuns compiles the README's embedding program,
// taken from README.md as it is, inside this module (an overlay adds it
// as a package, so nothing is written into the repository), runs it in
// a temporary folder and checks it prints what the README says.
func TestREADMEEmbeddingProgramRuns(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := readmeSection(t, string(data), "Embedding")
	if sh := codeBlocks(section, "sh"); len(sh) == 0 || strings.TrimSpace(sh[0]) != "go get github.com/agenthost/bots@latest" ||
		strings.Index(section, "```sh") > strings.Index(section, "```go") {
		t.Errorf("the embedding section does not start with go get github.com/agenthost/bots@latest")
	}
	programs := codeBlocks(section, "go")
	if len(programs) == 0 {
		t.Fatal("the embedding section holds no ```go block")
	}
	program := programs[0]
	if !strings.HasPrefix(program, "package main\n") {
		t.Fatalf("the embedding section's first go block is not a program:\n%s", program)
	}
	if n := strings.Count(program, "\n"); n > 40 {
		t.Errorf("the embedding program is %d lines, more than 40", n)
	}
	said := regexp.MustCompile("it prints `([^`]+)`").FindStringSubmatch(section)
	if said == nil {
		t.Fatal("the embedding section does not say what the program prints (\"it prints `…`\")")
	}

	work := t.TempDir()
	src := filepath.Join(work, "main.go")
	if err := os.WriteFile(src, []byte(program), 0o600); err != nil {
		t.Fatal(err)
	}
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(here, "readmeprogram", "main.go"): src}})
	overlayFile := filepath.Join(work, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(work, "program")
	if out, err := exec.Command("go", "build", "-overlay", overlayFile, "-o", bin, "./readmeprogram").CombinedOutput(); err != nil {
		t.Fatalf("the README's embedding program does not build: %v\n%s", err, out)
	}
	// It serves no page, and links none of its files (web.Handler, which
	// it never calls, is what reaches them).
	if exe, err := os.ReadFile(bin); err != nil || bytes.Contains(exe, []byte("DOMPurify")) {
		t.Errorf("the README's program, which serves no page, holds the page's files (%v)", err)
	}
	run := filepath.Join(work, "run")
	if err := os.Mkdir(run, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Dir = run
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's embedding program failed: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != said[1] {
		t.Errorf("the README's embedding program printed %q, the README says %q", got, said[1])
	}
}

// readmePath matches what the README names as a file of the repository:
// a link's target, or a code span that is a path under one of the
// repository's folders.
var readmePath = regexp.MustCompile("\\]\\(([^)#:]+)\\)|`((?:docs|scripts|\\.ci|examples|client|bot|record|web)/[^` ]*|[a-z_]+_test\\.go)`")

// TestREADMENamesOnlyFilesThatExist checks every file the README links
// to or names by its path in the repository.
func TestREADMENamesOnlyFilesThatExist(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	prose := regexp.MustCompile("(?s)\n```[a-z]*\n.*?\n```").ReplaceAllString(string(data), "\n")
	for _, m := range readmePath.FindAllStringSubmatch(prose, -1) {
		name := m[1] + m[2]
		if strings.ContainsAny(name, "<>…*") {
			continue // a pattern, not a file
		}
		if _, err := os.Stat(filepath.Join("..", "..", name)); err == nil {
			continue
		}
		// a test file named alone is somewhere in the repository.
		if found, _ := filepath.Glob(filepath.Join("..", "..", "*", name)); strings.HasSuffix(name, "_test.go") && len(found) > 0 {
			continue
		}
		t.Errorf("the README names %s, which is not in the repository", name)
	}
	if strings.Contains(string(data), "DESIGN") {
		t.Errorf("the README names DESIGN, which is not in the repository: say what it would say where the reader is")
	}
}
