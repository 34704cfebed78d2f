package usersfile

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/bots/internal/waittest"
)

const goodUsers = `{
  "root": { "token": "root-secret-0123456789" },
  "users": [
    { "id": "soft", "token": "soft-secret-0123456789", "grants": ["bot:*", "session:create"], "memberships": ["backend", "shop:website"] },
    { "id": "bob", "token": "bob-secret-0123456789" }
  ]
}`

func writeUsers(t *testing.T, path, content string) {
	t.Helper()
	// write then rename, as an editor or a config tool would
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestLoadUsersAuthenticatesRootAndUsers(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "users.json")
	writeUsers(t, path, goodUsers)
	u, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := u.Authenticate("root-secret-0123456789"); !ok || !p.Root {
		t.Fatalf("root token: %+v %v", p, ok)
	}
	p, ok := u.Authenticate("soft-secret-0123456789")
	if !ok || p.Root || p.User != "soft" || !p.Has("bot:put") || !p.MemberOf("shop:website") {
		t.Fatalf("soft token: %+v %v", p, ok)
	}
	if p, ok := u.Authenticate("bob-secret-0123456789"); !ok || p.User != "bob" || len(p.Grants) != 0 {
		t.Fatalf("bob token: %+v %v", p, ok)
	}
	for _, tok := range []string{"", "wrong", "soft-secre", "soft-secret-0123456789 ", "ROOT-SECRET-0123456789"} {
		if p, ok := u.Authenticate(tok); ok {
			t.Fatalf("token %q authenticated as %+v", tok, p)
		}
	}
	if got := u.Users(); len(got) != 2 || got[0].ID != "soft" || got[1].ID != "bob" {
		t.Fatalf("Users() = %+v", got)
	}
}

func TestAuthenticateReturnsCopies(t *testing.T) {
	t.Parallel()
	u, err := Parse([]byte(goodUsers))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := u.Authenticate("soft-secret-0123456789")
	p.Grants[0] = "*:*"
	p.Memberships[0] = "admins"
	again, _ := u.Principal("soft")
	if again.Grants[0] != "bot:*" || again.Memberships[0] != "backend" {
		t.Fatalf("a caller changed the users: %+v", again)
	}
}

func TestNilUsersAuthenticatesNobody(t *testing.T) {
	t.Parallel()
	var u *Users
	if _, ok := u.Authenticate("x"); ok {
		t.Fatal("nil Users authenticated a token")
	}
	if _, ok := u.Principal("x"); ok {
		t.Fatal("nil Users has a principal")
	}
}

func TestFileWithoutRootHasNoRootToken(t *testing.T) {
	t.Parallel()
	u, err := Parse([]byte(`{"users":[{"id":"a","token":"tttttttttttttttt"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := u.Authenticate(""); ok {
		t.Fatal("the empty token authenticated")
	}
	if p, ok := u.Authenticate("tttttttttttttttt"); !ok || p.User != "a" {
		t.Fatalf("token t: %+v %v", p, ok)
	}
}

func TestParseUsersRefusesBadFiles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, file, want string }{
		{"not JSON", `{`, "not a users file: line 1, column 2: unexpected EOF"},
		{"unknown top-level key", `{"rooot":{"token":"x"}}`, `line 1, column 2: unknown field "rooot"`},
		{"unknown user key", `{"users":[{"id":"a","token":"tttttttttttttttt","group":["x"]}]}`, `unknown field "group"`},
		{"unknown root key", `{"root":{"token":"tttttttttttttttt","id":"r"}}`, `unknown field "id"`},
		{"trailing text", `{"users":[]} {}`, "text after the JSON object"},
		{"empty root token", `{"root":{"token":""}}`, "root: empty token"},
		{"empty user token", `{"users":[{"id":"a","token":""}]}`, `users[0] ("a"): empty token`},
		{"no id", `{"users":[{"token":"tttttttttttttttt"}]}`, "users[0]: no id"},
		{"id with a colon", `{"users":[{"id":"a:b","token":"tttttttttttttttt"}]}`, "colon"},
		{"duplicate id", `{"users":[{"id":"a","token":"token-1-0123456789"},{"id":"a","token":"token-2-0123456789"}]}`, `users[1] ("a"): duplicate id, as users[0]`},
		{"duplicate token", `{"users":[{"id":"a","token":"tttttttttttttttt"},{"id":"b","token":"tttttttttttttttt"}]}`, `users[1] ("b"): duplicate token, the same as "a"'s`},
		{"root token reused", `{"root":{"token":"tttttttttttttttt"},"users":[{"id":"a","token":"tttttttttttttttt"}]}`, `duplicate token, the same as root's`},
		{"bad grant", `{"users":[{"id":"a","token":"tttttttttttttttt","grants":["bot"]}]}`, `grant "bot"`},
		{"empty membership", `{"users":[{"id":"a","token":"tttttttttttttttt","memberships":[" "]}]}`, "empty membership"},
		{"wrong type", `{"users":{"id":"a"}}`, "not a users file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), `"tttttttttttttttt"`) && strings.Contains(tc.file, `"token":"tttttttttttttttt"`) && tc.name != "no id" {
				t.Fatalf("the error shows a token: %v", err)
			}
		})
	}
}

func TestLoadUsersErrorNamesTheFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "users.json")
	writeUsers(t, path, `{"users":[{"id":"a"}]}`)
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v does not name %s", err, path)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "absent.json")); err == nil {
		t.Fatal("loading a missing file succeeded")
	}
}

func TestChangedUsers(t *testing.T) {
	t.Parallel()
	prev, _ := Parse([]byte(`{"users":[
		{"id":"same","token":"token-1-0123456789","memberships":["x"]},
		{"id":"moved","token":"token-2-0123456789","memberships":["x"]},
		{"id":"regranted","token":"token-3-0123456789","grants":["bot:get"]},
		{"id":"retokened","token":"token-4-0123456789"},
		{"id":"gone","token":"token-5-0123456789"}]}`))
	next, _ := Parse([]byte(`{"users":[
		{"id":"same","token":"token-1-0123456789","memberships":["x"]},
		{"id":"moved","token":"token-2-0123456789","memberships":["y"]},
		{"id":"regranted","token":"token-3-0123456789","grants":["bot:*"]},
		{"id":"retokened","token":"token-44-0123456789"},
		{"id":"new","token":"token-6-0123456789"}]}`))
	want := []string{"gone", "moved", "new", "regranted"}
	if got := Changed(prev, next); !slices.Equal(got, want) {
		t.Fatalf("Changed = %v, want %v", got, want)
	}
	if got := Changed(nil, next); len(got) != 5 {
		t.Fatalf("Changed(nil, next) = %v", got)
	}
}

func openTestDirectory(t *testing.T, interval time.Duration, log *waittest.Log) (*Directory, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users.json")
	writeUsers(t, path, goodUsers)
	d, err := OpenDirectory(DirectoryConfig{Path: path, Interval: interval, Logger: slog.New(slog.NewTextHandler(log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, path
}

func TestDirectoryReloadsWhenTheFileChanges(t *testing.T) {
	t.Parallel()
	d, path := openTestDirectory(t, 5*time.Millisecond, &waittest.Log{})
	changes := make(chan []string, 4)
	d.Subscribe(func(prev, next *Users) { changes <- Changed(prev, next) })
	writeUsers(t, path, strings.Replace(goodUsers, `"backend", `, ``, 1))
	select {
	case got := <-changes:
		if !slices.Equal(got, []string{"soft"}) {
			t.Fatalf("changed %v, want [soft]", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no change heard")
	}
	p, ok := d.Authenticate("soft-secret-0123456789")
	if !ok || p.MemberOf("backend") || !p.MemberOf("shop:website") {
		t.Fatalf("after the change soft is %+v", p)
	}
}

func TestDirectoryKeepsLastGoodUsersAndWarnsOnce(t *testing.T) {
	t.Parallel()
	var log waittest.Log
	d, path := openTestDirectory(t, -1, &log)
	heard := 0
	d.Subscribe(func(prev, next *Users) { heard++ })
	writeUsers(t, path, `{"users":[{"id":"soft","token":""}]}`)
	ctx := context.Background()
	for range 3 {
		if changed, err := d.Reload(ctx); changed || err == nil {
			t.Fatalf("Reload of a bad file: changed=%v err=%v", changed, err)
		}
	}
	if _, ok := d.Authenticate("soft-secret-0123456789"); !ok {
		t.Fatal("the last good users were dropped")
	}
	out := log.String()
	if strings.Count(out, "level=WARN") != 1 || !strings.Contains(out, path) || !strings.Contains(out, "empty token") {
		t.Fatalf("want one Warn naming the file and reason, got:\n%s", out)
	}
	if heard != 0 {
		t.Fatal("subscribers heard a change from a bad file")
	}
	// a missing file is a reason of its own, said once too
	os.Remove(path)
	d.Reload(ctx)
	d.Reload(ctx)
	if n := strings.Count(log.String(), "level=WARN"); n != 2 {
		t.Fatalf("%d Warn lines after the file went, want 2:\n%s", n, log.String())
	}
	// the good file back: no change, since the users are the same
	writeUsers(t, path, goodUsers)
	if changed, err := d.Reload(ctx); changed || err != nil {
		t.Fatalf("Reload of the same good file: changed=%v err=%v", changed, err)
	}
	writeUsers(t, path, goodUsers+"\n")
	if changed, err := d.Reload(ctx); !changed || err != nil || heard != 1 {
		t.Fatalf("Reload of new good content: changed=%v err=%v heard=%d", changed, err, heard)
	}
}

func TestDirectorySubscribeCancelStopsCalls(t *testing.T) {
	t.Parallel()
	d, path := openTestDirectory(t, -1, &waittest.Log{})
	heard := 0
	cancel := d.Subscribe(func(prev, next *Users) { heard++ })
	cancel()
	writeUsers(t, path, `{"users":[]}`)
	if changed, err := d.Reload(context.Background()); !changed || err != nil {
		t.Fatalf("Reload: %v %v", changed, err)
	}
	if heard != 0 {
		t.Fatal("a cancelled subscriber was called")
	}
	if _, ok := d.Authenticate("soft-secret-0123456789"); ok {
		t.Fatal("a removed user still authenticates")
	}
}

func TestOpenDirectoryRefusesBadFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "users.json")
	writeUsers(t, path, `{"nope":1}`)
	if _, err := OpenDirectory(DirectoryConfig{Path: path}); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("OpenDirectory of a bad file: %v", err)
	}
	if _, err := OpenDirectory(DirectoryConfig{}); err == nil {
		t.Fatal("OpenDirectory without a path succeeded")
	}
}

func TestDirectoryCloseIsIdempotent(t *testing.T) {
	t.Parallel()
	d, _ := openTestDirectory(t, time.Millisecond, &waittest.Log{})
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Authenticate("root-secret-0123456789"); !ok {
		t.Fatal("a closed directory forgot its users")
	}
}

func TestAUsersFileWithATokenShorterThan16CharactersIsRefusedNamingTheEntry(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("k", MinTokenLen)
	for _, tc := range []struct{ name, file, want string }{
		{"one-character user token", `{"users":[{"id":"a","token":"x"}]}`, `users[0] ("a"): the token is shorter than 16 characters`},
		{"fifteen characters", `{"users":[{"id":"b","token":"` + long[:15] + `"}]}`, `users[0] ("b"): the token is shorter than 16 characters`},
		{"root", `{"root":{"token":"r"}}`, `root: the token is shorter than 16 characters`},
	} {
		_, err := Parse([]byte(tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Count(err.Error(), ". ") > 0 {
			t.Errorf("%s: error %v, want one sentence containing %q", tc.name, err, tc.want)
		}
		if err != nil && (strings.Contains(err.Error(), `"x"`) || strings.Contains(err.Error(), long[:15])) {
			t.Errorf("%s: the error shows the token: %v", tc.name, err)
		}
	}
	if _, err := Parse([]byte(`{"root":{"token":"` + long + `"},"users":[{"id":"a","token":"` + long + `a"}]}`)); err != nil {
		t.Errorf("tokens of 16 characters and more are refused: %v", err)
	}

	// A directory keeps the last good file.
	var log waittest.Log
	d, path := openTestDirectory(t, -1, &log)
	writeUsers(t, path, `{"users":[{"id":"soft","token":"s"}]}`)
	if changed, err := d.Reload(context.Background()); changed || err == nil {
		t.Fatalf("Reload of a file with a short token: changed=%v err=%v", changed, err)
	}
	if _, ok := d.Authenticate("soft-secret-0123456789"); !ok {
		t.Error("the last good users were dropped")
	}
	if _, ok := d.Authenticate("s"); ok {
		t.Error("the short token was taken")
	}
}

func TestIdentitiesMapANetworksUsersToPeople(t *testing.T) {
	t.Parallel()
	u, err := Parse([]byte(`{"users": [
		{"id": "alice", "token": "alice-token-0123456789", "identities": ["irc:Alice", "xmpp:alice@example.org"]},
		{"id": "bob", "token": "bob-token-0123456789ab", "identities": ["slack:U123"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	// An identity is found whatever the case of the file's or the
	// network's: IRC and XMPP hold Alice and alice to be one.
	for identity, want := range map[string]string{"irc:alice": "alice", "irc:ALICE": "alice", "xmpp:Alice@Example.org": "alice", "slack:U123": "bob"} {
		if got, ok := u.Person(identity); !ok || got != want {
			t.Errorf("Person(%q) = %q, %v; want %q", identity, got, ok, want)
		}
	}
	if got, ok := u.Person("irc:mallory"); ok {
		t.Errorf("an unknown identity is %q", got)
	}
	if got := u.Users()[0].Identities; len(got) != 2 || got[0] != "irc:Alice" {
		t.Errorf("Users() shows alice's identities as %q, want them as the file writes them", got)
	}
	if got := u.Identities(); len(got) != 3 || got["irc:Alice"] != "alice" || got["slack:U123"] != "bob" {
		t.Errorf("Identities() = %v, want the file's three as it writes them", got)
	}
}

func TestAnIdentityOfTwoPeopleOrNoIdentityAtAllIsRefusedNamingIt(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		`{"users": [{"id": "alice", "token": "alice-token-0123456789", "identities": ["irc:alice"]},
		            {"id": "bob", "token": "bob-token-0123456789ab", "identities": ["irc:alice"]}]}`: `users[1] ("bob"): the identity "irc:alice" is "alice"'s already`,
		`{"users": [{"id": "alice", "token": "alice-token-0123456789", "identities": ["irc:alice"]},
		            {"id": "bob", "token": "bob-token-0123456789ab", "identities": ["irc:Alice"]}]}`: `users[1] ("bob"): the identity "irc:Alice" is "alice"'s already`,
		`{"users": [{"id": "alice", "token": "alice-token-0123456789", "identities": ["IRC:alice"]}]}`:  `the identity "IRC:alice" is no <network>:<id>`,
		`{"users": [{"id": "alice", "token": "alice-token-0123456789", "identities": ["irc:al ice"]}]}`: `the identity "irc:al ice" is no <network>:<id>`,
		`{"users": [{"id": "alice", "token": "alice-token-0123456789", "identities": ["alice"]}]}`:      `the identity "alice" is no <network>:<id>`,
	} {
		if _, err := Parse([]byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse: %v, want %q", err, want)
		}
	}
}
