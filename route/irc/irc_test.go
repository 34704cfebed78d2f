package irc_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/bots/route"
	"github.com/agenthost/bots/route/irc"
)

// serverPassword is the test server's password.
const serverPassword = "irc-server-password-0123"

// startServer starts a real IRC server (Debian's ngircd) on a free
// loopback port, in the test's own folder, and returns its address. It
// skips the test when ngircd is missing, unless BOTS_REQUIRE_IRC=1.
func startServer(t *testing.T) string {
	t.Helper()
	addr, _ := startKillableServer(t)
	return addr
}

// startKillableServer is startServer that also returns what kills the
// server.
func startKillableServer(t *testing.T) (string, func()) {
	t.Helper()
	bin, err := exec.LookPath("ngircd")
	if err != nil {
		for _, p := range []string{"/usr/sbin/ngircd", "/usr/local/sbin/ngircd"} {
			if _, serr := os.Stat(p); serr == nil {
				bin, err = p, nil
			}
		}
	}
	if err != nil {
		if os.Getenv("BOTS_REQUIRE_IRC") == "1" {
			t.Fatal("ngircd is not installed and BOTS_REQUIRE_IRC=1: install it (scripts/ci-deps.sh does)")
		}
		t.Skip("ngircd is not installed: the IRC tests need a real server (apt-get install ngircd)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	l.Close()
	dir := t.TempDir()
	conf := filepath.Join(dir, "ngircd.conf")
	motd := filepath.Join(dir, "motd")
	os.WriteFile(motd, []byte("test\n"), 0o644)
	body := fmt.Sprintf(`[Global]
	Name = irc.test
	Info = a test server
	Listen = 127.0.0.1
	Ports = %s
	Password = %s
	MotdFile = %s
	PidFile = %s
[Limits]
	PingTimeout = 120
	PongTimeout = 20
	MaxNickLength = 30
[Options]
	PAM = no
	Ident = no
	DNS = no
	MorePrivacy = no
[Channel]
	Name = #motion
	Topic = the bot's room
`, port, serverPassword, motd, filepath.Join(dir, "pid"))
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--nodaemon", "--config", conf)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return addr, func() { cmd.Process.Kill() }
		}
		if time.Now().After(deadline) {
			t.Fatalf("ngircd did not listen on %s: %s", addr, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// person is a plain IRC client the test speaks through.
type person struct {
	t     *testing.T
	c     net.Conn
	r     *bufio.Reader
	nick  string
	lines chan string
}

func newPerson(t *testing.T, addr, nick string) *person {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p := &person{t: t, c: c, r: bufio.NewReader(c), nick: nick, lines: make(chan string, 256)}
	go func() {
		defer close(p.lines)
		for {
			l, err := p.r.ReadString('\n')
			if err != nil {
				return
			}
			l = strings.TrimRight(l, "\r\n")
			if strings.HasPrefix(l, "PING ") {
				fmt.Fprintf(c, "PONG %s\r\n", strings.TrimPrefix(l, "PING "))
				continue
			}
			p.lines <- l
		}
	}()
	p.send("PASS " + serverPassword)
	p.send("NICK " + nick)
	p.send("USER " + nick + " 0 * :" + nick)
	p.wait(" 001 ")
	return p
}

func (p *person) send(line string) {
	p.t.Helper()
	if _, err := fmt.Fprintf(p.c, "%s\r\n", line); err != nil {
		p.t.Fatal(err)
	}
}

// wait returns the next line holding want, skipping the others.
func (p *person) wait(want string) string {
	p.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				p.t.Fatalf("%s's connection ended waiting for %q", p.nick, want)
			}
			if strings.Contains(l, want) {
				return l
			}
		case <-timeout:
			p.t.Fatalf("%s waited 10s for %q", p.nick, want)
		}
	}
}

func dial(t *testing.T, addr string, settings map[string]string) route.Conn {
	t.Helper()
	s := map[string]string{"server": addr, "nick": "motion", "tls": "false"}
	for k, v := range settings {
		s[k] = v
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := irc.Network{}.Dial(ctx, route.Dial{Connection: "test", Settings: s, Secrets: map[string]string{"password": serverPassword}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func receive(t *testing.T, c route.Conn) route.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	m, err := c.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestIRCDeliversADirectMessageAndAnswersIt(t *testing.T) {
	t.Parallel()
	addr := startServer(t)
	bot := dial(t, addr, nil)
	alice := newPerson(t, addr, "alice")
	alice.send("PRIVMSG motion :hello bot")
	m := receive(t, bot)
	if m.From != "irc:alice" || m.Scope != (route.Scope{Kind: route.Direct, ID: "alice"}) || m.Text != "hello bot" {
		t.Fatalf("received %+v", m)
	}
	if _, err := bot.Send(t.Context(), m.Scope, "**hi** alice, see [the docs](https://example.org/docs)"); err != nil {
		t.Fatal(err)
	}
	got := alice.wait("PRIVMSG alice")
	if !strings.HasSuffix(got, ":\x02hi\x02 alice, see the docs <https://example.org/docs>") {
		t.Errorf("alice got %q", got)
	}
}

func TestIRCSplitsALongReplyIntoLinesAndNeverLetsALineBreakThrough(t *testing.T) {
	t.Parallel()
	addr := startServer(t)
	bot := dial(t, addr, nil)
	alice := newPerson(t, addr, "alice")
	long := strings.Repeat("word ", 150) // 750 bytes: three lines
	if _, err := bot.Send(t.Context(), route.Scope{Kind: route.Direct, ID: "alice"}, long+"\r\nQUIT :injected\nlast"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 5 {
		l := alice.wait("PRIVMSG alice :")
		got = append(got, l[strings.Index(l, "PRIVMSG alice :")+len("PRIVMSG alice :"):])
	}
	if strings.Join(got[:3], " ") != strings.TrimSpace(long) || got[3] != "QUIT :injected" || got[4] != "last" {
		t.Errorf("alice got %q", got)
	}
	// the bot is still there: the injected QUIT was a message, not a command.
	alice.send("PRIVMSG motion :still there?")
	if m := receive(t, bot); m.Text != "still there?" {
		t.Errorf("after the reply the bot received %+v", m)
	}
}

func TestIRCDeliversAChannelsLinesButNotItsOwn(t *testing.T) {
	t.Parallel()
	addr := startServer(t)
	bot := dial(t, addr, map[string]string{"channels": "#motion"})
	alice := newPerson(t, addr, "alice")
	alice.send("JOIN #motion")
	alice.wait("366") // the end of the channel's names: joined
	// the bot joined before alice: wait until the server lists it.
	alice.send("NAMES #motion")
	if l := alice.wait(" 353 "); !strings.Contains(l, "motion") {
		t.Fatalf("the bot is not in #motion: %q", l)
	}
	if _, err := bot.Send(t.Context(), route.Scope{Kind: route.Group, ID: "#motion"}, "good morning"); err != nil {
		t.Fatal(err)
	}
	alice.wait("PRIVMSG #motion :good morning")
	alice.send("PRIVMSG #motion :hello room")
	m := receive(t, bot)
	if m.From != "irc:alice" || m.Scope != (route.Scope{Kind: route.Group, ID: "#motion"}) || m.Text != "hello room" {
		t.Fatalf("received %+v, want alice's line and not the bot's own", m)
	}
}

func TestIRCAsksWithNumberedLinesAndCannotEdit(t *testing.T) {
	t.Parallel()
	addr := startServer(t)
	bot := dial(t, addr, nil)
	alice := newPerson(t, addr, "alice")
	to := route.Scope{Kind: route.Direct, ID: "alice"}
	if _, err := bot.Ask(t.Context(), to, route.Question{ID: "q", Markdown: "Which colour?", Options: []route.Option{{ID: "r", Label: "Red"}, {ID: "b", Label: "Blue"}}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{":Which colour?", ":1. Red", ":2. Blue", ":Reply with a number."} {
		if l := alice.wait("PRIVMSG alice"); !strings.HasSuffix(l, want) {
			t.Errorf("alice got %q, want it to end %q", l, want)
		}
	}
	if err := bot.Edit(t.Context(), to, "", "x"); err != route.ErrUnsupported {
		t.Errorf("Edit: %v, want ErrUnsupported", err)
	}
}

func TestIRCRefusesATakenNickAndAWrongPasswordInOneSentence(t *testing.T) {
	t.Parallel()
	addr := startServer(t)
	newPerson(t, addr, "motion")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := irc.Network{}.Dial(ctx, route.Dial{Settings: map[string]string{"server": addr, "nick": "motion", "tls": "false"},
		Secrets: map[string]string{"password": serverPassword}})
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
	addr, kill := startKillableServer(t)
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
