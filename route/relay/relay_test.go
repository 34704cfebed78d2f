package relay_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/client"
	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/lease/memlease"
	"github.com/agenthost/bots/route"
	"github.com/agenthost/bots/route/fileroute"
	"github.com/agenthost/bots/route/memroute"
	"github.com/agenthost/bots/route/relay"
	"github.com/agenthost/bots/telemetry"
	"github.com/agenthost/bots/wake"
)

// fakeNetwork is a network in memory: the test says messages into it and
// reads what the relay sends.
type fakeNetwork struct {
	in   chan route.Message
	out  chan sent
	fail chan error // a value makes the next Dial fail with it
	// deaf holds the ids of the scopes a Send to fails, as a network that
	// takes no direct message from a bot one never wrote to.
	deaf sync.Map

	mu    sync.Mutex
	dials int
	conns []*fakeConn
}

// sent is one thing the relay sent: a text, or a question.
type sent struct {
	To       route.Scope
	Text     string
	Question *route.Question
}

func newFakeNetwork() *fakeNetwork {
	return &fakeNetwork{in: make(chan route.Message), out: make(chan sent, 64), fail: make(chan error, 1)}
}

func (n *fakeNetwork) Name() string { return "fake" }

func (n *fakeNetwork) Dial(ctx context.Context, d route.Dial) (route.Conn, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.dials++
	select {
	case err := <-n.fail:
		return nil, err
	default:
	}
	if d.Secrets["token"] != "fake-network-token-0123" {
		return nil, errors.New("the network refused the token")
	}
	c := &fakeConn{n: n, closed: make(chan struct{})}
	n.conns = append(n.conns, c)
	return c, nil
}

type fakeConn struct {
	n      *fakeNetwork
	once   sync.Once
	closed chan struct{}
	why    error // what Receive answers once closed; set before closed is
}

func (c *fakeConn) Receive(ctx context.Context) (route.Message, error) {
	select {
	case m := <-c.n.in:
		return m, nil
	case <-c.closed:
		if c.why != nil {
			return route.Message{}, c.why
		}
		return route.Message{}, errors.New("closed")
	case <-ctx.Done():
		return route.Message{}, ctx.Err()
	}
}

func (c *fakeConn) Send(ctx context.Context, to route.Scope, md string) ([]string, error) {
	if _, deaf := c.n.deaf.Load(to.ID); deaf {
		return nil, errors.New("this user never wrote to the bot")
	}
	c.n.out <- sent{To: to, Text: md}
	return []string{""}, nil
}

func (c *fakeConn) Edit(context.Context, route.Scope, string, string) error {
	return route.ErrUnsupported
}

func (c *fakeConn) Ask(ctx context.Context, to route.Scope, q route.Question) (string, error) {
	c.n.out <- sent{To: to, Question: &q}
	return "", nil
}

func (c *fakeConn) Limits() route.Limits { return route.Limits{MaxText: 1000} }

func (c *fakeConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

// drop ends the live connection as a network that hangs up does.
func (n *fakeNetwork) drop() { n.dropWith(nil) }

// dropWith ends the live connections, their Receive answering why.
func (n *fakeNetwork) dropWith(why error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, c := range n.conns {
		c.once.Do(func() {
			c.why = why
			close(c.closed)
		})
	}
}

// people maps identities to people.
type people map[string]string

func (p people) Person(identity string) (string, bool) { v, ok := p[identity]; return v, ok }

// rig is a server with a users file, the bot motion, and a relay on a
// fake network routed to motion.
type rig struct {
	t     *testing.T
	srv   *bots.Server
	net   *fakeNetwork
	store *memroute.Store
	relay *relay.Relay
	state string
	users string
	log   *waittest.Log // the relays' logs, at Info
	hub   *telemetry.Hub
}

// lounge is the rig's connection.
var lounge = []route.Connection{{ID: "lounge", Network: "fake", Enabled: true,
	Secrets: map[string]string{"token": "connectors://fake/lounge"}}}

const usersJSON = `{"root": {"token": "root-token-0123456789abcdef"},
 "users": [{"id": "soft", "token": "soft-token-0123456789abcdef", "grants": ["bot:*", "session:create"]},
           {"id": "bob", "token": "bob-token-0123456789abcdefgh", "grants": ["session:create"]}]}`

func newRig(t *testing.T) *rig {
	t.Helper()
	dir := t.TempDir()
	users := filepath.Join(dir, "users.json")
	if err := os.WriteFile(users, []byte(usersJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := &bots.Server{ConfigDir: filepath.Join(dir, "config"), HostName: "test", UsersFile: users,
		Options: bot.Options{Root: filepath.Join(dir, "bots")}}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	soft, err := srv.ClientAs(t.Context(), "soft")
	if err != nil {
		t.Fatal(err)
	}
	defer soft.Close()
	if _, err := soft.Make(t.Context(), "motion", client.Fields{Name: "Motion"}); err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, srv: srv, net: newFakeNetwork(), state: filepath.Join(dir, "config", "routes-state"), users: users,
		store: memroute.New(lounge), log: &waittest.Log{}, hub: telemetry.New(nil)}
	for _, rt := range []route.Route{
		{ID: "dm", Enabled: true, Connection: "lounge", Bot: "motion", Scope: route.Scope{Kind: route.Direct}},
		{ID: "room", Enabled: true, Connection: "lounge", Bot: "motion", Scope: route.Scope{Kind: route.Group, ID: "#motion"}},
	} {
		if _, err := r.store.PutRoute(t.Context(), rt); err != nil {
			t.Fatal(err)
		}
	}
	r.start()
	return r
}

func (r *rig) start() {
	r.t.Helper()
	r.relay = r.startWith(func(*relay.Config) {})
}

// startWith starts another relay of the rig, its config changed by edit.
func (r *rig) startWith(edit func(*relay.Config)) *relay.Relay {
	r.t.Helper()
	cfg := relay.Config{
		Store:    r.store,
		Networks: []route.Network{r.net},
		People:   people{"fake:alice": "soft", "fake:bob": "bob"},
		Open:     r.srv.ClientAs,
		Secret: func(_ context.Context, ref string) (string, error) {
			if ref == "connectors://fake/lounge" {
				return "fake-network-token-0123", nil
			}
			return "", fmt.Errorf("no credential %s", ref)
		},
		Scrub:      func(s string) string { return strings.ReplaceAll(s, "fake-network-token-0123", "[redacted]") },
		Memory:     fileroute.NewMemory(r.state),
		MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond,
		Logger:    r.log.Logger(slog.LevelInfo),
		Telemetry: r.hub,
	}
	edit(&cfg)
	rl, err := relay.Start(r.t.Context(), cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { rl.Close() })
	return rl
}

// say delivers a message from the network.
func (r *rig) say(m route.Message) {
	r.t.Helper()
	select {
	case r.net.in <- m:
	case <-time.After(10 * time.Second):
		r.t.Fatalf("the relay did not take the message %q", m.Text)
	}
}

// next is what the relay sends next.
func (r *rig) next() sent {
	r.t.Helper()
	select {
	case s := <-r.net.out:
		return s
	case <-time.After(20 * time.Second):
		r.t.Fatal("the relay sent nothing")
		return sent{}
	}
}

// groupRoom is the group the pairing tests ask for a code in.
var groupRoom = route.Scope{Kind: route.Group, ID: "#motion"}

// askToPair has the unknown fake:mallory write in room once the relay
// answers there as a pairing route does, and returns the first thing it
// sends then. The relay reloads a route when the store tells it, so the
// first answers may still be those of the route before pairs changed
// it. In a direct message mallory asks until it does; a group is told of
// a stranger once, so there other strangers (probe-n) ask first.
func (r *rig) askToPair(room route.Scope) sent {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for n := 0; room.Kind == route.Direct; n++ {
		r.say(route.Message{ID: fmt.Sprint("m", n), Scope: room, From: "fake:mallory", Text: "let me in"})
		got := r.next()
		if strings.Contains(got.Text, "pair") {
			return got
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("an unknown person on a pairing route was answered %q", got.Text)
		}
	}
	for n := 0; ; n++ {
		probe := fmt.Sprint("probe-", n)
		r.say(route.Message{ID: probe, Scope: room, From: "fake:" + probe, Text: "let me in"})
		if got := r.next(); got.To == (route.Scope{Kind: route.Direct, ID: probe}) {
			r.next() // the room hears that a code was sent
			break
		} else if time.Now().After(deadline) {
			r.t.Fatalf("an unknown person on a pairing route was answered %q", got.Text)
		}
	}
	r.say(route.Message{ID: "mallory", Scope: room, From: "fake:mallory", Text: "let me in"})
	return r.next()
}

// pairs makes the rig's route id answer unmapped users with a pairing
// code.
func (r *rig) pairs(id string) {
	r.t.Helper()
	routes, err := r.store.Routes(r.t.Context())
	if err != nil {
		r.t.Fatal(err)
	}
	for _, rt := range routes {
		if rt.ID == id {
			rt.Unmapped = route.Pair
			if _, err := r.store.PutRoute(r.t.Context(), rt); err != nil {
				r.t.Fatal(err)
			}
		}
	}
}

var aliceDM = route.Scope{Kind: route.Direct, ID: "alice"}

func TestRelayPassesADirectMessageToTheBotAndItsReplyBack(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.say(route.Message{ID: "m1", Scope: aliceDM, From: "fake:alice", Text: "hello there"})
	got := r.next()
	if got.Text != "Motion heard: hello there" || got.To != aliceDM {
		t.Fatalf("the relay sent %+v, want the echo's reply to alice", got)
	}
	// The chat is soft's, logged and listed like any chat of theirs.
	soft, err := r.srv.ClientAs(t.Context(), "soft")
	if err != nil {
		t.Fatal(err)
	}
	defer soft.Close()
	var list struct {
		Items []struct{ Resource string } `json:"items"`
	}
	if err := soft.Call(t.Context(), "listSessions", map[string]any{}, &list); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(r.state, "conn-lounge.json"))
	if err != nil {
		t.Fatal(err)
	}
	var memo struct{ Chats map[string]string }
	if err := json.Unmarshal(data, &memo); err != nil || len(memo.Chats) != 1 {
		t.Fatalf("the relay remembers %s, want one chat", data)
	}
	for _, session := range memo.Chats {
		if !slices.ContainsFunc(list.Items, func(i struct{ Resource string }) bool { return i.Resource == session }) {
			t.Errorf("soft's chats %+v do not hold the relay's chat %s", list.Items, session)
		}
	}
	// The turn ran in a back session of the route's own, which its
	// tools narrow.
	var backs struct {
		Items []struct {
			Meta struct {
				Back map[string]string `json:"ahpd.backSession"`
			} `json:"_meta"`
		} `json:"items"`
	}
	if err := soft.Call(t.Context(), "listSessions", map[string]any{}, &backs); err != nil {
		t.Fatal(err)
	}
	routed := false
	for _, i := range backs.Items {
		b := i.Meta.Back
		routed = routed || b["route"] == "dm" && b["name"] == wake.RoutedName("work", "dm")
	}
	if !routed {
		t.Errorf("soft's sessions %+v hold no back session of the route dm", backs.Items)
	}
}

func TestRelayKeepsOneChatPerPersonAndScope(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.say(route.Message{ID: "m1", Scope: aliceDM, From: "fake:alice", Text: "one"})
	r.next()
	r.say(route.Message{ID: "m2", Scope: aliceDM, From: "fake:alice", Text: "two"})
	r.next()
	data, err := os.ReadFile(filepath.Join(r.state, "conn-lounge.json"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "ahp-session:/"); n != 1 {
		t.Errorf("the relay remembers %d chats after two messages in one scope, want 1: %s", n, data)
	}
}

func TestRelayRefusesAnUnmappedUserInOneSentence(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.say(route.Message{ID: "m1", Scope: route.Scope{Kind: route.Direct, ID: "mallory"}, From: "fake:mallory", Text: "let me in"})
	got := r.next()
	if !strings.Contains(got.Text, `"fake:mallory"`) || !strings.Contains(got.Text, "users file") {
		t.Fatalf("an unmapped user was answered %q, want a sentence naming the identity and the users file", got.Text)
	}
}

func TestRelayAnswersAPersonWhoMayNotReadTheBotSoInTheNetwork(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.say(route.Message{ID: "m1", Scope: route.Scope{Kind: route.Direct, ID: "bob"}, From: "fake:bob", Text: "hi"})
	got := r.next()
	if !strings.HasPrefix(got.Text, "I could not reach the bot motion for you: ") {
		t.Fatalf("bob, who may not read motion, was answered %q", got.Text)
	}
}

func TestRelayPassesAMessageDeliveredTwiceOnceEvenAcrossARestart(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.say(route.Message{ID: "m1", Scope: aliceDM, From: "fake:alice", Text: "once"})
	r.next()
	r.relay.Close()
	r.start()
	r.say(route.Message{ID: "m1", Scope: aliceDM, From: "fake:alice", Text: "once"})
	r.say(route.Message{ID: "m2", Scope: aliceDM, From: "fake:alice", Text: "again"})
	if got := r.next(); got.Text != "Motion heard: again" {
		t.Fatalf("after a restart the relay sent %q, want the reply to the new message alone", got.Text)
	}
}

func TestRelayAsksTheBotsQuestionAsNumberedOptionsAndPassesTheAnswer(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.say(route.Message{ID: "m1", Scope: aliceDM, From: "fake:alice", Text: "ask what colour?"})
	q := r.next()
	if q.Question == nil || !strings.Contains(q.Question.Markdown, "what colour?") {
		t.Fatalf("the relay sent %+v, want the question", q)
	}
	r.say(route.Message{ID: "m2", Scope: aliceDM, From: "fake:alice", Text: "blue"})
	if got := r.next(); got.Text != "you said: blue" {
		t.Fatalf("after the answer the relay sent %+v, want the echo's reply", got)
	}
}

func TestRelayPassesAnApprovalAndADenial(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for _, c := range []struct{ answer, want string }{{"/approve", "approved"}, {"2", "denied"}} {
		r.say(route.Message{Scope: aliceDM, From: "fake:alice", Text: "approve"})
		q := r.next()
		if q.Question == nil || len(q.Question.Options) != 2 {
			t.Fatalf("the relay sent %+v, want an approval with two options", q)
		}
		r.say(route.Message{Scope: aliceDM, From: "fake:alice", Text: c.answer})
		if got := r.next(); got.Text != c.want {
			t.Fatalf("after %s the relay sent %+v, want %q", c.answer, got, c.want)
		}
	}
}

func TestRelayStopsTheRunningTurnOnSlashStop(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.say(route.Message{ID: "m0", Scope: aliceDM, From: "fake:alice", Text: "/stop"})
	if got := r.next(); got.Text != "Nothing is running." {
		t.Fatalf("a stop with nothing running was answered %q", got.Text)
	}
	r.say(route.Message{ID: "m1", Scope: aliceDM, From: "fake:alice", Text: "sleep 60"})
	// the turn must have begun before the stop: wait for it in soft's chat.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.say(route.Message{Scope: aliceDM, From: "fake:alice", Text: "/stop"})
		got := r.next()
		if got.Text == "Stopped." {
			break
		}
		if got.Text != "Nothing is running." || time.Now().After(deadline) {
			t.Fatalf("a stop was answered %q, want Stopped.", got.Text)
		}
	}
}

func TestRelayDialsAgainAfterTheNetworkDrops(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.say(route.Message{ID: "m1", Scope: aliceDM, From: "fake:alice", Text: "before"})
	r.next()
	r.net.fail <- errors.New("the network is down")
	r.net.drop()
	r.say(route.Message{ID: "m2", Scope: aliceDM, From: "fake:alice", Text: "after"})
	if got := r.next(); got.Text != "Motion heard: after" {
		t.Fatalf("after a drop the relay sent %q", got.Text)
	}
	r.net.mu.Lock()
	dials := r.net.dials
	r.net.mu.Unlock()
	if dials < 3 {
		t.Errorf("the relay dialled %d times, want a first dial, a failed one and a good one", dials)
	}
}

// TestRelayDialsAgainQuietlyWhenTheNetworkAsksForANewConnection: Slack's
// Socket Mode asks for a new connection every few hours; that is no
// failure to warn of.
func TestRelayDialsAgainQuietlyWhenTheNetworkAsksForANewConnection(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.say(route.Message{ID: "m1", Scope: aliceDM, From: "fake:alice", Text: "before"})
	r.next()
	r.net.dropWith(fmt.Errorf("%w: refresh", route.ErrRedial))
	r.say(route.Message{ID: "m2", Scope: aliceDM, From: "fake:alice", Text: "after"})
	if got := r.next(); got.Text != "Motion heard: after" {
		t.Fatalf("after the network asked for a new connection the relay sent %q", got.Text)
	}
	r.log.For(t, "the network asked for a new connection")
	if logs := r.log.String(); strings.Contains(logs, "level=WARN") {
		t.Errorf("the relay warned of a new connection the network asked for:\n%s", logs)
	}
}

// sample is the value of the series name of hub at the label values vals.
func sample(t *testing.T, hub *telemetry.Hub, name string, vals ...string) float64 {
	t.Helper()
	var got float64
	found := false
	hub.Each(func(s *telemetry.Series) {
		if s.Name != name {
			return
		}
		for _, sm := range s.Samples() {
			if slices.Equal(sm.Values, vals) {
				got, found = sm.Value, true
			}
		}
	})
	if !found {
		t.Fatalf("no %s%q", name, vals)
	}
	return got
}

func TestRelayCountsWhatBecameOfEachMessageAndItsConnectionsByState(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.say(route.Message{ID: "m1", Scope: aliceDM, From: "fake:alice", Text: "hello"})
	r.next()
	r.say(route.Message{ID: "m1", Scope: aliceDM, From: "fake:alice", Text: "hello"}) // again
	mallory := route.Scope{Kind: route.Direct, ID: "mallory"}
	r.say(route.Message{ID: "m2", Scope: mallory, From: "fake:mallory", Text: "let me in"})
	r.next()
	r.say(route.Message{ID: "m3", Scope: mallory, Name: "nemo", Text: "and me?"})
	r.next()
	for result, want := range map[string]float64{"passed": 1, "repeated": 1, "stranger": 1, "unnamed": 1, "failed": 0} {
		if got := sample(t, r.hub, relay.MessagesSeries, "fake", result); got != want {
			t.Errorf("%s{network=fake,result=%s} = %v, want %v", relay.MessagesSeries, result, got, want)
		}
	}
	if got := sample(t, r.hub, relay.ConnectionsSeries, "fake", "connected"); got != 1 {
		t.Errorf("connected fake connections: %v, want 1", got)
	}
	r.store.SetConnections(nil) // the connection goes: it is counted in no state
	waittest.For(t, "the connection no longer counted", func() bool {
		return sample(t, r.hub, relay.ConnectionsSeries, "fake", "connected") == 0
	})
}

func TestRelayReportsAConnectionItCannotDialAndWhy(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.store.SetConnections(append(slices.Clone(lounge), route.Connection{ID: "broken", Network: "fake", Enabled: true,
		Secrets: map[string]string{"token": "connectors://fake/none"}},
		route.Connection{ID: "elsewhere", Network: "smoke-signals", Enabled: true},
		route.Connection{ID: "idle", Network: "fake", Enabled: true}))
	r.store.PutRoute(t.Context(), route.Route{ID: "b", Enabled: true, Connection: "broken", Bot: "motion", Scope: route.Scope{Kind: route.Direct}})
	r.store.PutRoute(t.Context(), route.Route{ID: "e", Enabled: true, Connection: "elsewhere", Bot: "motion", Scope: route.Scope{Kind: route.Direct}})
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := r.relay.States()
		if s["broken"].State == route.Failing && s["elsewhere"].State == route.Failing && s["idle"].State == route.Off &&
			s["lounge"].State == route.Connected {
			if !strings.Contains(s["broken"].Reason, "connectors://fake/none") || !strings.Contains(s["elsewhere"].Reason, `"smoke-signals"`) {
				t.Errorf("reasons: %+v", s)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("states %+v, want broken and elsewhere failing, idle off, lounge connected", s)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRelayScrubsWhatItSends(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.say(route.Message{ID: "m1", Scope: aliceDM, From: "fake:alice", Text: "leak fake-network-token-0123"})
	if got := r.next(); strings.Contains(got.Text, "fake-network-token-0123") {
		t.Fatalf("the relay sent a credential: %q", got.Text)
	}
}

// waitState waits until the relay reports the connection in the state.
func waitState(t *testing.T, rl *relay.Relay, conn string, want route.ConnState) {
	t.Helper()
	if !waittest.Within(10*time.Second, func() bool { return rl.States()[conn].State == want }) {
		t.Fatalf("the connection %s is %+v, want %s", conn, rl.States()[conn], want)
	}
}

func TestRelayOnSharedLeasesHoldsEachConnectionOnceAndTakesItOverWhenItsHolderStops(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.relay.Close() // the rig's own runs without leases
	leases := &memlease.Leases{}
	ttl := lease.MinTTL
	one := r.startWith(func(c *relay.Config) { c.Leases, c.Holder, c.LeaseTTL = leases, "one", ttl })
	waitState(t, one, "lounge", route.Connected)
	two := r.startWith(func(c *relay.Config) { c.Leases, c.Holder, c.LeaseTTL = leases, "two", ttl })
	waitState(t, two, "lounge", route.Elsewhere)
	if got := two.States()["lounge"].Reason; !strings.Contains(got, "one") {
		t.Errorf("the waiting instance says %q, want the holder named", got)
	}
	r.net.mu.Lock()
	dials := r.net.dials
	r.net.mu.Unlock()
	one.Close()
	waitState(t, two, "lounge", route.Connected)
	r.net.mu.Lock()
	if r.net.dials != dials+1 {
		t.Errorf("the network was dialled %d times more, want once: by the instance that took over", r.net.dials-dials)
	}
	r.net.mu.Unlock()
	r.say(route.Message{ID: "m1", Scope: aliceDM, From: "fake:alice", Text: "still there?"})
	if got := r.next(); got.Text != "Motion heard: still there?" {
		t.Fatalf("after the takeover the relay sent %q", got.Text)
	}
}

func TestRelaySaysWhereAMessageWasSaidInTheContextBlock(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	room := route.Scope{Kind: route.Group, ID: "#motion"}
	r.say(route.Message{ID: "m1", Scope: room, From: "fake:alice", Name: "Alice", Text: "context"})
	got := r.next()
	if got.To != room || !strings.Contains(got.Text, "\nfrom: soft\nvia: fake:alice (Alice) in #motion\ntime: ") {
		t.Fatalf("the bot was given %q, want a via line naming the sender and the room", got.Text)
	}
}

// hookConn is a fakeConn that takes a network's requests.
type hookConn struct{ *fakeConn }

func (hookConn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.WriteString(w, "hooked "+r.URL.Path)
}

// hookNetwork dials hookConns.
type hookNetwork struct{ *fakeNetwork }

func (n hookNetwork) Dial(ctx context.Context, d route.Dial) (route.Conn, error) {
	c, err := n.fakeNetwork.Dial(ctx, d)
	if err != nil {
		return nil, err
	}
	return hookConn{c.(*fakeConn)}, nil
}

func TestRelayHandsANetworksRequestToTheConnectionItsPathNames(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.relay.Close()
	rl := r.startWith(func(c *relay.Config) { c.Networks = []route.Network{hookNetwork{r.net}} })
	waitState(t, rl, "lounge", route.Connected)
	for path, want := range map[string]int{"/hooks/lounge": http.StatusOK, "/hooks/nowhere": http.StatusNotFound} {
		w := httptest.NewRecorder()
		rl.ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, nil))
		if w.Code != want {
			t.Errorf("%s was answered %d %q, want %d", path, w.Code, w.Body, want)
		}
	}
	plain := r.startWith(func(c *relay.Config) {})
	waitState(t, plain, "lounge", route.Connected)
	w := httptest.NewRecorder()
	plain.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/hooks/lounge", nil))
	if w.Code != http.StatusNotFound {
		t.Errorf("a connection that takes no requests answered %d", w.Code)
	}
}

func TestRelayPairsAnUnmappedUserWithThePersonWhoEntersTheirCode(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.pairs("dm")
	mallory := route.Scope{Kind: route.Direct, ID: "mallory"}
	var code string
	deadline := time.Now().Add(10 * time.Second)
	for code == "" { // the relay reloads the route as the store tells it
		r.say(route.Message{Scope: mallory, From: "fake:mallory", Text: "let me in"})
		got := r.next().Text
		if i := strings.Index(got, "the code "); i >= 0 {
			code = got[i+len("the code ") : i+len("the code ")+9]
		} else if time.Now().After(deadline) {
			t.Fatalf("an unmapped user on a pairing route was answered %q", got)
		}
	}
	if _, err := r.relay.Pair("soft", "WRNG-CODE"); !errors.Is(err, relay.ErrNoPairing) {
		t.Errorf("a wrong code paired: %v", err)
	}
	identity, err := r.relay.Pair("soft", strings.ToLower(code))
	if err != nil || identity != "fake:mallory" {
		t.Fatalf("Pair: %q, %v", identity, err)
	}
	if _, err := r.relay.Pair("soft", code); !errors.Is(err, relay.ErrNoPairing) {
		t.Errorf("a code worked twice: %v", err)
	}
	r.say(route.Message{ID: "m1", Scope: mallory, From: "fake:mallory", Text: "hello"})
	if got := r.next().Text; got != "Motion heard: hello" {
		t.Fatalf("after the pairing the relay sent %q", got)
	}
	// The pairing outlives a restart.
	r.relay.Close()
	r.start()
	r.say(route.Message{ID: "m2", Scope: mallory, From: "fake:mallory", Text: "again"})
	if got := r.next().Text; got != "Motion heard: again" {
		t.Fatalf("after a restart the relay sent %q", got)
	}
}

func TestRelayListsAPersonsPairingsAndLetsOneGoAtTheirWord(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.pairs("dm")
	mallory := route.Scope{Kind: route.Direct, ID: "mallory"}
	got := r.askToPair(mallory).Text
	i := strings.Index(got, "the code ")
	if i < 0 {
		t.Fatalf("an unmapped user on a pairing route was answered %q", got)
	}
	if _, err := r.relay.Pair("soft", got[i+len("the code "):i+len("the code ")+9]); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	want := []route.Pairing{{Identity: "fake:mallory", Person: "soft"}}
	for person, want := range map[string][]route.Pairing{"soft": want, "": want, "bob": {}} {
		if got, err := r.relay.Pairings(ctx, person); err != nil || !slices.Equal(got, want) {
			t.Errorf("Pairings(%q) = %v, %v; want %v", person, got, err, want)
		}
	}
	if err := r.relay.Unpair(ctx, "bob", "fake:mallory"); !errors.Is(err, route.ErrNotPaired) {
		t.Errorf("bob let go of soft's pairing: %v", err)
	}
	if err := r.relay.Unpair(ctx, "soft", "fake:mallory"); err != nil {
		t.Fatal(err)
	}
	if got, err := r.relay.Pairings(ctx, "soft"); err != nil || len(got) != 0 {
		t.Errorf("after Unpair soft's pairings are %v, %v", got, err)
	}
	// The account is a stranger again: it is asked to pair.
	r.say(route.Message{ID: "after", Scope: mallory, From: "fake:mallory", Text: "still me?"})
	if got := r.next().Text; !strings.Contains(got, "pair this account with you") {
		t.Errorf("an account let go was answered %q, want a pairing code", got)
	}
}

// TestRelayGivesAPairingCodeAskedForInAGroupInADirectMessage: whoever
// enters a code takes the account, so a code asked for in a group goes to
// the sender alone; the group hears only that it was sent.
func TestRelayGivesAPairingCodeAskedForInAGroupInADirectMessage(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.pairs("room")
	first := r.askToPair(groupRoom)
	if first.To != (route.Scope{Kind: route.Direct, ID: "mallory"}) || !strings.Contains(first.Text, "the code ") {
		t.Fatalf("the code went to %+v: %q, want mallory's direct messages", first.To, first.Text)
	}
	notice := r.next()
	if notice.To != groupRoom || strings.Contains(notice.Text, "the code ") || !strings.Contains(notice.Text, "direct message") {
		t.Errorf("the group heard %q, want only that a code was sent directly", notice.Text)
	}
}

// TestRelayTellsAGroupOnceOfAStrangerItPassesNothingOnFrom: a stranger
// in a direct message is answered at every message, as a conversation
// goes; in a room, once, or the bot would answer every line they say.
func TestRelayTellsAGroupOnceOfAStrangerItPassesNothingOnFrom(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for i := range 2 {
		r.say(route.Message{ID: fmt.Sprint("g", i), Scope: groupRoom, From: "fake:mallory", Text: "hello room"})
	}
	if got := r.next(); got.To != groupRoom || !strings.Contains(got.Text, `"fake:mallory"`) {
		t.Fatalf("the relay sent %q to %+v, want the room told once who to ask", got.Text, got.To)
	}
	r.say(route.Message{ID: "a1", Scope: aliceDM, From: "fake:alice", Text: "hello"})
	if got := r.next(); got.To != aliceDM || got.Text != "Motion heard: hello" {
		t.Fatalf("after mallory's second line the relay sent %q to %+v, want only the answer to alice", got.Text, got.To)
	}
	mallory := route.Scope{Kind: route.Direct, ID: "mallory"}
	for i := range 2 {
		r.say(route.Message{ID: fmt.Sprint("d", i), Scope: mallory, From: "fake:mallory", Text: "let me in"})
		if got := r.next(); got.To != mallory || !strings.Contains(got.Text, `"fake:mallory"`) {
			t.Fatalf("direct message %d: the relay sent %q to %+v, want mallory answered", i+1, got.Text, got.To)
		}
	}
}

// TestRelayPassesOnNothingFromASenderTheNetworkDoesNotName: a room that
// hides who its occupants are shows only nicks, which anyone may take; a
// pairing route gives such a sender no code either, and the room is told
// so once, not at every line.
func TestRelayPassesOnNothingFromASenderTheNetworkDoesNotName(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.pairs("room")
	r.say(route.Message{ID: "m1", Scope: groupRoom, Name: "alice", Text: "hello"})
	got := r.next()
	if got.To != groupRoom || !strings.Contains(got.Text, "I cannot tell who anyone is here") || strings.Contains(got.Text, "the code ") {
		t.Fatalf("the relay sent %q to %+v, want the room told it cannot tell who spoke", got.Text, got.To)
	}
	// The relay takes a connection's messages in order: what it sends
	// next answers the direct message below, not the room's second line.
	r.say(route.Message{ID: "m2", Scope: groupRoom, Name: "bob", Text: "and me?"})
	r.say(route.Message{ID: "m3", Scope: aliceDM, From: "fake:alice", Text: "hello"})
	if got := r.next(); got.To != aliceDM || got.Text != "Motion heard: hello" {
		t.Errorf("after the room's second unnamed line the relay sent %q to %+v, want only the answer to alice", got.Text, got.To)
	}
}

// TestRelayTakesAConversationWhateverTheCaseOfItsName: an IRC channel
// or nick and an XMPP address are one whatever their case, so a route of
// #motion takes what is said in #Motion, and the reply goes there.
func TestRelayTakesAConversationWhateverTheCaseOfItsName(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	room := route.Scope{Kind: route.Group, ID: "#Motion"}
	r.say(route.Message{ID: "m1", Scope: room, From: "fake:alice", Text: "hello"})
	if got := r.next(); got.To != room || got.Text != "Motion heard: hello" {
		t.Fatalf("the relay sent %q to %+v, want the echo's reply in #Motion", got.Text, got.To)
	}
}

// TestRelayTellsAnUnnamedSenderWhatTheirNetworkSaysAtEveryDirectMessage:
// an IRC sender not logged in, where the connection names accounts, is no
// one; in a direct message they are told the adapter's sentence each
// time, as a conversation goes, and nothing is passed on.
func TestRelayTellsAnUnnamedSenderWhatTheirNetworkSaysAtEveryDirectMessage(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	nemo := route.Scope{Kind: route.Direct, ID: "nemo"}
	const why = "I pass on only what people logged in to this network's accounts say."
	for i := range 2 {
		r.say(route.Message{ID: fmt.Sprint("n", i), Scope: nemo, Name: "nemo", Unnamed: why, Text: "hello"})
		if got := r.next(); got.To != nemo || got.Text != why {
			t.Fatalf("direct message %d: the relay sent %q to %+v, want %q to nemo", i+1, got.Text, got.To, why)
		}
	}
}

// TestRelaySendsAPairingCodeWhereTheSenderIsReachedDirectly: where the
// network names a sender by an account (IRC with accounts), the code goes
// to the nick they are reached at, not to the account's name.
func TestRelaySendsAPairingCodeWhereTheSenderIsReachedDirectly(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.pairs("room")
	deadline := time.Now().Add(10 * time.Second)
	for n := 0; ; n++ {
		// Other strangers ask until the relay has reloaded the route: a
		// group is told of each stranger once.
		probe := fmt.Sprint("probe-", n)
		r.say(route.Message{ID: probe, Scope: groupRoom, From: "fake:account:" + probe, ReplyTo: probe + "-nick", Text: "let me in"})
		got := r.next()
		if got.To.Kind == route.Direct {
			if want := (route.Scope{Kind: route.Direct, ID: probe + "-nick"}); got.To != want || !strings.Contains(got.Text, "the code ") {
				t.Fatalf("the relay sent %q to %+v, want a code to %+v", got.Text, got.To, want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("an unknown person on a pairing route was answered %q", got.Text)
		}
	}
}

// TestRelayTellsAGroupWhenItCannotSendAPairingCodeDirectly: a network
// that would not take the direct message gets no code said in the group
// either, only how to get one.
func TestRelayTellsAGroupWhenItCannotSendAPairingCodeDirectly(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.net.deaf.Store("mallory", true)
	r.pairs("room")
	got := r.askToPair(groupRoom)
	if got.To != groupRoom || strings.Contains(got.Text, "the code ") || !strings.Contains(got.Text, "write to me directly") {
		t.Fatalf("the relay sent %q to %+v, want no code, and only how to get one, to the group", got.Text, got.To)
	}
}

func TestRelayJudgesEveryMessageAsItsPersonMayNow(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.say(route.Message{ID: "m1", Scope: aliceDM, From: "fake:alice", Text: "first"})
	if got := r.next().Text; got != "Motion heard: first" {
		t.Fatalf("the relay sent %q", got)
	}
	// The bot goes (as a person losing read of it does, for them): the
	// next message is answered so, and reaches no bot.
	soft, err := r.srv.ClientAs(t.Context(), "soft")
	if err != nil {
		t.Fatal(err)
	}
	defer soft.Close()
	if err := soft.Delete(t.Context(), "motion"); err != nil {
		t.Fatal(err)
	}
	var got string
	deadline := time.Now().Add(10 * time.Second)
	for i := 2; !strings.Contains(got, "motion"); i++ {
		if time.Now().After(deadline) {
			t.Fatalf("after the delete the relay sent %q", got)
		}
		r.say(route.Message{ID: fmt.Sprintf("m%d", i), Scope: aliceDM, From: "fake:alice", Text: "again"})
		got = r.next().Text
	}
	if strings.Contains(got, "heard") {
		t.Errorf("a deleted bot answered: %q", got)
	}
}

func TestRelayProbesAConnectionNoRouteRunsYet(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.store.SetConnections(append(slices.Clone(lounge),
		route.Connection{ID: "spare", Network: "fake", Enabled: true, Secrets: map[string]string{"token": "connectors://fake/lounge"}},
		route.Connection{ID: "badkey", Network: "fake", Enabled: true, Secrets: map[string]string{"token": "connectors://fake/none"}}))
	if err := r.relay.Probe(t.Context(), "spare"); err != nil {
		t.Errorf("probing a working connection: %v", err)
	}
	if err := r.relay.Probe(t.Context(), "badkey"); err == nil || !strings.Contains(err.Error(), "connectors://fake/none") {
		t.Errorf("probing a connection whose credential is missing: %v", err)
	}
	if err := r.relay.Probe(t.Context(), "nowhere"); err == nil {
		t.Error("probing no connection worked")
	}
	waitState(t, r.relay, "lounge", route.Connected)
	if err := r.relay.Probe(t.Context(), "lounge"); err != nil {
		t.Errorf("probing the connected one: %v", err)
	}
}

func TestStartNamesWhatItsConfigLacks(t *testing.T) {
	t.Parallel()
	open := func(context.Context, string) (*client.Client, error) { return nil, errors.New("no server") }
	full := relay.Config{Store: memroute.New(nil), People: people{}, Open: open, Memory: &memroute.Memory{}}
	for field, edit := range map[string]func(*relay.Config){
		"Store":  func(c *relay.Config) { c.Store = nil },
		"People": func(c *relay.Config) { c.People = nil },
		"Open":   func(c *relay.Config) { c.Open = nil },
		"Memory": func(c *relay.Config) { c.Memory = nil },
	} {
		cfg := full
		edit(&cfg)
		rl, err := relay.Start(t.Context(), cfg)
		if err == nil {
			rl.Close()
			t.Errorf("a config without %s started a relay", field)
			continue
		}
		if want := "relay: Config." + field + " is required"; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("without %s: %v, want %q", field, err, want)
		}
	}
	rl, err := relay.Start(t.Context(), full)
	if err != nil {
		t.Fatalf("the full config: %v", err)
	}
	rl.Close()
}
