// Package irctest starts a real IRC server (Debian's ngircd, or inspircd
// with atheme-services where people log in to accounts) for tests, and
// speaks to it as a person would.
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
	Addr string
	// Accounts is true for a server whose services log people in to
	// accounts (StartWithAccounts).
	Accounts bool
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

// StartWithAccounts starts a real IRC server whose services log people
// in to accounts (NickServ, and SASL at login) and tell the bot who is
// logged in (IRCv3 account-tag):
// Debian's inspircd, with atheme-services linked to it, on free loopback
// ports in the test's own folder, with no server password; the test's
// end stops both. A Person logs in to an account with Register. It skips
// the test when either is missing, unless BOTS_REQUIRE_IRC=1.
func StartWithAccounts(t testing.TB) *Server {
	t.Helper()
	ircd, services := lookBin(t, "inspircd"), lookBin(t, "atheme-services")
	dir := t.TempDir()
	var out *waittest.Log
	for range 3 { // a free port can be taken before inspircd binds it
		port, link := freePort(t), freePort(t)
		conf := filepath.Join(dir, "inspircd.conf")
		if err := os.WriteFile(conf, []byte(inspircdConfig(dir, port, link)), 0o644); err != nil {
			t.Fatal(err)
		}
		out = &waittest.Log{}
		kill, exited := run(t, out, ircd, "--config", conf, "--nofork", "--runasroot")
		waittest.Within(10*time.Second, func() bool {
			return exited() || strings.Contains(out.String(), "InspIRCd is now running")
		})
		if strings.Contains(out.String(), "failed to bind") || exited() {
			kill()
			continue
		}
		if !strings.Contains(out.String(), "InspIRCd is now running") {
			t.Fatalf("inspircd did not start: %s", out)
		}
		conf = filepath.Join(dir, "atheme.conf")
		if err := os.WriteFile(conf, []byte(athemeConfig(link)), 0o644); err != nil {
			t.Fatal(err)
		}
		svc := &waittest.Log{}
		_, gone := run(t, svc, services, "-n", "-c", conf, "-D", dir, "-l", filepath.Join(dir, "atheme.log"), "-p", filepath.Join(dir, "atheme.pid"))
		linked := "finished synching with uplink"
		waittest.Within(10*time.Second, func() bool { return gone() || strings.Contains(svc.String(), linked) })
		if !strings.Contains(svc.String(), linked) {
			t.Fatalf("atheme-services did not link to inspircd: %s", svc)
		}
		return &Server{Addr: net.JoinHostPort("127.0.0.1", port), Accounts: true, kill: kill}
	}
	t.Fatalf("inspircd did not start on any of three free ports: %s", out)
	return nil
}

// lookBin finds a server's program, skipping the test (or failing it,
// with BOTS_REQUIRE_IRC=1) when it is not installed.
func lookBin(t testing.TB, name string) string {
	t.Helper()
	for _, p := range []string{name, "/usr/sbin/" + name, "/usr/local/sbin/" + name} {
		if bin, err := exec.LookPath(p); err == nil {
			return bin
		}
	}
	if os.Getenv("BOTS_REQUIRE_IRC") == "1" {
		t.Fatalf("%s is not installed and BOTS_REQUIRE_IRC=1: install it (scripts/ci-deps.sh does)", name)
	}
	t.Skipf("%s is not installed: the IRC accounts tests need a real server with services (apt-get install inspircd atheme-services)", name)
	return ""
}

// run starts a server's program, its output in out, and stops it when
// the test ends; kill ends it at once, exited reports whether it has.
func run(t testing.TB, out *waittest.Log, bin string, args ...string) (kill func(), exited func() bool) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	kill = func() {
		cmd.Process.Kill()
		<-done
	}
	t.Cleanup(kill)
	return kill, func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
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

// inspircdConfig is inspircd's configuration for a server in dir on port,
// which atheme-services links to on link.
func inspircdConfig(dir, port, link string) string {
	return fmt.Sprintf(`<server name="irc.test" description="a test server" network="Test">
<admin name="test" nick="test" email="test@irc.test">
<bind address="127.0.0.1" port="%[2]s" type="clients">
<bind address="127.0.0.1" port="%[3]s" type="servers">
<class name="all" commands="*" privs="*" usermodes="*" chanmodes="*">
<connect name="main" allow="*" timeout="60" pingfreq="120" hardsendq="1M" softsendq="1M" recvq="64K"
	threshold="100000" commandrate="1000000" fakelag="no" localmax="1000" globalmax="1000" limit="5000"
	useident="no" resolvehostnames="no">
<dns server="127.0.0.1" timeout="1">
<pid file="%[1]s/inspircd.pid">
<log method="file" type="* -USERINPUT -USEROUTPUT" level="default" target="%[1]s/inspircd.log">
<performance clonesonconnect="no">
<module name="spanningtree">
<module name="services_account">
<module name="cap">
<module name="ircv3">
<module name="ircv3_accounttag">
<module name="ircv3_servertime">
<module name="sasl">
<module name="chghost">
<module name="cloaking">
<module name="globops">
<module name="cban">
<module name="svshold">
<module name="shun">
<module name="topiclock">
<cloak mode="half" key="0123456789abcdef0123456789abcdef">
<link name="services.test" ipaddr="127.0.0.1" port="%[3]s" allowmask="127.0.0.0/8" sendpass="link-password-0123" recvpass="link-password-0123">
<uline server="services.test" silent="yes">
<sasl target="services.test">
`, dir, port, link)
}

// athemeConfig is the configuration of atheme-services linking to
// inspircd on link: NickServ, accounts registered at once, and SASL.
func athemeConfig(link string) string {
	return fmt.Sprintf(`loadmodule "modules/protocol/inspircd";
loadmodule "modules/backend/opensex";
loadmodule "modules/crypto/pbkdf2v2";
loadmodule "modules/nickserv/main";
loadmodule "modules/nickserv/register";
loadmodule "modules/nickserv/identify";
loadmodule "modules/nickserv/logout";
loadmodule "modules/saslserv/main";
loadmodule "modules/saslserv/plain";
serverinfo {
	name = "services.test"; desc = "services"; numeric = "00A"; recontime = 1; netname = "Test";
	hidehostsuffix = "users.test"; adminname = "test"; adminemail = "test@irc.test";
	registeremail = "test@irc.test"; mta = "/bin/true"; loglevel = { all; }; auth = none;
	maxlogins = 5; maxusers = 5; maxnicks = 5; maxchans = 5; mdlimit = 30;
	emaillimit = 10; emailtime = 300; casemapping = rfc1459;
};
uplink "irc.test" { host = "127.0.0.1"; port = %s; send_password = "link-password-0123"; receive_password = "link-password-0123"; };
nickserv { nick = "NickServ"; user = "NickServ"; host = "services.test"; real = "Nickname Services"; };
saslserv { nick = "SaslServ"; user = "SaslServ"; host = "services.test"; real = "SASL"; };
general {
	permissive_mode = no; helpchan = "#help"; helpurl = "http://irc.test"; verbose_wallops = no;
	join_chans = no; leave_chans = no; secure = no; uflags = { hidemail; }; cflags = { verbose; };
	raw = no; flood_msgs = 1000; flood_time = 1; ratelimit_uses = 1000; ratelimit_period = 1;
	kline_time = 7; commit_interval = 5; immune_level = immune; show_entity_id = yes;
};
`, link)
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

// Register registers the person's nick as an account with the server's
// NickServ (StartWithAccounts) and logs them in to it.
func (p *Person) Register(password string) {
	p.t.Helper()
	p.Send("PRIVMSG NickServ :REGISTER " + password + " " + p.nick + "@users.test")
	p.Wait(" 900 ") // RPL_LOGGEDIN
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
