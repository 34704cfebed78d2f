package catalog

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"sync/atomic"
	"time"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
)

// URI is the catalogue channel's URI.
const URI = "x-ahpd-bots://"

// The catalogue's action types.
const (
	ActionAdded   = "x-ahpd-bots/added"   // {type, bot}: a bot became readable to the subscriber
	ActionChanged = "x-ahpd-bots/changed" // {type, bot}: a bot it has was edited and is still readable
	ActionRemoved = "x-ahpd-bots/removed" // {type, id}: a bot it has was deleted or is no longer readable
)

// Info is the catalogue channel's advertisement, one element of
// _meta['ahpd.channels'] on initialize and on the root state.
func Info() map[string]any {
	return map[string]any{
		"scheme":      "x-ahpd-bots",
		"title":       "Bots",
		"description": "Every bot the reader may read, in one snapshot, then an action for each change.",
		"grant":       "bot:read",
	}
}

// State is the catalogue's snapshot state: the bots the subscriber may
// read, ordered by id, each as a read answers it.
type State struct {
	Bots []json.RawMessage `json:"bots"`
}

// reader is what the catalogue keeps of one subscriber: who it is judged
// as, and which bots it has. Guarded by Catalog.smu.
type reader struct {
	user    string // the subscriber's user id; "" for root
	p       access.Principal
	visible map[string]struct{}
}

// catalogueChannel is x-ahpd-bots://.
type catalogueChannel struct{ c *Catalog }

var (
	_ engine.Channel      = (*catalogueChannel)(nil)
	_ engine.Unsubscriber = (*catalogueChannel)(nil)
	_ engine.Dispatcher   = (*catalogueChannel)(nil)
)

// Channel returns the catalogue channel, x-ahpd-bots://. It is also a
// engine.Unsubscriber and a engine.Dispatcher that rejects every
// action.
func (c *Catalog) Channel() engine.Channel { return c.channel }

// URI returns URI.
func (ch *catalogueChannel) URI() string { return URI }

// Subscribe returns every bot the subscriber may read now, at the serverSeq
// of the last catalogue action, and starts projecting the actions for it.
func (ch *catalogueChannel) Subscribe(ctx context.Context, sub *engine.Subscriber) (engine.Snapshot, error) {
	c := ch.c
	if err := c.waitLoaded(ctx); err != nil {
		return engine.Snapshot{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return engine.Snapshot{}, errcode.New(errcode.Unavailable, "the bot catalogue is closed")
	}
	p := c.principal(sub)
	rd := &reader{user: userOf(sub.Principal), p: p, visible: map[string]struct{}{}}
	state := State{Bots: []json.RawMessage{}}
	for _, id := range c.orderedLocked() {
		e := c.bots[id]
		if c.canRead(p, e.rec) {
			state.Bots = append(state.Bots, e.raw)
			rd.visible[id] = struct{}{}
		}
	}
	c.smu.Lock()
	defer c.smu.Unlock()
	if c.leftEarly(sub) {
		return engine.Snapshot{}, errcode.New(errcode.NotFound, "the subscription to %s has ended", URI)
	}
	c.readers[sub] = rd
	return engine.Snapshot{State: state, Seq: c.catSeq}, nil
}

// Unsubscribe forgets what the subscriber had.
func (ch *catalogueChannel) Unsubscribe(sub *engine.Subscriber) {
	c := ch.c
	c.smu.Lock()
	defer c.smu.Unlock()
	if _, ok := c.readers[sub]; ok {
		delete(c.readers, sub)
		return
	}
	c.early[sub] = time.Now()
}

// Dispatch rejects the action: the catalogue takes none.
func (ch *catalogueChannel) Dispatch(ctx context.Context, d engine.Dispatch) error {
	return errcode.New(errcode.Invalid, "a client cannot dispatch an action to the channel")
}

func userOf(p access.Principal) string {
	if p.Root {
		return ""
	}
	return p.User
}

// botAction is x-ahpd-bots/added and x-ahpd-bots/changed.
type botAction struct {
	Type string          `json:"type"`
	Bot  json.RawMessage `json:"bot"`
}

// removedAction is x-ahpd-bots/removed.
type removedAction struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// actions holds the catalogue actions about one bot, marshalled once for
// every subscriber; added and changed are nil for a bot that is gone.
type actions struct {
	id             string
	rec            *entry
	added, changed json.RawMessage
	removed        json.RawMessage
}

func newActions(id string, e *entry) *actions {
	a := &actions{id: id, rec: e}
	if e != nil {
		a.added, _ = json.Marshal(botAction{Type: ActionAdded, Bot: e.raw})
		a.changed, _ = json.Marshal(botAction{Type: ActionChanged, Bot: e.raw})
	}
	a.removed, _ = json.Marshal(removedAction{Type: ActionRemoved, ID: id})
	return a
}

// project decides what rd gets about the bot and moves rd's visible set
// to match: added when it becomes readable, removed when it no longer is
// (or is gone), changed (when sendChanged) for an edit of one it keeps.
// Called with smu held.
func (c *Catalog) project(rd *reader, a *actions, sendChanged bool) (any, bool) {
	_, had := rd.visible[a.id]
	can := a.rec != nil && c.canRead(rd.p, a.rec.rec)
	switch {
	case can && had:
		if sendChanged {
			return a.changed, true
		}
	case can:
		rd.visible[a.id] = struct{}{}
		return a.added, true
	case had:
		delete(rd.visible, a.id)
		return a.removed, true
	}
	return nil, false
}

// publishBot publishes a change of the bot on the catalogue; e is the bot
// now, nil when it was deleted. Called with mu held.
func (c *Catalog) publishBot(id string, e *entry) {
	a := newActions(id, e)
	// The subscribers it is sent to now: one whose subscribe is under way
	// is projected later, by its own goroutine, and not counted.
	var sent atomic.Int64
	c.publishCatalogue(func(sub *engine.Subscriber) (any, bool) {
		c.smu.Lock()
		defer c.smu.Unlock()
		rd := c.readers[sub]
		if rd == nil {
			return nil, false
		}
		v, ok := c.project(rd, a, true)
		if ok {
			sent.Add(1)
		}
		return v, ok
	})
	c.fanout.Observe(float64(sent.Load()))
}

// publishCatalogue publishes a projected catalogue action and keeps its
// serverSeq for the next snapshot. Called with mu held.
func (c *Catalog) publishCatalogue(project func(*engine.Subscriber) (any, bool)) {
	seq, err := c.bus.Publish(URI, engine.Event{For: project})
	if err != nil {
		c.log.Error("catalog: publish on the catalogue", "err", err)
		return
	}
	c.catSeq = seq
}

// MembershipsChanged re-evaluates every catalogue subscriber of the given
// users against who they are now (Config.Principal): each such subscriber
// gets added and removed for exactly the bots its new grants and
// memberships gave or took away, and no other subscriber gets them. Call
// it when the users file changes, with usersfile.Changed.
func (c *Catalog) MembershipsChanged(userIDs []string) {
	if len(userIDs) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	type flip struct {
		sub *engine.Subscriber
		ids []string
	}
	var flips []flip
	c.smu.Lock()
	for sub, rd := range c.readers {
		if rd.user == "" || !slices.Contains(userIDs, rd.user) {
			continue
		}
		old := rd.p
		rd.p = c.principal(sub)
		f := flip{sub: sub}
		for _, id := range c.orderedLocked() {
			r := c.bots[id].rec
			before, now := c.canRead(old, r), c.canRead(rd.p, r)
			_, has := rd.visible[id]
			if before != now || has != now {
				f.ids = append(f.ids, id)
			}
		}
		if len(f.ids) > 0 {
			flips = append(flips, f)
		}
	}
	c.smu.Unlock()
	// Each flip is published on its own, meant for its subscriber alone,
	// and judged when it is delivered: by then the subscriber may have had
	// the bot's later changes, or a snapshot that already holds them.
	slices.SortFunc(flips, func(a, b flip) int { return cmp.Compare(a.sub.ID, b.sub.ID) })
	for _, f := range flips {
		for _, id := range f.ids {
			e := c.bots[id]
			a := newActions(id, &e)
			target := f.sub
			c.publishCatalogue(func(sub *engine.Subscriber) (any, bool) {
				if sub != target {
					return nil, false
				}
				c.smu.Lock()
				defer c.smu.Unlock()
				rd := c.readers[sub]
				if rd == nil {
					return nil, false
				}
				return c.project(rd, a, false)
			})
		}
	}
}
