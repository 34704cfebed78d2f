package transport

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/internal/waittest"
)

func TestReauthenticateClosesConnectionsWhoseTokenNoLongerHoldsAndEndsTheirSubscriptions(t *testing.T) {
	t.Parallel()
	srv, host := newTestServer(t, Config{})
	soft := dialPipe(t, srv, "soft-token")
	soft.initialize("soft", "test:/notes")
	bob := dialPipe(t, srv, "bob-token")
	bob.initialize("bob", "test:/notes")

	srv.Reauthenticate() // nothing changed: both stay
	soft.ping()
	bob.ping()

	host.refuse("soft-token")
	srv.Reauthenticate()

	_, err := soft.conn.Recv(soft.ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || !strings.Contains(ce.Reason, "token") {
		t.Fatalf("soft's connection ended with %v, want a 1008 close naming the token", err)
	}
	waittest.For(t, "soft's subscription to end", func() bool {
		for _, u := range host.unsubscribed() {
			if strings.HasPrefix(u, "test:/notes#") {
				return true
			}
		}
		return false
	})
	if got := host.unsubscribed(); len(got) != 1 {
		t.Errorf("unsubscribed %v, want soft's subscription alone", got)
	}
	if err := host.publish("test:/notes", []byte(`{"type":"notes/add","text":"after"}`)); err != nil {
		t.Fatal(err)
	}
	if got := bob.ping(); len(got) != 1 {
		t.Errorf("bob heard %d messages after the revocation, want the one action", len(got))
	}
}

func TestReauthenticateFollowsTheHostsAuthWatcher(t *testing.T) {
	t.Parallel()
	bus := engine.NewBus(nil)
	host := &watchingHost{fakeHost: newFakeHost(bus)}
	srv, err := New(Config{Host: host, Bus: bus})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	soft := dialPipe(t, srv, "soft-token")
	soft.initialize("soft")

	host.refuse("soft-token")
	host.changed()
	if _, err := soft.conn.Recv(soft.ctx); websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Fatalf("soft's connection ended with %v, want 1008", err)
	}
	srv.Close()
	if host.fn != nil {
		t.Error("Close left the server watching the host's tokens")
	}
}

// watchingHost is a fakeHost that tells of token changes.
type watchingHost struct {
	*fakeHost
	fn func()
}

func (h *watchingHost) WatchAuth(fn func()) func() {
	h.fn = fn
	return func() { h.fn = nil }
}

func (h *watchingHost) changed() { h.fn() }

// racedHost takes a token away right after its first Authenticate, as a
// users file changing during an upgrade does.
type racedHost struct {
	*fakeHost
	calls int
}

func (h *racedHost) Authenticate(token string) (access.Principal, bool) {
	p, ok := h.fakeHost.Authenticate(token)
	h.calls++
	if h.calls == 1 {
		h.refuse(token)
	}
	return p, ok
}

func TestATokenTakenAwayDuringTheUpgradeIsNotServed(t *testing.T) {
	t.Parallel()
	bus := engine.NewBus(nil)
	host := &racedHost{fakeHost: newFakeHost(bus)}
	srv, err := New(Config{Host: host, Bus: bus})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if _, err := srv.Pipe(testContext(t), "soft-token"); errcode.Of(err) != errcode.Unauthenticated {
		t.Fatalf("Pipe answered %v, want Unauthenticated", err)
	}
	srv.mu.Lock()
	n := len(srv.conns)
	srv.mu.Unlock()
	if n != 0 {
		t.Errorf("%d connections left registered", n)
	}
}

func TestPipeAsServesThePrincipalUntilValidSaysNo(t *testing.T) {
	t.Parallel()
	srv, _ := newTestServer(t, Config{})
	if _, err := srv.PipeAs(testContext(t), access.Principal{User: "soft"}, nil); errcode.Of(err) != errcode.Invalid {
		t.Fatalf("PipeAs without valid: %v, want Invalid", err)
	}
	var mu sync.Mutex
	still := true
	valid := func() bool { mu.Lock(); defer mu.Unlock(); return still }
	conn, err := srv.PipeAs(testContext(t), access.Principal{User: "soft"}, valid)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	soft := &pipeClient{t: t, ctx: testContext(t), conn: conn}
	soft.initialize("soft", "test:/notes")

	srv.Reauthenticate() // still valid: stays open
	soft.ping()

	mu.Lock()
	still = false
	mu.Unlock()
	srv.Reauthenticate()
	_, err = soft.conn.Recv(soft.ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation {
		t.Fatalf("the connection ended with %v, want a 1008 close", err)
	}
}
