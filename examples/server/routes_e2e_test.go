package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/bots/internal/pgtest"
	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/route"
	"github.com/agenthost/bots/route/irc/irctest"
	"github.com/agenthost/bots/route/slack/slacktest"
	"github.com/agenthost/bots/route/telegram/telegramtest"
	"github.com/agenthost/bots/route/xmpp"
	"github.com/agenthost/bots/route/xmpp/xmpptest"
)

// ircRig is the reference server routed to a real IRC server: soft is
// irc:alice on it, the bot motion answers alice's direct messages, and
// the connection's password comes from the vault.
type ircRig struct {
	irc   *irctest.Server
	srv   *testServer
	soft  *client
	dirs  dirs
	vault string
	kill  func() // kill -9 of the server, when it is a process of its own
}

func newIRCRig(t *testing.T) *ircRig {
	t.Helper()
	return newIRCRigOn(t, irctest.Start(t), nil)
}

// newIRCRigOn is newIRCRig on the IRC server irc, the server started by
// start (in process when nil).
func newIRCRigOn(t *testing.T, irc *irctest.Server, start func(d dirs, vault string) *testServer) *ircRig {
	t.Helper()
	addr := irc.Addr
	d := newDirs(t)
	// Where the server's services log people in, soft and kim are the
	// accounts alice and kim, not the nicks.
	user, accounts := "irc:", "false"
	if irc.Accounts {
		user, accounts = "irc:"+route.IRCAccount, "true"
	}
	users := map[string]any{
		"root": map[string]string{"token": rootToken},
		"users": []map[string]any{
			{"id": "soft", "token": softToken, "grants": []string{"bot:put", "session:create"}, "identities": []string{user + "alice"}},
			{"id": "kim", "token": kimToken, "grants": []string{"session:create"}, "identities": []string{user + "kim"}},
		},
	}
	writeJSON(t, d.users, users)
	writeIRCConnection(t, d.config, addr, map[string]string{"accounts": accounts})
	writeJSON(t, filepath.Join(d.config, "routes", "dm.json"), map[string]any{
		"id": "dm", "enabled": true, "connection": "local", "bot": "motion", "scope": map[string]string{"kind": "direct"},
	})
	vault := filepath.Join(t.TempDir(), "vault.json")
	writeJSON(t, vault, map[string]any{"connectors": map[string]any{"irc/local": map[string]any{"value": irctest.Password, "owners": []string{"root:" + hostName}}}})
	var srv *testServer
	if start == nil {
		srv = startServer(t, d.args("-vault", vault))
	} else {
		srv = start(d, vault)
	}
	soft := dial(testCtx(t), t, srv, softToken, byBearer)
	soft.initialize(t, "soft")
	soft.makeBot(t, "motion", `{"name":"Motion"}`)
	return &ircRig{irc: irc, srv: srv, soft: soft, dirs: d, vault: vault}
}

// writeIRCConnection writes config's connections.json: the IRC
// connection local to addr as the nick motion, its password from the
// vault, with more settings.
func writeIRCConnection(t *testing.T, config, addr string, more map[string]string) {
	t.Helper()
	settings := map[string]string{"server": addr, "nick": "motion", "tls": "false"}
	maps.Copy(settings, more)
	writeJSON(t, filepath.Join(config, "connections.json"), map[string]any{"connections": []map[string]any{{
		"id": "local", "network": "irc", "enabled": true, "settings": settings,
		"secrets": map[string]string{"password": "connectors://irc/local"},
	}}})
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// pairingCode is the code the bot motion answers an unmapped IRC user
// with, asked until it answers one.
func pairingCode(t *testing.T, guest *irctest.Person) string {
	t.Helper()
	var code string
	waitUntil(t, "a pairing code", func() bool {
		guest.Send("PRIVMSG motion :hello?")
		got := guest.Wait("PRIVMSG guest")
		if i := strings.Index(got, "the code "); i >= 0 && len(got) >= i+len("the code ")+9 {
			code = got[i+len("the code ") : i+len("the code ")+9]
			return true
		}
		return false
	})
	return code
}

// waitForBot waits until the bot's nick (motion when none) is on the IRC
// server.
func waitForBot(t *testing.T, p *irctest.Person, nick ...string) {
	t.Helper()
	n := "motion"
	if len(nick) > 0 {
		n = nick[0]
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		p.Send("ISON " + n)
		if strings.HasSuffix(p.Wait(" 303 "), ":"+n) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the bot did not come onto the IRC server")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestEndToEndAPersonTalksToTheirBotFromIRC(t *testing.T) {
	t.Parallel()
	r := newIRCRig(t)
	alice := r.irc.Person(t, "alice")
	waitForBot(t, alice)
	alice.Send("PRIVMSG motion :hello from IRC")
	if got := alice.Wait("PRIVMSG alice"); !strings.HasSuffix(got, ":Motion heard: hello from IRC") {
		t.Fatalf("alice got %q", got)
	}
	// The chat is soft's, listed with the bot like any chat of theirs.
	var list struct {
		Items []struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"items"`
	}
	r.soft.result(t, "listSessions", map[string]any{}, &list)
	chats := 0
	for _, it := range list.Items {
		if strings.Contains(string(it.Meta["ahpd.bot"]), `"id":"motion"`) && strings.Contains(string(it.Meta["ahpd.turns"]), "hello from IRC") {
			chats++
		}
	}
	if chats != 1 {
		t.Errorf("soft lists %d chats with motion begun from IRC, want 1", chats)
	}
	// A question is answered with a number, and a stop stops.
	alice.Send("PRIVMSG motion :ask which colour?")
	alice.Wait("which colour?")
	alice.Send("PRIVMSG motion :teal")
	if got := alice.Wait("PRIVMSG alice"); !strings.HasSuffix(got, ":you said: teal") {
		t.Errorf("after the answer alice got %q", got)
	}
}

func TestEndToEndIRCUsersTheHostDoesNotKnowOrWhoMayNotReadTheBotAreAnsweredSo(t *testing.T) {
	t.Parallel()
	r := newIRCRig(t)
	mallory := r.irc.Person(t, "mallory")
	waitForBot(t, mallory)
	mallory.Send("PRIVMSG motion :let me in")
	if got := mallory.Wait("PRIVMSG mallory"); !strings.Contains(got, `"irc:mallory@127.0.0.1"`) {
		t.Errorf("an unknown IRC user got %q", got)
	}
	kim := r.irc.Person(t, "kim")
	kim.Send("PRIVMSG motion :and me?")
	if got := kim.Wait("PRIVMSG kim"); !strings.Contains(got, "I could not reach the bot motion for you") {
		t.Errorf("kim, who may not read motion, got %q", got)
	}
}

func TestEndToEndTheRouteMethodsListTheConnectionWithoutItsCredential(t *testing.T) {
	t.Parallel()
	r := newIRCRig(t)
	var raw string
	if !waittest.Within(20*time.Second, func() bool {
		raw = string(r.soft.result(t, "x-ahpd/routeConnections", map[string]any{}, nil))
		if strings.Contains(raw, "connectors://") || strings.Contains(raw, irctest.Password) {
			t.Fatalf("the connections show a credential: %s", raw)
		}
		return strings.Contains(raw, `"state":"connected"`)
	}) {
		t.Fatalf("the connection never read as connected: %s", raw)
	}
	raw = string(r.soft.result(t, "x-ahpd/routeList", map[string]any{"bot": "motion"}, nil))
	if !strings.Contains(raw, `"id":"dm"`) {
		t.Errorf("soft's routes to motion: %s", raw)
	}
}

// TestREADMEIRCDemoAnswersOnIRC runs what the README's IRC section says:
// scripts/irc-demo.sh's folder and command, against a local IRC server,
// and a person who messages the bot from IRC is answered.
func TestREADMEIRCDemoAnswersOnIRC(t *testing.T) {
	t.Parallel()
	irc := irctest.StartOpen(t)
	addr := irc.Addr
	dir := t.TempDir()
	cmd := exec.Command("bash", filepath.Join("..", "..", "scripts", "irc-demo.sh"))
	cmd.Env = append(os.Environ(), "BOTS_IRC_DEMO_DIR="+dir, "BOTS_IRC_DEMO_SERVER="+addr, "BOTS_IRC_DEMO_PRINT=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("irc-demo.sh: %v\n%s", err, out)
	}
	words := strings.Fields(string(out))
	i := slices.Index(words, "./examples/server")
	if len(words) < 3 || words[0] != "go" || i < 0 {
		t.Fatalf("irc-demo.sh would run %q", out)
	}
	startServer(t, append(words[i+1:], "-addr", "127.0.0.1:0", "-log-level", "warn"))
	me := irc.Person(t, "me")
	waitForBot(t, me, "helper")
	me.Send("PRIVMSG helper :hello")
	if got := me.Wait("PRIVMSG me"); !strings.HasSuffix(got, ":Helper heard: hello") {
		t.Fatalf("me got %q", got)
	}
}

// newNetworkRig is the reference server with soft as identity on one
// connection conn (its secrets in a vault of its own) and a route of
// anyone's direct messages to the bot motion.
func newNetworkRig(t *testing.T, identity string, conn map[string]any, secrets map[string]string) *testServer {
	t.Helper()
	d := newDirs(t)
	writeJSON(t, d.users, map[string]any{"root": map[string]string{"token": rootToken},
		"users": []map[string]any{{"id": "soft", "token": softToken, "grants": []string{"bot:put", "session:create"}, "identities": []string{identity}}}})
	refs := map[string]string{}
	entries := map[string]any{}
	for name, value := range secrets {
		ref := conn["network"].(string) + "/" + conn["id"].(string) + "-" + strings.ToLower(name)
		refs[name] = "connectors://" + ref
		entries[ref] = map[string]any{"value": value, "owners": []string{"root:" + hostName}}
	}
	conn["enabled"], conn["secrets"] = true, refs
	writeJSON(t, filepath.Join(d.config, "connections.json"), map[string]any{"connections": []any{conn}})
	writeJSON(t, filepath.Join(d.config, "routes", "dm.json"), map[string]any{
		"id": "dm", "enabled": true, "connection": conn["id"], "bot": "motion", "scope": map[string]string{"kind": "direct"}})
	vault := filepath.Join(t.TempDir(), "vault.json")
	writeJSON(t, vault, map[string]any{"connectors": entries})
	srv := startServer(t, d.args("-vault", vault))
	soft := dial(testCtx(t), t, srv, softToken, byBearer)
	soft.initialize(t, "soft")
	soft.makeBot(t, "motion", `{"name":"Motion"}`)
	return srv
}

// waitUntil polls cond until it holds, for 20 seconds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !waittest.Within(20*time.Second, cond) {
		t.Fatalf("20 s without %s", what)
	}
}

func TestEndToEndAPersonTalksToTheirBotFromTelegram(t *testing.T) {
	t.Parallel()
	f := telegramtest.Start(t)
	newNetworkRig(t, "telegram:1001", map[string]any{"id": "tg", "network": "telegram", "settings": map[string]string{"api": f.URL}},
		map[string]string{"token": telegramtest.Token})
	f.Push(telegramtest.PrivateText(1001, "hello from Telegram"))
	waitUntil(t, "the bot's answer on Telegram", func() bool {
		f.Mu.Lock()
		defer f.Mu.Unlock()
		return len(f.Sent) > 0
	})
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if got := f.Sent[0]; got["text"] != "Motion heard: hello from Telegram" || got["chat_id"] != float64(1001) {
		t.Errorf("Telegram was sent %v", got)
	}
}

func TestEndToEndAPersonTalksToTheirBotFromSlackThroughTheServersHook(t *testing.T) {
	t.Parallel()
	f := slacktest.Start(t)
	srv := newNetworkRig(t, "slack:U1", map[string]any{"id": "team", "network": "slack", "settings": map[string]string{"api": f.API}},
		map[string]string{"token": slacktest.Token, "signingSecret": slacktest.Secret})
	body := slacktest.Event("Ev1", "D1", "im", "U1", "hello from Slack", "1700000000.000001", "")
	post := func(key string) int { return postSlack(t, srv, "application/json", body, key) }
	if code := post("another-secret-0123456789"); code != http.StatusUnauthorized && code != http.StatusServiceUnavailable {
		t.Errorf("a forged event was answered %d", code)
	}
	waitUntil(t, "the hook taking Slack's event", func() bool { return post(slacktest.Secret) == http.StatusOK })
	waitUntil(t, "the bot's answer on Slack", func() bool {
		f.Mu.Lock()
		defer f.Mu.Unlock()
		return len(f.Posted) > 0
	})
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if got := f.Posted[0]; got.Get("text") != "Motion heard: hello from Slack" || got.Get("channel") != "D1" || len(f.Posted) != 1 {
		t.Errorf("Slack was posted %v (%d posts)", got, len(f.Posted))
	}
}

// TestEndToEndAPersonTalksToTheirBotFromSlackInSocketMode: with an app
// token the server opens a WebSocket to Slack itself, so a host with no
// public address is talked to from Slack; when Slack asks for a new
// connection, the relay opens one and the conversation goes on.
func TestEndToEndAPersonTalksToTheirBotFromSlackInSocketMode(t *testing.T) {
	t.Parallel()
	f := slacktest.Start(t)
	srv := newNetworkRig(t, "slack:U1", map[string]any{"id": "team", "network": "slack", "settings": map[string]string{"api": f.API}},
		map[string]string{"token": slacktest.Token, "appToken": slacktest.AppToken})
	posted := func(n int) func() bool {
		return func() bool {
			f.Mu.Lock()
			defer f.Mu.Unlock()
			return len(f.Posted) >= n
		}
	}
	ws := f.Socket(t)
	f.Envelope(t, ws, "events_api", slacktest.Event("Ev1", "D1", "im", "U1", "hello from Slack", "1700000000.000001", ""))
	waitUntil(t, "the bot's answer on Slack", posted(1))
	// Nothing reaches it through the server's hook: it has no signing
	// secret to check a request against.
	forged := slacktest.Event("Ev9", "D1", "im", "U1", "forged", "1700000000.000009", "")
	if code := postSlack(t, srv, "application/json", forged, slacktest.Secret); code != http.StatusNotFound {
		t.Errorf("a request to the hook of a Socket Mode connection was answered %d, want 404", code)
	}
	f.Envelope(t, ws, "disconnect", "")
	ws = f.Socket(t) // the relay dials again
	f.Envelope(t, ws, "events_api", slacktest.Event("Ev2", "D1", "im", "U1", "still there?", "1700000000.000002", ""))
	waitUntil(t, "the bot's second answer on Slack", posted(2))
	f.Mu.Lock()
	defer f.Mu.Unlock()
	for i, want := range []string{"Motion heard: hello from Slack", "Motion heard: still there?"} {
		if got := f.Posted[i]; got.Get("text") != want || got.Get("channel") != "D1" {
			t.Errorf("Slack's post %d was %v, want %q", i+1, got, want)
		}
	}
	if len(f.Posted) != 2 || f.Opened != 2 {
		t.Errorf("Slack was posted %d times over %d connections, want 2 over 2", len(f.Posted), f.Opened)
	}
}

// TestEndToEndNoRouteCredentialReachesANetworkOrAFile: the IRC
// connection's password (from the vault) never goes to the network, even
// when a bot's reply would carry it, and no file the server wrote holds it.
func TestEndToEndNoRouteCredentialReachesANetworkOrAFile(t *testing.T) {
	t.Parallel()
	r := newIRCRig(t)
	alice := r.irc.Person(t, "alice")
	waitForBot(t, alice)
	alice.Send("PRIVMSG motion :hello")
	alice.Wait("Motion heard: hello")
	alice.Send("PRIVMSG motion :say " + irctest.Password)
	got := alice.Wait("PRIVMSG alice")
	if strings.Contains(got, irctest.Password) || !strings.Contains(got, "Motion heard: say ") {
		t.Errorf("the network was sent %q", got)
	}
	// What the person typed is theirs, kept in their chat's log; nothing
	// else the server wrote holds the credential.
	for _, dir := range []string{r.dirs.config, r.dirs.root} {
		filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.Contains(path, string(filepath.Separator)+"logs"+string(filepath.Separator)) {
				return nil
			}
			if data, err := os.ReadFile(path); err == nil && strings.Contains(string(data), irctest.Password) {
				t.Errorf("%s holds the connection's password", path)
			}
			return nil
		})
	}
}

func TestEndToEndAnIRCUserPairsWithThePersonWhoEntersTheirCode(t *testing.T) {
	t.Parallel()
	r := newIRCRig(t)
	writeJSON(t, filepath.Join(r.dirs.config, "routes", "dm.json"), map[string]any{
		"id": "dm", "enabled": true, "connection": "local", "bot": "motion", "scope": map[string]string{"kind": "direct"}, "unmapped": "pair"})
	guest := r.irc.Person(t, "guest")
	waitForBot(t, guest)
	code := pairingCode(t, guest)
	var paired struct{ Identity string }
	r.soft.result(t, "x-ahpd/routePair", map[string]any{"code": code}, &paired)
	if paired.Identity != "irc:guest@127.0.0.1" {
		t.Fatalf("the pairing answered %+v", paired)
	}
	guest.Send("PRIVMSG motion :now?")
	if got := guest.Wait("PRIVMSG guest"); !strings.HasSuffix(got, ":Motion heard: now?") {
		t.Errorf("the paired account got %q", got)
	}
	// soft lists the account as hers, and lets it go: it is a stranger
	// again.
	var list struct{ Pairings []route.Pairing }
	r.soft.result(t, "x-ahpd/routePairings", map[string]any{}, &list)
	if !slices.Equal(list.Pairings, []route.Pairing{{Identity: "irc:guest@127.0.0.1", Person: "soft"}}) {
		t.Fatalf("soft's pairings: %+v", list.Pairings)
	}
	r.soft.result(t, "x-ahpd/routeUnpair", map[string]any{"identity": "irc:guest@127.0.0.1"}, nil)
	guest.Send("PRIVMSG motion :and now?")
	if got := guest.Wait("PRIVMSG guest"); !strings.Contains(got, "pair this account with you") {
		t.Errorf("the account let go got %q, want a pairing code", got)
	}
}

// TestEndToEndAnIRCPairingIsOneServersAndAUsersFileNickAnyServers: the
// host meets IRC on two servers; a nick paired on one is a stranger on
// the other, who is asked to pair, while irc:alice in the users file is
// alice on both.
func TestEndToEndAnIRCPairingIsOneServersAndAUsersFileNickAnyServers(t *testing.T) {
	t.Parallel()
	one, two := irctest.Start(t), irctest.Start(t)
	d := newDirs(t)
	writeJSON(t, d.users, map[string]any{"root": map[string]string{"token": rootToken}, "users": []map[string]any{
		{"id": "soft", "token": softToken, "grants": []string{"bot:put", "session:create"}, "identities": []string{"irc:alice"}}}})
	var conns []map[string]any
	secrets := map[string]any{}
	// The second server is named localhost, the first 127.0.0.1: two
	// servers to the host, as two networks' would be.
	for id, server := range map[string]string{"one": one.Addr, "two": strings.Replace(two.Addr, "127.0.0.1", "localhost", 1)} {
		conns = append(conns, map[string]any{"id": id, "network": "irc", "enabled": true,
			"settings": map[string]string{"server": server, "nick": "motion", "tls": "false"},
			"secrets":  map[string]string{"password": "connectors://irc/" + id}})
		secrets["irc/"+id] = map[string]any{"value": irctest.Password, "owners": []string{"root:" + hostName}}
		writeJSON(t, filepath.Join(d.config, "routes", id+".json"), map[string]any{
			"id": id, "enabled": true, "connection": id, "bot": "motion", "scope": map[string]string{"kind": "direct"}, "unmapped": "pair"})
	}
	writeJSON(t, filepath.Join(d.config, "connections.json"), map[string]any{"connections": conns})
	vault := filepath.Join(t.TempDir(), "vault.json")
	writeJSON(t, vault, map[string]any{"connectors": secrets})
	srv := startServer(t, d.args("-vault", vault))
	soft := dial(testCtx(t), t, srv, softToken, byBearer)
	soft.initialize(t, "soft")
	soft.makeBot(t, "motion", `{"name":"Motion"}`)

	guest := one.Person(t, "guest")
	waitForBot(t, guest)
	var paired struct{ Identity string }
	soft.result(t, "x-ahpd/routePair", map[string]any{"code": pairingCode(t, guest)}, &paired)
	if paired.Identity != "irc:guest@127.0.0.1" {
		t.Fatalf("the pairing answered %+v, want the nick on the first server", paired)
	}
	guest.Send("PRIVMSG motion :paired here")
	if got := guest.Wait("PRIVMSG guest"); !strings.HasSuffix(got, ":Motion heard: paired here") {
		t.Fatalf("the paired nick got %q", got)
	}
	stranger := two.Person(t, "guest")
	waitForBot(t, stranger)
	stranger.Send("PRIVMSG motion :am I soft?")
	if got := stranger.Wait("PRIVMSG guest"); !strings.Contains(got, "pair this account with you") {
		t.Fatalf("the same nick on the other server got %q, want a pairing code", got)
	}
	for _, alice := range []*irctest.Person{one.Person(t, "alice"), two.Person(t, "alice")} {
		alice.Send("PRIVMSG motion :hello")
		if got := alice.Wait("PRIVMSG alice"); !strings.HasSuffix(got, ":Motion heard: hello") {
			t.Errorf("irc:alice of the users file got %q", got)
		}
	}
}

// TestEndToEndWithIRCAccountsAPersonIsTheirAccountNotANick: on a server
// whose services log people in, a connection with accounts takes the
// users file's irc:account:alice for alice under any nick she goes by,
// and whoever holds the nick alice without logging in to her account for
// no one, told to log in.
func TestEndToEndWithIRCAccountsAPersonIsTheirAccountNotANick(t *testing.T) {
	t.Parallel()
	r := newIRCRigOn(t, irctest.StartWithAccounts(t), nil)
	alice := r.irc.Person(t, "alice")
	waitForBot(t, alice)
	alice.Register("alice-password-0123")
	alice.Send("NICK alice_away")
	alice.Wait(" NICK ")
	alice.Send("PRIVMSG motion :hello")
	if got := alice.Wait("PRIVMSG alice_away"); !strings.HasSuffix(got, ":Motion heard: hello") {
		t.Fatalf("alice, logged in under another nick, got %q", got)
	}
	mallory := r.irc.Person(t, "alice")
	mallory.Send("PRIVMSG motion :I am alice, answer me")
	if got := mallory.Wait("PRIVMSG alice"); !strings.Contains(got, "I pass on only what people logged in") {
		t.Fatalf("the nick alice, not logged in, got %q", got)
	}
}

// TestDBKillDashNineOfTheInstanceHoldingAnIRCConnectionHandsItToAnother:
// two instances on one database, each with the IRC connection in its
// connections.json, and a route deployed once to the database: one holds
// the connection, and a code it gives is paired on the other's page; kill
// -9 of it, and the other takes it over within the lease: the
// conversation goes on, each message answered once.
func TestDBKillDashNineOfTheInstanceHoldingAnIRCConnectionHandsItToAnother(t *testing.T) {
	t.Parallel()
	irc := irctest.Start(t)
	bin := buildServer(t)
	base := t.TempDir()
	db, root, users := pgtest.URL(t), filepath.Join(base, "bots"), filepath.Join(base, "users.json")
	writeJSON(t, users, map[string]any{"root": map[string]string{"token": rootToken}, "users": []map[string]any{
		{"id": "soft", "token": softToken, "grants": []string{"bot:put", "session:create"}, "identities": []string{"irc:alice"}}}})
	vault := filepath.Join(base, "vault.json")
	writeJSON(t, vault, map[string]any{"connectors": map[string]any{"irc/local": map[string]any{"value": irctest.Password, "owners": []string{"root:" + hostName}}}})
	var cmds []*exec.Cmd
	var servers []*testServer
	for i := range 2 {
		config := filepath.Join(base, fmt.Sprintf("config-%d", i))
		writeJSON(t, filepath.Join(config, "connections.json"), map[string]any{"connections": []any{map[string]any{
			"id": "local", "network": "irc", "enabled": true,
			"settings": map[string]string{"server": irc.Addr, "nick": "motion", "tls": "false"},
			"secrets":  map[string]string{"password": "connectors://irc/local"}}}})
		cmd, s := startKillable(t, bin, "-db", db, "-config", config, "-root", root, "-users", users, "-vault", vault, "-lease-ttl", "1s")
		cmds, servers = append(cmds, cmd), append(servers, s)
	}
	ctx := testCtx(t)
	soft := dial(ctx, t, servers[0], softToken, byBearer)
	soft.initialize(t, "soft")
	soft.makeBot(t, "motion", `{"name":"Motion"}`)
	// With a database the routes live there: one deploy reaches both.
	soft.result(t, "x-ahpd/routeDeploy", map[string]any{"broad": true, "route": map[string]any{
		"id": "dm", "enabled": true, "connection": "local", "bot": "motion", "scope": map[string]string{"kind": "direct"}, "unmapped": "pair"}}, nil)
	alice := irc.Person(t, "alice")
	waitForBot(t, alice)
	alice.Send("PRIVMSG motion :first")
	if got := alice.Wait("PRIVMSG alice"); !strings.HasSuffix(got, ":Motion heard: first") {
		t.Fatalf("alice got %q", got)
	}
	// Which instance holds the connection?
	holder := -1
	var ops []*client
	for i, s := range servers {
		ops = append(ops, connectTo(ctx, t, s, fmt.Sprintf("ops-%d", i)))
	}
	waitUntil(t, "one instance holding the connection and the other waiting", func() bool {
		states := make([]string, 2)
		for i, c := range ops {
			states[i] = string(c.result(t, "x-ahpd/routeConnections", map[string]any{}, nil))
		}
		for i := range 2 {
			if strings.Contains(states[i], `"state":"connected"`) && strings.Contains(states[1-i], `"state":"elsewhere"`) {
				holder = i
				return true
			}
		}
		return false
	})
	// A code the holder gives is paired on the other instance's page.
	guest := irc.Person(t, "guest")
	code := pairingCode(t, guest)
	other := dial(ctx, t, servers[1-holder], softToken, byBearer)
	other.initialize(t, "soft-elsewhere")
	other.result(t, "x-ahpd/routePair", map[string]any{"code": code}, nil)
	guest.Send("PRIVMSG motion :paired?")
	if got := guest.Wait("PRIVMSG guest"); !strings.HasSuffix(got, ":Motion heard: paired?") {
		t.Fatalf("after pairing on the other instance the guest got %q", got)
	}
	if err := cmds[holder].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	// The dead instance's nick goes when the server notices; the other
	// instance comes on within the lease.
	waitUntil(t, "the dead instance's nick gone from IRC", func() bool {
		alice.Send("ISON motion")
		return !strings.HasSuffix(alice.Wait(" 303 "), ":motion")
	})
	waitForBot(t, alice)
	alice.Send("PRIVMSG motion :still there?")
	if got := alice.Wait("PRIVMSG alice"); !strings.HasSuffix(got, ":Motion heard: still there?") {
		t.Fatalf("alice got %q", got)
	}
	t.Logf("the connection moved %v after kill -9", time.Since(began).Round(time.Millisecond))
	alice.Send("PRIVMSG motion :once")
	if got := alice.Wait("PRIVMSG alice"); !strings.HasSuffix(got, ":Motion heard: once") {
		t.Fatalf("alice got %q", got)
	}
	noMoreAnswers(t, alice)
}

func TestEndToEndARoomOnIRCApprovalsAndAStop(t *testing.T) {
	t.Parallel()
	r := newIRCRig(t)
	writeJSON(t, filepath.Join(r.dirs.config, "connections.json"), map[string]any{"connections": []any{map[string]any{
		"id": "local", "network": "irc", "enabled": true,
		"settings": map[string]string{"server": r.irc.Addr, "nick": "motion", "tls": "false", "channels": "#motion"},
		"secrets":  map[string]string{"password": "connectors://irc/local"}}}})
	writeJSON(t, filepath.Join(r.dirs.config, "routes", "room.json"), map[string]any{
		"id": "room", "enabled": true, "connection": "local", "bot": "motion", "scope": map[string]string{"kind": "group", "id": "#motion"}})
	alice := r.irc.Person(t, "alice")
	alice.Send("JOIN #motion")
	alice.Wait(" 366 ")
	// The connection dials again with the channel once the file changed:
	// wait for the bot in the room.
	waitUntil(t, "the bot in #motion", func() bool {
		alice.Send("NAMES #motion")
		l := alice.Wait(" 353 ")
		names := strings.Fields(l[strings.LastIndex(l, " :")+2:])
		return slices.Contains(names, "motion") || slices.Contains(names, "@motion")
	})
	alice.Send("PRIVMSG #motion :approve")
	alice.Wait("PRIVMSG #motion :The bot asks to run")
	alice.Wait("PRIVMSG #motion :2. Deny")
	alice.Wait("PRIVMSG #motion :Reply with a number.")
	alice.Send("PRIVMSG #motion :/approve")
	if got := alice.Wait("PRIVMSG #motion"); !strings.HasSuffix(got, ":approved") {
		t.Errorf("after /approve the room got %q", got)
	}
	alice.Send("PRIVMSG #motion :sleep 60")
	waitUntil(t, "the stop of the running turn", func() bool {
		alice.Send("PRIVMSG #motion :/stop")
		return strings.HasSuffix(alice.Wait("PRIVMSG #motion"), ":Stopped.")
	})
}

func TestEndToEndAPersonTalksToTheirBotFromXMPP(t *testing.T) {
	t.Parallel()
	srv := xmpptest.Start(t)
	botJID := srv.Register(t, "motion", "motion-password-0123")
	aliceJID := srv.Register(t, "alice", "alice-password-0123")
	newNetworkRig(t, "xmpp:"+aliceJID, map[string]any{"id": "jabber", "network": "xmpp",
		"settings": map[string]string{"jid": botJID, "server": srv.Addr, "tls": "false"}},
		map[string]string{"password": "motion-password-0123"})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	alice, err := xmpp.Network{}.Dial(ctx, route.Dial{Settings: map[string]string{"jid": aliceJID, "server": srv.Addr, "tls": "false"},
		Secrets: map[string]string{"password": "alice-password-0123"}})
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	// The bot comes online once the server has loaded: say hello until
	// it answers.
	var got route.Message
	waitUntil(t, "the bot's answer on XMPP", func() bool {
		if _, err := alice.Send(ctx, route.Scope{Kind: route.Direct, ID: botJID}, "hello from XMPP"); err != nil {
			t.Fatal(err)
		}
		rctx, rcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer rcancel()
		m, err := alice.Receive(rctx)
		got = m
		return err == nil
	})
	if got.Text != "Motion heard: hello from XMPP" || got.From != "xmpp:"+botJID {
		t.Errorf("alice received %+v", got)
	}
}

// TestEndToEndAServerKilledMidTurnAnswersNothingTwiceOnIRC: kill -9 of the
// server while a turn from IRC runs, and a restart on the same folders:
// the turn that died is not answered, the next message is, once.
func TestEndToEndAServerKilledMidTurnAnswersNothingTwiceOnIRC(t *testing.T) {
	t.Parallel()
	irc := irctest.Start(t)
	bin := buildServer(t)
	var cmd *exec.Cmd
	r := newIRCRigOn(t, irc, func(d dirs, vault string) *testServer {
		c, s := startKillable(t, bin, "-config", d.config, "-root", d.root, "-users", d.users, "-vault", vault)
		cmd = c
		return s
	})
	r.kill = func() {
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
	}
	alice := irc.Person(t, "alice")
	waitForBot(t, alice)
	alice.Send("PRIVMSG motion :sleep 30")
	// the turn runs once the bot's back session is working on it.
	waitUntil(t, "the turn running", func() bool {
		var list struct {
			Items []struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			} `json:"items"`
		}
		r.soft.result(t, "listSessions", map[string]any{}, &list)
		for _, it := range list.Items {
			if strings.Contains(string(it.Meta["ahpd.turns"]), "sleep 30") {
				return true
			}
		}
		return false
	})
	r.kill()
	// The restarted server's connection names itself "after the kill", so
	// that alice knows it from the dead one's, which the IRC server may
	// hold a moment longer.
	writeIRCConnection(t, r.dirs.config, irc.Addr, map[string]string{"realname": "after the kill"})
	startKillable(t, bin, "-config", r.dirs.config, "-root", r.dirs.root, "-users", r.dirs.users, "-vault", r.vault)
	waitUntil(t, "the restarted server on IRC", func() bool {
		alice.Send("WHOIS motion")
		restarted := false
		for {
			l := alice.Wait(" motion ")
			restarted = restarted || strings.Contains(l, " 311 ") && strings.HasSuffix(l, ":after the kill")
			if strings.Contains(l, " 318 ") || strings.Contains(l, " 401 ") { // the end of WHOIS, or no such nick
				return restarted
			}
		}
	})
	alice.Send("PRIVMSG motion :after the restart")
	if got := alice.Wait("PRIVMSG alice"); !strings.HasSuffix(got, ":Motion heard: after the restart") {
		t.Fatalf("alice got %q", got)
	}
	noMoreAnswers(t, alice)
}

// TestWebPageShowsABotsRoutesChecksOneAndPairsAChatAccount: on a server
// with an IRC route, the bot's page lists the route with its connection's
// state, checks it and turns it off and on; the list's "Pair a chat
// account" pairs the account a code was given to; the bot's page removes
// the route.
func TestWebPageShowsABotsRoutesChecksOneAndPairsAChatAccount(t *testing.T) {
	t.Parallel()
	b := browser(t)
	r := newIRCRig(t)
	writeJSON(t, filepath.Join(r.dirs.config, "routes", "dm.json"), map[string]any{
		"id": "dm", "name": "Motion on IRC", "enabled": true, "connection": "local", "bot": "motion",
		"scope": map[string]string{"kind": "direct"}, "unmapped": "pair"})
	guest := r.irc.Person(t, "guest")
	waitForBot(t, guest)
	code := pairingCode(t, guest)
	base := "http://" + r.srv.addr
	tab := newTab(t, b, base)
	tab.signIn(softToken)
	tab.visit("#/bots/motion")
	tab.until("the route", textOf("#route-list", "Motion on IRC"))
	tab.until("its state", textOf("#route-list", "connected"))
	tab.click("#route-list button")
	tab.until("the check's verdict", textOf("#route-list", "Ready: messages flow."))
	tab.until("its warning", textOf("#route-list", "kim (irc:kim) may not read bot://motion"))
	tab.shot("bot-routes")
	tab.visit("#/")
	tab.until("the pairing form", `!document.querySelector("#pair").hidden`)
	tab.click("#pair summary")
	tab.fill("#pair-code", code)
	tab.click("#pair button[type=submit]")
	tab.until("the pairing said", textOf("#pair-said", "Paired: irc:guest@127.0.0.1"))
	tab.until("the account listed as paired", textOf("#pairings", "irc:guest@127.0.0.1"))
	tab.shot("pairings")
	tab.readable("the paired accounts")
	guest.Send("PRIVMSG motion :now?")
	if got := guest.Wait("PRIVMSG guest"); !strings.HasSuffix(got, ":Motion heard: now?") {
		t.Errorf("the paired account got %q", got)
	}
	tab.click("#pairings .unpair")
	tab.until("the account let go", textOf("#pair-said", "irc:guest@127.0.0.1 is no longer paired")+` && !document.querySelector("#pairings li")`)
	guest.Send("PRIVMSG motion :still?")
	if got := guest.Wait("PRIVMSG guest"); !strings.Contains(got, "pair this account with you") {
		t.Errorf("the account let go got %q, want a pairing code", got)
	}
	tab.visit("#/bots/motion")
	tab.click("#route-list .route-toggle")
	tab.until("the route off", textOf("#route-list", "disabled"))
	tab.click("#route-list .route-toggle")
	tab.until("the route on again", `!document.querySelector("#route-list").textContent.includes("disabled") && document.querySelector("#route-list .route-toggle").textContent == "Turn off"`)
	tab.click("#route-list .route-remove")
	tab.until("the route gone", textOf("#route-list", "No chat network sends messages to this bot"))
	if _, err := os.Stat(filepath.Join(r.dirs.config, "routes", "dm.json")); !os.IsNotExist(err) {
		t.Errorf("the removed route's file: %v", err)
	}
	// The page adds a route: a group without its name is refused as the
	// server says, then everyone's direct messages are routed, and alice's
	// reach the bot again. With no route left the bot leaves IRC; the
	// preflight of the one added dials the connection to try it, which
	// needs the nick free.
	alice := r.irc.Person(t, "alice")
	waitUntil(t, "the bot off IRC once no route uses its connection", func() bool {
		alice.Send("ISON motion")
		return strings.HasSuffix(alice.Wait(" 303 "), ":")
	})
	tab.click("#route-add summary")
	eval[bool](tab, `(s => (s.value = "group", s.dispatchEvent(new Event("change")), true))(document.querySelector("#route-add select[name=kind]"))`)
	tab.click("#route-add button[type=submit]")
	tab.until("the refusal", textOf("#route-add .route-said", "was not saved"))
	tab.shot("route-form")
	tab.readable("the form that adds a route")
	eval[bool](tab, `(s => (s.value = "direct", s.dispatchEvent(new Event("change")), true))(document.querySelector("#route-add select[name=kind]"))`)
	tab.click("#route-add button[type=submit]")
	tab.until("the route added", textOf("#route-list", "anyone's direct messages"))
	tab.shot("route-added")
	waitForBot(t, alice)
	alice.Send("PRIVMSG motion :routed from the page?")
	if got := alice.Wait("PRIVMSG alice"); !strings.HasSuffix(got, ":Motion heard: routed from the page?") {
		t.Errorf("alice, on the route the page added, got %q", got)
	}
}

func TestEndToEndAnApprovalOnTelegramIsAButtonPressed(t *testing.T) {
	t.Parallel()
	f := telegramtest.Start(t)
	newNetworkRig(t, "telegram:1001", map[string]any{"id": "tg", "network": "telegram", "settings": map[string]string{"api": f.URL}},
		map[string]string{"token": telegramtest.Token})
	f.Push(telegramtest.PrivateText(1001, "approve"))
	var keyboard []any
	waitUntil(t, "the approval's buttons", func() bool {
		f.Mu.Lock()
		defer f.Mu.Unlock()
		for _, m := range f.Sent {
			if rm, ok := m["reply_markup"].(map[string]any); ok {
				keyboard = rm["inline_keyboard"].([]any)
				return true
			}
		}
		return false
	})
	approve := keyboard[0].([]any)[0].(map[string]any)
	if approve["text"] != "Approve" {
		t.Fatalf("the first button is %v", approve)
	}
	f.Push(map[string]any{"callback_query": map[string]any{"id": "cb-1", "data": approve["callback_data"],
		"from":    map[string]any{"id": 1001, "first_name": "Alice"},
		"message": map[string]any{"message_id": 1, "chat": map[string]any{"id": 1001, "type": "private"}}}})
	waitUntil(t, "the approved reply", func() bool {
		f.Mu.Lock()
		defer f.Mu.Unlock()
		return slices.ContainsFunc(f.Sent, func(m map[string]any) bool { return m["text"] == "approved" })
	})
}

func TestEndToEndAnApprovalOnSlackIsAButtonPressed(t *testing.T) {
	t.Parallel()
	f := slacktest.Start(t)
	srv := newNetworkRig(t, "slack:U1", map[string]any{"id": "team", "network": "slack", "settings": map[string]string{"api": f.API}},
		map[string]string{"token": slacktest.Token, "signingSecret": slacktest.Secret})
	post := func(contentType, body string) int { return postSlack(t, srv, contentType, body, slacktest.Secret) }
	waitUntil(t, "the hook taking Slack's event", func() bool {
		return post("application/json", slacktest.Event("Ev1", "D1", "im", "U1", "approve", "1700000000.000001", "")) == http.StatusOK
	})
	var value, action string
	waitUntil(t, "the approval's buttons", func() bool {
		f.Mu.Lock()
		defer f.Mu.Unlock()
		for _, p := range f.Posted {
			var blocks []map[string]any
			if json.Unmarshal([]byte(p.Get("blocks")), &blocks) == nil && len(blocks) == 2 {
				b := blocks[1]["elements"].([]any)[0].(map[string]any)
				value, action = b["value"].(string), b["action_id"].(string)
				return true
			}
		}
		return false
	})
	payload, _ := json.Marshal(map[string]any{"type": "block_actions", "trigger_id": "T-1",
		"user": map[string]any{"id": "U1", "name": "alice"}, "channel": map[string]any{"id": "D1"},
		"message": map[string]any{"ts": "1700000000.000002"},
		"actions": []any{map[string]any{"block_id": "question", "action_id": action, "value": value, "action_ts": "1.5", "type": "button"}}})
	if code := post("application/x-www-form-urlencoded", url.Values{"payload": {string(payload)}}.Encode()); code != http.StatusOK {
		t.Fatalf("the press was answered %d", code)
	}
	waitUntil(t, "the approved reply", func() bool {
		f.Mu.Lock()
		defer f.Mu.Unlock()
		return slices.ContainsFunc(f.Posted, func(p url.Values) bool { return p.Get("text") == "approved" })
	})
}

// postSlack posts body to the server's hook of the connection "team" as
// Slack does, signed with key, and answers the status.
func postSlack(t *testing.T, srv *testServer, contentType, body, key string) int {
	t.Helper()
	r, err := http.NewRequest(http.MethodPost, "http://"+srv.addr+"/hooks/team", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", contentType)
	slacktest.Sign(r, body, time.Now(), key)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// noMoreAnswers fails t when an answer to p comes before the server's
// answer to a PING sent now: whatever the bot said, it said before.
func noMoreAnswers(t *testing.T, p *irctest.Person) {
	t.Helper()
	p.Send("PING :fence")
	for {
		l := p.Wait("")
		if strings.Contains(l, "fence") {
			return
		}
		if strings.Contains(l, "PRIVMSG") {
			t.Errorf("another answer came: %q", l)
		}
	}
}
