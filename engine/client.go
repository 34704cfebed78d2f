package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/errcode"
)

// Peer is a client's connection as the engine sees it: package transport's
// connection implements it. The engine calls it with the Bus locked, in
// the order things happen: its methods must not block, encode, or call the
// Bus.
type Peer interface {
	// Deliver queues m for the client, after everything delivered before
	// it. A peer whose client reads too slowly closes itself.
	Deliver(m Message)
	// Overflow says that the client fell too far behind while it took
	// snapshots: the peer closes.
	Overflow()
	// Replaced says that the client reconnected on another connection:
	// the peer closes.
	Replaced()
}

// Message is one thing the engine delivers to a client: an action, a
// notification, or an answer the transport made. Exactly one of Action,
// Method and Answer is set. Its parts are shared and must not be changed.
type Message struct {
	// Action is an action on a channel the client subscribes to, or a
	// rejection of one it dispatched (RejectionReason set).
	Action *Envelope
	// Method is a notification's method (root/sessionAdded…); Params are
	// its params, without "channel": Channel, the client's spelling of
	// the channel, goes there.
	Method  string
	Channel string
	Params  map[string]json.RawMessage
	// Answer is the value the transport gave to Link.Finish: its answer
	// to the request that opened subscriptions or resumed the client.
	Answer any
}

// Envelope is the params of an action notification: one action on one
// channel, with the serverSeq it was given.
type Envelope struct {
	// Channel is the channel URI as the receiving client spelled it.
	Channel string `json:"channel"`
	// Action is the action, a JSON object with a string "type".
	Action json.RawMessage `json:"action"`
	// ServerSeq is the action's place in the one global sequence.
	ServerSeq int64 `json:"serverSeq"`
	// Origin is the dispatch the action echoes; nil for the server's own.
	Origin *Origin `json:"origin,omitempty"`
	// RejectionReason is set on a rejected dispatch, sent to its sender
	// alone.
	RejectionReason string `json:"rejectionReason,omitempty"`
}

// ClientOptions say what Clients keep of each client.
type ClientOptions struct {
	// Replay is how many recent envelopes are kept per client for a
	// reconnect; zero keeps none (a reconnect then always gets fresh
	// snapshots).
	Replay int
	// Hold is how many deliveries may wait while a client takes
	// snapshots; one more and the client is too far behind.
	Hold int
	// Retention is how long a client's subscriptions and envelopes are
	// kept after its connection is gone, for a reconnect to resume;
	// negative drops them at once.
	Retention time.Duration
}

// Clients are the clients one server keeps on a Bus: each client's
// subscriptions and the envelopes last delivered to it, kept across its
// connections. A client resumes only on the Clients that made it.
type Clients struct {
	bus *Bus
	opt ClientOptions
}

// Clients returns a new set of clients on b, kept as opt says.
func (b *Bus) Clients(opt ClientOptions) *Clients {
	return &Clients{bus: b, opt: opt}
}

// Close drops every client cs made, telling the channel owners their
// subscriptions ended.
func (cs *Clients) Close() {
	b := cs.bus
	b.mu.Lock()
	var subs []*subscription
	for _, rec := range b.clients {
		if rec.owner == cs {
			subs = append(subs, b.releaseLocked(rec)...)
		}
	}
	b.mu.Unlock()
	unsubscribed(subs)
}

// Link ties a new connection, seen through p, to the engine. Its client
// is named by Initialize or Reconnect; Close unties it.
func (cs *Clients) Link(p Peer) *Link {
	return &Link{cs: cs, peer: p}
}

// Link is one connection's tie to the engine. Initialize, Reconnect, Open,
// Finish, Unsubscribe and Reject are called by the connection's reading
// goroutine, one at a time; Revoke and Close may be called from anywhere.
type Link struct {
	cs   *Clients
	peer Peer

	// Guarded by Bus.mu (rec is also read by the reading goroutine,
	// which alone writes it).
	rec     *record
	revoked bool // keep nothing for a reconnect
}

// clientKey names a client: a client id is only resumed by the principal
// that made it.
type clientKey struct {
	principal string
	clientID  string
}

func keyOf(p access.Principal, clientID string) clientKey {
	return clientKey{principal: p.String(), clientID: clientID}
}

// record is what the engine keeps of one client across connections: its
// subscriptions and the envelopes last delivered to it, for reconnect.
// Guarded by Bus.mu.
type record struct {
	key     clientKey
	caller  Caller
	version string
	owner   *Clients
	subs    map[string]*subscription // by the client's URI

	ring    []Envelope // delivered envelopes; once full, circular from start
	start   int        // index of the oldest in a full ring
	dropped int64      // the highest serverSeq dropped from the ring
	lost    bool       // the ring overflowed while no connection was attached

	link     *Link
	holding  int    // requests taking snapshots or answering: hold deliveries while > 0
	held     []held // deliveries held, in order
	timer    *time.Timer
	released bool
}

type held struct {
	sub *subscription
	ev  *event
}

// keep adds env to the ring, dropping the oldest when full. A ring that
// overflows while no connection is attached can no longer replay: the
// record is lost, and a reconnect gets fresh snapshots.
func (r *record) keep(env Envelope) {
	ringCap := r.owner.opt.Replay
	switch {
	case ringCap == 0:
		r.dropped = env.ServerSeq
	case len(r.ring) < ringCap:
		r.ring = append(r.ring, env)
		return
	default:
		r.dropped = r.ring[r.start].ServerSeq
		r.ring[r.start] = env
		r.start = (r.start + 1) % ringCap
	}
	if r.link == nil {
		r.lost = true
	}
}

// since returns the kept envelopes after seq on the given URIs, in order.
func (r *record) since(seq int64, uris map[string]bool) []Envelope {
	out := []Envelope{}
	for i := range r.ring {
		env := r.ring[(r.start+i)%len(r.ring)]
		if env.ServerSeq > seq && uris[env.Channel] {
			out = append(out, env)
		}
	}
	return out
}

// newRecordLocked makes the record of a client, replacing any earlier
// record of it in the index, attached to l.
func (l *Link) newRecordLocked(caller Caller, version string) *record {
	rec := &record{
		key:     keyOf(caller.Principal, caller.ClientID),
		caller:  caller,
		version: version,
		owner:   l.cs,
		subs:    map[string]*subscription{},
		link:    l,
	}
	l.cs.bus.clients[rec.key] = rec
	l.rec = rec
	return rec
}

// releaseLocked drops rec and all its subscriptions, returning those the
// channel owners should hear about.
func (b *Bus) releaseLocked(rec *record) []*subscription {
	if rec.released {
		return nil
	}
	rec.released = true
	if rec.timer != nil {
		rec.timer.Stop()
		rec.timer = nil
	}
	if b.clients[rec.key] == rec {
		delete(b.clients, rec.key)
	}
	subs := make([]*subscription, 0, len(rec.subs))
	for _, sub := range rec.subs {
		subs = append(subs, sub)
	}
	for _, sub := range subs {
		b.removeSubLocked(sub)
	}
	rec.held = nil
	return subs
}

// Initialize starts the client caller afresh on l, speaking the protocol
// version: what an earlier connection of the same client left waiting is
// dropped, since it is of no use to a fresh start.
func (l *Link) Initialize(caller Caller, version string) {
	b := l.cs.bus
	b.mu.Lock()
	var left []*subscription
	if old := b.clients[keyOf(caller.Principal, caller.ClientID)]; old != nil && old.link == nil {
		left = b.releaseLocked(old)
	}
	l.newRecordLocked(caller, version)
	b.mu.Unlock()
	unsubscribed(left)
}

// Replay is what a resumed client missed.
type Replay struct {
	// Actions are the envelopes after the client's last seen serverSeq
	// on the channels it still subscribes to, in order.
	Actions []Envelope
	// Missing are the channels it named that it no longer subscribes to.
	Missing []string
}

// Reconnect resumes the client caller on l, in place of Initialize. When
// the client's record on these Clients still holds every envelope after
// lastSeen, l takes it over: the client's connection elsewhere is
// Replaced, its subscriptions to channels not in uris end, and Reconnect
// returns what it missed; deliveries are held until Finish(nil, answer)
// sends the answer. Otherwise the client starts afresh, keeping only its
// protocol version: replay is nil, and its subscriptions are opened again
// with Open. version is the protocol version the client spoke before, ""
// for a client these Clients do not know.
func (l *Link) Reconnect(caller Caller, lastSeen int64, uris []string) (version string, replay *Replay) {
	want := make(map[string]bool, len(uris))
	for _, u := range uris {
		want[u] = true
	}
	b := l.cs.bus
	b.mu.Lock()
	old := b.clients[keyOf(caller.Principal, caller.ClientID)]
	var left []*subscription
	if old != nil && !old.lost && !old.released && old.owner == l.cs &&
		lastSeen >= old.dropped && lastSeen <= b.seq {
		// Replay: take the record over.
		if old.link != nil && old.link != l {
			old.link.peer.Replaced()
		}
		if old.timer != nil {
			old.timer.Stop()
			old.timer = nil
		}
		replay = &Replay{Actions: old.since(lastSeen, want), Missing: []string{}}
		for _, u := range uris {
			if old.subs[u] == nil {
				replay.Missing = append(replay.Missing, u)
			}
		}
		for u, sub := range old.subs {
			if !want[u] {
				b.removeSubLocked(sub)
				left = append(left, sub)
			}
		}
		old.link = l
		old.holding++ // until Finish sends the answer
		l.rec = old
		b.mu.Unlock()
		unsubscribed(left)
		return old.version, replay
	}
	// Fresh snapshots.
	if old != nil && old.owner == l.cs {
		if old.link != nil && old.link != l {
			old.link.peer.Replaced()
		}
		version = old.version
		left = b.releaseLocked(old)
	}
	l.newRecordLocked(caller, version)
	b.mu.Unlock()
	unsubscribed(left)
	return version, nil
}

// Opening is one subscription a Batch opens.
type Opening struct {
	// URI is the channel as the client spelled it.
	URI string
	// Snapshot is the state the subscription starts from.
	Snapshot Snapshot
	// Err refuses the subscription: the host's error, or one the
	// transport sets before Finish (a snapshot that does not marshal).
	Err error

	sub *subscription
}

// Batch is the subscriptions one request opens together.
type Batch struct {
	// Openings are in the order of the URIs asked for.
	Openings []*Opening
	// Seq is the serverSeq when they were registered.
	Seq int64
}

// Open subscribes l's client to the channels host names at uris and takes
// their snapshots. Until Finish, everything for this client is held back,
// so that the answer comes before any action that follows its snapshots,
// and envelopes go out in serverSeq order. A subscription to a URI the
// client subscribed to already replaces it.
func (l *Link) Open(ctx context.Context, host Host, uris []string) *Batch {
	rec := l.rec
	batch := &Batch{Openings: make([]*Opening, len(uris))}
	chans := make([]Channel, len(uris))
	for i, u := range uris {
		o := &Opening{URI: u}
		batch.Openings[i] = o
		ch, err := host.Channel(ctx, rec.caller, u)
		if err == nil && ch == nil {
			err = errcode.New(errcode.NotFound, "no channel %s", u)
		}
		o.Err = err
		chans[i] = ch
	}
	b := l.cs.bus
	var replaced []*subscription
	b.mu.Lock()
	rec.holding++
	batch.Seq = b.seq
	for i, o := range batch.Openings {
		if o.Err != nil {
			continue
		}
		sub, old := b.addSubLocked(rec, o.URI, chans[i])
		o.sub = sub
		if old != nil {
			replaced = append(replaced, old)
		}
	}
	b.mu.Unlock()
	unsubscribed(replaced)
	for _, o := range batch.Openings {
		if o.Err != nil {
			continue
		}
		o.Snapshot, o.Err = o.sub.ch.Subscribe(ctx, o.sub.s)
	}
	return batch
}

// Finish ends what Open or a replaying Reconnect began: the batch's
// subscriptions are ready (those with an Err are dropped), answer is
// delivered when it is not nil, then what was held back meanwhile. batch
// is nil after Reconnect.
func (l *Link) Finish(batch *Batch, answer any) {
	b := l.cs.bus
	b.mu.Lock()
	defer b.mu.Unlock()
	rec := l.rec
	if batch != nil {
		for _, o := range batch.Openings {
			if o.sub == nil {
				continue
			}
			if o.Err != nil {
				if !o.sub.gone {
					b.removeSubLocked(o.sub)
				}
				continue
			}
			o.sub.after = o.Snapshot.Seq
			o.sub.ready = true
		}
	}
	if answer != nil {
		l.peer.Deliver(Message{Answer: answer})
	}
	rec.holding--
	if rec.holding > 0 {
		return // another request still takes snapshots
	}
	held := rec.held
	rec.held = nil
	for _, h := range held {
		b.sendLocked(h.sub, h.ev)
	}
}

// Unsubscribe ends the client's subscription to the channel it spelled
// uri, if any.
func (l *Link) Unsubscribe(uri string) {
	b := l.cs.bus
	b.mu.Lock()
	sub := l.rec.subs[uri]
	if sub != nil {
		b.removeSubLocked(sub)
	}
	b.mu.Unlock()
	if sub != nil {
		unsubscribed([]*subscription{sub})
	}
}

// Reject sends a dispatched action back to this client alone, at the
// current serverSeq, with the reason it was refused. It is not kept for
// replay. action must be valid JSON.
func (l *Link) Reject(channel string, action json.RawMessage, origin Origin, reason string) {
	b := l.cs.bus
	b.mu.Lock()
	defer b.mu.Unlock()
	env := Envelope{Channel: channel, Action: action, ServerSeq: b.seq, Origin: &origin, RejectionReason: reason}
	l.peer.Deliver(Message{Action: &env})
}

// Revoke ends l's client at once, its token no longer holding: its
// subscriptions end, and nothing is kept for a reconnect, now or when
// Close follows.
func (l *Link) Revoke() {
	b := l.cs.bus
	b.mu.Lock()
	l.revoked = true
	var subs []*subscription
	if rec := l.rec; rec != nil && rec.link == l {
		rec.link = nil
		subs = b.releaseLocked(rec)
	}
	b.mu.Unlock()
	unsubscribed(subs)
}

// Close unties l when its connection is gone: its client's record waits
// the Clients' retention for a reconnect, then is released.
func (l *Link) Close() {
	b := l.cs.bus
	b.mu.Lock()
	rec := l.rec
	if rec == nil || rec.link != l {
		b.mu.Unlock()
		return
	}
	rec.link = nil
	var subs []*subscription
	if l.cs.opt.Retention < 0 || rec.lost || l.revoked {
		subs = b.releaseLocked(rec)
	} else {
		rec.timer = time.AfterFunc(l.cs.opt.Retention, func() { l.cs.expire(rec) })
	}
	b.mu.Unlock()
	unsubscribed(subs)
}

// expire releases rec if no connection came back for it.
func (cs *Clients) expire(rec *record) {
	b := cs.bus
	b.mu.Lock()
	var subs []*subscription
	if rec.link == nil {
		subs = b.releaseLocked(rec)
	}
	b.mu.Unlock()
	unsubscribed(subs)
}
