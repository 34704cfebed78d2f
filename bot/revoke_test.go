package bot_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/access/usersfile"
	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/lease/memlease"
	"github.com/agenthost/bots/record/memrecord"
)

// Tokens of the users file the revocation tests write.
const (
	rootTkn = "root-token-0123456789abcdef"
	softTkn = "soft-token-0123456789abcdef"
	tessTkn = "tess-token-0123456789abcdef"
)

// revokeUsers is a users file: soft makes bots and is in backend; tess
// opens chats, with the grants and memberships given.
func revokeUsers(tessGrants, tessTeams string) string {
	return `{"root": {"token": "` + rootTkn + `"}, "users": [
		{"id": "soft", "token": "` + softTkn + `", "grants": ["bot:put", "session:create"], "memberships": ["backend"]},
		{"id": "tess", "token": "` + tessTkn + `", "grants": [` + tessGrants + `], "memberships": [` + tessTeams + `]}]}`
}

// newRevokeEnv is a chat env whose users directory is a users file,
// read again when the test says (reload).
func newRevokeEnv(t *testing.T, users string) (*chatEnv, func(users string)) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users.json")
	if err := os.WriteFile(path, []byte(users), 0o600); err != nil {
		t.Fatal(err)
	}
	dir, err := usersfile.OpenDirectory(usersfile.DirectoryConfig{Path: path, Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	e := &chatEnv{t: t, base: t.TempDir(), store: memrecord.New(), users: dir}
	e.configDir = filepath.Join(e.base, "config")
	e.options.Root = filepath.Join(e.base, "bots")
	e.start()
	reload := func(users string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(users), 0o600); err != nil {
			t.Fatal(err)
		}
		if changed, err := dir.Reload(context.Background()); err != nil || !changed {
			t.Fatalf("reload the users file: changed %v, %v", changed, err)
		}
	}
	return e, reload
}

// TestLosingReadOfABotEndsWhatThePersonHasOpenWithItWithinASecond: a
// person who may no longer read a bot - removed from the team that owns
// it, their bot:get grant taken away, the bot given to another owner -
// loses within a second what they had open with it: their subscriptions
// to its chat end with a reason, the turn running there is cancelled (in
// the chat's log too), their back session with it is disposed of, the
// chat leaves their list, and a new subscribe or turn is refused. Root
// keeps the chat.
func TestLosingReadOfABotEndsWhatThePersonHasOpenWithItWithinASecond(t *testing.T) {
	t.Parallel()
	soft := access.Principal{User: "soft", Grants: []string{"bot:put"}, Memberships: []string{"backend"}}
	for _, c := range []struct {
		name   string
		before string // tess in the users file before
		owner  string // the bot's owner
		revoke func(t *testing.T, e *chatEnv, reload func(string))
		// closes says tess's token no longer holds: her connection is
		// closed (TestReauthenticateClosesConnectionsWhoseTokenNoLongerHoldsAndEndsTheirSubscriptions)
		// rather than her subscriptions ended one by one.
		closes bool
	}{
		{"RemovedFromTheOwningTeam", revokeUsers(`"session:create"`, `"backend"`), "team:backend", func(t *testing.T, e *chatEnv, reload func(string)) {
			reload(revokeUsers(`"session:create"`, ``))
		}, false},
		{"ItsGrantTakenAway", revokeUsers(`"session:create", "bot:get"`, ``), "user:soft", func(t *testing.T, e *chatEnv, reload func(string)) {
			reload(revokeUsers(`"session:create"`, ``))
		}, false},
		{"TakenOutOfTheUsersFile", revokeUsers(`"session:create"`, `"backend"`), "team:backend", func(t *testing.T, e *chatEnv, reload func(string)) {
			reload(`{"root": {"token": "` + rootTkn + `"}, "users": [
				{"id": "soft", "token": "` + softTkn + `", "grants": ["bot:put", "session:create"], "memberships": ["backend"]}]}`)
		}, true},
		{"TheBotGivenToAnotherOwner", revokeUsers(`"session:create"`, `"backend"`), "team:backend", func(t *testing.T, e *chatEnv, reload func(string)) {
			// The wire never moves an owner: the store's record is
			// changed beneath the service, as a hand edit of bot.md is.
			got, err := e.store.Get(context.Background(), "team-bot")
			if err != nil {
				t.Fatal(err)
			}
			got.Record.Owner = "user:soft"
			if _, err := e.store.Update(context.Background(), got.Record, got.ETag); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e, reload := newRevokeEnv(t, c.before)
			if _, err := e.svc.Make(context.Background(), soft, "team-bot", []byte(`{"name": "Team", "owner": "`+c.owner+`"}`)); err != nil {
				t.Fatal(err)
			}
			tess := e.connect(t, tessTkn)
			tess.subscribe(ahp.RootURI)
			session, chat := tess.open("ahp-session:/tess", "team-bot")
			root := e.connect(t, rootTkn)
			root.subscribe(chat)
			tess.say(chat, "t1", "sleep 30")
			waittest.For(t, "tess's back session", func() bool { return len(backSessions(e, "user:tess")) == 1 })
			back := backSessions(e, "user:tess")[0]
			waittest.For(t, "the back session to be followed", func() bool {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				s, _, err := e.host.Follow(ctx, back)
				return err == nil && s.ActiveTurn != nil
			})

			start := time.Now()
			c.revoke(t, e, reload)
			reason := "You may no longer read bot://team-bot"
			ended := func() bool {
				if c.closes {
					select {
					case <-tess.done:
						return true
					default:
						return false
					}
				}
				tess.mu.Lock()
				defer tess.mu.Unlock()
				return len(tess.ended) == 2
			}
			cancelled := func() bool {
				root.mu.Lock()
				defer root.mu.Unlock()
				s := root.chats[chat]
				return s.ActiveTurn == nil && len(s.Turns) == 1 && s.Turns[0].State == ahp.TurnStateCancelled
			}
			removed := func() bool {
				if c.closes {
					return true // her connection, root subscription included, is gone
				}
				tess.mu.Lock()
				defer tess.mu.Unlock()
				return slices.Contains(tess.notes, "root/sessionRemoved "+session)
			}
			for !(ended() && cancelled() && removed() && len(backSessions(e, "user:tess")) == 0) {
				if time.Since(start) > time.Second {
					t.Fatalf("a second after: subscriptions ended %v, turn cancelled %v, chat removed from the list %v, back sessions %v",
						ended(), cancelled(), removed(), backSessions(e, "user:tess"))
				}
				time.Sleep(5 * time.Millisecond)
			}
			log := readFile(t, filepath.Join(e.configDir, "bots", "team-bot", "logs", strings.TrimPrefix(chat, "ahp-chat://default/")+".jsonl"))
			if !strings.Contains(log, `"type":"chat/turnCancelled"`) || !strings.Contains(log, `"turnId":"t1"`) {
				t.Errorf("the chat's log does not show the turn cancelled:\n%s", log)
			}
			if c.closes {
				return // her token is refused: nothing more to ask
			}
			tess.mu.Lock()
			got := slices.Sorted(slices.Values(tess.ended))
			tess.mu.Unlock()
			if want := []string{chat + ": " + reason, session + ": " + reason}; len(got) != 2 || !strings.HasPrefix(got[0], want[0]) || !strings.HasPrefix(got[1], want[1]) {
				t.Errorf("subscriptions ended with %q, want %q", got, want)
			}

			if err := tess.call("subscribe", map[string]any{"channel": chat}, nil); err == nil || err.Code != -32009 {
				t.Errorf("subscribing again: %v, want permission denied", err)
			}
			var list ahp.ListSessionsResult
			tess.mustCall("listSessions", map[string]any{}, &list)
			for _, s := range list.Items {
				if s.Resource == session {
					t.Errorf("the closed chat is still in tess's list")
				}
			}
			tess.say(chat, "t2", "hello?")
			waittest.For(t, "tess's message to be refused", func() bool {
				tess.mu.Lock()
				defer tess.mu.Unlock()
				return len(tess.rejected) == 1
			})
			root.mu.Lock()
			turns := len(root.chats[chat].Turns)
			root.mu.Unlock()
			if turns != 1 {
				t.Errorf("the chat holds %d turns after tess's refused message, want 1", turns)
			}
			if _, err := e.svc.Read(context.Background(), access.Principal{User: "tess", Grants: []string{"session:create"}}, "team-bot"); errcode.Of(err) != errcode.PermissionDenied {
				t.Fatalf("the test's premise: tess still reads the bot: %v", err)
			}
		})
	}
}

// TestATurnBegunInAChatWhoseOwnerMayNoLongerReadTheBotFails: a turn acts
// for the chat's owner whoever begins it: root's message in a chat closed
// to its owner fails saying why, and wakes no back session.
func TestATurnBegunInAChatWhoseOwnerMayNoLongerReadTheBotFails(t *testing.T) {
	t.Parallel()
	e, reload := newRevokeEnv(t, revokeUsers(`"session:create"`, `"backend"`))
	soft := access.Principal{User: "soft", Grants: []string{"bot:put"}, Memberships: []string{"backend"}}
	if _, err := e.svc.Make(context.Background(), soft, "team-bot", []byte(`{"name": "Team", "owner": "team:backend"}`)); err != nil {
		t.Fatal(err)
	}
	tess := e.connect(t, tessTkn)
	_, chat := tess.open("ahp-session:/tess", "team-bot")
	reload(revokeUsers(`"session:create"`, ``))
	root := e.connect(t, rootTkn)
	root.subscribe(chat)
	root.say(chat, "r1", "hello")
	turn := root.turn(chat, "r1")
	if ei := turnError(turn); ei == nil || !strings.Contains(ei.Message, "no longer read bot://team-bot") {
		t.Errorf("root's turn in tess's closed chat: %s, want it failed saying tess may no longer read the bot", jsonText(turn))
	}
	if n := len(backSessions(e, "user:tess")); n != 0 {
		t.Errorf("%d back sessions woke for tess", n)
	}
}

// backSessions are the back sessions e's host holds for person.
func backSessions(e *chatEnv, person string) []string {
	var out []string
	for _, b := range e.host.BackSessions() {
		if b.Person == person {
			out = append(out, b.Session)
		}
	}
	return out
}

// TestAChatClosedToItsOwnerOpensAgainWhenTheyMayReadTheBotAgain: the chat
// and its log stay when it is closed to its owner; put back in the team,
// they see it in their list again and may subscribe and talk there.
func TestAChatClosedToItsOwnerOpensAgainWhenTheyMayReadTheBotAgain(t *testing.T) {
	t.Parallel()
	e, reload := newRevokeEnv(t, revokeUsers(`"session:create"`, `"backend"`))
	soft := access.Principal{User: "soft", Grants: []string{"bot:put"}, Memberships: []string{"backend"}}
	if _, err := e.svc.Make(context.Background(), soft, "team-bot", []byte(`{"name": "Team", "owner": "team:backend"}`)); err != nil {
		t.Fatal(err)
	}
	tess := e.connect(t, tessTkn)
	tess.subscribe(ahp.RootURI)
	session, chat := tess.open("ahp-session:/tess", "team-bot")
	tess.say(chat, "t1", "before")
	tess.turn(chat, "t1")
	reload(revokeUsers(`"session:create"`, ``))
	heard := func(note string) func() bool {
		return func() bool {
			tess.mu.Lock()
			defer tess.mu.Unlock()
			return slices.Contains(tess.notes, note)
		}
	}
	waittest.For(t, "the back session's removal heard", heard("root/sessionRemoved "+session))
	reload(revokeUsers(`"session:create"`, `"backend"`))
	waittest.For(t, "the back session's addition heard", heard("root/sessionAdded "+session))
	var list ahp.ListSessionsResult
	tess.mustCall("listSessions", map[string]any{}, &list)
	if !slices.ContainsFunc(list.Items, func(s ahp.SessionSummary) bool { return s.Resource == session }) {
		t.Errorf("the chat is not in tess's list again")
	}
	tess.subscribe(chat)
	tess.say(chat, "t2", "after")
	if got := markdown(tess.turn(chat, "t2")); !slices.Equal(got, []string{"Team heard: after"}) {
		t.Errorf("the bot says %q in the chat opened again", got)
	}
}

// TestDeletingABotCancelsItsRunningTurnsAndEndsItsBackSessions: a deleted
// bot's running turn is cancelled (in the log too) and its back sessions
// end; the chat stays its owner's, where a message fails saying the bot
// was deleted (TestAMessageToADeletedBotFailsTheTurn).
func TestDeletingABotCancelsItsRunningTurnsAndEndsItsBackSessions(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, bot.Options{})
	e.makeBot(t, "motion", motionBody)
	c := e.connect(t, "soft")
	_, chat := c.open("ahp-session:/gone", "motion")
	c.say(chat, "t1", "sleep 30")
	waittest.For(t, "soft's back session", func() bool { return len(backSessions(e, "user:soft")) == 1 })
	if err := e.svc.Delete(context.Background(), access.RootPrincipal(), "motion", ""); err != nil {
		t.Fatal(err)
	}
	if turn := c.turn(chat, "t1"); turn.State != ahp.TurnStateCancelled {
		t.Errorf("the running turn ended %s, want cancelled", turn.State)
	}
	waittest.For(t, "soft's back session gone", func() bool { return len(backSessions(e, "user:soft")) == 0 })
	c.mu.Lock()
	ended := len(c.ended)
	c.mu.Unlock()
	if ended != 0 {
		t.Errorf("the owner's subscriptions ended: %d", ended)
	}
}

// quietUsers is a users directory a test changes that tells nobody of
// its changes: only what each request asks of it sees them.
type quietUsers struct {
	mu    sync.Mutex
	users map[string]access.Principal
}

func (u *quietUsers) Authenticate(token string) (access.Principal, bool) {
	if token == "root" {
		return access.RootPrincipal(), true
	}
	return u.Principal(token)
}

func (u *quietUsers) Principal(id string) (access.Principal, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	p, ok := u.users[id]
	return p, ok
}

func (u *quietUsers) set(id string, p access.Principal) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.users[id] = p
}

// quietTeam is a service whose users directory tells of no change, with
// soft and tess in the team backend, and team-bot, the team's bot.
func quietTeam(t *testing.T) (*chatEnv, *quietUsers) {
	t.Helper()
	users := &quietUsers{users: map[string]access.Principal{
		"soft": {User: "soft", Grants: []string{"bot:put", "session:create"}, Memberships: []string{"backend"}},
		"tess": {User: "tess", Grants: []string{"session:create"}, Memberships: []string{"backend"}},
	}}
	e := &chatEnv{t: t, base: t.TempDir(), store: memrecord.New(), users: users}
	e.configDir = filepath.Join(e.base, "config")
	e.options.Root = filepath.Join(e.base, "bots")
	e.start()
	if _, err := e.svc.Make(context.Background(), users.users["soft"], "team-bot", []byte(`{"name": "Team", "owner": "team:backend"}`)); err != nil {
		t.Fatal(err)
	}
	return e, users
}

// TestEveryRequestOnAChatOrItsBackSessionAsksWhetherItsPersonMayReadTheBotNow:
// with no sweep at all (a users directory that tells of no change), a
// person who may no longer read a bot is refused every request on their
// chat with it and on their back session's channels, and no longer sees
// the chat in their list.
func TestEveryRequestOnAChatOrItsBackSessionAsksWhetherItsPersonMayReadTheBotNow(t *testing.T) {
	t.Parallel()
	e, users := quietTeam(t)
	tess := e.connect(t, "tess")
	session, chat := tess.open("ahp-session:/tess", "team-bot")
	tess.say(chat, "t1", "hello")
	back := backOf(tess.turn(chat, "t1"))
	if back == "" {
		t.Fatal("the turn names no back chat")
	}
	tess.subscribe(back)
	users.set("tess", access.Principal{User: "tess", Grants: []string{"session:create"}})
	fresh := e.connect(t, "tess")
	for _, uri := range []string{session, chat, back} {
		if err := fresh.call("subscribe", map[string]any{"channel": uri}, nil); err == nil || err.Code != -32009 {
			t.Errorf("subscribing to %s: %v, want permission denied", uri, err)
		}
	}
	var list ahp.ListSessionsResult
	fresh.mustCall("listSessions", map[string]any{}, &list)
	if slices.ContainsFunc(list.Items, func(s ahp.SessionSummary) bool { return s.Resource == session }) {
		t.Errorf("the chat is still in tess's list")
	}
	if err := fresh.call("fetchTurns", map[string]any{"channel": chat}, nil); err == nil || err.Code != -32009 {
		t.Errorf("fetchTurns: %v, want permission denied", err)
	}
	tess.say(chat, "t2", "still there?")
	waittest.For(t, "tess's message to be refused", func() bool {
		tess.mu.Lock()
		defer tess.mu.Unlock()
		return len(tess.rejected) == 1
	})
}

// TestATurnWhoseBackSessionGoesAfterItsOwnerLostTheBotReadsCancelled:
// on several instances another one's sweep may dispose of the back
// session before this one's closes the chat, and the wake then fails the
// main turn; the turn of an owner who may no longer read the bot reads
// cancelled all the same, as losing access cancels it.
func TestATurnWhoseBackSessionGoesAfterItsOwnerLostTheBotReadsCancelled(t *testing.T) {
	t.Parallel()
	e, users := quietTeam(t)
	tess := e.connect(t, "tess")
	_, chat := tess.open("ahp-session:/tess", "team-bot")
	tess.say(chat, "t1", "sleep 30")
	waittest.For(t, "tess's back session", func() bool { return len(backSessions(e, "user:tess")) == 1 })

	// No sweep runs (the directory tells of no change): the back session
	// goes as another instance's sweep would make it go.
	users.set("tess", access.Principal{User: "tess", Grants: []string{"session:create"}})
	if err := e.host.Dispose(context.Background(), backSessions(e, "user:tess")[0]); err != nil {
		t.Fatal(err)
	}
	root := e.connect(t, "root")
	root.subscribe(chat)
	ended := root.waitChat(chat, "the turn to end", func(s ahp.ChatState) bool { return s.ActiveTurn == nil && len(s.Turns) == 1 })
	if turn := ended.Turns[0]; turn.State != ahp.TurnStateCancelled {
		t.Errorf("the turn of an owner who lost the bot ended %s (%s), want cancelled", turn.State, jsonText(turn.Failure()))
	}
}

// backOf returns the back chat a main turn's subagent call opens, or "".
func backOf(t ahp.Turn) string {
	for _, p := range t.ResponseParts {
		if p.ToolCall != nil && len(p.ToolCall.Content) > 0 {
			return p.ToolCall.Content[0].Resource
		}
	}
	return ""
}

// tellingUsers is an embedder's own users directory that tells of its
// changes (access.Watcher), as a users file does.
type tellingUsers struct {
	quietUsers
	watchMu sync.Mutex
	watches []func([]string)
}

func (u *tellingUsers) WatchUsers(fn func([]string)) (cancel func()) {
	u.watchMu.Lock()
	defer u.watchMu.Unlock()
	u.watches = append(u.watches, fn)
	return func() {}
}

func (u *tellingUsers) change(id string, p access.Principal) {
	u.set(id, p)
	u.watchMu.Lock()
	defer u.watchMu.Unlock()
	for _, fn := range u.watches {
		fn([]string{id})
	}
}

// TestAnEmbeddersOwnDirectoryThatTellsOfChangesEndsWhatAPersonLostAtOnce:
// a users directory that is no users file reports its changes through
// access.Watcher, and a person who lost read of a bot there loses their
// subscription to its chat at once, as with a users file.
func TestAnEmbeddersOwnDirectoryThatTellsOfChangesEndsWhatAPersonLostAtOnce(t *testing.T) {
	t.Parallel()
	users := &tellingUsers{quietUsers: quietUsers{users: map[string]access.Principal{
		"soft": {User: "soft", Grants: []string{"bot:put", "session:create"}, Memberships: []string{"backend"}},
		"tess": {User: "tess", Grants: []string{"session:create"}, Memberships: []string{"backend"}},
	}}}
	e := &chatEnv{t: t, base: t.TempDir(), store: memrecord.New(), users: users}
	e.configDir = filepath.Join(e.base, "config")
	e.options.Root = filepath.Join(e.base, "bots")
	e.start()
	soft, _ := users.Principal("soft")
	if _, err := e.svc.Make(context.Background(), soft, "team-bot", []byte(`{"name": "Team", "owner": "team:backend"}`)); err != nil {
		t.Fatal(err)
	}
	tess := e.connect(t, "tess")
	_, chat := tess.open("ahp-session:/tess", "team-bot")
	users.change("tess", access.Principal{User: "tess", Grants: []string{"session:create"}})
	waittest.For(t, "tess's chat to end saying why", func() bool {
		tess.mu.Lock()
		defer tess.mu.Unlock()
		return slices.ContainsFunc(tess.ended, func(s string) bool { return strings.HasPrefix(s, chat+": You may no longer read bot://team-bot") })
	})
}

// TestLosingReadOfABotEndsWhatThePersonHasOpenWithItOnEveryInstance: two
// instances share the store, the logs and the leases, and each reads the
// one users file (as two processes do). Tess's turn runs on the first
// while she also follows the chat on the second; taken out of the team
// that owns the bot, within a second of each instance reading the file
// she is followed nowhere, the turn is cancelled and her back session is
// gone from both (the second lists it while it follows it).
func TestLosingReadOfABotEndsWhatThePersonHasOpenWithItOnEveryInstance(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "users.json")
	if err := os.WriteFile(path, []byte(revokeUsers(`"session:create"`, `"backend"`)), 0o600); err != nil {
		t.Fatal(err)
	}
	open := func() *usersfile.Directory {
		dir, err := usersfile.OpenDirectory(usersfile.DirectoryConfig{Path: path, Interval: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dir.Close() })
		return dir
	}
	firstUsers, secondUsers := open(), open()
	first := newSharedChatEnv(t, &memlease.Leases{})
	first.stop()
	first.users = firstUsers
	first.start()
	second := first.sibling("second")
	second.stop()
	second.users = secondUsers
	second.start()

	soft := access.Principal{User: "soft", Grants: []string{"bot:put"}, Memberships: []string{"backend"}}
	if _, err := first.svc.Make(context.Background(), soft, "team-bot", []byte(`{"name": "Team", "owner": "team:backend"}`)); err != nil {
		t.Fatal(err)
	}
	tess := first.connect(t, tessTkn)
	session, chat := tess.open("ahp-session:/tess", "team-bot")
	there := second.connect(t, tessTkn)
	waittest.For(t, "the chat to be subscribed to on the other instance", func() bool { return there.call("subscribe", map[string]any{"channel": chat}, nil) == nil })
	there.subscribe(session)
	there.subscribe(chat)
	tess.say(chat, "t1", "sleep 30")
	there.waitChat(chat, "the turn running, seen on the second instance", func(s ahp.ChatState) bool { return s.ActiveTurn != nil })
	waittest.For(t, "tess's back session on the first instance", func() bool { return len(backSessions(first, "user:tess")) == 1 })

	if err := os.WriteFile(path, []byte(revokeUsers(`"session:create"`, ``)), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for _, dir := range []*usersfile.Directory{firstUsers, secondUsers} {
		if changed, err := dir.Reload(context.Background()); err != nil || !changed {
			t.Fatalf("reload the users file: changed %v, %v", changed, err)
		}
	}
	reason := "You may no longer read bot://team-bot"
	endedOn := func(c *chatClient) bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		n := 0
		for _, s := range c.ended {
			if strings.HasPrefix(s, chat+": "+reason) || strings.HasPrefix(s, session+": "+reason) {
				n++
			}
		}
		return n == 2
	}
	root := first.connect(t, rootTkn)
	root.subscribe(chat)
	cancelled := func() bool {
		root.mu.Lock()
		defer root.mu.Unlock()
		s := root.chats[chat]
		return s.ActiveTurn == nil && len(s.Turns) == 1 && s.Turns[0].State == ahp.TurnStateCancelled
	}
	backs := func() int { return len(backSessions(first, "user:tess")) + len(backSessions(second, "user:tess")) }
	for !(endedOn(tess) && endedOn(there) && cancelled() && backs() == 0) {
		if time.Since(start) > time.Second {
			t.Fatalf("a second after: ended on the first %v, on the second %v, turn cancelled %v, back sessions %d",
				endedOn(tess), endedOn(there), cancelled(), backs())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := there.call("subscribe", map[string]any{"channel": chat}, nil); err == nil || err.Code != -32009 {
		t.Errorf("subscribing again on the second instance: %v, want permission denied", err)
	}
}

// TestABackSessionsURIAnotherChatTookIsNeverRestored: a person's back
// session ended when they lost the bot leaves its row, which names its
// URI; a chat another person opens at that URI meanwhile is theirs, and
// the first person's next message, once they may read the bot again,
// goes to a new back session: nothing of it reaches the other chat.
func TestABackSessionsURIAnotherChatTookIsNeverRestored(t *testing.T) {
	t.Parallel()
	e, users := quietTeam(t)
	tess := e.connect(t, "tess")
	_, chat := tess.open("ahp-session:/tess", "team-bot")
	tess.say(chat, "t1", "hello")
	tess.turn(chat, "t1")
	was := backSessions(e, "user:tess")
	if len(was) != 1 {
		t.Fatalf("tess has %d back sessions, want 1", len(was))
	}
	team := users.users["tess"]
	users.set("tess", access.Principal{User: "tess", Grants: []string{"session:create"}})
	if err := e.host.Dispose(context.Background(), was[0]); err != nil { // as the sweep does
		t.Fatal(err)
	}
	soft := e.connect(t, "soft")
	_, softChat := soft.open(was[0], "team-bot")

	users.set("tess", team)
	tess.say(chat, "t2", "my secret plan is xyzzy")
	if turn := tess.turn(chat, "t2"); turn.State != ahp.TurnStateComplete {
		t.Fatalf("tess's turn after she may read the bot again: %s", jsonText(turn))
	}
	if now := backSessions(e, "user:tess"); len(now) != 1 || now[0] == was[0] {
		t.Errorf("tess's back sessions are %v, want one other than %s, which soft's chat holds", now, was[0])
	}
	fresh := e.connect(t, "soft")
	fresh.subscribe(softChat)
	if got := fresh.waitChat(softChat, "soft's chat", func(ahp.ChatState) bool { return true }); len(got.Turns) != 0 || got.ActiveTurn != nil || len(got.QueuedMessages) != 0 {
		t.Errorf("soft's chat at tess's old back session's URI holds %s", jsonText(got))
	}
	soft.mu.Lock()
	seen := jsonText(soft.chats[softChat])
	soft.mu.Unlock()
	if strings.Contains(seen, "xyzzy") {
		t.Errorf("soft's subscription heard tess's message: %s", seen)
	}
}
