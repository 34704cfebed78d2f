package client

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"sync"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/record"
)

// CatalogueURI is the channel of the bots a reader may read.
const CatalogueURI = "x-ahpd-bots://"

// The catalogue's action types.
const (
	actionAdded   = "x-ahpd-bots/added"
	actionChanged = "x-ahpd-bots/changed"
	actionRemoved = "x-ahpd-bots/removed"
)

// URI is a bot's URI: bot://<slug>.
func URI(slug string) string { return "bot://" + slug }

// Bot is a bot as a read answers it, with the etag of its revision (for
// Edit's ifMatch).
type Bot struct {
	record.Record
	// ETag is the revision's etag.
	ETag string
}

// Fields is the body of a make or an edit: the fields it sets (an empty
// string or a nil list leaves a field as it is), and the fields it clears.
// An edit changes only what it names.
type Fields struct {
	Name         string
	Labels       []string
	Description  string
	Body         string // the body it is drawn with: robot, gumbo, cloud…
	Color        string // a named colour or #rrggbb
	Instructions string
	Template     string
	Provider     string // the agent its back sessions run on
	Model        string
	Preset       string
	Workspace    string
	Session      string
	Computer     string
	Connectors   map[string]string // alias → connectors://<adapter>/<id>
	Tools        []string
	Owner        string // user:<id>, team:<t>, project:<t>:<p> or root:<host>
	// Clear names fields (as the record's JSON names them: "description",
	// "labels"…) an edit sets to null, which clears them.
	Clear []string
}

// MarshalJSON writes the body as the server reads it: the fields set,
// then null for each field of Clear.
func (f Fields) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	set := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	set("name", f.Name)
	set("description", f.Description)
	set("body", f.Body)
	set("color", f.Color)
	set("instructions", f.Instructions)
	set("template", f.Template)
	set("provider", f.Provider)
	set("model", f.Model)
	set("preset", f.Preset)
	set("workspace", f.Workspace)
	set("session", f.Session)
	set("computer", f.Computer)
	set("owner", f.Owner)
	if f.Labels != nil {
		m["labels"] = f.Labels
	}
	if f.Tools != nil {
		m["tools"] = f.Tools
	}
	if f.Connectors != nil {
		m["connectors"] = f.Connectors
	}
	for _, k := range f.Clear {
		if _, both := m[k]; both {
			return nil, fmt.Errorf("the field %s is both set and cleared", k)
		}
		m[k] = nil
	}
	return json.Marshal(m)
}

// List returns the slugs of the bots the connection may read, in order.
func (c *Client) List(ctx context.Context) ([]string, error) {
	var r ahp.ResourceListResult
	if err := c.Call(ctx, ahp.MethodResourceList, ahp.ResourceListParams{Channel: ahp.RootURI, URI: "bot://"}, &r); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(r.Entries))
	for _, e := range r.Entries {
		out = append(out, e.Name)
	}
	return out, nil
}

// Read returns the bot slug with the etag of the revision read.
func (c *Client) Read(ctx context.Context, slug string) (Bot, error) {
	// a read answers the record, a resolve its etag: the two are of one
	// revision when the etag is the same before and after the read.
	etag, err := c.etag(ctx, slug)
	for range 5 {
		if err != nil {
			return Bot{}, err
		}
		var r ahp.ResourceReadResult
		if err := c.Call(ctx, ahp.MethodResourceRead, ahp.ResourceReadParams{Channel: ahp.RootURI, URI: URI(slug), Encoding: ahp.EncodingUTF8}, &r); err != nil {
			return Bot{}, err
		}
		if r.Encoding != ahp.EncodingUTF8 {
			return Bot{}, fmt.Errorf("read %s: the server answered in %q, not utf-8", URI(slug), r.Encoding)
		}
		var b Bot
		if err := json.Unmarshal([]byte(r.Data), &b.Record); err != nil {
			return Bot{}, fmt.Errorf("read %s: %w", URI(slug), err)
		}
		after, aerr := c.etag(ctx, slug)
		if aerr == nil && after == etag {
			b.ETag = etag
			return b, nil
		}
		etag, err = after, aerr
	}
	return Bot{}, errcode.New(errcode.Unavailable, "%s changed at every read: try again", URI(slug))
}

// etag resolves bot://slug and returns its etag.
func (c *Client) etag(ctx context.Context, slug string) (string, error) {
	var r ahp.ResourceResolveResult
	if err := c.Call(ctx, ahp.MethodResourceResolve, ahp.ResourceResolveParams{Channel: ahp.RootURI, URI: URI(slug)}, &r); err != nil {
		return "", err
	}
	return r.Etag, nil
}

// Make makes the bot slug from f and returns it as read back. A slug
// that exists, or existed, is refused with errcode.AlreadyExists.
func (c *Client) Make(ctx context.Context, slug string, f Fields) (Bot, error) {
	if err := c.write(ctx, slug, f, true, ""); err != nil {
		return Bot{}, err
	}
	return c.Read(ctx, slug)
}

// Edit changes the fields of the bot slug that f names, when its etag is
// still ifMatch (errcode.Conflict when another edit came first), and
// returns it as read back. An empty ifMatch edits whatever revision is
// there, and makes the bot when there is none.
func (c *Client) Edit(ctx context.Context, slug string, f Fields, ifMatch string) (Bot, error) {
	if err := c.write(ctx, slug, f, false, ifMatch); err != nil {
		return Bot{}, err
	}
	return c.Read(ctx, slug)
}

func (c *Client) write(ctx context.Context, slug string, f Fields, createOnly bool, ifMatch string) error {
	data, err := json.Marshal(f)
	if err != nil {
		return errcode.Wrap(errcode.Invalid, err, "the body of %s", URI(slug))
	}
	return c.Call(ctx, ahp.MethodResourceWrite, ahp.ResourceWriteParams{
		Channel: ahp.RootURI, URI: URI(slug), Data: string(data), Encoding: ahp.EncodingUTF8,
		ContentType: "application/json", CreateOnly: createOnly, IfMatch: ifMatch,
	}, nil)
}

// Delete deletes the bot slug; its slug is never made again.
func (c *Client) Delete(ctx context.Context, slug string) error {
	return c.Call(ctx, ahp.MethodResourceDelete, ahp.ResourceDeleteParams{Channel: ahp.RootURI, URI: URI(slug)}, nil)
}

// BotEventKind says what happened to a bot in the catalogue.
type BotEventKind string

// What happens to a bot in the catalogue.
const (
	BotAdded   BotEventKind = "added"   // the reader may now read it (made, or a grant given)
	BotChanged BotEventKind = "changed" // it was edited
	BotRemoved BotEventKind = "removed" // deleted, or no longer readable
)

// BotEvent is one change of the catalogue.
type BotEvent struct {
	Kind BotEventKind
	// ID is the bot's slug.
	ID string
	// Bot is the bot as a read answers it; zero for BotRemoved.
	Bot record.Record
}

// Watch is a subscription to the catalogue: the bots the connection may
// read, kept up to date, and each change as a BotEvent.
type Watch struct {
	c      *Client
	events *queue[BotEvent]

	mu   sync.Mutex
	bots map[string]record.Record
	seq  int64 // the serverSeq the bots are at
}

// Watch subscribes to the catalogue. Its events begin with a BotAdded for
// each bot there now, in slug order, then one per change; after a
// reconnect that could not replay the changes missed, the differences
// the fresh snapshot shows.
func (c *Client) Watch(ctx context.Context) (*Watch, error) {
	w := &Watch{c: c, events: newQueue[BotEvent](), bots: map[string]record.Record{}}
	if err := c.subscribe(ctx, CatalogueURI, w); err != nil {
		return nil, err
	}
	return w, nil
}

// Bots returns the bots the catalogue holds now, in slug order.
func (w *Watch) Bots() []record.Record {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]record.Record, 0, len(w.bots))
	for _, id := range slices.Sorted(mapKeys(w.bots)) {
		out = append(out, w.bots[id])
	}
	return out
}

func mapKeys[V any](m map[string]V) iter.Seq[string] {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// Next returns the next change, waiting for it; ErrClosed once the
// watch or its client is closed.
func (w *Watch) Next(ctx context.Context) (BotEvent, error) { return w.events.next(ctx) }

// Events ranges over the changes until the watch is closed (the range
// then ends) or ctx is done, or the client ends (with its error).
func (w *Watch) Events(ctx context.Context) iter.Seq2[BotEvent, error] {
	return w.events.all(ctx, ErrClosed)
}

// Close unsubscribes.
func (w *Watch) Close(ctx context.Context) error { return w.c.unsubscribe(ctx, CatalogueURI, w) }

// catalogueState is the catalogue's snapshot state.
type catalogueState struct {
	Bots []record.Record `json:"bots"`
}

// catalogueAction is an action of the catalogue.
type catalogueAction struct {
	Type string        `json:"type"`
	ID   string        `json:"id"`
	Bot  record.Record `json:"bot"`
}

func (w *Watch) apply(env ahp.ActionEnvelope) {
	var a catalogueAction
	raw, err := json.Marshal(env.Action)
	if err == nil {
		err = json.Unmarshal(raw, &a)
	}
	if err != nil {
		w.c.log.Warn("client: a catalogue action does not decode", "err", err)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if env.ServerSeq != 0 && env.ServerSeq <= w.seq {
		return // had already
	}
	w.seq = max(w.seq, env.ServerSeq)
	switch a.Type {
	case actionAdded, actionChanged:
		kind := BotChanged
		if _, had := w.bots[a.Bot.ID]; !had {
			kind = BotAdded
		}
		w.bots[a.Bot.ID] = a.Bot
		w.events.push(BotEvent{Kind: kind, ID: a.Bot.ID, Bot: a.Bot})
	case actionRemoved:
		if _, had := w.bots[a.ID]; had {
			delete(w.bots, a.ID)
			w.events.push(BotEvent{Kind: BotRemoved, ID: a.ID})
		}
	}
}

func (w *Watch) reset(s ahp.Snapshot) {
	var st catalogueState
	raw, _ := s.State.(json.RawMessage)
	if err := json.Unmarshal(raw, &st); err != nil {
		w.c.log.Warn("client: the catalogue's snapshot does not decode", "err", err)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq = s.FromSeq
	now := map[string]record.Record{}
	for _, b := range st.Bots {
		now[b.ID] = b
	}
	for _, id := range slices.Sorted(mapKeys(w.bots)) {
		if _, ok := now[id]; !ok {
			w.events.push(BotEvent{Kind: BotRemoved, ID: id})
		}
	}
	for _, b := range st.Bots {
		old, had := w.bots[b.ID]
		switch {
		case !had:
			w.events.push(BotEvent{Kind: BotAdded, ID: b.ID, Bot: b})
		case !old.Equal(b):
			w.events.push(BotEvent{Kind: BotChanged, ID: b.ID, Bot: b})
		}
	}
	w.bots = now
}

func (w *Watch) end(err error) { w.events.end(err) }
