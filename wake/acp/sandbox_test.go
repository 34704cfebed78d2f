package acp

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/acp/sandbox"
	"github.com/agenthost/bots/wake/acp/sandbox/sandboxtest"
)

func TestAnAgentWhoseGrantsReachAProtectedPathIsNotStarted(t *testing.T) {
	t.Parallel()
	sandboxtest.Require(t)
	h := newHarness(t, func(c *Config) { c.Protect = []string{filepath.Join(filepath.Dir(os.Args[0]), "vault.json")} })
	_, err := h.Open(testCtx(t), wake.SessionInfo{URI: "s", Dir: t.TempDir()})
	if !errors.Is(err, sandbox.ErrReaches) {
		t.Fatalf("opening an agent whose command's folder holds a protected path: %v, want ErrReaches", err)
	}
}

func TestAnAgentAndItsTerminalsReadOnlyTheirGrants(t *testing.T) {
	t.Parallel()
	sandboxtest.Require(t)
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("operator secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	extra := t.TempDir()
	if err := os.WriteFile(filepath.Join(extra, "tool.txt"), []byte("tool"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := open(t, newHarness(t, func(c *Config) { c.Agent.Read = []string{extra} }), "")
	if got := mustTurn(t, a, "terminal - cat "+secret).replied(); strings.HasPrefix(got, "exit 0") {
		t.Errorf("a terminal read a file outside its grants: %q", got)
	}
	if got := mustTurn(t, a, "terminal - cat "+filepath.Join(extra, "tool.txt")).replied(); got != "exit 0: tool" {
		t.Errorf("a terminal reading Command.Read: %q", got)
	}
	if got := mustTurn(t, a, "terminal - sh -c echo").replied(); got != "exit 0: \n" {
		t.Errorf("sh in a terminal: %q", got)
	}
}

func TestAnAgentIsRefusedTheServersPortsButNeverItsToolServers(t *testing.T) {
	t.Parallel()
	if abi := sandboxtest.Require(t); abi < sandbox.NetworkABI {
		t.Skipf("skipped: Landlock ABI %d has no network rules", abi)
	}
	var tools uint16
	h := newHarness(t, func(c *Config) {
		c.RefuseConnect = func() []uint16 { return []uint16{9187, tools} }
	})
	a := open(t, h, "")
	tools = a.tools.port()
	if tools == 0 {
		t.Fatal("the agent's tool server has no port")
	}
	if got := a.policy().RefuseConnect; !slices.Equal(got, []uint16{9187}) {
		t.Errorf("the agent's policy refuses %v, want the server's port 9187 and not its tool server's %d", got, tools)
	}
	// The agent still posts through its tool server.
	w := mustTurn(t, a, "post hello")
	w.mu.Lock()
	defer w.mu.Unlock()
	if !slices.Equal(w.posts, []string{"hello"}) {
		t.Errorf("posting through the tool server: %q (reply %q)", w.posts, w.reply.String())
	}
}
