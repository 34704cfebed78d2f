package irc_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/bots/route"
	"github.com/agenthost/bots/route/irc"
	"github.com/agenthost/bots/route/irc/irctest"
	"github.com/agenthost/bots/route/routetest"
)

func dial(t *testing.T, addr string, settings map[string]string) route.Conn {
	t.Helper()
	s := map[string]string{"server": addr, "nick": "motion", "tls": "false"}
	for k, v := range settings {
		s[k] = v
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := irc.Network{}.Dial(ctx, route.Dial{Connection: "test", Settings: s, Secrets: map[string]string{"password": irctest.Password}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestIRCDeliversADirectMessageAndAnswersIt(t *testing.T) {
	t.Parallel()
	srv := irctest.Start(t)
	addr := srv.Addr
	bot := dial(t, addr, nil)
	alice := srv.Person(t, "alice")
	alice.Send("PRIVMSG motion :hello bot")
	m := routetest.Receive(t, bot)
	if m.From != "irc:alice" || m.Scope != (route.Scope{Kind: route.Direct, ID: "alice"}) || m.Text != "hello bot" {
		t.Fatalf("received %+v", m)
	}
	if _, err := bot.Send(t.Context(), m.Scope, "**hi** alice, see [the docs](https://example.org/docs)"); err != nil {
		t.Fatal(err)
	}
	got := alice.Wait("PRIVMSG alice")
	if !strings.HasSuffix(got, ":\x02hi\x02 alice, see the docs <https://example.org/docs>") {
		t.Errorf("alice got %q", got)
	}
}

func TestIRCSplitsALongReplyIntoLinesAndNeverLetsALineBreakThrough(t *testing.T) {
	t.Parallel()
	srv := irctest.Start(t)
	addr := srv.Addr
	bot := dial(t, addr, nil)
	alice := srv.Person(t, "alice")
	long := strings.Repeat("word ", 150) // 750 bytes: three lines
	if _, err := bot.Send(t.Context(), route.Scope{Kind: route.Direct, ID: "alice"}, long+"\r\nQUIT :injected\nlast"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 5 {
		l := alice.Wait("PRIVMSG alice :")
		got = append(got, l[strings.Index(l, "PRIVMSG alice :")+len("PRIVMSG alice :"):])
	}
	if strings.Join(got[:3], " ") != strings.TrimSpace(long) || got[3] != "QUIT :injected" || got[4] != "last" {
		t.Errorf("alice got %q", got)
	}
	// the bot is still there: the injected QUIT was a message, not a command.
	alice.Send("PRIVMSG motion :still there?")
	if m := routetest.Receive(t, bot); m.Text != "still there?" {
		t.Errorf("after the reply the bot received %+v", m)
	}
}

func TestIRCDeliversAChannelsLinesButNotItsOwn(t *testing.T) {
	t.Parallel()
	srv := irctest.Start(t)
	addr := srv.Addr
	bot := dial(t, addr, map[string]string{"channels": "#motion"})
	alice := srv.Person(t, "alice")
	alice.Send("JOIN #motion")
	alice.Wait("366") // the end of the channel's names: joined
	// the bot joined before alice: wait until the server lists it.
	alice.Send("NAMES #motion")
	if l := alice.Wait(" 353 "); !strings.Contains(l, "motion") {
		t.Fatalf("the bot is not in #motion: %q", l)
	}
	if _, err := bot.Send(t.Context(), route.Scope{Kind: route.Group, ID: "#motion"}, "good morning"); err != nil {
		t.Fatal(err)
	}
	alice.Wait("PRIVMSG #motion :good morning")
	alice.Send("PRIVMSG #motion :hello room")
	m := routetest.Receive(t, bot)
	if m.From != "irc:alice" || m.Scope != (route.Scope{Kind: route.Group, ID: "#motion"}) || m.Text != "hello room" {
		t.Fatalf("received %+v, want alice's line and not the bot's own", m)
	}
}

func TestIRCAsksWithNumberedLinesAndCannotEdit(t *testing.T) {
	t.Parallel()
	srv := irctest.Start(t)
	addr := srv.Addr
	bot := dial(t, addr, nil)
	alice := srv.Person(t, "alice")
	to := route.Scope{Kind: route.Direct, ID: "alice"}
	if _, err := bot.Ask(t.Context(), to, route.Question{ID: "q", Markdown: "Which colour?", Options: []route.Option{{ID: "r", Label: "Red"}, {ID: "b", Label: "Blue"}}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{":Which colour?", ":1. Red", ":2. Blue", ":Reply with a number."} {
		if l := alice.Wait("PRIVMSG alice"); !strings.HasSuffix(l, want) {
			t.Errorf("alice got %q, want it to end %q", l, want)
		}
	}
	if err := bot.Edit(t.Context(), to, "", "x"); err != route.ErrUnsupported {
		t.Errorf("Edit: %v, want ErrUnsupported", err)
	}
}

func TestIRCRefusesATakenNickAndAWrongPasswordInOneSentence(t *testing.T) {
	t.Parallel()
	srv := irctest.Start(t)
	addr := srv.Addr
	srv.Person(t, "motion")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := irc.Network{}.Dial(ctx, route.Dial{Settings: map[string]string{"server": addr, "nick": "motion", "tls": "false"},
		Secrets: map[string]string{"password": irctest.Password}})
	if err == nil || !strings.Contains(err.Error(), "the nick motion is taken") {
		t.Errorf("a taken nick: %v", err)
	}
	_, err = irc.Network{}.Dial(ctx, route.Dial{Settings: map[string]string{"server": addr, "nick": "other", "tls": "false"},
		Secrets: map[string]string{"password": "wrong-password-0123456789"}})
	if err == nil || !strings.Contains(err.Error(), "refused the login of other: the server ended the connection: Access denied: Bad password") || strings.Contains(err.Error(), "wrong-password") {
		t.Errorf("a wrong password: %v, want a refusal that does not show it", err)
	}
}

func TestIRCReceiveEndsWithAnErrorWhenTheServerGoesAway(t *testing.T) {
	t.Parallel()
	srv := irctest.Start(t)
	addr, kill := srv.Addr, srv.Kill
	bot := dial(t, addr, nil)
	kill()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := bot.Receive(ctx); err == nil || ctx.Err() != nil {
		t.Errorf("Receive when the server went away: %v, want the connection's end", err)
	}
}

func TestIRCRefusesPlainTextToAServerElsewhere(t *testing.T) {
	t.Parallel()
	_, err := irc.Network{}.Dial(t.Context(), route.Dial{Settings: map[string]string{"server": "irc.example.org:6667", "nick": "motion", "tls": "false"}})
	if err == nil || !strings.Contains(err.Error(), "plain text") {
		t.Errorf("plain text to another machine: %v", err)
	}
}

// TestIRCWithAccountsNamesASenderByTheAccountTheyAreLoggedInTo: a nick is
// whoever holds it now. With accounts a sender is the account the
// server's services logged them in to, whatever nick they go by, and
// whoever holds an account's nick without logging in to it is no one.
func TestIRCWithAccountsNamesASenderByTheAccountTheyAreLoggedInTo(t *testing.T) {
	t.Parallel()
	srv := irctest.StartWithAccounts(t)
	bot := dial(t, srv.Addr, map[string]string{"accounts": "true", "channels": "#motion"})
	alice := srv.Person(t, "alice")
	alice.Register("alice-password-0123")
	alice.Send("PRIVMSG motion :hello")
	m := routetest.Receive(t, bot)
	if m.From != "irc:account:alice" || m.ReplyTo != "alice" || m.Scope != (route.Scope{Kind: route.Direct, ID: "alice"}) || m.Unnamed != "" || m.Text != "hello" {
		t.Fatalf("alice, logged in, sent %+v", m)
	}
	alice.Send("NICK alice_away")
	alice.Wait(" NICK ")
	alice.Send("PRIVMSG motion :still me")
	if m := routetest.Receive(t, bot); m.From != "irc:account:alice" || m.ReplyTo != "alice_away" || m.Scope.ID != "alice_away" {
		t.Fatalf("alice, logged in under another nick, sent %+v", m)
	}
	mallory := srv.Person(t, "alice") // the nick alice, free while alice is away
	mallory.Send("PRIVMSG motion :I am alice")
	m = routetest.Receive(t, bot)
	if m.From != "" || m.ReplyTo != "alice" || !strings.Contains(m.Unnamed, "log in") || m.Text != "I am alice" {
		t.Fatalf("the nick alice, not logged in, sent %+v, want no one, told to log in", m)
	}
	mallory.Send("JOIN #motion")
	mallory.Wait("366") // the end of the channel's names: joined
	mallory.Send("NAMES #motion")
	if l := mallory.Wait(" 353 "); !strings.Contains(l, "motion") {
		t.Fatalf("the bot is not in #motion: %q", l)
	}
	mallory.Send("PRIVMSG #motion :it is me, alice")
	if m := routetest.Receive(t, bot); m.From != "" || m.Scope != (route.Scope{Kind: route.Group, ID: "#motion"}) || m.Unnamed == "" {
		t.Fatalf("the nick alice, not logged in, said in #motion %+v, want no one", m)
	}
}

func TestIRCWithAccountsRefusesAServerThatDoesNotSayWhoIsLoggedIn(t *testing.T) {
	t.Parallel()
	srv := irctest.Start(t) // ngircd: no services, no account-tag
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := irc.Network{}.Dial(ctx, route.Dial{Settings: map[string]string{"server": srv.Addr, "nick": "motion", "tls": "false", "accounts": "true"},
		Secrets: map[string]string{"password": irctest.Password}})
	if err == nil || !strings.Contains(err.Error(), "does not offer IRCv3 account-tag, which the setting accounts needs") {
		t.Errorf("accounts on a server without account-tag: %v", err)
	}
	_, err = irc.Network{}.Dial(ctx, route.Dial{Settings: map[string]string{"server": srv.Addr, "nick": "motion", "tls": "false", "accounts": "yes"}})
	if err == nil || err.Error() != `the IRC setting accounts is "yes": say true or false` {
		t.Errorf("accounts yes: %v", err)
	}
}

// TestIRCLogsTheBotInToItsOwnAccountWithSASL: with accountPassword the
// bot logs in to its services account as it connects, so that it holds
// its nick; a wrong password, or a server without SASL, refuses the
// login in one sentence that shows no password.
func TestIRCLogsTheBotInToItsOwnAccountWithSASL(t *testing.T) {
	t.Parallel()
	srv := irctest.StartWithAccounts(t)
	owner := srv.Person(t, "motion") // registers the bot's account, then goes
	owner.Register("bot-account-password-0123")
	owner.Send("QUIT")
	owner.Wait("ERROR")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	dialAs := func(addr, password string) (route.Conn, error) {
		return irc.Network{}.Dial(ctx, route.Dial{Settings: map[string]string{"server": addr, "nick": "motion", "tls": "false"},
			Secrets: map[string]string{"accountPassword": password}})
	}
	if _, err := dialAs(srv.Addr, "wrong-password-0123456789"); err == nil || !strings.Contains(err.Error(), "its services refused the account motion with that accountPassword") || strings.Contains(err.Error(), "wrong-password") {
		t.Errorf("a wrong account password: %v", err)
	}
	bot, err := dialAs(srv.Addr, "bot-account-password-0123")
	if err != nil {
		t.Fatal(err)
	}
	defer bot.Close()
	alice := srv.Person(t, "alice")
	alice.Send("WHOIS motion")
	if l := alice.Wait(" 330 "); !strings.Contains(l, " motion motion ") { // RPL_WHOISACCOUNT
		t.Errorf("the bot is not logged in to its account: %q", l)
	}
	plain := irctest.Start(t) // ngircd: no SASL
	if _, err := dialAs(plain.Addr, "bot-account-password-0123"); err == nil || !strings.Contains(err.Error(), "does not offer SASL") {
		t.Errorf("accountPassword on a server without SASL: %v", err)
	}
}

// TestIRCCloseLetsTheNickGoBeforeItReturns: a connection closed and
// dialled again at once (a preflight's probe, a route turned off and on)
// finds its nick free.
func TestIRCCloseLetsTheNickGoBeforeItReturns(t *testing.T) {
	t.Parallel()
	srv := irctest.Start(t)
	for i := range 5 {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		c, err := irc.Network{}.Dial(ctx, route.Dial{Settings: map[string]string{"server": srv.Addr, "nick": "motion", "tls": "false"},
			Secrets: map[string]string{"password": irctest.Password}})
		cancel()
		if err != nil {
			t.Fatalf("dial %d, right after a close: %v", i+1, err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
