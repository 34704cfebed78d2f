// Package irc is the IRC adapter of package route: a bot's account on an
// IRC server, which receives direct messages and the lines of the
// channels it joins, and answers them.
//
// Settings: server (host:port, required), nick (required), user and
// realname (the nick when unset), channels (comma-separated, joined at
// login), tls ("true" unless "false"; plain text only to a loopback
// address), accounts ("true" where the server's services log people in to
// accounts; "false" when unset), account (the bot's own services account,
// the nick when unset). Secrets: password, sent as the server password
// (PASS) before the login, as servers and bouncers that guard their logins
// take it; accountPassword, with which the bot logs in to its account
// (SASL PLAIN) before it is welcomed, so that it holds its nick and may
// speak where only people logged in may. A server that offers no SASL, or
// refuses the account, refuses the login in one sentence.
//
// A sender is their nick, which anyone may take while its holder is
// away. With accounts, a sender is the account the server says they are
// logged in to (IRCv3 account-tag, asked for at login: a server that does
// not offer it is refused), written account:<name>, and a sender not
// logged in is no one: the relay passes on nothing they say and tells
// them to log in.
//
// IRC has no message ids: a message carries the server's msgid tag where
// the server gives one, else none, and IRC delivers nothing twice. It
// cannot edit a message (Edit is route.ErrUnsupported), and it asks with
// numbered lines.
package irc

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/bots/route"
)

// Network is the IRC adapter.
type Network struct{}

var _ route.Network = Network{}

// Name is "irc".
func (Network) Name() string { return "irc" }

// Limits of an IRC connection: a line is 512 bytes with its command,
// target and the prefix the server adds when it relays it, so a message's
// text keeps to 350; and one line every 500ms, under servers' flood
// limits.
var limits = route.Limits{MaxText: 350, Every: 500 * time.Millisecond}

// burst is how many lines may go out at once before Every paces them.
const burst = 4

// settings are a connection's, read and checked.
type settings struct {
	server, nick, user, realname, account string
	channels                              []string
	tls, accounts                         bool
}

func read(d route.Dial) (settings, error) {
	s := settings{server: d.Settings["server"], nick: d.Settings["nick"], user: d.Settings["user"], realname: d.Settings["realname"], tls: d.Settings["tls"] != "false"}
	switch {
	case s.server == "":
		return s, errors.New("the IRC connection names no server (host:port)")
	case s.nick == "" || !validTarget(s.nick) || strings.HasPrefix(s.nick, "#"):
		return s, fmt.Errorf("the IRC nick %q is no nick", s.nick)
	}
	switch a := d.Settings["accounts"]; a {
	case "true":
		s.accounts = true
	case "", "false":
	default:
		return s, fmt.Errorf("the IRC setting accounts is %q: say true or false", a)
	}
	if err := route.CheckServer("IRC", s.server, s.tls); err != nil {
		return s, err
	}
	if s.user == "" {
		s.user = s.nick
	}
	if s.realname == "" {
		s.realname = s.nick
	}
	if s.account = d.Settings["account"]; s.account == "" {
		s.account = s.nick
	} else if !validTarget(s.account) {
		return s, fmt.Errorf("the IRC account %q is no account name", s.account)
	}
	for _, c := range route.List(d.Settings["channels"]) {
		if !validTarget(c) || !strings.ContainsAny(c[:1], "#&+!") {
			return s, fmt.Errorf("the IRC channel %q is no channel", c)
		}
		s.channels = append(s.channels, c)
	}
	return s, nil
}

// Dial logs in and joins the channels. It fails with one sentence when
// the server cannot be reached, refuses the password or the nick.
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
	dialer := &net.Dialer{}
	if s.tls {
		host, _, _ := net.SplitHostPort(s.server)
		nc, err = (&tls.Dialer{NetDialer: dialer, Config: &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}}).DialContext(ctx, "tcp", s.server)
	} else {
		nc, err = dialer.DialContext(ctx, "tcp", s.server)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot reach the IRC server %s: %w", s.server, err)
	}
	c := &conn{nc: nc, nick: s.nick, accounts: s.accounts, log: log, in: make(chan route.Message, 256), done: make(chan struct{}),
		closing: make(chan struct{}), welcome: make(chan error, 1), tokens: burst, last: time.Now()}
	if s.accounts {
		c.want = append(c.want, "account-tag")
	}
	if pw := d.Secrets["accountPassword"]; pw != "" {
		c.want = append(c.want, "sasl")
		c.sasl = []byte(base64.StdEncoding.EncodeToString([]byte(s.account + "\x00" + s.account + "\x00" + pw)))
	}
	if deadline, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(deadline)
	}
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Now()) })
	defer stop()
	c.wg.Add(1)
	go c.read()
	if len(c.want) > 0 {
		c.write("CAP LS 302") // the login waits for CAP END
	}
	if pw := d.Secrets["password"]; pw != "" {
		c.write("PASS :" + clean(pw))
	}
	c.write("NICK " + s.nick)
	c.write("USER " + clean(s.user) + " 0 * :" + clean(s.realname))
	select {
	case err = <-c.welcome:
	case <-c.done:
		err = c.err()
	}
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		_ = nc.Close()
		c.wg.Wait()
		var missing missingCap
		switch {
		case errors.As(err, &missing) && strings.Contains(string(missing), "account-tag"):
			return nil, fmt.Errorf("the IRC server %s does not offer IRCv3 account-tag, which the setting accounts needs to tell who is logged in: set accounts to false, or use a server whose services log people in", s.server)
		case errors.As(err, &missing):
			return nil, fmt.Errorf("the IRC server %s does not offer SASL, with which the bot logs in to its account (accountPassword): leave accountPassword out there", s.server)
		case errors.Is(err, errSASL):
			return nil, fmt.Errorf("the IRC server %s refused the login of %s: its services refused the account %s with that accountPassword", s.server, s.nick, s.account)
		}
		return nil, fmt.Errorf("the IRC server %s refused the login of %s: %w", s.server, s.nick, err)
	}
	_ = nc.SetDeadline(time.Time{})
	for _, ch := range s.channels {
		c.write("JOIN " + ch)
	}
	return c, nil
}

// conn is a live IRC connection.
type conn struct {
	nc  net.Conn
	log *slog.Logger
	// accounts names senders by the account they are logged in to; the
	// login asks for account-tag.
	accounts bool
	in       chan route.Message
	done     chan struct{} // closed when the reader ends
	closing  chan struct{} // closed when Close begins
	wg       sync.WaitGroup

	wmu sync.Mutex // one line at a time

	mu       sync.Mutex
	nick     string // as the server knows it now
	welcome  chan error
	welcomed bool
	want     []string // the capabilities the login needs: account-tag, sasl
	sasl     []byte   // the SASL PLAIN response that logs the bot in; nil without
	offered  []string // the capabilities the server listed so far (CAP LS)
	tagged   bool     // the server acknowledged account-tag
	loggedIn bool     // the server logged the bot in to its account (SASL)
	failure  error    // why the reader ended
	tokens   float64  // the pacing of sends: lines that may go at once
	last     time.Time
	closed   bool
}

// write sends one line; a failure shows as the reader's end.
func (c *conn) write(line string) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := io.WriteString(c.nc, line+"\r\n")
	return err
}

func (c *conn) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failure == nil {
		return errors.New("the IRC connection ended")
	}
	return c.failure
}

// read reads lines until the connection ends.
func (c *conn) read() {
	defer c.wg.Done()
	defer close(c.done)
	sc := bufio.NewScanner(c.nc)
	sc.Buffer(make([]byte, 4096), maxLine)
	for sc.Scan() {
		m, err := parse(sc.Text())
		if err != nil {
			continue
		}
		if err := c.handle(m); err != nil {
			c.fail(err)
			return
		}
	}
	err := sc.Err()
	if err == nil {
		err = io.EOF
	}
	c.fail(fmt.Errorf("the IRC server closed the connection: %w", err))
}

func (c *conn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failure == nil {
		c.failure = err
	}
	if !c.welcomed {
		c.welcomed = true
		c.welcome <- err
	}
}

// handle answers one line from the server.
func (c *conn) handle(m message) error {
	switch m.command {
	case "PING":
		return c.write("PONG :" + clean(m.param(0)))
	case "CAP":
		return c.capability(m)
	case "AUTHENTICATE":
		if m.param(0) == "+" {
			return c.authenticate()
		}
	case "903": // RPL_SASLSUCCESS
		c.mu.Lock()
		c.loggedIn = true
		c.mu.Unlock()
		return c.write("CAP END")
	case "902", "904", "905", "906":
		return errSASL
	case "001": // welcome: logged in
		c.mu.Lock()
		if c.accounts && !c.tagged { // a server that knows no CAP
			c.mu.Unlock()
			return missingCap("account-tag")
		}
		if c.sasl != nil && !c.loggedIn {
			c.mu.Unlock()
			return missingCap("sasl")
		}
		c.nick = m.param(0)
		if !c.welcomed {
			c.welcomed = true
			c.welcome <- nil
		}
		c.mu.Unlock()
	case "432":
		return fmt.Errorf("the nick %s is not allowed there", m.param(1))
	case "433", "436":
		return fmt.Errorf("the nick %s is taken", m.param(1))
	case "464", "465":
		return errors.New("the server refused the password")
	case "ERROR":
		return fmt.Errorf("the server ended the connection: %s", m.param(0))
	case "NICK":
		c.mu.Lock()
		if strings.EqualFold(nick(m.prefix), c.nick) {
			c.nick = m.param(0)
		}
		c.mu.Unlock()
	case "PRIVMSG":
		c.privmsg(m)
	}
	return nil
}

// missingCap is a capability the login needs that the server does not
// offer.
type missingCap string

func (m missingCap) Error() string { return "the server does not offer " + string(m) }

// errSASL is the services' refusal of the bot's account and password.
var errSASL = errors.New("the services refused the account")

// capability takes the server's answers to the capabilities the login
// asks for: its list (CAP LS, on lines ending with the one without "*"),
// then its acknowledgement (ACK), after which the bot logs in to its
// account (AUTHENTICATE) or the login goes on (CAP END), or its refusal
// (NAK).
func (c *conn) capability(m message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch m.param(1) {
	case "LS":
		more := m.param(2) == "*"
		list := m.param(2)
		if more {
			list = m.param(3)
		}
		c.offered = append(c.offered, strings.Fields(list)...)
		if more {
			return nil
		}
		for _, w := range c.want {
			if !slices.ContainsFunc(c.offered, func(cp string) bool { name, _, _ := strings.Cut(cp, "="); return name == w }) {
				return missingCap(w)
			}
		}
		return c.write("CAP REQ :" + strings.Join(c.want, " "))
	case "ACK":
		acked := strings.Fields(m.param(2))
		c.tagged = c.tagged || slices.Contains(acked, "account-tag")
		if c.sasl != nil && slices.Contains(acked, "sasl") {
			return c.write("AUTHENTICATE PLAIN")
		}
		return c.write("CAP END")
	case "NAK":
		return missingCap(strings.Join(c.want, " "))
	}
	return nil
}

// authenticate sends the SASL PLAIN response the server asked for, in
// lines of 400 bytes (and a "+" after a last one of exactly 400).
func (c *conn) authenticate() error {
	c.mu.Lock()
	resp := c.sasl
	c.mu.Unlock()
	for len(resp) >= 400 {
		if err := c.write("AUTHENTICATE " + string(resp[:400])); err != nil {
			return err
		}
		resp = resp[400:]
	}
	if len(resp) == 0 {
		return c.write("AUTHENTICATE +")
	}
	return c.write("AUTHENTICATE " + string(resp))
}

// unnamed is what a sender not logged in is told where senders are
// accounts.
const unnamed = "I pass on only what people logged in to this network's accounts say: log in (identify to NickServ, say), then write again."

// privmsg delivers a message to the bot's nick or in a channel it is in.
func (c *conn) privmsg(m message) {
	from, target, text := nick(m.prefix), m.param(0), m.param(1)
	c.mu.Lock()
	me := c.nick
	c.mu.Unlock()
	if from == "" || strings.EqualFold(from, me) {
		return // the server's own, or the connection's own echoed
	}
	if strings.HasPrefix(text, "\x01") { // CTCP: only an action is said
		body, ok := strings.CutPrefix(strings.TrimSuffix(text, "\x01"), "\x01ACTION ")
		if !ok {
			return
		}
		text = "* " + from + " " + body
	}
	scope := route.Scope{Kind: route.Direct, ID: from}
	if !strings.EqualFold(target, me) {
		scope = route.Scope{Kind: route.Group, ID: target}
	}
	msg := route.Message{ID: m.tags["msgid"], Scope: scope, From: "irc:" + from, Name: from, Text: text}
	if c.accounts {
		msg.From, msg.ReplyTo = "", from
		if account := m.tags["account"]; account != "*" && validTarget(account) && !strings.ContainsAny(account, "@:") {
			msg.From = "irc:" + route.IRCAccount + account
		} else {
			msg.Unnamed = unnamed
		}
	}
	if at, err := time.Parse(time.RFC3339Nano, m.tags["time"]); err == nil {
		msg.At = at
	}
	select {
	case c.in <- msg:
	case <-c.done:
	case <-c.closing: // nobody receives any more
	}
}

// Receive returns the next message for the bot.
func (c *conn) Receive(ctx context.Context) (route.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-ctx.Done():
		return route.Message{}, ctx.Err()
	case <-c.done:
		select {
		case m := <-c.in:
			return m, nil
		default:
		}
		return route.Message{}, c.err()
	}
}

// Send says markdown to a nick or a channel, as plain IRC lines, paced.
func (c *conn) Send(ctx context.Context, to route.Scope, md string) ([]string, error) {
	if !validTarget(to.ID) {
		return nil, fmt.Errorf("%q is no IRC nick or channel", to.ID)
	}
	var ids []string
	for _, l := range lines(md, limits.MaxText) {
		if err := c.pace(ctx); err != nil {
			return ids, err
		}
		if err := c.write("PRIVMSG " + to.ID + " :" + l); err != nil {
			return ids, fmt.Errorf("cannot send to the IRC server: %w", err)
		}
		ids = append(ids, "")
	}
	return ids, nil
}

// pace waits until one more line may go: burst lines at once, then one
// every limits.Every.
func (c *conn) pace(ctx context.Context) error {
	for {
		c.mu.Lock()
		now := time.Now()
		c.tokens = min(burst, c.tokens+float64(now.Sub(c.last))/float64(limits.Every))
		c.last = now
		if c.tokens >= 1 {
			c.tokens--
			c.mu.Unlock()
			return nil
		}
		wait := time.Duration((1 - c.tokens) * float64(limits.Every))
		c.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-c.done:
			t.Stop()
			return c.err()
		}
	}
}

// Edit is not something IRC can do.
func (c *conn) Edit(context.Context, route.Scope, string, string) error {
	return route.ErrUnsupported
}

// Ask says the question and its options as numbered lines.
func (c *conn) Ask(ctx context.Context, to route.Scope, q route.Question) (string, error) {
	_, err := c.Send(ctx, to, route.Numbered(q))
	return "", err
}

// Limits are IRC's.
func (c *conn) Limits() route.Limits { return limits }

// quitWait is how long Close waits for the server to end the connection
// after QUIT.
const quitWait = 2 * time.Second

// Close says goodbye, waits (up to quitWait) for the server to end the
// connection, by which it has let the nick go, so that a dial right after
// takes it again, and waits for the reader.
func (c *conn) Close() error {
	c.mu.Lock()
	closed := c.closed
	c.closed = true
	c.mu.Unlock()
	if !closed {
		close(c.closing)
		_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
		if c.write("QUIT :bye") == nil {
			t := time.NewTimer(quitWait)
			select {
			case <-c.done:
			case <-t.C:
			}
			t.Stop()
		}
		_ = c.nc.Close()
	}
	c.wg.Wait()
	return nil
}
