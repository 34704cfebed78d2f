// Package xmpptest starts a real XMPP server (Debian's prosody) for
// tests, with accounts and a multi-user chat service.
package xmpptest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agenthost/bots/internal/waittest"
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
	return start(t, true)
}

// StartHidingJIDs is Start for a server whose rooms are semi-anonymous:
// they show an occupant's JID to the room's moderators alone (the first
// to join is one), not to whoever joins after.
func StartHidingJIDs(t testing.TB) *Server {
	t.Helper()
	return start(t, false)
}

func start(t testing.TB, publicJIDs bool) *Server {
	t.Helper()
	bin, err := exec.LookPath("prosody")
	ctl, cerr := exec.LookPath("prosodyctl")
	if err != nil || cerr != nil {
		if os.Getenv("BOTS_REQUIRE_XMPP") == "1" {
			t.Fatal("prosody is not installed and BOTS_REQUIRE_XMPP=1: install it (scripts/ci-deps.sh does)")
		}
		t.Skip("prosody is not installed: the XMPP tests need a real server (apt-get install prosody)")
	}
	dir := t.TempDir()
	for _, d := range []string{"data", "certs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	conf, logPath := filepath.Join(dir, "prosody.cfg.lua"), filepath.Join(dir, "prosody.log")
	// The port is free when we look, but a server of another test can
	// take it before prosody binds it, and prosody then runs on without
	// it: a dial would reach that other server. So prosody's own log line
	// says it listens, and a port taken meanwhile is tried again with
	// another.
	var log []byte
	for range 3 {
		port := freePort(t)
		if err := os.WriteFile(conf, []byte(config(dir, port, logPath, publicJIDs)), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Remove(logPath)
		cmd := exec.Command(bin, "--config", conf)
		out := &waittest.Log{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		stop := func() {
			cmd.Process.Kill()
			<-exited
		}
		listening := fmt.Sprintf("Activated service 'c2s' on [127.0.0.1]:%s\n", port)
		taken := fmt.Sprintf("Failed to open server port %s ", port)
		waittest.Within(20*time.Second, func() bool {
			log, _ = os.ReadFile(logPath)
			select {
			case <-exited:
				return true
			default:
				return bytes.Contains(log, []byte(listening)) || bytes.Contains(log, []byte(taken))
			}
		})
		switch {
		case bytes.Contains(log, []byte(listening)):
			t.Cleanup(stop)
			return &Server{Addr: net.JoinHostPort("127.0.0.1", port), conf: conf, ctl: ctl, kill: func() { cmd.Process.Kill() }}
		case bytes.Contains(log, []byte(taken)):
			stop()
		default:
			stop()
			t.Fatalf("prosody did not listen on 127.0.0.1:%s: %s\n%s", port, out, log)
		}
	}
	t.Fatalf("prosody did not start on any of three free ports:\n%s", log)
	return nil
}

// config is prosody's configuration for a server in dir on port, logging
// to logPath, whose rooms show their occupants' JIDs to all when
// publicJIDs, else to their moderators.
func config(dir, port, logPath string, publicJIDs bool) string {
	return fmt.Sprintf(`pidfile = %[1]q
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
log = { info = %[5]q }
modules_enabled = { "roster"; "saslauth"; "disco"; "ping"; "posix" }
modules_disabled = { "s2s"; "tls" }
VirtualHost %[6]q
Component %[7]q "muc"
	muc_room_locking = false
	muc_room_default_public_jids = %[8]t
`, filepath.Join(dir, "pid"), filepath.Join(dir, "data"), filepath.Join(dir, "certs"), port, logPath, Domain, Rooms, publicJIDs)
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
