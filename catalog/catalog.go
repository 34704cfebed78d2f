// Package catalog serves what clients hear of bots as they change: the
// x-ahpd-bots:// catalogue channel, which gives each subscriber every bot it
// may read in one snapshot and then an action for each change, and the
// resource watches on bot:// and bot://<slug>. Both are channels served by
// package transport, published on its Bus.
//
// A Catalog follows a Source (the bot service) and keeps the bots as a read
// answers them. Each change is published once per channel, projected per
// subscriber with engine.Event.For, so each reader is sent only what it
// may read and the goroutine that follows the Source never waits on a
// client.
package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/internal/slugorder"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/telemetry"
)

// Source is where the catalogue hears of bots: every bot as a read answers
// it (the persona parts filled in), and a feed of changes whose records are
// also as a read answers them. The bot service implements it.
type Source interface {
	// Bots returns every bot, as a read answers it.
	Bots(ctx context.Context) ([]record.Record, error)
	// Watch returns the changes made after the call, in order, never
	// dropping one; the channel is closed when ctx is done. It has the
	// contract of record.Store.Watch.
	Watch(ctx context.Context) (<-chan record.Change, error)
}

// Config configures a Catalog.
type Config struct {
	// Source is where the bots come from. Required.
	Source Source
	// Bus carries the actions of the catalogue and the watches; the
	// transport.Server must deliver from the same Bus. Required.
	Bus *engine.Bus
	// CanRead reports whether p may read r. Required.
	CanRead func(p access.Principal, r record.Record) bool
	// Principal returns who a subscriber is now (current memberships from
	// the users file); nil means the subscriber's own Principal.
	Principal func(sub *engine.Subscriber) access.Principal
	// WatchIdle is how long a watch channel with no subscribers is kept
	// before it is forgotten. Zero means one minute.
	WatchIdle time.Duration
	// Logger hears about a Source feed that ends; nil discards.
	Logger *slog.Logger
	// Telemetry receives the catalogue's fan-out: how many subscribers
	// each change reached, and how long publishing it took; nil records
	// none.
	Telemetry *telemetry.Hub
}

// Catalog is the catalogue channel and the resource watches over one
// Source. Its methods are safe for concurrent use.
//
// Locks are taken in this order: mu, then the Bus's lock (Publish), then
// smu. Event.For runs under the Bus's lock, so it takes smu alone.
type Catalog struct {
	fanout    *telemetry.Series // bots_catalogue_fanout_subscribers
	took      *telemetry.Series // bots_catalogue_change_duration_seconds
	src       Source
	bus       *engine.Bus
	canRead   func(access.Principal, record.Record) bool
	principal func(*engine.Subscriber) access.Principal
	idle      time.Duration
	log       *slog.Logger
	channel   *catalogueChannel

	cancel  context.CancelFunc
	done    chan struct{}
	ready   chan struct{} // closed once the first listing is in bots
	loadErr error         // why the first listing failed; set before ready is closed

	mu      sync.Mutex // guards what follows, and is held while publishing
	closed  bool
	bots    map[string]entry
	order   *slugorder.Order[string] // ids of bots, in order: settle before reading (orderedLocked)
	catSeq  int64                    // serverSeq of the last catalogue action published
	watches map[string]*watch
	applied int64                         // changes of the Source taken, for tests to wait on
	recent  map[changeKey]struct{}        // the latest changes applied, for Await
	recentQ []changeKey                   // recent, oldest first
	waiters map[changeKey][]chan struct{} // Await calls, closed when their change is applied

	smu     sync.Mutex // guards readers, early and every watch's watchers
	readers map[*engine.Subscriber]*reader
	early   map[*engine.Subscriber]time.Time // unsubscribed before their Subscribe ran
}

// entry is a bot as the catalogue holds it: the record, its JSON and the
// etag of the change that gave it (empty for the first listing).
type entry struct {
	rec  record.Record
	raw  json.RawMessage
	etag string
}

// New starts following cfg.Source: it watches the Source first and then
// lists its bots, so that no change is missed. The listing is made in the
// background (it reads every bot's persona: issue 15 measured 2.9 s over
// 100,000 bots), and whatever answers from the bots - a subscribe to the
// catalogue, a watch on one bot - waits for it, so nothing is answered
// from a catalogue that does not hold every bot yet. ctx bounds only the
// start of the watch; Close stops the following.
func New(ctx context.Context, cfg Config) (*Catalog, error) {
	switch {
	case cfg.Source == nil:
		return nil, errors.New("catalog: Config.Source is required")
	case cfg.Bus == nil:
		return nil, errors.New("catalog: Config.Bus is required")
	case cfg.CanRead == nil:
		return nil, errors.New("catalog: Config.CanRead is required")
	case cfg.WatchIdle < 0:
		return nil, fmt.Errorf("catalog: negative WatchIdle %v", cfg.WatchIdle)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.WatchIdle == 0 {
		cfg.WatchIdle = time.Minute
	}
	if cfg.Principal == nil {
		cfg.Principal = func(sub *engine.Subscriber) access.Principal { return sub.Principal }
	}
	c := &Catalog{
		fanout:    cfg.Telemetry.Histogram("bots_catalogue_fanout_subscribers", "Catalogue subscribers each change of a bot was sent to.", telemetry.Sizes),
		took:      cfg.Telemetry.Histogram("bots_catalogue_change_duration_seconds", "How long a change of a bot took to publish on the catalogue and its watches.", nil),
		src:       cfg.Source,
		bus:       cfg.Bus,
		canRead:   cfg.CanRead,
		principal: cfg.Principal,
		idle:      cfg.WatchIdle,
		log:       cfg.Logger,
		done:      make(chan struct{}),
		ready:     make(chan struct{}),
		bots:      map[string]entry{},
		order:     slugorder.New(func(id string) string { return id }),
		watches:   map[string]*watch{},
		recent:    map[changeKey]struct{}{},
		waiters:   map[changeKey][]chan struct{}{},
		readers:   map[*engine.Subscriber]*reader{},
		early:     map[*engine.Subscriber]time.Time{},
	}
	c.channel = &catalogueChannel{c: c}

	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	feed, err := cfg.Source.Watch(life)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("catalog: watch bots: %w", err)
	}
	c.cancel = cancel
	go c.follow(life, feed)
	return c, nil
}

// load takes the Source's listing into the catalogue, before any change
// of the feed is applied, and then lets those waiting for it go on. A bot
// whose record does not marshal is left out and logged.
func (c *Catalog) load(ctx context.Context) {
	defer close(c.ready)
	bots, err := c.src.Bots(ctx)
	if err != nil {
		if ctx.Err() == nil {
			c.log.Error("catalog: the bots could not be listed; the catalogue answers none", "err", err)
		}
		c.mu.Lock()
		c.loadErr = err
		c.mu.Unlock()
		return
	}
	entries := make(map[string]entry, len(bots))
	order := make([]string, 0, len(bots))
	for _, r := range bots {
		e, err := newEntry(r)
		if err != nil {
			c.log.Error("catalog: a bot's record did not marshal", "bot", r.ID, "err", err)
			continue
		}
		entries[r.ID] = e
		order = append(order, r.ID)
	}
	slices.Sort(order)
	order = slices.Compact(order)
	c.mu.Lock()
	c.bots = entries
	c.order.Reset(order)
	c.mu.Unlock()
}

// waitLoaded returns once the first listing is in the catalogue: nil, or
// an errcode.Unavailable error when it failed, the catalogue closed or
// ctx ended first.
func (c *Catalog) waitLoaded(ctx context.Context) error {
	select {
	case <-c.ready:
	case <-c.done:
		return errcode.New(errcode.Unavailable, "the bot catalogue is closed")
	case <-ctx.Done():
		return errcode.Wrap(errcode.Unavailable, ctx.Err(), "the bot catalogue is still listing the bots")
	}
	c.mu.Lock()
	err := c.loadErr
	c.mu.Unlock()
	if err != nil {
		return errcode.Wrap(errcode.Unavailable, err, "the bot catalogue could not list the bots: %v", err)
	}
	return nil
}

// orderedLocked returns the ids of the bots in order: a make noted in
// O(1), merged here in one pass at the first reading after it, so that a
// make at 100,000 bots moves no slice of 100,000 ids. Called with mu held.
func (c *Catalog) orderedLocked() []string {
	c.order.Settle(func(id string) bool { _, ok := c.bots[id]; return ok })
	return c.order.IDs()
}

func newEntry(r record.Record) (entry, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return entry{}, fmt.Errorf("marshal record: %w", err)
	}
	return entry{rec: r, raw: raw}, nil
}

// Close stops following the Source and waits for the follower to end.
// Subscriptions already open stay open and hear nothing more; later
// subscribes and watches are refused. It is idempotent.
func (c *Catalog) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	<-c.done
	return nil
}

// follow applies the Source's changes as they come, and forgets idle
// watches.
func (c *Catalog) follow(ctx context.Context, feed <-chan record.Change) {
	defer close(c.done)
	c.load(ctx)
	tick := time.NewTicker(min(max(c.idle/2, time.Millisecond), 30*time.Second))
	defer tick.Stop()
	for {
		select {
		case ch, ok := <-feed:
			if !ok {
				if ctx.Err() == nil {
					c.log.Warn("catalog: the bots' change feed ended; the catalogue hears no more changes")
				}
				return
			}
			c.apply(ch)
		case now := <-tick.C:
			c.sweep(now)
		}
	}
}

// apply takes one change of the Source into the catalogue and publishes
// it on the catalogue channel and the watches that hear it.
func (c *Catalog) apply(ch record.Change) {
	id := ch.ID
	if id == "" {
		id = ch.Entry.Record.ID
	}
	if id == "" {
		c.log.Warn("catalog: a change names no bot", "kind", ch.Kind.String())
		return
	}
	if c.took != nil {
		defer c.took.Since(time.Now())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.applied++
	if c.closed {
		return
	}
	defer c.appliedChangeLocked(keyOfChange(id, ch))
	old, had := c.bots[id]
	switch ch.Kind {
	case record.Created, record.Updated:
		r := ch.Entry.Record
		r.ID = id
		if had && old.rec.Equal(r) {
			old.etag = ch.Entry.ETag
			c.bots[id] = old
			return // the change was already in the first listing
		}
		e, err := newEntry(r)
		if err != nil {
			c.log.Error("catalog: a bot's record did not marshal", "bot", id, "err", err)
			return
		}
		e.etag = ch.Entry.ETag
		c.bots[id] = e
		if !had {
			c.order.Add(id)
		}
		c.publishBot(id, &e)
		kind := changeAdded
		if had {
			kind = changeUpdated
		}
		c.publishWatches(id, r, kind)
	case record.Deleted:
		if !had {
			return
		}
		delete(c.bots, id)
		c.order.Remove()
		c.publishBot(id, nil)
		last := ch.Entry.Record
		if last.ID == "" {
			last = old.rec
		}
		c.publishWatches(id, last, changeDeleted)
	default:
		c.log.Warn("catalog: a change of an unknown kind", "bot", id, "kind", int(ch.Kind))
	}
}

// sweep forgets watches idle for longer than WatchIdle, and the marks of
// subscribers that left before their Subscribe ran.
func (c *Catalog) sweep(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.smu.Lock()
	defer c.smu.Unlock()
	for id, w := range c.watches {
		if len(w.watchers) == 0 && now.Sub(w.idleSince) >= c.idle {
			w.gone = true
			delete(c.watches, id)
		}
	}
	for sub, at := range c.early {
		if now.Sub(at) >= time.Minute {
			delete(c.early, sub)
		}
	}
}

// leftEarly reports whether sub was unsubscribed before its Subscribe ran,
// forgetting the mark. Called with smu held.
func (c *Catalog) leftEarly(sub *engine.Subscriber) bool {
	if _, ok := c.early[sub]; ok {
		delete(c.early, sub)
		return true
	}
	return false
}
