// Package irctest starts a real IRC server (Debian's ngircd) for tests,
// and speaks to it as a person would.
package irctest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Password is the password of the servers Start starts.
const Password = "irc-server-password-0123"

// Server is a running IRC server.
type Server struct {
	// Addr is its host:port.
	Addr     string
	password string
	kill     func()
}

// Start starts a real IRC server (Debian's ngircd) on a free loopback
// port, in the test's own folder, with the channel #motion and the
// server password Password; the test's end stops it. It skips the test
// when ngircd is missing, unless BOTS_REQUIRE_IRC=1.
func Start(t testing.TB) *Server {
	t.Helper()
	return start(t, Password)
}

// StartOpen is Start for a server that asks no password.
func StartOpen(t testing.TB) *Server {
	t.Helper()
	return start(t, "")
}

// Kill ends the server at once, as a crash does.
func (s *Server) Kill() { s.kill() }

func start(t testing.TB, password string) *Server {
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
%s	MotdFile = %s
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
`, port, passwordLine(password), motd, filepath.Join(dir, "pid"))
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
			return &Server{Addr: addr, password: password, kill: func() { cmd.Process.Kill() }}
		}
		if time.Now().After(deadline) {
			t.Fatalf("ngircd did not listen on %s: %s", addr, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Person is a plain IRC client a test speaks through.
type Person struct {
	t     testing.TB
	c     net.Conn
	r     *bufio.Reader
	nick  string
	lines chan string
}

// Person logs nick in to the server.
func (s *Server) Person(t testing.TB, nick string) *Person {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p := &Person{t: t, c: c, r: bufio.NewReader(c), nick: nick, lines: make(chan string, 256)}
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
	if s.password != "" {
		p.Send("PASS " + s.password)
	}
	p.Send("NICK " + nick)
	p.Send("USER " + nick + " 0 * :" + nick)
	p.Wait(" 001 ")
	return p
}

// Send sends one line.
func (p *Person) Send(line string) {
	p.t.Helper()
	if _, err := fmt.Fprintf(p.c, "%s\r\n", line); err != nil {
		p.t.Fatal(err)
	}
}

// Wait returns the next line holding want, skipping the others.
func (p *Person) Wait(want string) string {
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

// passwordLine is the [Global] line of a server password, none for "".
func passwordLine(password string) string {
	if password == "" {
		return ""
	}
	return "\tPassword = " + password + "\n"
}
