package acp

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/acp/sandbox"
	"github.com/agenthost/bots/wake/acp/sandbox/sandboxtest"
)

func TestAnAgentWhoseGrantsReachAProtectedPathIsNotStarted(t *testing.T) {
	sandboxtest.Require(t)
	h := newHarness(t, func(c *Config) { c.Protect = []string{filepath.Join(filepath.Dir(os.Args[0]), "vault.json")} })
	_, err := h.Open(testCtx(t), wake.SessionInfo{URI: "s", Dir: t.TempDir()})
	if !errors.Is(err, sandbox.ErrReaches) {
		t.Fatalf("opening an agent whose command's folder holds a protected path: %v, want ErrReaches", err)
	}
}

func TestAnAgentAndItsTerminalsReadOnlyTheirGrants(t *testing.T) {
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
