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

	"github.com/agenthost/bots/internal/waittest"
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
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "motd"), []byte("test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // ngircd runs as nobody
		t.Fatal(err)
	}
	// The port is free when we look, but a server of another test can
	// take it before ngircd binds it: ngircd then exits, and a dial would
	// reach that other server. So ngircd's own line says it listens, and
	// a port taken meanwhile is tried again with another.
	var out *waittest.Log
	for range 3 {
		port := freePort(t)
		conf := filepath.Join(dir, "ngircd.conf")
		if err := os.WriteFile(conf, []byte(config(dir, port, password)), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "--nodaemon", "--config", conf)
		out = &waittest.Log{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		listening := fmt.Sprintf("Now listening on [127.0.0.1]:%s ", port)
		waittest.Within(10*time.Second, func() bool {
			select {
			case <-exited:
				return true
			default:
				return strings.Contains(out.String(), listening)
			}
		})
		select {
		case <-exited:
			continue // it could not bind the port
		default:
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			<-exited
		})
		if !strings.Contains(out.String(), listening) {
			t.Fatalf("ngircd did not listen on 127.0.0.1:%s: %s", port, out)
		}
		return &Server{Addr: net.JoinHostPort("127.0.0.1", port), password: password, kill: func() { cmd.Process.Kill() }}
	}
	t.Fatalf("ngircd did not start on any of three free ports: %s", out)
	return nil
}

// config is ngircd's configuration for a server in dir on port.
func config(dir, port, password string) string {
	return fmt.Sprintf(`[Global]
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
`, port, passwordLine(password), filepath.Join(dir, "motd"), filepath.Join(dir, "pid"))
}

// freePort is a loopback port no one listens on now.
func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
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
