// Package xmpp is the XMPP adapter of package route: a bot's account on
// an XMPP server (mellium.im/xmpp), which receives direct messages and the
// messages of the multi-user chat rooms it joins, and answers them.
//
// Settings: jid (the account, required), server (host:port to dial;
// the jid's domain by DNS when unset), rooms (comma-separated room JIDs,
// joined at login without their history), nick (the nick in rooms; the
// jid's localpart when unset), tls ("true" unless "false", which only a
// loopback server may have). Secret: password.
//
// A direct message's sender is their bare JID (xmpp:alice@example.org);
// a room message's is too where the room shows its occupants' JIDs (a
// non-anonymous room, or one the bot moderates), else room/nick. A
// message's id is its stanza id. Edit replaces the last message sent
// to a scope (XEP-0308, last message correction) and nothing older; a
// question is numbered lines.
package xmpp

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"

	"mellium.im/sasl"
	"mellium.im/xmlstream"
	"mellium.im/xmpp"
	"mellium.im/xmpp/dial"
	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"

	"github.com/agenthost/bots/route"
)

// Network is the XMPP adapter.
type Network struct{}

var _ route.Network = Network{}

// Name is "xmpp".
func (Network) Name() string { return "xmpp" }

// limits: XMPP has no size limit of its own, but servers cap a stanza
// (often at 256 KiB) and people read short messages better.
var limits = route.Limits{MaxText: 4000}

type settings struct {
	jid    jid.JID
	server string
	rooms  []jid.JID
	nick   string
	tls    bool
}

func read(d route.Dial) (settings, error) {
	var s settings
	j, err := jid.Parse(d.Settings["jid"])
	if err != nil || j.Localpart() == "" {
		return s, fmt.Errorf("the XMPP account %q is no user@domain JID", d.Settings["jid"])
	}
	s.jid, s.server, s.tls = j.Bare(), d.Settings["server"], d.Settings["tls"] != "false"
	s.nick = d.Settings["nick"]
	if s.nick == "" {
		s.nick = j.Localpart()
	}
	if s.server != "" {
		if err := route.CheckServer("XMPP", s.server, s.tls); err != nil {
			return s, err
		}
	} else if !s.tls {
		return s, errors.New("an XMPP connection without TLS names its loopback server (host:port)")
	}
	for _, r := range route.List(d.Settings["rooms"]) {
		rj, err := jid.Parse(r)
		if err != nil || rj.Localpart() == "" || rj.Resourcepart() != "" {
			return s, fmt.Errorf("the XMPP room %q is no room@service JID", r)
		}
		s.rooms = append(s.rooms, rj)
	}
	return s, nil
}

// Dial logs in, says it is available and joins the rooms.
func (Network) Dial(ctx context.Context, d route.Dial) (route.Conn, error) {
	s, err := read(d)
	if err != nil {
		return nil, err
	}
	log := d.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var nc net.Conn
	if s.server != "" {
		nc, err = (&net.Dialer{}).DialContext(ctx, "tcp", s.server)
	} else {
		nc, err = dial.Client(ctx, "tcp", s.jid)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot reach the XMPP server of %s: %w", s.jid, err)
	}
	features := []xmpp.StreamFeature{}
	var state xmpp.SessionState
	if s.tls {
		features = append(features, xmpp.StartTLS(&tls.Config{ServerName: s.jid.Domainpart(), MinVersion: tls.VersionTLS12}))
	} else {
		state = xmpp.Secure // loopback alone, checked above: nothing crosses a network
	}
	features = append(features, xmpp.SASL("", d.Secrets["password"], sasl.ScramSha256, sasl.ScramSha1, sasl.Plain), xmpp.BindResource())
	sess, err := xmpp.NewSession(ctx, s.jid.Domain(), s.jid, nc, state, xmpp.NewNegotiator(func(*xmpp.Session, *xmpp.StreamConfig) xmpp.StreamConfig {
		return xmpp.StreamConfig{Features: features}
	}))
	if err != nil {
		_ = nc.Close()
		return nil, fmt.Errorf("the XMPP server refused the login of %s: %w", s.jid, loginErr(err))
	}
	c := &conn{sess: sess, nc: nc, me: sess.LocalAddr(), nick: s.nick, log: log,
		in: make(chan route.Message, 256), done: make(chan struct{}), last: map[string]string{}, real: map[string]string{}}
	for _, r := range s.rooms {
		c.rooms = append(c.rooms, r.Bare().String())
	}
	if err := sess.Send(ctx, stanza.Presence{}.Wrap(nil)); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("cannot say %s is available: %w", s.jid, err)
	}
	for _, r := range s.rooms {
		if err := c.join(ctx, r); err != nil {
			_ = c.Close()
			return nil, err
		}
	}
	c.wg.Add(1)
	go c.serve()
	return c, nil
}

// loginErr says a login's failure without the library's wrapping.
func loginErr(err error) error {
	if strings.Contains(err.Error(), "not-authorized") {
		return errors.New("the password was refused (not-authorized)")
	}
	return err
}

// join enters a room with the bot's nick, asking for none of its history
// (XEP-0045): what was said before the bot came is not said to it.
func (c *conn) join(ctx context.Context, room jid.JID) error {
	to, err := room.WithResource(c.nick)
	if err != nil {
		return fmt.Errorf("the nick %q cannot be used in %s: %w", c.nick, room, err)
	}
	x := xmlstream.Wrap(xmlstream.Wrap(nil, xml.StartElement{Name: xml.Name{Local: "history"},
		Attr: []xml.Attr{{Name: xml.Name{Local: "maxstanzas"}, Value: "0"}}}),
		xml.StartElement{Name: xml.Name{Space: "http://jabber.org/protocol/muc", Local: "x"}})
	if err := c.sess.Send(ctx, stanza.Presence{To: to}.Wrap(x)); err != nil {
		return fmt.Errorf("cannot join the room %s: %w", room, err)
	}
	return nil
}

// conn is a live XMPP session.
type conn struct {
	sess  *xmpp.Session
	nc    net.Conn
	me    jid.JID
	nick  string
	rooms []string // bare room JIDs
	log   *slog.Logger
	in    chan route.Message
	done  chan struct{}
	wg    sync.WaitGroup

	mu      sync.Mutex
	failure error
	last    map[string]string // scope ID → the id of the last message sent there
	real    map[string]string // room/nick → the occupant's real bare JID, where the room shows it
	closed  bool
}

// body is a message as read and written: its stanza, body, and the ids
// and correction it may carry.
type body struct {
	stanza.Message
	Body     string    `xml:"body"`
	Replace  *replace  `xml:"urn:xmpp:message-correct:0 replace,omitempty"`
	OriginID *originID `xml:"urn:xmpp:sid:0 origin-id,omitempty"`
	Delay    *struct{} `xml:"urn:xmpp:delay delay,omitempty"`
}

type replace struct {
	ID string `xml:"id,attr"`
}

type originID struct {
	ID string `xml:"id,attr"`
}

// serve reads stanzas until the session ends.
func (c *conn) serve() {
	defer c.wg.Done()
	defer close(c.done)
	err := c.sess.Serve(xmpp.HandlerFunc(func(t xmlstream.TokenReadEncoder, start *xml.StartElement) error {
		if start.Name.Local == "presence" {
			var p occupant
			if err := xml.NewTokenDecoder(xmlstream.MultiReader(xmlstream.Token(*start), t)).Decode(&p); err == nil {
				c.occupied(p)
			}
			return nil
		}
		if start.Name.Local != "message" {
			return nil
		}
		var m body
		// t holds what follows start, up to its end: a decoder of its own
		// must read start first to pair that end with it.
		d := xml.NewTokenDecoder(xmlstream.MultiReader(xmlstream.Token(*start), t))
		if err := d.Decode(&m); err != nil && !errors.Is(err, io.EOF) {
			return nil // a message we cannot read is not the session's end
		}
		c.receive(m)
		return nil
	}))
	if err == nil {
		err = errors.New("the XMPP server ended the session")
	}
	c.mu.Lock()
	if c.failure == nil {
		c.failure = err
	}
	c.mu.Unlock()
}

// receive delivers a message for the bot, and none of its own.
func (c *conn) receive(m body) {
	if m.Body == "" || m.Type == stanza.ErrorMessage || m.Delay != nil {
		return // no words, an error, or history
	}
	id := m.ID
	if m.OriginID != nil && m.OriginID.ID != "" {
		id = m.OriginID.ID
	}
	var msg route.Message
	room := m.From.Bare().String()
	switch {
	case m.Type == stanza.GroupChatMessage:
		if !c.inRoom(room) || m.From.Resourcepart() == "" || m.From.Resourcepart() == c.nick {
			return // the room's own notices, or the bot's own echo
		}
		msg = route.Message{Scope: route.Scope{Kind: route.Group, ID: room}, Name: m.From.Resourcepart()}
		if real := c.occupant(m.From); real != "" {
			msg.From = "xmpp:" + real
		}
	default:
		if m.From.Bare().Equal(c.me.Bare()) || c.inRoom(room) {
			return // the bot's own (another of its resources), or a private room message
		}
		msg = route.Message{Scope: route.Scope{Kind: route.Direct, ID: m.From.Bare().String()}, From: "xmpp:" + m.From.Bare().String(), Name: m.From.Localpart()}
	}
	msg.ID, msg.Text = id, m.Body
	select {
	case c.in <- msg:
	case <-c.done:
	}
}

// occupant is a room's presence of one of its occupants: where the room
// shows their real JID (a non-anonymous room, or the bot a moderator),
// the item says it.
type occupant struct {
	stanza.Presence
	X *struct {
		Item struct {
			JID string `xml:"jid,attr"`
		} `xml:"item"`
	} `xml:"http://jabber.org/protocol/muc#user x"`
}

// occupied notes who an occupant of a room is, or that they left.
func (c *conn) occupied(p occupant) {
	if !c.inRoom(p.From.Bare().String()) || p.From.Resourcepart() == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	key := p.From.String()
	if p.Type == stanza.UnavailablePresence || p.X == nil || p.X.Item.JID == "" {
		delete(c.real, key)
		return
	}
	if real, err := jid.Parse(p.X.Item.JID); err == nil {
		c.real[key] = real.Bare().String()
	}
}

// occupant is who said a room's message: their real bare JID where the
// room shows it, so that it maps to a person as a direct message's
// sender does; "" where it does not. A room nick (room/nick) is no one:
// whoever joins with it once its occupant leaves would speak as them.
func (c *conn) occupant(from jid.JID) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.real[from.String()]
}

func (c *conn) inRoom(room string) bool {
	for _, r := range c.rooms {
		if r == room {
			return true
		}
	}
	return false
}

func (c *conn) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failure == nil {
		return errors.New("the XMPP session ended")
	}
	return c.failure
}

// Receive returns the next message for the bot.
func (c *conn) Receive(ctx context.Context) (route.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-ctx.Done():
		return route.Message{}, ctx.Err()
	case <-c.done:
		return route.Message{}, c.err()
	}
}

// target is where a scope's messages go, and as which type.
func (c *conn) target(to route.Scope) (jid.JID, stanza.MessageType, error) {
	j, err := jid.Parse(to.ID)
	if err != nil {
		return jid.JID{}, "", fmt.Errorf("%q is no XMPP address", to.ID)
	}
	if to.Kind == route.Group || to.Kind == route.Thread {
		return j.Bare(), stanza.GroupChatMessage, nil
	}
	return j, stanza.ChatMessage, nil
}

// Send says markdown as XMPP message styling, split to limits.MaxText.
func (c *conn) Send(ctx context.Context, to route.Scope, md string) ([]string, error) {
	j, typ, err := c.target(to)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, part := range route.Split(styled(md), limits.MaxText) {
		id := newID()
		if err := c.sess.Encode(ctx, body{Message: stanza.Message{ID: id, To: j, Type: typ}, Body: part, OriginID: &originID{ID: id}}); err != nil {
			return ids, fmt.Errorf("cannot send to %s: %w", j, err)
		}
		ids = append(ids, id)
		c.mu.Lock()
		c.last[to.ID] = id
		c.mu.Unlock()
	}
	return ids, nil
}

// Edit corrects the last message sent to the scope (XEP-0308); an older
// one cannot be.
func (c *conn) Edit(ctx context.Context, to route.Scope, id, md string) error {
	c.mu.Lock()
	last := c.last[to.ID]
	c.mu.Unlock()
	text := styled(md)
	if id == "" || id != last || len(text) > limits.MaxText {
		return route.ErrUnsupported
	}
	j, typ, err := c.target(to)
	if err != nil {
		return err
	}
	return c.sess.Encode(ctx, body{Message: stanza.Message{ID: newID(), To: j, Type: typ}, Body: text, Replace: &replace{ID: id}})
}

// Ask says the question and its options as numbered lines.
func (c *conn) Ask(ctx context.Context, to route.Scope, q route.Question) (string, error) {
	ids, err := c.Send(ctx, to, route.Numbered(q))
	if len(ids) == 0 {
		return "", err
	}
	return ids[len(ids)-1], err
}

// Limits are XMPP's.
func (c *conn) Limits() route.Limits { return limits }

// Close ends the session and waits for its reader.
func (c *conn) Close() error {
	c.mu.Lock()
	closed := c.closed
	c.closed = true
	c.mu.Unlock()
	if !closed {
		_ = c.sess.Close()
		_ = c.nc.Close()
	}
	c.wg.Wait()
	return nil
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
