// Package client is a typed Agent Host Protocol client for a bots server:
// JSON-RPC 2.0 over a WebSocket (or any Conn, such as an in-memory pipe),
// with the server's own reducers (package ahp) keeping each subscribed
// channel's state.
//
// Dial connects; the first call initializes the connection (or call
// Initialize to read the server's answer). Bots are read, made, edited
// and deleted with record.Record values and Fields, and the catalogue is
// watched as a stream of BotEvents. OpenChat opens a chat with a bot;
// Chat.Send says a message and returns the Turn, whose Events are the
// turn's parts, deltas, tool calls, questions and end, as they arrive.
//
// A connection that drops is dialled again, resumed with reconnect (the
// server replays what was missed, or sends fresh snapshots), and every
// subscription carries on: a Watch or a Turn does not notice, beyond a
// pause. A call in flight when the connection dropped fails with an
// errcode.Unavailable error, to be tried again.
//
// Errors the server answers are *RPCError values, the JSON-RPC error as it
// came, which unwrap to an *errcode.Error whose Code is the one the
// server's service gave: errcode.Of(err) == errcode.Conflict after an
// edit whose etag is stale.
package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/errcode"
)

// ProtocolVersion is the AHP version the client offers.
const ProtocolVersion = "1.1.0"

// Conn is one connection's JSON-RPC messages, one per Send and Recv: a
// WebSocket's text frames, or transport's in-memory pipe (*transport.Conn
// satisfies it).
type Conn interface {
	// Send writes one message.
	Send(ctx context.Context, msg []byte) error
	// Recv reads the next message; it fails once the connection ended.
	Recv(ctx context.Context) ([]byte, error)
	// Close ends the connection.
	Close() error
}

// Options configure a Client. The zero value is ready to use.
type Options struct {
	// ClientID identifies the client to the server, across reconnects;
	// empty takes a random one.
	ClientID string
	// Redial makes a new connection when the current one drops. Dial sets
	// it; with New and no Redial a dropped connection ends the client.
	Redial func(ctx context.Context) (Conn, error)
	// Logger receives the client's logs (reconnects); nil discards them.
	Logger *slog.Logger
}

// ErrClosed is returned by calls on a closed Client.
var ErrClosed = errors.New("client: closed")

// Client is one AHP client of a bots server. Its methods may be called
// from several goroutines at once.
type Client struct {
	opts Options
	log  *slog.Logger
	ctx  context.Context // ends at Close
	stop context.CancelFunc
	done chan struct{} // closed when the reader ends
	wg   sync.WaitGroup

	initMu sync.Mutex // held while initializing
	wmu    sync.Mutex // one Send at a time

	mu        sync.Mutex
	conn      Conn
	ready     chan struct{} // closed while conn can carry requests
	nextID    int64
	pending   map[int64]*call
	subs      map[string]sub
	clientSeq int64
	init      *ahp.InitializeResult
	lastSeq   int64
	err       error // why the client ended: ErrClosed, or the redial's failure
}

// call is a request waiting for its answer.
type call struct {
	done chan struct{}
	res  json.RawMessage
	err  error
	// hook runs on the reader goroutine with a successful result, before
	// the next message is read: a subscribe's snapshot takes its place
	// before the channel's first action.
	hook func(json.RawMessage) error
}

// sub is a subscribed channel: the reader hands it its actions.
type sub interface {
	// apply takes one action envelope of the channel; called on the
	// reader goroutine, so it must not block.
	apply(env ahp.ActionEnvelope)
	// reset takes a fresh snapshot after a reconnect.
	reset(s ahp.Snapshot)
	// end ends the subscription with err: the client ended.
	end(err error)
}

// Dial connects to the bots server at url (ws://, wss://, http:// or
// https://; the WebSocket is at "/"), presenting token (none when empty)
// as a Bearer token, and redials with it when the connection drops.
func Dial(ctx context.Context, url, token string) (*Client, error) {
	return Options{}.Dial(ctx, url, token)
}

// Dial is the package's Dial with o's options.
func (o Options) Dial(ctx context.Context, url, token string) (*Client, error) {
	url = wsURL(url)
	dial := func(ctx context.Context) (Conn, error) { return dialWS(ctx, url, token) }
	conn, err := dial(ctx)
	if err != nil {
		return nil, err
	}
	if o.Redial == nil {
		o.Redial = dial
	}
	return New(conn, o), nil
}

// wsURL turns an http URL into the WebSocket's.
func wsURL(u string) string {
	switch {
	case strings.HasPrefix(u, "http://"):
		u = "ws://" + strings.TrimPrefix(u, "http://")
	case strings.HasPrefix(u, "https://"):
		u = "wss://" + strings.TrimPrefix(u, "https://")
	}
	if rest, ok := strings.CutPrefix(u, "ws://"); ok && !strings.Contains(rest, "/") {
		u += "/"
	}
	if rest, ok := strings.CutPrefix(u, "wss://"); ok && !strings.Contains(rest, "/") {
		u += "/"
	}
	return u
}

// wsConn is a WebSocket as a Conn.
type wsConn struct{ ws *websocket.Conn }

func dialWS(ctx context.Context, url, token string) (Conn, error) {
	opts := &websocket.DialOptions{}
	if token != "" {
		opts.HTTPHeader = http.Header{"Authorization": {"Bearer " + token}}
	}
	ws, resp, err := websocket.Dial(ctx, url, opts)
	if err != nil {
		return nil, refusal(url, token, resp, err)
	}
	ws.SetReadLimit(64 << 20)
	return wsConn{ws}, nil
}

// refusal is the error of a dial to url that failed with err; resp is
// the server's answer, if any. A refusal that dialling again cannot mend
// (a token, a Host or an Origin the server does not take) says so with the
// server's own sentence and a code Redial stops at.
func refusal(url, token string, resp *http.Response, err error) error {
	if resp == nil {
		return errcode.Wrap(errcode.Unavailable, err, "cannot connect to %s", url)
	}
	said := ""
	if resp.Body != nil { // coder/websocket keeps the first 1,024 bytes of it
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		said = strings.TrimSpace(string(b))
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		if token == "" {
			return errcode.Wrap(errcode.Unauthenticated, err, "the server at %s asks for a token, and none was given", url)
		}
		return errcode.Wrap(errcode.Unauthenticated, err, "the server at %s refused the token", url)
	case http.StatusForbidden, http.StatusMisdirectedRequest:
		if said == "" {
			said = resp.Status
		}
		return errcode.Wrap(errcode.PermissionDenied, err, "the server at %s refused the connection: %s", url, said)
	}
	return errcode.Wrap(errcode.Unavailable, err, "cannot connect to %s", url)
}

func (w wsConn) Send(ctx context.Context, msg []byte) error {
	return w.ws.Write(ctx, websocket.MessageText, msg)
}

func (w wsConn) Recv(ctx context.Context) ([]byte, error) {
	_, data, err := w.ws.Read(ctx)
	return data, err
}

// Close closes the WebSocket with its handshake; one the server or the
// network has closed already is no error.
func (w wsConn) Close() error {
	err := w.ws.Close(websocket.StatusNormalClosure, "")
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// New returns a client on conn, which it owns from now on (Close closes
// it). It starts the goroutine that reads conn; Close waits for it.
func New(conn Conn, o Options) *Client {
	if o.ClientID == "" {
		var b [8]byte
		rand.Read(b[:])
		o.ClientID = "go-client-" + hex.EncodeToString(b[:])
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, stop := context.WithCancel(context.Background())
	c := &Client{
		opts: o, log: log, ctx: ctx, stop: stop, done: make(chan struct{}),
		conn: conn, ready: make(chan struct{}),
		pending: map[int64]*call{}, subs: map[string]sub{},
	}
	close(c.ready)
	go c.read(conn)
	return c
}

// ClientID is the id the client gives the server.
func (c *Client) ClientID() string { return c.opts.ClientID }

// Close ends the client: its connection, its subscriptions (their
// iterators end with ErrClosed) and its calls in flight; it waits for the
// goroutines the client started. It is idempotent.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.err == nil {
		c.err = ErrClosed
	}
	conn := c.conn
	c.mu.Unlock()
	// the connection first, so that a WebSocket is closed with its
	// handshake (the reader reads the server's close frame); then what
	// the reader may wait on besides (a redial, its backoff).
	var err error
	if conn != nil {
		err = conn.Close()
	}
	c.stop()
	<-c.done
	c.wg.Wait()
	return err
}

// Initialize initializes the connection, once, and returns the server's
// answer: its protocol version, serverSeq, and _meta (the bot scheme's
// advertisement, the principal the connection acts as). Every other
// method initializes first when it has not been done.
func (c *Client) Initialize(ctx context.Context) (ahp.InitializeResult, error) {
	c.initMu.Lock()
	defer c.initMu.Unlock()
	c.mu.Lock()
	done := c.init
	c.mu.Unlock()
	if done != nil {
		return *done, nil
	}
	var r ahp.InitializeResult
	params := ahp.InitializeParams{Channel: ahp.RootURI, ProtocolVersions: []string{ProtocolVersion}, ClientID: c.opts.ClientID,
		ClientInfo: &ahp.Implementation{Name: "agenthost-bots-go-client"}}
	if err := c.rawCall(ctx, ahp.MethodInitialize, params, &r, nil); err != nil {
		return ahp.InitializeResult{}, err
	}
	c.mu.Lock()
	c.init = &r
	c.lastSeq = max(c.lastSeq, r.ServerSeq)
	c.mu.Unlock()
	return r, nil
}

// Call sends a request of method with params, after initializing, and
// decodes its result into out (when not nil): for methods this package
// has no typed call for.
func (c *Client) Call(ctx context.Context, method string, params, out any) error {
	return c.callHook(ctx, method, params, out, nil)
}

func (c *Client) callHook(ctx context.Context, method string, params, out any, hook func(json.RawMessage) error) error {
	if _, err := c.Initialize(ctx); err != nil {
		return err
	}
	return c.rawCall(ctx, method, params, out, hook)
}

// rawCall sends a request and waits for its answer.
func (c *Client) rawCall(ctx context.Context, method string, params, out any, hook func(json.RawMessage) error) error {
	p, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	conn, err := c.usable(ctx)
	if err != nil {
		return err
	}
	cl := &call{done: make(chan struct{}), hook: hook}
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.pending[id] = cl
	c.mu.Unlock()
	frame, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      int64           `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}{"2.0", id, method, p})
	if err := c.send(ctx, conn, frame); err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case <-cl.done:
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
	if cl.err != nil {
		return fmt.Errorf("%s: %w", method, cl.err)
	}
	if out != nil {
		if err := json.Unmarshal(cl.res, out); err != nil {
			return fmt.Errorf("%s: the server answered %s: %w", method, cl.res, err)
		}
	}
	return nil
}

// notify sends a notification.
func (c *Client) notify(ctx context.Context, method string, params any) error {
	if _, err := c.Initialize(ctx); err != nil {
		return err
	}
	conn, err := c.usable(ctx)
	if err != nil {
		return err
	}
	frame, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return c.send(ctx, conn, frame)
}

func (c *Client) send(ctx context.Context, conn Conn, frame []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := conn.Send(ctx, frame); err != nil {
		return errcode.Wrap(errcode.Unavailable, err, "the connection to the server dropped")
	}
	return nil
}

// usable waits until the connection can carry requests (not while a
// reconnect is under way) and returns it.
func (c *Client) usable(ctx context.Context) (Conn, error) {
	for {
		c.mu.Lock()
		conn, ready, err := c.conn, c.ready, c.err
		c.mu.Unlock()
		if err != nil {
			return nil, err
		}
		select {
		case <-ready:
			return conn, nil
		default:
		}
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.done:
		}
	}
}

// rpcFrame is one JSON-RPC message from the server.
type rpcFrame struct {
	ID     *int64          `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *RPCError       `json:"error"`
}

// read is the reader goroutine: it hands answers to their calls and
// actions to their subscriptions, and reconnects when the connection
// drops.
func (c *Client) read(conn Conn) {
	defer close(c.done)
	for {
		data, err := conn.Recv(c.ctx)
		if err != nil {
			if conn = c.reconnect(err); conn == nil {
				return
			}
			continue
		}
		var f rpcFrame
		if err := json.Unmarshal(data, &f); err != nil {
			c.log.Warn("client: the server sent a frame that is not JSON-RPC", "err", err)
			continue
		}
		switch {
		case f.Method == ahp.MethodAction:
			var env ahp.ActionEnvelope
			if err := json.Unmarshal(f.Params, &env); err != nil {
				c.log.Warn("client: the server sent an action that does not decode", "err", err)
				continue
			}
			c.route(env)
		case f.Method == "" && f.ID != nil:
			c.answer(*f.ID, f.Result, f.Error)
		}
	}
}

// answer completes the call id.
func (c *Client) answer(id int64, res json.RawMessage, rerr *RPCError) {
	c.mu.Lock()
	cl := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if cl == nil {
		return
	}
	switch {
	case rerr != nil:
		cl.err = rerr.asError()
	case cl.hook != nil:
		cl.res = res
		cl.err = cl.hook(res)
	default:
		cl.res = res
	}
	close(cl.done)
}

// route hands an action to its channel's subscription.
func (c *Client) route(env ahp.ActionEnvelope) {
	c.mu.Lock()
	c.lastSeq = max(c.lastSeq, env.ServerSeq)
	s := c.subs[env.Channel]
	c.mu.Unlock()
	if s != nil {
		s.apply(env)
	}
}

// reconnect replaces a connection that failed with cause: it fails the
// calls in flight, dials again until it connects or the client closes,
// and resumes the client on the new connection with reconnect. It
// returns nil when the client ends.
func (c *Client) reconnect(cause error) Conn {
	c.mu.Lock()
	closed := c.err != nil
	if !closed {
		c.ready = make(chan struct{})
	}
	calls := c.pending
	c.pending = map[int64]*call{}
	c.mu.Unlock()
	lost := errcode.Wrap(errcode.Unavailable, cause, "the connection to the server dropped")
	for _, cl := range calls {
		cl.err = lost
		close(cl.done)
	}
	if closed {
		c.endSubs(ErrClosed)
		return nil
	}
	if c.opts.Redial == nil {
		c.fail(lost)
		return nil
	}
	c.log.Info("client: the connection dropped; dialling again", "err", cause)
	wait := 50 * time.Millisecond
	for {
		conn, err := c.opts.Redial(c.ctx)
		if err == nil {
			if conn = c.resume(conn); conn != nil {
				return conn
			}
		} else if code := errcode.Of(err); code == errcode.Unauthenticated || code == errcode.PermissionDenied {
			c.fail(err) // dialling again would be refused again
			return nil
		}
		select {
		case <-c.ctx.Done():
			c.endSubs(ErrClosed)
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// resume sends reconnect on conn, first of all, and applies its answer;
// nil when conn failed (and is closed) or the client closed.
func (c *Client) resume(conn Conn) Conn {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		conn.Close()
		return nil
	}
	c.conn = conn
	initialized := c.init != nil
	last := c.lastSeq
	channels := make([]string, 0, len(c.subs))
	for ch := range c.subs {
		channels = append(channels, ch)
	}
	c.mu.Unlock()
	if !initialized {
		c.setReady()
		return conn
	}
	frame, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 0, "method": ahp.MethodReconnect,
		"params": ahp.ReconnectParams{Channel: ahp.RootURI, ClientID: c.opts.ClientID, LastSeenServerSeq: last, Subscriptions: channels}})
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	if err := c.send(ctx, conn, frame); err != nil {
		conn.Close()
		return nil
	}
	for {
		data, err := conn.Recv(ctx)
		if err != nil {
			conn.Close()
			return nil
		}
		var f rpcFrame
		if json.Unmarshal(data, &f) != nil {
			continue
		}
		if f.Method == ahp.MethodAction {
			var env ahp.ActionEnvelope
			if json.Unmarshal(f.Params, &env) == nil {
				c.route(env)
			}
			continue
		}
		if f.ID == nil || *f.ID != 0 {
			continue
		}
		if f.Error != nil {
			c.log.Warn("client: the server refused reconnect", "err", f.Error.asError())
			conn.Close()
			return nil
		}
		var r ahp.ReconnectResult
		if err := json.Unmarshal(f.Result, &r); err != nil {
			conn.Close()
			return nil
		}
		c.log.Info("client: reconnected", "result", r.Type)
		c.applyReconnect(r)
		c.setReady()
		return conn
	}
}

// applyReconnect replays what was missed or takes the fresh snapshots;
// the channels the server could not resume are subscribed again.
func (c *Client) applyReconnect(r ahp.ReconnectResult) {
	switch r.Type {
	case ahp.ReconnectSnapshot:
		for _, s := range r.Snapshots {
			c.mu.Lock()
			c.lastSeq = max(c.lastSeq, s.FromSeq)
			sb := c.subs[s.Resource]
			c.mu.Unlock()
			if sb != nil {
				sb.reset(s)
			}
		}
	default:
		for _, env := range r.Actions {
			c.route(env)
		}
		for _, ch := range r.Missing {
			c.wg.Go(func() {
				var res ahp.SubscribeResult
				err := c.rawCall(c.ctx, ahp.MethodSubscribe, ahp.SubscribeParams{Channel: ch}, &res, nil)
				c.mu.Lock()
				sb := c.subs[ch]
				c.mu.Unlock()
				switch {
				case sb == nil:
				case err != nil:
					sb.end(err)
				case res.Snapshot != nil:
					sb.reset(*res.Snapshot)
				}
			})
		}
	}
}

func (c *Client) setReady() {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.ready:
	default:
		close(c.ready)
	}
}

// fail ends the client with err: a redial the server refused.
func (c *Client) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
	c.setReady()
	c.endSubs(err)
}

func (c *Client) endSubs(err error) {
	c.mu.Lock()
	subs := c.subs
	c.subs = map[string]sub{}
	c.mu.Unlock()
	for _, s := range subs {
		s.end(err)
	}
}

// subscribe subscribes to channel as s, whose reset takes the snapshot
// on the reader goroutine, before the channel's first action.
func (c *Client) subscribe(ctx context.Context, channel string, s sub) error {
	if _, err := c.Initialize(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	if _, dup := c.subs[channel]; dup {
		c.mu.Unlock()
		return errcode.New(errcode.AlreadyExists, "this client is subscribed to %s already", channel)
	}
	c.subs[channel] = s
	c.mu.Unlock()
	err := c.rawCall(ctx, ahp.MethodSubscribe, ahp.SubscribeParams{Channel: channel}, nil, func(raw json.RawMessage) error {
		var r ahp.SubscribeResult
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		if r.Snapshot == nil {
			return fmt.Errorf("the server sent no snapshot of %s", channel)
		}
		s.reset(*r.Snapshot)
		return nil
	})
	if err != nil {
		c.mu.Lock()
		if c.subs[channel] == s {
			delete(c.subs, channel)
		}
		c.mu.Unlock()
	}
	return err
}

// unsubscribe leaves channel.
func (c *Client) unsubscribe(ctx context.Context, channel string, s sub) error {
	c.mu.Lock()
	mine := c.subs[channel] == s
	if mine {
		delete(c.subs, channel)
	}
	c.mu.Unlock()
	s.end(ErrClosed)
	if !mine {
		return nil
	}
	return c.rawCall(ctx, ahp.MethodUnsubscribe, ahp.UnsubscribeParams{Channel: channel}, nil, nil)
}

// nextSeq is the clientSeq of the next action dispatched.
func (c *Client) nextSeq() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clientSeq++
	return c.clientSeq
}
