package xmpp_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/bots/route"
	"github.com/agenthost/bots/route/routetest"
	"github.com/agenthost/bots/route/xmpp"
	"github.com/agenthost/bots/route/xmpp/xmpptest"
)

const room = "motion@" + xmpptest.Rooms

// login dials the account with the password, on the test's server.
func login(t *testing.T, srv *xmpptest.Server, jid, password string, settings map[string]string) route.Conn {
	t.Helper()
	s := map[string]string{"jid": jid, "server": srv.Addr, "tls": "false"}
	for k, v := range settings {
		s[k] = v
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c, err := xmpp.Network{}.Dial(ctx, route.Dial{Connection: "test", Settings: s, Secrets: map[string]string{"password": password}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// pair is the server with two accounts, the bot and alice, logged in.
func pair(t *testing.T, settings map[string]string) (srv *xmpptest.Server, bot, alice route.Conn, botJID, aliceJID string) {
	t.Helper()
	srv = xmpptest.Start(t)
	botJID = srv.Register(t, "motion", "motion-password-0123")
	aliceJID = srv.Register(t, "alice", "alice-password-0123")
	bot = login(t, srv, botJID, "motion-password-0123", settings)
	alice = login(t, srv, aliceJID, "alice-password-0123", settings)
	return srv, bot, alice, botJID, aliceJID
}

func TestXMPPDeliversADirectMessageAndAnswersIt(t *testing.T) {
	t.Parallel()
	_, bot, alice, botJID, aliceJID := pair(t, nil)
	if _, err := alice.Send(t.Context(), route.Scope{Kind: route.Direct, ID: botJID}, "hello bot"); err != nil {
		t.Fatal(err)
	}
	m := routetest.Receive(t, bot)
	if m.From != "xmpp:"+aliceJID || m.Scope != (route.Scope{Kind: route.Direct, ID: aliceJID}) || m.Text != "hello bot" || m.ID == "" {
		t.Fatalf("the bot received %+v", m)
	}
	if _, err := bot.Send(t.Context(), m.Scope, "**hi**, see [the docs](https://example.org)"); err != nil {
		t.Fatal(err)
	}
	if got := routetest.Receive(t, alice); got.Text != "*hi*, see the docs <https://example.org>" || got.From != "xmpp:"+botJID {
		t.Errorf("alice received %+v", got)
	}
}

func TestXMPPSplitsALongReplyAndCorrectsTheLastMessageAlone(t *testing.T) {
	t.Parallel()
	_, bot, alice, _, aliceJID := pair(t, nil)
	to := route.Scope{Kind: route.Direct, ID: aliceJID}
	ids, err := bot.Send(t.Context(), to, strings.Repeat("word ", 1000))
	if err != nil || len(ids) != 2 {
		t.Fatalf("a 5000-byte reply went as %d messages (%v), want 2", len(ids), err)
	}
	if a, b := routetest.Receive(t, alice), routetest.Receive(t, alice); len(a.Text)+len(b.Text) != 4999 {
		t.Errorf("alice received %d and %d bytes", len(a.Text), len(b.Text))
	}
	if err := bot.Edit(t.Context(), to, ids[0], "older"); !errors.Is(err, route.ErrUnsupported) {
		t.Errorf("correcting an older message: %v, want ErrUnsupported", err)
	}
	if err := bot.Edit(t.Context(), to, ids[1], "corrected"); err != nil {
		t.Fatal(err)
	}
	if got := routetest.Receive(t, alice); got.Text != "corrected" {
		t.Errorf("after the correction alice received %+v", got)
	}
}

func TestXMPPDeliversARoomsMessagesButNotItsOwnNorItsHistory(t *testing.T) {
	t.Parallel()
	srv := xmpptest.Start(t)
	aliceJID := srv.Register(t, "alice", "alice-password-0123")
	botJID := srv.Register(t, "motion", "motion-password-0123")
	alice := login(t, srv, aliceJID, "alice-password-0123", map[string]string{"rooms": room})
	if _, err := alice.Send(t.Context(), route.Scope{Kind: route.Group, ID: room}, "said before the bot came"); err != nil {
		t.Fatal(err)
	}
	bot := login(t, srv, botJID, "motion-password-0123", map[string]string{"rooms": room})
	// alice speaks until the bot, which joined after her, hears her.
	var m route.Message
	for i := 0; ; i++ {
		if _, err := alice.Send(t.Context(), route.Scope{Kind: route.Group, ID: room}, "hello room"); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		got, err := bot.Receive(ctx)
		cancel()
		if err == nil {
			m = got
			break
		}
		if i > 50 {
			t.Fatal("the bot never heard the room")
		}
	}
	if m.Text != "hello room" || m.Scope != (route.Scope{Kind: route.Group, ID: room}) || m.From != "xmpp:"+aliceJID || m.Name != "alice" {
		t.Fatalf("the bot received %+v, want alice's line and not the history", m)
	}
	if _, err := bot.Send(t.Context(), route.Scope{Kind: route.Group, ID: room}, "hello alice"); err != nil {
		t.Fatal(err)
	}
	for {
		got := routetest.Receive(t, alice)
		if got.Text == "hello alice" {
			if got.From != "xmpp:"+botJID {
				t.Errorf("alice heard the bot as %q", got.From)
			}
			break
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	for {
		got, err := bot.Receive(ctx)
		if err != nil {
			break
		}
		if got.Text == "hello alice" {
			t.Fatal("the bot heard its own message echoed by the room")
		}
	}
}

func TestXMPPNamesNoSenderInARoomThatHidesItsOccupantsJIDs(t *testing.T) {
	t.Parallel()
	srv := xmpptest.StartHidingJIDs(t)
	aliceJID := srv.Register(t, "alice", "alice-password-0123")
	botJID := srv.Register(t, "motion", "motion-password-0123")
	// alice joins first and moderates the room; the bot, after her, is
	// shown no occupant's JID.
	alice := login(t, srv, aliceJID, "alice-password-0123", map[string]string{"rooms": room})
	bot := login(t, srv, botJID, "motion-password-0123", map[string]string{"rooms": room})
	for i := 0; ; i++ {
		if _, err := alice.Send(t.Context(), route.Scope{Kind: route.Group, ID: room}, "who am I?"); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		m, err := bot.Receive(ctx)
		cancel()
		if err == nil {
			if m.From != "" || m.Name != "alice" || m.Text != "who am I?" {
				t.Fatalf("the bot received %+v, want alice's line with no sender: her nick is all the room shows", m)
			}
			return
		}
		if i > 50 {
			t.Fatal("the bot never heard the room")
		}
	}
}

func TestXMPPRefusesAWrongPasswordWithoutSayingIt(t *testing.T) {
	t.Parallel()
	srv := xmpptest.Start(t)
	jid := srv.Register(t, "motion", "motion-password-0123")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	_, err := xmpp.Network{}.Dial(ctx, route.Dial{Settings: map[string]string{"jid": jid, "server": srv.Addr, "tls": "false"},
		Secrets: map[string]string{"password": "wrong-password-0123456789"}})
	if err == nil || !strings.Contains(err.Error(), "refused") || strings.Contains(err.Error(), "wrong-password") {
		t.Errorf("a wrong password: %v", err)
	}
}

func TestXMPPReceiveEndsWhenTheServerGoesAway(t *testing.T) {
	t.Parallel()
	srv, bot, _, _, _ := pair(t, nil)
	srv.Kill()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if _, err := bot.Receive(ctx); err == nil || ctx.Err() != nil {
		t.Errorf("Receive when the server went away: %v", err)
	}
}

func TestXMPPRefusesPlainTextToAServerElsewhere(t *testing.T) {
	t.Parallel()
	_, err := xmpp.Network{}.Dial(t.Context(), route.Dial{Settings: map[string]string{"jid": "motion@example.org", "server": "xmpp.example.org:5222", "tls": "false"}})
	if err == nil || !strings.Contains(err.Error(), "plain text") {
		t.Errorf("plain text to another machine: %v", err)
	}
}
