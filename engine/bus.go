package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
)

// Bus carries actions from channel owners to subscribers. It gives every
// action the next number of the one global serverSeq, shared by all
// channels, and keeps each client's recent envelopes for reconnect.
//
// A host publishes on the Bus its server was configured with. Its methods
// are safe for concurrent use and never block on a client: a client that
// falls too far behind is disconnected instead.
type Bus struct {
	log *slog.Logger

	mu      sync.Mutex
	seq     int64
	nextSub uint64
	subs    map[string][]*subscription // by channel URI (Channel.URI), in subscription order
	clients map[clientKey]*record      // the latest record of each client
}

// NewBus returns an empty Bus; serverSeq starts at 0. A nil logger
// discards.
func NewBus(logger *slog.Logger) *Bus {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Bus{
		log:     logger,
		subs:    map[string][]*subscription{},
		clients: map[clientKey]*record{},
	}
}

// Event is one action published on a channel.
type Event struct {
	// Action is the action every subscriber gets: a value that marshals
	// to a JSON object with a string "type" (an ahp action, a
	// json.RawMessage, a map).
	Action any
	// Origin is the client dispatch the action echoes; nil for the
	// server's own actions.
	Origin *Origin
	// For, when set, replaces Action per subscriber: it returns the action
	// that subscriber gets, or ok false to send it nothing (the catalogue
	// shows each reader only the bots it may read; a change meant for one
	// subscriber returns ok for it alone). It is called once per
	// subscriber, in serverSeq order for each subscriber, after the
	// subscriber's snapshot was taken, while the Bus is locked: it must
	// be quick and must not call the Bus. What it returns is marshalled
	// there too, so return a json.RawMessage made beforehand (Marshal),
	// which is only checked and compacted, rather than a value to encode.
	For func(sub *Subscriber) (action any, ok bool)
}

// Seq returns the serverSeq of the last action published.
func (b *Bus) Seq() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seq
}

// Publish gives the event the next serverSeq and sends it to every
// subscriber of the channel (the channel's own URI, Channel.URI), in
// order. It returns that serverSeq, for the channel's next Snapshot.Seq.
// It fails only when Action does not marshal; nothing is published then.
//
// An owner that holds its own lock while it applies an action and
// publishes it, and while it takes a snapshot, keeps the two in step.
func (b *Bus) Publish(channel string, e Event) (int64, error) {
	ev := &event{origin: e.Origin, project: e.For}
	if e.For == nil {
		raw, err := Marshal(e.Action)
		if err != nil {
			return 0, fmt.Errorf("publish on %s: %w", channel, err)
		}
		ev.action = raw
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	ev.seq = b.seq
	for _, sub := range b.subs[channel] {
		b.deliverLocked(sub, ev)
	}
	return ev.seq, nil
}

// Notify sends a protocol notification (root/sessionAdded,
// root/sessionRemoved, root/sessionSummaryChanged…) to every subscriber of
// the channel. params must marshal to a JSON object; its "channel" is set
// to each subscriber's spelling of the channel. Notifications take no
// serverSeq and are never replayed.
func (b *Bus) Notify(channel, method string, params any) error {
	return b.NotifyFor(channel, method, params, nil)
}

// NotifyFor is Notify sent only to the subscribers to reports true of (all
// of them when to is nil): root/sessionAdded about a person's chat goes
// to the connections that may see it. to is called once per subscriber,
// when the notification is sent to it, while the Bus is locked: it must
// be quick and must not call the Bus.
func (b *Bus) NotifyFor(channel, method string, params any, to func(sub *Subscriber) bool) error {
	raw, err := Marshal(params)
	if err != nil {
		return fmt.Errorf("notify %s on %s: %w", method, channel, err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return fmt.Errorf("notify %s on %s: params must be a JSON object", method, channel)
	}
	delete(fields, "channel") // each subscriber's own spelling goes there
	ev := &event{method: method, params: fields, to: to}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, sub := range b.subs[channel] {
		b.deliverLocked(sub, ev)
	}
	return nil
}

// End ends every subscription to the channel, as when a session is
// disposed: nothing more is sent for it, and a reconnect lists it as
// missing. The channel's Unsubscribe is not called.
func (b *Bus) End(channel string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, sub := range b.subs[channel] {
		sub.gone = true
		if sub.rec.subs[sub.s.URI] == sub {
			delete(sub.rec.subs, sub.s.URI)
		}
	}
	delete(b.subs, channel)
}

// SubscriptionEnded is the notification a client gets for each of its
// subscriptions EndFor ends: params {channel, reason}, the channel as the
// client spelled it and one sentence saying why. It is no AHP method (AHP
// has none for it): a client that does not know it ignores it, and a
// reconnect lists the channel as missing either way.
const SubscriptionEnded = "ahpd/subscriptionEnded"

// EndFor ends the subscriptions to the channel that end reports true of,
// as End does for all of them, and tells each one's client why with
// SubscriptionEnded: a person who may no longer read a chat's bot stops
// hearing the chat while those who still may go on. end is called once
// per subscriber while the Bus is locked: it must be quick and must not
// call the Bus. The channel's Unsubscribe is not called.
func (b *Bus) EndFor(channel, reason string, end func(sub *Subscriber) bool) {
	why, err := Marshal(reason)
	if err != nil { // a string always marshals
		b.log.Error("subscription end reason did not marshal", "channel", channel, "err", err)
		return
	}
	params := map[string]json.RawMessage{"reason": why}
	b.mu.Lock()
	defer b.mu.Unlock()
	var kept []*subscription
	for _, sub := range b.subs[channel] {
		if !end(sub.s) {
			kept = append(kept, sub)
			continue
		}
		sub.gone = true
		rec := sub.rec
		if rec.subs[sub.s.URI] == sub {
			delete(rec.subs, sub.s.URI)
		}
		if rec.link != nil && !rec.released {
			rec.link.peer.Deliver(Message{Method: SubscriptionEnded, Channel: sub.s.URI, Params: params})
		}
	}
	if len(kept) == 0 {
		delete(b.subs, channel)
	} else {
		b.subs[channel] = kept
	}
}

// event is a published action or notification.
type event struct {
	seq        int64 // 0 for a notification
	action     json.RawMessage
	origin     *Origin
	project    func(*Subscriber) (any, bool)
	marshalled []marshalled // what project returned, checked and compacted

	method string                     // notification
	params map[string]json.RawMessage // notification, without "channel"
	to     func(*Subscriber) bool     // notification: whom it goes to; nil for all
}

// subscription is one client's subscription to one channel.
type subscription struct {
	s     *Subscriber
	key   string // Channel.URI
	ch    Channel
	rec   *record
	after int64 // events at or below this serverSeq are in the snapshot
	ready bool  // the snapshot was answered
	gone  bool  // removed: send nothing more
}

// deliverLocked sends ev to sub, or holds it while sub's client takes
// snapshots.
func (b *Bus) deliverLocked(sub *subscription, ev *event) {
	rec := sub.rec
	if sub.gone || rec.released || rec.lost {
		return
	}
	if rec.holding > 0 {
		if len(rec.held) >= rec.owner.opt.Hold {
			if rec.link != nil {
				rec.link.peer.Overflow()
			}
			return
		}
		rec.held = append(rec.held, held{sub: sub, ev: ev})
		return
	}
	b.sendLocked(sub, ev)
}

// sendLocked projects ev for sub, keeps it in the ring and delivers it to
// the client's peer.
func (b *Bus) sendLocked(sub *subscription, ev *event) {
	rec := sub.rec
	if sub.gone || !sub.ready || rec.released || rec.lost {
		return
	}
	if ev.method != "" {
		if rec.link == nil || (ev.to != nil && !ev.to(sub.s)) {
			return
		}
		rec.link.peer.Deliver(Message{Method: ev.method, Channel: sub.s.URI, Params: ev.params})
		return
	}
	if ev.seq <= sub.after {
		return
	}
	action := ev.action
	if ev.project != nil {
		a, ok := ev.project(sub.s)
		if !ok {
			return
		}
		raw, err := ev.marshal(a)
		if err != nil {
			b.log.Error("projected action did not marshal", "channel", sub.key, "serverSeq", ev.seq, "err", err)
			return
		}
		action = raw
	}
	env := Envelope{Channel: sub.s.URI, Action: action, ServerSeq: ev.seq, Origin: ev.origin}
	rec.keep(env)
	if rec.link == nil {
		return
	}
	rec.link.peer.Deliver(Message{Action: &env})
}

// marshalled is a projection's marshalled action (in) and what the Bus
// made of it (out).
type marshalled struct{ in, out json.RawMessage }

// maxMarshalled is how many of a projection's distinct actions an event
// keeps checked and compacted: the catalogue hands out three (added,
// changed, removed).
const maxMarshalled = 4

// marshal marshals what ev's projection returned for one subscriber. A
// projection marshals its actions beforehand (Marshal) and hands the same
// one to many subscribers: the same slice is checked and compacted once
// per event, not once per subscriber. Called with the Bus locked.
func (ev *event) marshal(a any) (json.RawMessage, error) {
	r, ok := a.(json.RawMessage)
	if !ok || len(r) == 0 {
		return Marshal(a)
	}
	for _, m := range ev.marshalled {
		if len(m.in) == len(r) && &m.in[0] == &r[0] {
			return m.out, nil
		}
	}
	out, err := Marshal(r)
	if err != nil {
		return nil, err
	}
	if len(ev.marshalled) < maxMarshalled {
		ev.marshalled = append(ev.marshalled, marshalled{in: r, out: out})
	}
	return out, nil
}

// addSubLocked registers a subscription of rec to ch under the client's
// uri, not yet ready. It returns the subscription it replaces, if any.
func (b *Bus) addSubLocked(rec *record, uri string, ch Channel) (sub, replaced *subscription) {
	b.nextSub++
	sub = &subscription{
		s:   &Subscriber{ID: b.nextSub, URI: uri, Caller: rec.caller},
		key: ch.URI(),
		ch:  ch,
		rec: rec,
	}
	if old := rec.subs[uri]; old != nil {
		b.removeSubLocked(old)
		replaced = old
	}
	rec.subs[uri] = sub
	b.subs[sub.key] = append(b.subs[sub.key], sub)
	return sub, replaced
}

// removeSubLocked unregisters sub.
func (b *Bus) removeSubLocked(sub *subscription) {
	sub.gone = true
	if sub.rec.subs[sub.s.URI] == sub {
		delete(sub.rec.subs, sub.s.URI)
	}
	list := slices.DeleteFunc(b.subs[sub.key], func(x *subscription) bool { return x == sub })
	if len(list) == 0 {
		delete(b.subs, sub.key)
	} else {
		b.subs[sub.key] = list
	}
}

// unsubscribed tells the channel owners that subs left. Call it without
// holding Bus.mu.
func unsubscribed(subs []*subscription) {
	for _, sub := range subs {
		if u, ok := sub.ch.(Unsubscriber); ok {
			u.Unsubscribe(sub.s)
		}
	}
}

// Marshal marshals v as the Bus marshals an action: HTML characters not
// escaped, a json.RawMessage checked and compacted. An owner that projects
// a large action (Event.For) marshals it with Marshal before it publishes,
// so that it is not encoded while the Bus is locked.
func Marshal(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	if r, ok := v.(json.RawMessage); ok {
		if len(r) == 0 {
			return nil, errors.New("invalid JSON")
		}
		if err := json.Compact(&buf, r); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
