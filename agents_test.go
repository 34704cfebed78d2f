package bots

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/acp"
	"github.com/agenthost/bots/wake/acp/sandbox"
	"github.com/agenthost/bots/wake/echo"
)

func TestCheckAgentsWithoutAgentsSaysEchoNeedsNone(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	s := &Server{ConfigDir: t.TempDir()}
	if err := s.CheckAgents(t.Context(), &out); err != nil || !strings.Contains(out.String(), "no agents are configured") {
		t.Errorf("printed %q, %v", out.String(), err)
	}
}

func TestLoginOfAnUnknownAgentNamesTheKnownOnes(t *testing.T) {
	t.Parallel()
	s := &Server{ConfigDir: t.TempDir(), Agents: []acp.Config{{Provider: "claude"}, {Provider: "codex"}}}
	term := acp.Terminal{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}
	if err := s.LoginAgent(t.Context(), "gemini", term); err == nil || !strings.Contains(err.Error(), `no ACP agent is named "gemini" (the agents are claude, codex)`) {
		t.Errorf("error %v", err)
	}
	if err := s.LoginAgent(t.Context(), "echo", term); err == nil || !strings.Contains(err.Error(), "echo needs no login") {
		t.Errorf("error %v", err)
	}
	if err := (&Server{ConfigDir: t.TempDir()}).LoginAgent(t.Context(), "gemini", term); err == nil || !strings.Contains(err.Error(), "this server has none") {
		t.Errorf("with no agents: %v", err)
	}
}

func TestAnAgentNamedLikeAHarnessIsRefused(t *testing.T) {
	t.Parallel()
	for _, s := range []*Server{
		{ConfigDir: t.TempDir(), Agents: []acp.Config{{Provider: echo.Provider, Agent: acp.Command{Command: "x"}}}},
		{ConfigDir: t.TempDir(), Agents: []acp.Config{{Provider: "mine", Agent: acp.Command{Command: "x"}}}, Harnesses: map[string]wake.Harness{"mine": echo.Harness{}}},
	} {
		err := s.Start(t.Context())
		if err == nil || !strings.Contains(err.Error(), "named twice") {
			t.Errorf("agent %q: start %v, want it refused", s.Agents[0].Provider, err)
		}
		s.Close()
	}
}

func TestAgentsAreBoundedByTheSandboxAndNamedInTheLoginCommand(t *testing.T) {
	t.Parallel()
	s := &Server{ConfigDir: "/cfg", Options: bot.Options{Root: "/bots"}, VaultFile: "/secrets/vault.json", UsersFile: "/cfg/users.json",
		AgentsUnsandboxed: true, LoginCommand: "log in with ",
		Agents: []acp.Config{{Provider: "claude", Protect: []string{"/mine"}}, {Provider: "codex", LoginHint: "its own"}}}
	cfgs, err := s.agentConfigs(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/mine", "/cfg", "/bots", "/secrets/vault.json", "/cfg/users.json"}
	if !slices.Equal(cfgs[0].Protect, want) || !cfgs[0].AllowUnsandboxed {
		t.Errorf("claude protects %q (unsandboxed %v), want %q", cfgs[0].Protect, cfgs[0].AllowUnsandboxed, want)
	}
	if cfgs[0].LoginHint != "log in with claude" || cfgs[1].LoginHint != "its own" {
		t.Errorf("login hints %q, %q", cfgs[0].LoginHint, cfgs[1].LoginHint)
	}
	if len(s.Agents[0].Protect) != 1 {
		t.Errorf("the Server's own Agents changed: %q", s.Agents[0].Protect)
	}
}

func TestAgentsAreRefusedWithoutASandboxUnlessAllowed(t *testing.T) {
	t.Parallel()
	none := func() (int, error) { return 0, fmt.Errorf("%w: the kernel has no Landlock", sandbox.ErrUnavailable) }
	some := func() (int, error) { return 7, nil }
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	err := checkSandbox(1, false, none, log)
	if err == nil || !strings.Contains(err.Error(), "-agents-unsandboxed") || strings.Contains(err.Error(), "\n") {
		t.Errorf("agents without a sandbox: %v, want one line naming -agents-unsandboxed", err)
	}
	if !errors.Is(err, sandbox.ErrUnavailable) && !strings.Contains(err.Error(), "no Landlock") {
		t.Errorf("the refusal does not say why: %v", err)
	}
	if err := checkSandbox(0, false, none, log); err != nil {
		t.Errorf("echo alone without a sandbox: %v", err)
	}
	if err := checkSandbox(1, false, some, log); err != nil {
		t.Errorf("agents with a sandbox: %v", err)
	}
	if logs.Len() != 0 {
		t.Errorf("logged without the flag: %s", logs.Bytes())
	}
	for _, available := range []func() (int, error){none, some} {
		logs.Reset()
		if err := checkSandbox(1, true, available, log); err != nil {
			t.Errorf("with -agents-unsandboxed: %v", err)
		}
		if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "-agents-unsandboxed") {
			t.Errorf("-agents-unsandboxed is not logged at Warn: %q", logs.String())
		}
	}
}

func TestWithADatabaseAnAgentsFileStoreGivesWayToTheDatabasesAndAStoreOfItsOwnStays(t *testing.T) {
	t.Parallel()
	mine := &acp.MemStore{}
	s := &Server{ConfigDir: "/cfg", Options: bot.Options{Root: "/bots"}, AgentsUnsandboxed: true,
		Agents: []acp.Config{{Provider: "claude", Store: acp.FileStore{Dir: "/cfg/agents/claude/sessions"}}, {Provider: "codex", Store: mine}, {Provider: "none"}}}
	theirs := &acp.MemStore{}
	cfgs, err := s.agentConfigs(nil, &Shared{Sessions: func(string) acp.Store { return theirs }})
	if err != nil {
		t.Fatal(err)
	}
	if cfgs[0].Store != theirs {
		t.Errorf("with a database the agents file's store is %T, want the database's", cfgs[0].Store)
	}
	if cfgs[1].Store != mine {
		t.Errorf("an embedder's own store was replaced by %T", cfgs[1].Store)
	}
	if cfgs[2].Store == nil {
		t.Error("an agent with no store got none with a database")
	}
	if without, _ := s.agentConfigs(nil, nil); without[0].Store != s.Agents[0].Store {
		t.Errorf("without a database the agents file's store is %T", without[0].Store)
	}
}

// TestTheREADMEsAgentsFileParsesAndNamesALoginWhereTheAgentOffersNone: the
// agents file the README shows is one the server takes, and it names the
// login of Codex and Gemini CLI, whose ACP sides offer no terminal login
// (Claude Code's adapter offers its own).
func TestTheREADMEsAgentsFileParsesAndNamesALoginWhereTheAgentOffersNone(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "An agents file (`<config>/agents.json`")
	_, rest, ok2 := strings.Cut(rest, "```json\n")
	block, _, ok3 := strings.Cut(rest, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("the README shows no agents file where this test looks for it")
	}
	path := filepath.Join(t.TempDir(), "agents.json")
	if err := os.WriteFile(path, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgs, err := acp.ReadAgents(path, t.TempDir())
	if err != nil {
		t.Fatalf("the README's agents file: %v", err)
	}
	logins := map[string]string{}
	for _, c := range cfgs {
		if c.Agent.Login != nil {
			logins[c.Provider] = strings.Join(append([]string{c.Agent.Login.Command}, c.Agent.Login.Args...), " ")
		}
	}
	if len(cfgs) != 3 || logins["codex"] != "codex login" || logins["gemini"] != "gemini" {
		t.Errorf("the README's agents file gives %d agents with the logins %v", len(cfgs), logins)
	}
}
