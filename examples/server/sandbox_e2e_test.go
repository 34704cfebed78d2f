package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agenthost/bots/wake/acp/sandbox"
	"github.com/agenthost/bots/wake/acp/sandbox/sandboxtest"
)

// findFile returns the path of the file named name under dir whose path
// holds part.
func findFile(t *testing.T, dir, part, name string) string {
	t.Helper()
	var found string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == name && strings.Contains(path, part) {
			found = path
		}
		return nil
	})
	if found == "" {
		t.Fatalf("no %s of %s under %s", name, part, dir)
	}
	return found
}

func TestEndToEndAnAgentReadsNothingOfTheHostButItsOwnFolder(t *testing.T) {
	sandboxtest.Require(t)
	raw := make([]byte, 16)
	rand.Read(raw)
	secret := "tok-sandbox-" + hex.EncodeToString(raw)
	t.Setenv("BOTS_CONNECTOR_HTTP_PROBE", secret)
	secrets := t.TempDir()
	vault := filepath.Join(secrets, "vault.json")
	if err := os.WriteFile(vault, []byte(`{"connectors": {"http/crm": {"value": "`+secret+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	users := filepath.Join(secrets, "users.json")
	if err := os.WriteFile(users, []byte(`{"root": {"token": "root-token-0123456789"}, "users": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	setup := newACPSetup(t, "-vault", vault, "-users", users)
	srv := setup.start(t)
	c := dialChat(t, srv.addr+"/?tkn=root-token-0123456789", "sandbox")
	c.makeBot("other", `{"name": "Other", "provider": "fake", "instructions": "other's notes"}`)
	c.makeBot("motion", `{"name": "Motion", "provider": "fake"}`)
	chat := c.openChat("ahp-session:/sandbox", "motion")
	n := 0
	ask := func(words string) string {
		n++
		got := say(t, c, chat, fmt.Sprint("t", n), words)
		if len(got) != 1 {
			t.Fatalf("%q: the agent says %q", words, got)
		}
		return got[0]
	}
	// The agent's own folder stays readable and writable, to it and its
	// terminals.
	if got := ask("probe-write notes.md"); got != "wrote" {
		t.Fatalf("writing its own folder: %q", got)
	}
	if got := ask("probe notes.md"); got != "read 5 bytes" {
		t.Errorf("reading its own folder: %q", got)
	}
	if got := ask("shell cat notes.md && echo ok > more.md && cat more.md"); got != "exit 0: probeok\n" {
		t.Errorf("a terminal in its own folder: %q", got)
	}
	for name, path := range map[string]string{
		"the vault":                       vault,
		"the users file":                  users,
		"another bot's bot.md":            findFile(t, setup.config, "other", "bot.md"),
		"another bot's AGENTS.md":         filepath.Join(setup.root, "other", "AGENTS.md"),
		"the server's environment":        "/proc/" + strconv.Itoa(srv.cmd.Process.Pid) + "/environ",
		"the configuration folder":        setup.config,
		"the agent's own session records": filepath.Join(setup.config, "agents", "fake", "sessions"),
	} {
		if got := ask("probe " + path); !strings.HasPrefix(got, "refused: ") {
			t.Errorf("the agent read %s (%s): %q", name, path, got)
		}
		if got := ask("shell cat '" + path + "' || ls '" + path + "/'"); strings.HasPrefix(got, "exit 0:") || strings.Contains(got, secret) {
			t.Errorf("a terminal read %s (%s): %q", name, path, got)
		}
	}
	if _, err := os.Stat(filepath.Join(setup.root, "other", "AGENTS.md")); err != nil {
		t.Errorf("the other bot's AGENTS.md the agent was refused is not there: %v", err)
	}
	if node, err := exec.LookPath("node"); err == nil {
		got := ask("shell node -e \"require('fs').writeFileSync('n.txt', require('os').cpus().length + ' ' + require('fs').readdirSync('/usr').length)\" && cat n.txt")
		if !strings.HasPrefix(got, "exit 0: ") {
			t.Errorf("%s in a terminal: %q", node, got)
		}
	} else {
		t.Log("node is not on PATH: the terminal's node run is left out")
	}
	srv.stop(t)
}

func TestEndToEndTheUnsandboxedFlagIsLoggedAtWarnOnEveryStart(t *testing.T) {
	t.Parallel()
	setup := newACPSetup(t, "-agents-unsandboxed")
	for range 2 {
		before := len(setup.logs.Bytes())
		srv := setup.start(t)
		srv.stop(t)
		logs := string(setup.logs.Bytes()[before:])
		if !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, "-agents-unsandboxed") {
			t.Fatalf("a start with -agents-unsandboxed logs no warning: %s", logs)
		}
	}
}

// homeOf asks the agent of chat for its environment and returns its HOME.
func homeOf(t *testing.T, c *ahpClient, chat, id string) string {
	t.Helper()
	for _, line := range strings.Split(one(t, c, chat, id, "env"), "\n") {
		if home, ok := strings.CutPrefix(line, "HOME="); ok {
			return home
		}
	}
	t.Fatalf("the agent of %s names no HOME", chat)
	return ""
}

func TestEndToEndTwoBotsOfTwoOwnersOnOneAgentNeitherListReadNorWriteTheOthersHome(t *testing.T) {
	t.Parallel()
	sandboxtest.Require(t)
	users := filepath.Join(t.TempDir(), "users.json")
	if err := os.WriteFile(users, []byte(`{"root": {"token": "root-token-0123456789"}, "users": [
		{"id": "alice", "token": "alice-token-0123456789", "grants": ["bot:put", "session:create"]},
		{"id": "bob", "token": "bob-token-0123456789", "grants": ["bot:put", "session:create"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	setup := newACPSetup(t, "-users", users)
	login := filepath.Join(setup.config, "agents", "fake", "home")
	if err := os.MkdirAll(login, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(login, "credentials.json"), []byte(`{"token": "the login"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := setup.start(t)
	alice := dialChat(t, srv.addr+"/?tkn=alice-token-0123456789", "alice")
	alice.makeBot("ada", `{"name": "Ada", "provider": "fake"}`)
	achat := alice.openChat("ahp-session:/ada", "ada")
	bob := dialChat(t, srv.addr+"/?tkn=bob-token-0123456789", "bob")
	bob.makeBot("bea", `{"name": "Bea", "provider": "fake"}`)
	bchat := bob.openChat("ahp-session:/bea", "bea")

	aHome, bHome := homeOf(t, alice, achat, "t1"), homeOf(t, bob, bchat, "t1")
	if aHome == bHome || aHome == login || bHome == login {
		t.Fatalf("ada's HOME is %s and bea's %s, the login's %s: want a HOME of each bot's own", aHome, bHome, login)
	}
	// Each bot has its own HOME, the login in it, and writes there what
	// the real agents keep there: transcripts, settings.
	for _, b := range []struct {
		c          *ahpClient
		chat, home string
	}{{alice, achat, aHome}, {bob, bchat, bHome}} {
		if got := one(t, b.c, b.chat, "t2", "probe "+filepath.Join(b.home, "credentials.json")); got != "read 22 bytes" {
			t.Errorf("the bot of HOME %s reads its copy of the login: %q", b.home, got)
		}
		if got := one(t, b.c, b.chat, "t3", "probe-write "+filepath.Join(b.home, "rollout.jsonl")); got != "wrote" {
			t.Errorf("the bot of HOME %s writes in it: %q", b.home, got)
		}
	}
	n := 3
	for _, b := range []struct {
		c          *ahpClient
		chat, home string
	}{{alice, achat, bHome}, {bob, bchat, aHome}} {
		for _, words := range []string{
			"probe " + b.home,
			"probe " + filepath.Join(b.home, "rollout.jsonl"),
			"probe-write " + filepath.Join(b.home, "settings.json"),
			"probe-write " + filepath.Join(login, "credentials.json"),
			"probe " + login,
		} {
			n++
			if got := one(t, b.c, b.chat, fmt.Sprint("t", n), words); !strings.HasPrefix(got, "refused: ") {
				t.Errorf("%s in the chat of another bot answers %q: want it refused", words, got)
			}
			n++
			cmd := "echo x > '" + strings.TrimPrefix(words, "probe-write ") + "'"
			if path, ok := strings.CutPrefix(words, "probe "); ok {
				cmd = "cat '" + path + "' || ls '" + path + "/'"
			}
			if got := one(t, b.c, b.chat, fmt.Sprint("t", n), "shell "+cmd); strings.HasPrefix(got, "exit 0:") {
				t.Errorf("a terminal of another bot ran %s: %q", cmd, got)
			}
		}
	}
	if data, err := os.ReadFile(filepath.Join(login, "credentials.json")); string(data) != `{"token": "the login"}` {
		t.Errorf("the login now holds %q (%v)", data, err)
	}
	for _, home := range []string{aHome, bHome} {
		if _, err := os.Stat(filepath.Join(home, "settings.json")); !os.IsNotExist(err) {
			t.Errorf("another bot planted settings in %s (%v)", home, err)
		}
	}

	// A deleted bot's HOME goes with it.
	alice.must("resourceDelete", map[string]any{"channel": "ahp-root://", "uri": "bot://ada"}, nil)
	if _, err := os.Stat(aHome); !os.IsNotExist(err) {
		t.Errorf("the deleted bot's HOME %s is still there (%v)", aHome, err)
	}
	srv.stop(t)
}

func TestEndToEndAnAgentCannotConnectToTheServersPortsYetReachesItsTools(t *testing.T) {
	t.Parallel()
	if abi := sandboxtest.Require(t); abi < sandbox.NetworkABI {
		t.Skipf("skipped: the kernel offers Landlock ABI %d, network rules need %d", abi, sandbox.NetworkABI)
	}
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	go func() {
		for {
			c, err := other.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	metrics := freeAddr(t)
	setup := newACPSetup(t, "-metrics-addr", metrics) // no users file: the local token makes a connection root
	srv := setup.start(t)
	c := dialChat(t, srv.addr, "agent-net")
	c.makeBot("motion", `{"name": "Motion", "provider": "fake"}`)
	chat := c.openChat("ahp-session:/agent-net", "motion")
	n := 0
	ask := func(words string) string {
		n++
		got := say(t, c, chat, fmt.Sprint("t", n), words)
		if len(got) != 1 {
			t.Fatalf("%q: the agent says %q", words, got)
		}
		return got[0]
	}
	// Its MCP endpoint, the tools it answers with, stays reachable: this
	// post goes through it.
	if got := ask("post through my tools"); got != "through my tools" {
		t.Fatalf("post_message through the MCP endpoint: %q", got)
	}
	if got := ask("dial " + srv.direct); !strings.HasPrefix(got, "refused: ") || !strings.Contains(got, "permission denied") {
		t.Errorf("the agent connected to the server's own port %s: %q", srv.direct, got)
	}
	if got := ask("dial " + metrics); !strings.HasPrefix(got, "refused: ") || !strings.Contains(got, "permission denied") {
		t.Errorf("the agent connected to the server's metrics port %s: %q", metrics, got)
	}
	if got := ask("dial " + other.Addr().String()); got != "connected" {
		t.Errorf("the agent could not connect to another port %s: %q", other.Addr(), got)
	}
	// Its terminals are refused too, and connect elsewhere.
	connect := func(addr string) string {
		host, port, _ := net.SplitHostPort(addr)
		return ask(`shell bash -c 'exec 3<>/dev/tcp/` + host + `/` + port + ` && echo connected'`)
	}
	for _, addr := range []string{srv.direct, metrics} {
		if got := connect(addr); strings.Contains(got, "connected") || strings.HasPrefix(got, "exit 0") {
			t.Errorf("a terminal connected to the server's own port %s: %q", addr, got)
		}
	}
	if got := connect(other.Addr().String()); got != "exit 0: connected\n" {
		t.Errorf("a terminal could not connect to another port: %q", got)
	}
	srv.stop(t)
}
