package acp

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agenthost/bots/connector"
	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/wake/acp/acpfake"
)

func TestStdoutTextThatIsNotACPIsLoggedOnceAtWarnPerStartNamingTheAgentAndItsFirstLine(t *testing.T) {
	t.Parallel()
	logs := &waittest.Log{}
	h := newHarness(t, all(withFakeEnv(acpfake.StdoutStartEnv, `Welcome to Fake 1.0\nloading plugins…\nready`), func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}))
	a := openBack(t, h)
	if got := mustTurn(t, a, "stdout more noise then say fine").replied(); got != "fine" {
		t.Fatalf("the turn after the noise replied %q", got)
	}
	warns := func() []string {
		var out []string
		for l := range strings.Lines(logs.String()) {
			if strings.Contains(l, "level=WARN") && strings.Contains(l, "not ACP") {
				out = append(out, l)
			}
		}
		return out
	}
	w := warns()
	if len(w) != 1 || !strings.Contains(w[0], "agent=fake") || !strings.Contains(w[0], `first="Welcome to Fake 1.0"`) {
		t.Fatalf("the warnings of a start with four lines of noise are %q; want one naming the agent and its first line", w)
	}
	if strings.Contains(logs.String(), "level=ERROR") || strings.Contains(logs.String(), "raw=") {
		t.Errorf("the noise was logged as an error of the connection:\n%s", logs)
	}
	if n := strings.Count(logs.String(), "acp: agent stdout that is not ACP"); n != 3 {
		t.Errorf("%d lines of noise at Debug after the first; want 3", n)
	}
	if _, err := runTurn(t, a, "crash"); err == nil {
		t.Fatal("the crash did not fail the turn")
	}
	mustTurn(t, a, "say again") // a new start, which prints its banner again
	if w := warns(); len(w) != 2 {
		t.Errorf("after a second start %d warnings; want one per start: %q", len(w), w)
	}
}

func TestAgentLinesOnStderrAreScrubbedInTheSentenceAndTheLog(t *testing.T) {
	t.Parallel()
	logs := &waittest.Log{}
	scrub := &connector.Scrubber{}
	scrub.Add("vault-secret-42")
	h := newHarness(t, all(withFakeEnv("MODEL_API_KEY", "sk-agent-key-0123"), func(c *Config) {
		c.Scrubber = scrub
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}))
	_, err := runTurn(t, openBack(t, h), "expand stderr request with $MODEL_API_KEY and vault-secret-42 failed then exit 1")
	if err == nil {
		t.Fatal("the turn did not fail")
	}
	const want = `It wrote: "request with [redacted] and [redacted] failed".`
	if !strings.Contains(err.Error(), want) {
		t.Errorf("the sentence is %q; want it to hold %q", err, want)
	}
	for _, secret := range []string{"sk-agent-key-0123", "vault-secret-42"} {
		if strings.Contains(err.Error(), secret) || strings.Contains(logs.String(), secret) {
			t.Errorf("%q is in the sentence or the log", secret)
		}
	}
}

func TestAnAgentsLineLosesItsColoursAndTimeStamp(t *testing.T) {
	t.Parallel()
	raw := "\x1b[2m2026-12-03T09:06:03.349900Z\x1b[0m \x1b[31mERROR\x1b[0m codex_api: failed to connect, url: wss://api.openai.com/v1/responses"
	if got, want := (scrubbers{}).line(raw), "ERROR codex_api: failed to connect, url: wss://api.openai.com/v1/responses"; got != want {
		t.Errorf("line = %q, want %q", got, want)
	}
}

func TestTailKeepsTheLastLinesAndThoseSinceAMark(t *testing.T) {
	t.Parallel()
	var tl tail
	for i := range 30 {
		tl.add(fmt.Sprint("line ", i))
	}
	if got := tl.since(outMark{}); len(got) != tailLines || got[0] != "line 10" || got[tailLines-1] != "line 29" {
		t.Errorf("since(0) = %q, want the last %d lines", got, tailLines)
	}
	m := tl.mark()
	if got := tl.since(m); len(got) != 0 {
		t.Errorf("since the mark = %q, want none", got)
	}
	tl.add("after")
	if got := tl.since(m); !slices.Equal(got, []string{"after"}) {
		t.Errorf("since the mark = %q, want [after]", got)
	}
}

func TestDiagnoseFindsTheCauseTheHostAndTheLineToQuote(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		words string
		lines []string
		want  diagnosis
	}{
		{"it sent nothing for 2m0s", []string{"Error: getaddrinfo ENOTFOUND api.anthropic.com", "    at GetAddrInfoReqWrap.onlookup (node:dns:120:26)", "}"},
			diagnosis{kind: causeUnreachable, host: "api.anthropic.com", line: "Error: getaddrinfo ENOTFOUND api.anthropic.com"}},
		{"500 exception TypeError: fetch failed sending request", nil, diagnosis{kind: causeUnreachable, inWords: true}},
		{"Internal error", []string{"[API:request] POST https://generativelanguage.googleapis.com/v1beta/models failed: fetch failed"},
			diagnosis{kind: causeUnreachable, host: "generativelanguage.googleapis.com", line: "[API:request] POST https://generativelanguage.googleapis.com/v1beta/models failed: fetch failed"}},
		{"it sent nothing for 30s", []string{"ERROR codex_api::endpoint::responses_websocket : failed to connect to websocket: IO error: failed to lookup address information: Name or service not known, url: wss://api.openai.com/v1/responses"},
			diagnosis{kind: causeUnreachable, host: "api.openai.com", line: "ERROR codex_api::endpoint::responses_websocket : failed to connect to websocket: IO error: failed to lookup address information: Name or service not known, url: wss://api.openai.com/v1/responses"}},
		{"Internal error", []string{"see https://docs.example.com/help", "Invalid API key · Please run /login"},
			diagnosis{kind: causeKeyRefused, line: "Invalid API key · Please run /login"}},
		{"Internal error", []string{"429 Too Many Requests"}, diagnosis{kind: causeQuota, line: "429 Too Many Requests"}},
		{"Internal error", []string{"Not logged in"}, diagnosis{kind: causeSignedOut, line: "Not logged in"}},
		{"it exited with status 1", []string{"starting", "something odd happened", "..."}, diagnosis{line: "something odd happened"}},
		{"Internal error: boom", []string{"Internal error: boom"}, diagnosis{}},
	} {
		if got := diagnose(tc.words, tc.lines); got != tc.want {
			t.Errorf("diagnose(%q, %q) = %+v, want %+v", tc.words, tc.lines, got, tc.want)
		}
	}
}

func FuzzDiagnose(f *testing.F) {
	f.Add("Internal error", "Error: getaddrinfo ENOTFOUND api.anthropic.com\nat x (node:dns:1:2)")
	f.Add("stream disconnected: error sending request for url (https://api.openai.com/v1/responses)", "")
	f.Add("429", "}\n...\nQuota exceeded")
	f.Fuzz(func(t *testing.T, words, out string) {
		var lines []string
		for l := range strings.Lines(out) {
			lines = append(lines, clean(l))
		}
		d := diagnose(words, lines)
		if d.line != "" && !slices.Contains(lines, d.line) && !slices.ContainsFunc(lines, func(l string) bool { return strings.TrimSpace(l) == d.line }) {
			t.Errorf("the line quoted, %q, is none of the agent's", d.line)
		}
		if d.host != "" && (d.kind != causeUnreachable || !utf8.ValidString(d.host) || strings.ContainsAny(d.host, " /:\"")) {
			t.Errorf("host %q for a cause %d", d.host, d.kind)
		}
		if d.kind == causeNone && d.inWords {
			t.Error("no cause, yet told in the words")
		}
	})
}

func TestClaudeCodesDebugLogGivesItsErrorsSinceTheTurnAndIsNeverFollowedOutOfItsFolder(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dir := filepath.Join(home, ".claude", "debug")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	since := time.Date(2026, 12, 3, 9, 6, 40, 0, time.UTC)
	log := strings.Join([]string{
		"2026-12-03T09:06:30.000Z [ERROR] API error (attempt 1/11): an earlier turn",
		"2026-12-03T09:06:41.308Z [DEBUG] countTokensWithFallback: haiku fallback failed: Connection error.",
		"2026-12-03T09:06:41.477Z [ERROR] API error (attempt 3/11): undefined Connection error.",
		`2026-12-03T09:06:41.907Z [ERROR] "Error: Error: ENOENT: no such file or directory, open '/home/.claude/remote-settings.json'\n    at Module.openSync (node:fs:573:18)"`,
		`2026-12-03T09:06:44.761Z [ERROR] "Error: Error: 1P event logging: 17 events failed to export (code=ENOTFOUND, getaddrinfo ENOTFOUND api.anthropic.com) key sk-agent-key-0123\n    at YVA.queueFailedEvents (file:///cli.js:2185:2315)"`,
		`2026-12-03T09:07:02.098Z [ERROR] "Error: Error: {\"stack\":\"Error: Failed to export 2 events (code=ENOTFOUND, getaddrinfo ENOTFOUND api.anthropic.com)\\n    at YVA.doExport (file:///cli.js:2185:1372)\",\"message\":\"Failed to export 2 events"`,
	}, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("2026-12-03T09:07:00.000Z [ERROR] the vault's secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "z.txt")); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour) // the link's target is newer than the log
	os.Chtimes(outside, later, later)
	sc := childScrubbers(Config{}, []string{"MODEL_API_KEY=sk-agent-key-0123"})
	got := debugLogLines(dir, since, sc)
	want := []string{
		"API error (attempt 3/11): undefined Connection error.",
		"1P event logging: 17 events failed to export (code=ENOTFOUND, getaddrinfo ENOTFOUND api.anthropic.com) key [redacted]",
		"Failed to export 2 events (code=ENOTFOUND, getaddrinfo ENOTFOUND api.anthropic.com)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("the debug log's lines are\n%q\nwant\n%q", got, want)
	}
	if d := diagnose("it sent nothing for 2m0s (the agent's turnIdle), so the turn was stopped", got); d.kind != causeUnreachable || d.host != "api.anthropic.com" {
		t.Errorf("the log's lines tell %+v; want api.anthropic.com unreachable", d)
	}
}
