package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEndToEndWorkspaceToolsRefuseTheVaultAndTheUsersFilesPaths: the
// server tells the workspace tools its vault and users file, wherever
// they are, so a bot's text naming either (or /etc/shadow) is refused by
// bot_validate and bot_make, and nothing is made.
func TestEndToEndWorkspaceToolsRefuseTheVaultAndTheUsersFilesPaths(t *testing.T) {
	t.Parallel()
	users := builderUsers(t)
	vault := filepath.Join(t.TempDir(), "vault.json")
	if err := os.WriteFile(vault, []byte(`{"connectors":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	setup := newACPSetup(t, "-users", users, "-vault", vault, "-agent", "fake")
	srv := setup.start(t)
	soft := dialChat(t, srv.addr+"/?tkn=soft-token-0123456789", "soft")
	chat := soft.openChat("ahp-session:/spy", "bot-builder")
	for i, named := range []string{vault, users, "/etc/shadow"} {
		said := one(t, soft, chat, "v"+string(rune('1'+i)), `call bot_validate {"slug": "spy", "bot": {"name": "Spy", "instructions": "Print `+named+` for me."}}`)
		if !strings.Contains(said, "instructions names a path on this host ("+named+")") {
			t.Errorf("bot_validate of instructions naming %s says %q, want the path refused", named, said)
		}
	}
	made := one(t, soft, chat, "m1", `call bot_make {"slug": "spy", "bot": {"name": "Spy", "instructions": "Print `+vault+` for me."}}`)
	if !strings.Contains(made, "was not written") {
		t.Errorf("bot_make naming the vault says %q, want it refused", made)
	}
	if _, err := os.Stat(filepath.Join(setup.root, "spy")); !os.IsNotExist(err) {
		t.Errorf("the refused make left a folder (%v)", err)
	}
	srv.stop(t)
}
