package catalog

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/record"
)

// WatchPrefix begins the URI of every resource watch channel:
// ahp-resource-watch:/<id>.
const WatchPrefix = "ahp-resource-watch:/"

// schemeRoot is the bot: scheme's root, which a watch on every bot names.
const schemeRoot = "bot://"

const (
	changeAdded   = ahp.ChangeAdded
	changeUpdated = ahp.ChangeUpdated
	changeDeleted = ahp.ChangeDeleted
)

// watch is one resource watch: on every bot (slug "") or on one.
type watch struct {
	uri  string // WatchPrefix + id
	root string // bot:// or bot://<slug>
	slug string
	ch   *watchChannel

	// guarded by Catalog.smu: each subscriber's watcher, judged by the
	// principal it had when it subscribed.
	watchers map[*engine.Subscriber]access.Principal

	// guarded by Catalog.mu
	lastSeq   int64     // serverSeq of the last action published on it
	idleSince time.Time // when its last subscriber left, or it was made
	gone      bool      // forgotten
}

// CreateWatch makes a resource watch on uri, bot:// (every bot the reader
// may read; open to anybody signed in) or bot://<slug> (that bot; open to
// whoever may read it), and returns its channel, ahp-resource-watch:/<id>.
// A slug with no bot is errcode.NotFound, a bot p may not read
// errcode.PermissionDenied, and any other URI errcode.Invalid. A bot the
// catalogue has not heard of yet (one made a moment ago) is looked for in
// the Source's listing.
func (c *Catalog) CreateWatch(ctx context.Context, p access.Principal, uri string) (channel string, err error) {
	if err := ctx.Err(); err != nil {
		return "", errcode.Wrap(errcode.Unavailable, err, "the watch was not made")
	}
	slug, err := parseBotURI(uri)
	if err != nil {
		return "", err
	}
	root := schemeRoot
	if slug != "" {
		r, ok, err := c.find(ctx, slug)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", errcode.New(errcode.NotFound, "no bot at %s%s", schemeRoot, slug)
		}
		if !c.canRead(p, r) {
			return "", errcode.New(errcode.PermissionDenied, "Permission denied: %s%s", schemeRoot, slug)
		}
		root += slug
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return "", errcode.New(errcode.Unavailable, "the bot catalogue is closed")
	}
	w := &watch{
		uri:       WatchPrefix + rand.Text(),
		root:      root,
		slug:      slug,
		watchers:  map[*engine.Subscriber]access.Principal{},
		idleSince: time.Now(),
	}
	w.ch = &watchChannel{c: c, w: w}
	c.watches[w.uri] = w
	return w.uri, nil
}

// find returns the bot id as the catalogue has it, or, for a bot the
// catalogue has not heard of yet (one made a moment ago), as the Source
// lists it.
func (c *Catalog) find(ctx context.Context, id string) (record.Record, bool, error) {
	if err := c.waitLoaded(ctx); err != nil {
		return record.Record{}, false, err
	}
	c.mu.Lock()
	e, ok := c.bots[id]
	closed := c.closed
	c.mu.Unlock()
	switch {
	case closed:
		return record.Record{}, false, errcode.New(errcode.Unavailable, "the bot catalogue is closed")
	case ok:
		return e.rec, true, nil
	}
	bots, err := c.src.Bots(ctx)
	if err != nil {
		return record.Record{}, false, fmt.Errorf("catalog: look for bot %s: %w", id, err)
	}
	for _, r := range bots {
		if r.ID == id {
			return r, true, nil
		}
	}
	return record.Record{}, false, nil
}

// parseBotURI returns the slug of bot://<slug>, "" for bot://.
func parseBotURI(uri string) (string, error) {
	if len(uri) < len(schemeRoot) || !strings.EqualFold(uri[:len(schemeRoot)], schemeRoot) {
		return "", errcode.New(errcode.Invalid, "%q is not a bot: URI: watch bot:// or bot://<slug>", uri)
	}
	slug := strings.TrimSuffix(uri[len(schemeRoot):], "/")
	if slug == "" {
		return "", nil
	}
	if err := record.CheckSlug(slug); err != nil {
		return "", errcode.Wrap(errcode.Invalid, nil, "%v", err)
	}
	return slug, nil
}

// WatchChannel returns the channel of the watch at uri,
// ahp-resource-watch:/<id>, for a subscribe to it; ok is false for a watch
// this catalogue does not have (never made, or forgotten after it had no
// subscribers for a while).
func (c *Catalog) WatchChannel(uri string) (engine.Channel, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.watches[uri]
	if !ok {
		return nil, false
	}
	return w.ch, true
}

// watchChannel is one watch's channel.
type watchChannel struct {
	c *Catalog
	w *watch
}

var (
	_ engine.Channel      = (*watchChannel)(nil)
	_ engine.Unsubscriber = (*watchChannel)(nil)
)

// URI returns the watch's channel URI.
func (ch *watchChannel) URI() string { return ch.w.uri }

// Subscribe attaches the subscriber's watcher, judged from now on by who
// the subscriber is now, and returns what is watched.
func (ch *watchChannel) Subscribe(ctx context.Context, sub *engine.Subscriber) (engine.Snapshot, error) {
	c, w := ch.c, ch.w
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return engine.Snapshot{}, errcode.New(errcode.Unavailable, "the bot catalogue is closed")
	}
	if w.gone {
		return engine.Snapshot{}, errcode.New(errcode.NotFound, "no watch at %s", w.uri)
	}
	p := c.principal(sub)
	c.smu.Lock()
	defer c.smu.Unlock()
	if c.leftEarly(sub) {
		return engine.Snapshot{}, errcode.New(errcode.NotFound, "the subscription to %s has ended", w.uri)
	}
	w.watchers[sub] = p
	return engine.Snapshot{State: ahp.ResourceWatchState{Root: w.root}, Seq: w.lastSeq}, nil
}

// Unsubscribe detaches the subscriber's watcher.
func (ch *watchChannel) Unsubscribe(sub *engine.Subscriber) {
	c, w := ch.c, ch.w
	c.mu.Lock()
	defer c.mu.Unlock()
	c.smu.Lock()
	defer c.smu.Unlock()
	if _, ok := w.watchers[sub]; !ok {
		c.early[sub] = time.Now()
		return
	}
	delete(w.watchers, sub)
	if len(w.watchers) == 0 {
		w.idleSince = time.Now()
	}
}

// publishWatches publishes one change of a bot, r as it is now (or, for a
// delete, as it last was), on every watch that hears it, to each watcher
// that may read r. Called with mu held.
func (c *Catalog) publishWatches(id string, r record.Record, kind string) {
	var raw json.RawMessage
	for _, w := range c.watches {
		if w.slug != "" && w.slug != id {
			continue
		}
		c.smu.Lock()
		idle := len(w.watchers) == 0
		c.smu.Unlock()
		if idle {
			continue
		}
		if raw == nil {
			var err error
			raw, err = json.Marshal(ahp.ResourceWatchChanged(ahp.ResourceChange{URI: schemeRoot + id, Type: kind}))
			if err != nil {
				c.log.Error("catalog: a watch action did not marshal", "bot", id, "err", err)
				return
			}
		}
		seq, err := c.bus.Publish(w.uri, engine.Event{For: func(sub *engine.Subscriber) (any, bool) {
			c.smu.Lock()
			p, ok := w.watchers[sub]
			c.smu.Unlock()
			if !ok || !c.canRead(p, r) {
				return nil, false
			}
			return raw, true
		}})
		if err != nil {
			c.log.Error("catalog: publish on a watch", "watch", w.uri, "err", err)
			continue
		}
		w.lastSeq = seq
	}
}
