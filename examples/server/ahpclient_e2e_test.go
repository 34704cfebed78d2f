package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The AHP project's own Go client (clients/go, module 0.7.0) sits beside
// the clone in ../shared/ahp-client-check, with a check that drives a
// server with it: initialize with the versions the client offers as
// shipped (0.8.0 down to 0.5.1), fold every action of the root, a bot-chat
// session and three turns with the official reducers, audit every frame
// with the official types, and compare the folded state with fresh
// snapshots. Its report sorts what it found into problem classes.

// clientCheckDir returns ../shared/ahp-client-check beside the module
// root, or "" when it is not there.
func clientCheckDir(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
	check := filepath.Join(filepath.Dir(dir), "shared", "ahp-client-check")
	if _, err := os.Stat(filepath.Join(check, "main.go")); err != nil {
		return ""
	}
	return check
}

// buildClientCheck builds the check into a temporary folder, leaving its
// own folder (read-only in CI) untouched: its go.sum must suffice.
func buildClientCheck(t *testing.T, ctx context.Context, dir string) string {
	t.Helper()
	gotool, err := exec.LookPath("go")
	if err != nil {
		gotool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "ahp-client-check")
	cmd := exec.CommandContext(ctx, gotool, "build", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", dir, err, out)
	}
	return bin
}

// sectionLine heads a problem class of the report: "[kind] count".
var sectionLine = regexp.MustCompile(`^\[([a-z-]+)\] (\d+)$`)

// clientCheckProblems reads a report: the steps that did not pass and the
// findings of every problem class. info is not a problem; a snapshot-diff
// is one unless it is the chat's clock-stamped modifiedAt (a client before
// 0.9.0 stamps it from its own clock).
func clientCheckProblems(report string) (steps []string, problems []string) {
	sc := bufio.NewScanner(strings.NewReader(report))
	kind := ""
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "step ") {
			// step 4's differences are judged by their findings below.
			if strings.Contains(line, "MISMATCH") || strings.Contains(line, "FAILED") {
				steps = append(steps, line)
			}
			continue
		}
		if m := sectionLine.FindStringSubmatch(line); m != nil {
			kind = m[1]
			continue
		}
		finding, ok := strings.CutPrefix(line, "  - ")
		if !ok || kind == "info" {
			continue
		}
		if kind == "snapshot-diff" && strings.HasPrefix(finding, "chat.modifiedAt: folded vs fresh (the official reducer stamps modifiedAt from the local clock)") {
			continue
		}
		problems = append(problems, "["+kind+"] "+finding)
	}
	return steps, problems
}

func TestOfficialGoClientConnectsWithTheVersionsItShipsWithAndFoldsEveryAction(t *testing.T) {
	t.Parallel()
	dir := clientCheckDir(t)
	if dir == "" {
		t.Skip("../shared/ahp-client-check is not beside the module root: the official client check cannot run")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := buildClientCheck(t, ctx, dir)

	// a users file: the root token works whether or not the server also
	// writes a local token.
	d := newDirs(t)
	s := startServer(t, d.args())
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.CommandContext(ctx, bin, "-url", s.wsURL(), "-token", rootToken,
		"-token-file", filepath.Join(d.config, "local-token"), "-out", out, "-fallback-version", "")
	stdout, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running the check: %v", err)
	}
	report, rerr := os.ReadFile(filepath.Join(out, "report.txt"))
	if rerr != nil {
		t.Fatalf("the check wrote no report (%v; exit %v):\n%s", rerr, err, stdout)
	}
	if err != nil {
		t.Errorf("the check exited with %v:\n%s", err, stdout)
	}
	text := string(report)
	want := `step 1 initialize with [0.8.0 0.7.0 0.6.0 0.5.2 0.5.1]: ok, server chose "0.8.0"`
	if !strings.Contains(text, want) {
		t.Errorf("the report has no line %q", want)
	}
	if !strings.Contains(text, "step 3 bot + bot-chat session + 3 turns folded with the official reducers: ok") {
		t.Errorf("the three turns did not fold to their replies")
	}
	steps, problems := clientCheckProblems(text)
	for _, s := range steps {
		t.Errorf("step not passed: %s", s)
	}
	for _, p := range problems {
		t.Errorf("problem: %s", p)
	}
	if t.Failed() {
		t.Logf("report:\n%s", text)
	}
}

func TestClientCheckProblemsAllowsOnlyTheClockStampedModifiedAt(t *testing.T) {
	t.Parallel()
	report := strings.Join([]string{
		`step 1 initialize with [0.8.0 0.7.0 0.6.0 0.5.2 0.5.1]: ok, server chose "0.8.0" (serverInfo {})`,
		`step 3 bot + bot-chat session + 3 turns folded with the official reducers: MISMATCH: turn 1 did not complete`,
		`step 4 fresh snapshot vs folded state: 2 difference(s), listed under snapshot-diff`,
		`[decode-error] 1`,
		`  - action chat/error: json: cannot unmarshal ×1`,
		`      e.g. {}`,
		`[unknown-field] 0`,
		`[snapshot-diff] 2`,
		`  - chat.modifiedAt: folded vs fresh (the official reducer stamps modifiedAt from the local clock) ×1`,
		`  - chat.turns[1].error: only in fresh ×1`,
		`[info] 1`,
		`  - session snapshot has no defaultChat ×1`,
	}, "\n")
	steps, problems := clientCheckProblems(report)
	wantSteps := []string{`step 3 bot + bot-chat session + 3 turns folded with the official reducers: MISMATCH: turn 1 did not complete`}
	wantProblems := []string{"[decode-error] action chat/error: json: cannot unmarshal ×1", "[snapshot-diff] chat.turns[1].error: only in fresh ×1"}
	if fmt.Sprint(steps) != fmt.Sprint(wantSteps) {
		t.Errorf("steps = %q, want %q", steps, wantSteps)
	}
	if fmt.Sprint(problems) != fmt.Sprint(wantProblems) {
		t.Errorf("problems = %q, want %q", problems, wantProblems)
	}
}
