package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
)

// peer records what the engine delivers, as transport's connection would
// queue it.
type peer struct {
	mu       sync.Mutex
	got      []engine.Message
	overflow bool
	replaced bool
}

func (p *peer) Deliver(m engine.Message) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, m)
}

func (p *peer) Overflow() { p.mu.Lock(); p.overflow = true; p.mu.Unlock() }
func (p *peer) Replaced() { p.mu.Lock(); p.replaced = true; p.mu.Unlock() }

// take returns what was delivered since the last take, each described in
// a word: "answer:<value>", "action:<seq>:<type>", "reject:<seq>",
// "note:<method>:<channel>".
func (p *peer) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := []string{}
	for _, m := range p.got {
		switch {
		case m.Answer != nil:
			out = append(out, fmt.Sprint("answer:", m.Answer))
		case m.Action != nil && m.Action.RejectionReason != "":
			out = append(out, fmt.Sprintf("reject:%d", m.Action.ServerSeq))
		case m.Action != nil:
			var a struct{ Type string }
			json.Unmarshal(m.Action.Action, &a)
			out = append(out, fmt.Sprintf("action:%d:%s", m.Action.ServerSeq, a.Type))
		default:
			out = append(out, "note:"+m.Method+":"+m.Channel)
		}
	}
	p.got = nil
	return out
}

// channel is a state channel holding a count; publish bumps it.
type channel struct {
	bus *engine.Bus
	uri string

	mu     sync.Mutex
	n      int
	seq    int64
	during func() // called inside Subscribe, once
	unsubs []uint64
}

func (c *channel) URI() string { return c.uri }

func (c *channel) Subscribe(context.Context, *engine.Subscriber) (engine.Snapshot, error) {
	c.mu.Lock()
	snap := engine.Snapshot{State: map[string]int{"n": c.n}, Seq: c.seq}
	during := c.during
	c.during = nil
	c.mu.Unlock()
	if during != nil {
		during()
	}
	return snap, nil
}

func (c *channel) Unsubscribe(sub *engine.Subscriber) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unsubs = append(c.unsubs, sub.ID)
}

func (c *channel) unsubscribed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.unsubs)
}

func (c *channel) publish(t *testing.T, typ string) int64 {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	seq, err := c.bus.Publish(c.uri, engine.Event{Action: map[string]any{"type": typ}})
	if err != nil {
		t.Fatal(err)
	}
	c.seq = seq
	return seq
}

// host serves the channels it holds by URI.
type host struct{ chans map[string]*channel }

func (h *host) Authenticate(string) (access.Principal, bool) { return access.RootPrincipal(), true }
func (h *host) Meta(context.Context, engine.Caller) (map[string]any, error) {
	return nil, nil
}
func (h *host) Resources(string) engine.ResourceProvider { return nil }
func (h *host) Channel(_ context.Context, _ engine.Caller, uri string) (engine.Channel, error) {
	if c := h.chans[uri]; c != nil {
		return c, nil
	}
	return nil, errcode.New(errcode.NotFound, "no channel %s", uri)
}

type rig struct {
	bus     *engine.Bus
	host    *host
	clients *engine.Clients
	notes   *channel
}

func newRig(t *testing.T, opt engine.ClientOptions) *rig {
	bus := engine.NewBus(nil)
	notes := &channel{bus: bus, uri: "test:/notes"}
	cs := bus.Clients(opt)
	t.Cleanup(cs.Close)
	return &rig{bus: bus, host: &host{chans: map[string]*channel{notes.uri: notes}}, clients: cs, notes: notes}
}

var soft = engine.Caller{ClientID: "c1", Principal: access.Principal{User: "soft"}}

// connect links a new peer, initializes it and subscribes it to uris.
func (r *rig) connect(t *testing.T, uris ...string) (*peer, *engine.Link) {
	t.Helper()
	p := &peer{}
	l := r.clients.Link(p)
	l.Initialize(soft, "1.0.0")
	b := l.Open(context.Background(), r.host, uris)
	l.Finish(b, "subscribed")
	if got := p.take(); !slices.Equal(got, []string{"answer:subscribed"}) {
		t.Fatalf("subscribing delivered %v", got)
	}
	return p, l
}

var opts = engine.ClientOptions{Replay: 16, Hold: 16, Retention: time.Minute}

func TestActionsDuringASnapshotFollowTheAnswerAndSkipWhatItHolds(t *testing.T) {
	t.Parallel()
	r := newRig(t, opts)
	before := r.notes.publish(t, "a") // in nobody's view yet
	p := &peer{}
	l := r.clients.Link(p)
	l.Initialize(soft, "1.0.0")
	var during int64
	r.notes.during = func() { during = r.notes.publish(t, "b") } // after the snapshot was taken
	b := l.Open(context.Background(), r.host, []string{"test:/notes"})
	if b.Openings[0].Err != nil || b.Openings[0].Snapshot.Seq != before || b.Seq != before {
		t.Fatalf("opening = %+v, batch seq %d; want the snapshot at %d", b.Openings[0], b.Seq, before)
	}
	if got := p.take(); len(got) != 0 {
		t.Fatalf("delivered %v before the answer", got)
	}
	l.Finish(b, "snap")
	want := []string{"answer:snap", fmt.Sprintf("action:%d:b", during)}
	if got := p.take(); !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
}

func TestAFailedOpeningIsDroppedAtFinish(t *testing.T) {
	t.Parallel()
	r := newRig(t, opts)
	p := &peer{}
	l := r.clients.Link(p)
	l.Initialize(soft, "1.0.0")
	b := l.Open(context.Background(), r.host, []string{"test:/none", "test:/notes"})
	if errcode.Of(b.Openings[0].Err) != errcode.NotFound {
		t.Fatalf("an unknown channel opened with %v", b.Openings[0].Err)
	}
	b.Openings[1].Err = fmt.Errorf("snapshot does not marshal") // as transport sets it
	l.Finish(b, "answer")
	p.take()
	r.notes.publish(t, "x")
	if got := p.take(); len(got) != 0 {
		t.Fatalf("a failed subscription got %v", got)
	}
}

func TestReconnectReplaysWhatTheClientMissedAndHoldsUntilTheAnswer(t *testing.T) {
	t.Parallel()
	r := newRig(t, opts)
	r.host.chans["test:/feed"] = &channel{bus: r.bus, uri: "test:/feed"}
	p, l := r.connect(t, "test:/notes", "test:/feed")
	seen := r.notes.publish(t, "seen")
	p.take()
	l.Close()
	missed := r.notes.publish(t, "missed")

	p2 := &peer{}
	l2 := r.clients.Link(p2)
	version, replay := l2.Reconnect(soft, seen, []string{"test:/notes", "test:/gone"})
	if replay == nil || version != "1.0.0" {
		t.Fatalf("Reconnect = %q, %v; want a replay at 1.0.0", version, replay)
	}
	if len(replay.Actions) != 1 || replay.Actions[0].ServerSeq != missed || !slices.Equal(replay.Missing, []string{"test:/gone"}) {
		t.Fatalf("replay = %+v, want the action at %d and test:/gone missing", replay, missed)
	}
	if n := r.host.chans["test:/feed"].unsubscribed(); n != 1 {
		t.Errorf("the channel left out of the reconnect heard %d unsubscribes, want 1", n)
	}
	// published while the transport encodes its answer: held until then.
	after := r.notes.publish(t, "after")
	if got := p2.take(); len(got) != 0 {
		t.Fatalf("delivered %v before the answer", got)
	}
	l2.Finish(nil, "replay")
	want := []string{"answer:replay", fmt.Sprintf("action:%d:after", after)}
	if got := p2.take(); !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
	if got := p.take(); len(got) != 0 {
		t.Fatalf("the old connection got %v", got)
	}
}

func TestReconnectReplacesTheClientsLiveConnection(t *testing.T) {
	t.Parallel()
	r := newRig(t, opts)
	p, _ := r.connect(t, "test:/notes")
	l2 := r.clients.Link(&peer{})
	if _, replay := l2.Reconnect(soft, r.bus.Seq(), []string{"test:/notes"}); replay == nil {
		t.Fatal("a live client did not resume")
	}
	l2.Finish(nil, nil)
	if !p.replaced {
		t.Fatal("the old connection was not told it was replaced")
	}
}

func TestReconnectStartsAfreshWhenTheRingLostActions(t *testing.T) {
	t.Parallel()
	r := newRig(t, engine.ClientOptions{Replay: 2, Hold: 16, Retention: time.Minute})
	_, l := r.connect(t, "test:/notes")
	l.Close()
	for range 3 { // one more than the ring holds, with nobody attached
		r.notes.publish(t, "x")
	}
	l2 := r.clients.Link(&peer{})
	version, replay := l2.Reconnect(soft, 0, []string{"test:/notes"})
	if replay != nil || version != "1.0.0" {
		t.Fatalf("Reconnect = %q, %+v; want fresh snapshots at the old version", version, replay)
	}
	if n := r.notes.unsubscribed(); n != 1 {
		t.Fatalf("the lost record's subscription heard %d unsubscribes, want 1", n)
	}
}

func TestReconnectOnOtherClientsStartsAfresh(t *testing.T) {
	t.Parallel()
	r := newRig(t, opts)
	_, l := r.connect(t, "test:/notes")
	l.Close()
	other := r.bus.Clients(opts) // another server on the same Bus
	defer other.Close()
	if version, replay := other.Link(&peer{}).Reconnect(soft, r.bus.Seq(), nil); replay != nil || version != "" {
		t.Fatalf("another server's Reconnect = %q, %+v; want a client it does not know", version, replay)
	}
}

func TestRejectIsDeliveredInOrderAtTheCurrentSeq(t *testing.T) {
	t.Parallel()
	r := newRig(t, opts)
	p, l := r.connect(t, "test:/notes")
	seq := r.notes.publish(t, "a")
	l.Reject("test:/notes", json.RawMessage(`{"type":"bad"}`), engine.Origin{ClientID: "c1", ClientSeq: 1}, "no")
	want := []string{fmt.Sprintf("action:%d:a", seq), fmt.Sprintf("reject:%d", seq)}
	if got := p.take(); !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
	// a rejection is not kept for replay.
	l.Close()
	_, replay := r.clients.Link(&peer{}).Reconnect(soft, seq-1, []string{"test:/notes"})
	if replay == nil || len(replay.Actions) != 1 || replay.Actions[0].RejectionReason != "" {
		t.Fatalf("replay = %+v, want only the published action", replay)
	}
}

func TestHoldingTooMuchOverflowsThePeer(t *testing.T) {
	t.Parallel()
	r := newRig(t, engine.ClientOptions{Replay: 16, Hold: 2, Retention: time.Minute})
	p, l := r.connect(t, "test:/notes")
	b := l.Open(context.Background(), r.host, nil) // holds deliveries
	for range 3 {
		r.notes.publish(t, "x")
	}
	if !p.overflow {
		t.Fatal("three held deliveries with room for two did not overflow")
	}
	l.Finish(b, nil)
}

func TestRevokeKeepsNothingForAReconnect(t *testing.T) {
	t.Parallel()
	r := newRig(t, opts)
	_, l := r.connect(t, "test:/notes")
	l.Revoke()
	if n := r.notes.unsubscribed(); n != 1 {
		t.Fatalf("a revoked client's channel heard %d unsubscribes, want 1", n)
	}
	l.Close()
	if _, replay := r.clients.Link(&peer{}).Reconnect(soft, r.bus.Seq(), []string{"test:/notes"}); replay != nil {
		t.Fatal("a revoked client resumed")
	}
}

func TestCloseWithoutRetentionReleasesAtOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t, engine.ClientOptions{Replay: 16, Hold: 16, Retention: -1})
	_, l := r.connect(t, "test:/notes")
	l.Close()
	if n := r.notes.unsubscribed(); n != 1 {
		t.Fatalf("heard %d unsubscribes, want 1", n)
	}
}

func TestNotificationsCarryEachSubscribersSpellingAndSkipTheReplay(t *testing.T) {
	t.Parallel()
	r := newRig(t, opts)
	p, l := r.connect(t, "test:/notes")
	if err := r.bus.Notify("test:/notes", "root/sessionAdded", map[string]any{"channel": "theirs", "x": 1}); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	m := p.got[0]
	p.mu.Unlock()
	if m.Method != "root/sessionAdded" || m.Channel != "test:/notes" || m.Params["channel"] != nil || string(m.Params["x"]) != "1" {
		t.Fatalf("delivered %+v", m)
	}
	p.take()
	l.Close()
	_, replay := r.clients.Link(&peer{}).Reconnect(soft, 0, []string{"test:/notes"})
	if replay == nil || len(replay.Actions) != 0 {
		t.Fatalf("replay = %+v, want nothing: notifications are not replayed", replay)
	}
}

func TestMarshalKeepsHTMLAndCompactsRawJSON(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   any
		want string
	}{
		{map[string]string{"type": "<b>&"}, `{"type":"<b>&"}`},
		{json.RawMessage("{ \"type\" : \"x\" }"), `{"type":"x"}`},
	} {
		got, err := engine.Marshal(c.in)
		if err != nil || string(got) != c.want {
			t.Errorf("Marshal(%v) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	for _, bad := range []any{json.RawMessage(nil), json.RawMessage("{"), func() {}} {
		if _, err := engine.Marshal(bad); err == nil {
			t.Errorf("Marshal(%T) succeeded", bad)
		}
	}
}

// A projection hands many subscribers the same marshalled action, and
// some their own: each subscriber gets the action its projection chose,
// checked and compacted, whether it shares it or not (the Bus compacts a
// shared one once per event).
func TestAProjectionsActionsReachEachSubscriberCompacted(t *testing.T) {
	t.Parallel()
	r := newRig(t, opts)
	// a and b have the same length and different bytes; the subscribers
	// with an action of their own outnumber what an event keeps compacted.
	a, b := json.RawMessage(`{ "type": "a" }`), json.RawMessage(`{ "type": "b" }`)
	const n = 12
	peers := make([]*peer, n)
	for i := range peers {
		peers[i] = &peer{}
		l := r.clients.Link(peers[i])
		l.Initialize(engine.Caller{ClientID: fmt.Sprint(i), Principal: access.Principal{User: "soft"}}, "1.0.0")
		l.Finish(l.Open(context.Background(), r.host, []string{"test:/notes"}), "subscribed")
		peers[i].take()
	}
	want := make([]string, n)
	_, err := r.bus.Publish("test:/notes", engine.Event{For: func(sub *engine.Subscriber) (any, bool) {
		var i int
		fmt.Sscan(sub.ClientID, &i)
		raw := json.RawMessage(fmt.Sprintf(`{ "type" : "own-%d" }`, i))
		switch i % 3 {
		case 0:
			raw = a
		case 1:
			raw = b
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			t.Error(err)
		}
		want[i] = buf.String()
		return raw, true
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range peers {
		p.mu.Lock()
		got := p.got
		p.mu.Unlock()
		if len(got) != 1 || got[0].Action == nil || string(got[0].Action.Action) != want[i] {
			t.Errorf("subscriber %d got %+v, want the action %s", i, got, want[i])
		}
	}
}

func TestEndForEndsOnlyTheChosenSubscriptionsAndTellsTheirClientsWhy(t *testing.T) {
	t.Parallel()
	r := newRig(t, opts)
	gone, _ := r.connect(t, "test:/notes")
	kept := &peer{}
	l := r.clients.Link(kept)
	l.Initialize(engine.Caller{ClientID: "c2", Principal: access.Principal{User: "mate"}}, "1.0.0")
	l.Finish(l.Open(context.Background(), r.host, []string{"test:/notes"}), "subscribed")
	kept.take()
	r.bus.EndFor("test:/notes", "you may no longer read it", func(sub *engine.Subscriber) bool { return sub.Principal.User == "soft" })
	seq := r.notes.publish(t, "after")
	gone.mu.Lock()
	got := slices.Clone(gone.got)
	gone.got = nil
	gone.mu.Unlock()
	if len(got) != 1 || got[0].Method != engine.SubscriptionEnded || got[0].Channel != "test:/notes" || string(got[0].Params["reason"]) != `"you may no longer read it"` {
		t.Fatalf("the ended subscriber got %+v, want one %s with the reason", got, engine.SubscriptionEnded)
	}
	if want := []string{fmt.Sprintf("action:%d:after", seq)}; !slices.Equal(kept.take(), want) {
		t.Fatalf("the subscriber kept did not get the next action")
	}
	if n := r.notes.unsubscribed(); n != 0 {
		t.Fatalf("the channel heard %d unsubscribes, want none, as with End", n)
	}
}

func TestCallDecodeNamesTheFieldOfTheWrongKind(t *testing.T) {
	t.Parallel()
	var p struct {
		Channel string `json:"channel"`
		Cursor  string `json:"cursor"`
	}
	if err := (engine.Call{Params: json.RawMessage(`{"channel":"ahp-session:/a","cursor":"3"}`)}).Decode(&p); err != nil || p.Cursor != "3" {
		t.Fatalf("good params: %v, %+v", err, p)
	}
	err := engine.Call{Params: json.RawMessage(`{"cursor":3}`)}.Decode(&p)
	if errcode.Of(err) != errcode.Invalid || errcode.Message(err) != "params.cursor must be string" {
		t.Errorf("a number for a string: %v (%v)", err, errcode.Of(err))
	}
	err = engine.DecodeParams(json.RawMessage(`[1]`), &p)
	if errcode.Of(err) != errcode.Invalid || !strings.HasPrefix(errcode.Message(err), "params are not valid: ") {
		t.Errorf("params that are no object: %v (%v)", err, errcode.Of(err))
	}
}
