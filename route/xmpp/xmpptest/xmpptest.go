// Package xmpptest starts a real XMPP server (Debian's prosody) for
// tests, with accounts and a multi-user chat service.
package xmpptest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Domain is the server's domain; Rooms is its multi-user chat service.
const (
	Domain = "localhost"
	Rooms  = "conference.localhost"
)

// Server is a running prosody.
type Server struct {
	// Addr is its client port's host:port.
	Addr string
	conf string
	ctl  string
	kill func()
}

// Start starts prosody on a free loopback port, in the test's own folder,
// that takes plain-text logins on loopback and whose rooms, made by the
// first to join, show their occupants' JIDs; the test's end stops it. It
// skips the test when prosody is missing, unless BOTS_REQUIRE_XMPP=1.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("prosody")
	ctl, cerr := exec.LookPath("prosodyctl")
	if err != nil || cerr != nil {
		if os.Getenv("BOTS_REQUIRE_XMPP") == "1" {
			t.Fatal("prosody is not installed and BOTS_REQUIRE_XMPP=1: install it (scripts/ci-deps.sh does)")
		}
		t.Skip("prosody is not installed: the XMPP tests need a real server (apt-get install prosody)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	l.Close()
	dir := t.TempDir()
	for _, d := range []string{"data", "certs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	conf := filepath.Join(dir, "prosody.cfg.lua")
	body := fmt.Sprintf(`pidfile = %[1]q
data_path = %[2]q
certificates = %[3]q
run_as_root = true
daemonize = false
c2s_ports = { %[4]s }
c2s_interfaces = { "127.0.0.1" }
s2s_ports = { }
http_ports = { }
https_ports = { }
component_ports = { }
c2s_require_encryption = false
allow_unencrypted_plain_auth = true
authentication = "internal_plain"
log = { error = %[5]q }
modules_enabled = { "roster"; "saslauth"; "disco"; "ping"; "posix" }
modules_disabled = { "s2s"; "tls" }
VirtualHost %[6]q
Component %[7]q "muc"
	muc_room_locking = false
	muc_room_default_public_jids = true
`, filepath.Join(dir, "pid"), filepath.Join(dir, "data"), filepath.Join(dir, "certs"), port, filepath.Join(dir, "error.log"), Domain, Rooms)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", conf)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return &Server{Addr: addr, conf: conf, ctl: ctl, kill: func() { cmd.Process.Kill() }}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prosody did not listen on %s: %s", addr, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Register makes the account user@Domain with the password, and answers
// its JID.
func (s *Server) Register(t testing.TB, user, password string) string {
	t.Helper()
	out, err := exec.Command(s.ctl, "--config", s.conf, "register", user, Domain, password).CombinedOutput()
	if err != nil {
		t.Fatalf("prosodyctl register %s: %v\n%s", user, err, out)
	}
	return user + "@" + Domain
}

// Kill ends the server at once, as a crash does.
func (s *Server) Kill() { s.kill() }
