package main

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/internal/waittest"
)

// revokeUsersJSON is the users file of the revocation test: soft makes
// bots; tess opens chats; both in backend unless tessTeam is "".
func revokeUsersJSON(tessTeam string) string {
	return `{"root": {"token": "root-token-0123456789abcdef"}, "users": [
		{"id": "soft", "token": "soft-token-0123456789abcdef", "grants": ["bot:put", "session:create"], "memberships": ["backend"]},
		{"id": "tess", "token": "tess-token-0123456789abcdef", "grants": ["session:create"], "memberships": [` + tessTeam + `]}]}`
}

// TestEndToEndAPersonRemovedFromTheOwningTeamLosesTheirChatWithinASecond:
// tess, in the team that owns a bot, has a chat with it open and a turn
// running there on the fake ACP agent. The users file takes her out of
// the team: within a second her subscriptions to the chat end with a
// reason, the turn is cancelled (in the chat's log too), and her back
// session's agent process has ended; a new subscribe and a new turn are
// refused. (A bot's owner is moved neither on the wire nor by a hand edit
// of bot.md, which the store refuses; an owner changed beneath the
// service is TestLosingReadOfABotEndsWhatThePersonHasOpenWithItWithinASecond's.)
func TestEndToEndAPersonRemovedFromTheOwningTeamLosesTheirChatWithinASecond(t *testing.T) {
	// Serial: it holds the server to a second, which the tests beside it would slow.
	users := filepath.Join(t.TempDir(), "users.json")
	writeAtomic(t, users, revokeUsersJSON(`"backend"`))
	setup := newACPSetup(t, "-users", users)
	srv := setup.start(t)
	soft := dialChat(t, srv.addr+"/?tkn=soft-token-0123456789abcdef", "soft")
	soft.makeBot("team-bot", `{"name": "Team", "provider": "fake", "owner": "team:backend"}`)
	tess := dialChat(t, srv.addr+"/?tkn=tess-token-0123456789abcdef", "tess")
	const session = "ahp-session:/tess"
	chat := tess.openChat(session, "team-bot")
	said := say(t, tess, chat, "t1", "pid")
	if len(said) != 1 || !strings.HasPrefix(said[0], "pid ") {
		t.Fatalf("the agent said %q, want its pid", said)
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(said[0], "pid "))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the agent process %d is not running before the change: %v", pid, err)
	}
	tess.runBack(chat, "t2", "sleep")

	changed := time.Now()
	writeAtomic(t, users, revokeUsersJSON(``))
	logPath := filepath.Join(setup.config, "bots", "team-bot", "logs", base64.RawURLEncoding.EncodeToString([]byte(session))+".jsonl")
	ended := func() bool {
		tess.mu.Lock()
		defer tess.mu.Unlock()
		n := 0
		for _, note := range tess.notes {
			if strings.HasPrefix(note, "ahpd/subscriptionEnded ") && strings.Contains(note, "You may no longer read bot://team-bot") {
				n++
			}
		}
		return n == 2 // the session and the chat
	}
	cancelled := func() bool {
		log, _ := os.ReadFile(logPath)
		return strings.Contains(string(log), `"type":"chat/turnCancelled","turnId":"t2"`)
	}
	gone := func() bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }
	for !(ended() && cancelled() && gone()) {
		if time.Since(changed) > time.Second {
			tess.mu.Lock()
			notes := slices.Clone(tess.notes)
			tess.mu.Unlock()
			t.Fatalf("a second after the change: subscriptions ended %v (notes %q), turn cancelled in the log %v, agent process ended %v",
				ended(), notes, cancelled(), gone())
		}
		time.Sleep(10 * time.Millisecond)
	}

	if err := tess.call("subscribe", map[string]any{"channel": chat}, nil, nil); err == nil || err.Code != -32009 {
		t.Errorf("subscribing again: %v, want permission denied", err)
	}
	tess.dispatch(chat, ahp.TurnStarted("t3", time.Now(), ahp.UserMessage("pid")))
	waittest.For(t, "a new turn to be refused", func() bool {
		tess.mu.Lock()
		defer tess.mu.Unlock()
		return len(tess.rejected[chat]) == 1
	})
	if log, _ := os.ReadFile(logPath); strings.Contains(string(log), `"turnId":"t3"`) {
		t.Errorf("the refused turn reached the chat's log")
	}
}
