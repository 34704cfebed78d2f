package bots

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/acp"
	"github.com/agenthost/bots/wake/agents"
	"github.com/agenthost/bots/wake/agents/memsessions"
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
	s := &Server{ConfigDir: t.TempDir(), Agents: acp.Agents{{Provider: "claude"}, {Provider: "codex"}}}
	term := agents.Terminal{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}
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
		{ConfigDir: t.TempDir(), Agents: acp.Agents{{Provider: echo.Provider, Agent: acp.Command{Command: "x"}}}},
		{ConfigDir: t.TempDir(), Agents: acp.Agents{{Provider: "mine", Agent: acp.Command{Command: "x"}}}, Harnesses: map[string]wake.Harness{"mine": echo.Harness{}}},
	} {
		err := s.Start(t.Context())
		if err == nil || !strings.Contains(err.Error(), "named twice") {
			t.Errorf("agent %q: start %v, want it refused", s.Agents.Providers()[0], err)
		}
		s.Close()
	}
}

func TestAgentsRunBoundedByTheServersFilesAndPortsWithItsLoginCommand(t *testing.T) {
	t.Parallel()
	s := &Server{ConfigDir: "/cfg", Options: bot.Options{Root: "/bots"}, VaultFile: "/secrets/vault.json", UsersFile: "/cfg/users.json",
		AgentsUnsandboxed: true, LoginCommand: "log in with "}
	s.notePort(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9187})
	env := s.agentsEnv(nil, nil)
	if want := []string{"/cfg", "/bots", "/secrets/vault.json", "/cfg/users.json"}; !slices.Equal(env.Protect, want) || !env.AllowUnsandboxed {
		t.Errorf("the agents protect %q (unsandboxed %v), want %q", env.Protect, env.AllowUnsandboxed, want)
	}
	if env.RefuseConnect == nil || !slices.Equal(env.RefuseConnect(), []uint16{9187}) {
		t.Error("the agents may connect to the server's own port")
	}
	s.notePort(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9188})
	if got := env.RefuseConnect(); !slices.Equal(got, []uint16{9187, 9188}) {
		t.Errorf("a port the server listens on later is not refused: %v", got)
	}
	if env.LoginCommand != "log in with " || env.Sessions != nil {
		t.Errorf("env %+v", env)
	}
}

func TestWithADatabaseTheAgentsKeepTheirSessionRecordsInIt(t *testing.T) {
	t.Parallel()
	theirs := &memsessions.Store{}
	s := &Server{ConfigDir: "/cfg", Options: bot.Options{Root: "/bots"}}
	env := s.agentsEnv(nil, &Shared{Sessions: func(string) agents.SessionStore { return theirs }})
	if env.Sessions == nil || env.Sessions("claude") != theirs {
		t.Error("with a database the agents' session records are not the database's")
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
