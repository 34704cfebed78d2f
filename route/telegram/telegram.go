// Package telegram is the Telegram adapter of package route: a bot of the
// Telegram Bot API, which receives the messages people send it (privately,
// in groups, in topics) by long polling, and answers them.
//
// Settings: api (the Bot API's address, https://api.telegram.org unless
// set; tests point it at a fake). Secret: token, the bot's token from
// @BotFather. The token is part of every request's path: no error or log
// of this package shows a request's address.
//
// A message's id is "<chat>:<message_id>"; updates are confirmed (the
// getUpdates offset) once delivered, so Telegram gives none twice. Replies
// are sent as HTML converted from markdown, split to 4096 characters, at
// most one a second to a chat; a 429 waits the retry_after Telegram names.
// A question is an inline keyboard, and a press comes back as an Answer.
package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/bots/route"
)

// DefaultAPI is the Bot API's address.
const DefaultAPI = "https://api.telegram.org"

// limits are Telegram's: 4096 characters a message, about one message a
// second to one chat.
var limits = route.Limits{MaxText: 4096, Every: time.Second}

// Network is the Telegram adapter. Its Client makes the requests;
// nil is a client with a 60 s timeout.
type Network struct {
	Client *http.Client
}

var _ route.Network = Network{}

// Name is "telegram".
func (Network) Name() string { return "telegram" }

// Dial checks the token (getMe) and starts polling for updates.
func (n Network) Dial(ctx context.Context, d route.Dial) (route.Conn, error) {
	api := strings.TrimRight(d.Settings["api"], "/")
	if api == "" {
		api = DefaultAPI
	}
	if u, err := url.Parse(api); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("the Telegram api setting %q is no http(s) address", api)
	}
	token := d.Secrets["token"]
	if token == "" || strings.ContainsAny(token, "/?#% ") {
		return nil, errors.New("the Telegram connection has no usable token: give its bot's token from @BotFather as the secret token")
	}
	hc := n.Client
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	log := d.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// in is unbuffered: an update is confirmed (the next getUpdates) only
	// once Receive took every one before it.
	c := &conn{api: api, token: token, hc: hc, log: log, in: make(chan route.Message),
		done: make(chan struct{}), asks: map[string]route.Answer{}, pacer: route.Pacer{Every: limits.Every}}
	var me struct {
		ID       int64  `json:"id"`
		Username string `json:"username"`
	}
	if err := c.call(ctx, "getMe", nil, &me); err != nil {
		return nil, fmt.Errorf("the Telegram Bot API refused the connection's token, or cannot be reached: %w", err)
	}
	c.me = me.ID
	pctx, stop := context.WithCancel(context.Background())
	c.stop = stop
	c.wg.Add(1)
	go c.poll(pctx)
	return c, nil
}

// conn is a live bot.
type conn struct {
	api, token string
	hc         *http.Client
	log        *slog.Logger
	me         int64
	in         chan route.Message
	done       chan struct{} // closed when polling ends
	stop       context.CancelFunc
	wg         sync.WaitGroup

	mu      sync.Mutex
	failure error
	asks    map[string]route.Answer // callback data → the option it stands for
	pacer   route.Pacer             // one message a second to a chat
	nask    int
}

// apiError is a Bot API refusal.
type apiError struct {
	Code        int
	Description string
	RetryAfter  int
}

func (e *apiError) Error() string {
	return fmt.Sprintf("Telegram answered %d: %s", e.Code, e.Description)
}

// call posts a method with params as JSON and decodes its result. No
// error holds the request's address, which holds the token.
func (c *conn) call(ctx context.Context, method string, params, out any) error {
	body, err := json.Marshal(params)
	if err != nil {
		return err
	}
	if params == nil {
		body = []byte("{}")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.api+"/bot"+c.token+"/"+method, bytes.NewReader(body))
	if err != nil {
		return errors.New("cannot make a request of the Telegram Bot API")
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the address holds the token
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("cannot reach the Telegram Bot API at %s: %v", c.api, err)
	}
	defer resp.Body.Close()
	var r struct {
		OK          bool            `json:"ok"`
		Result      json.RawMessage `json:"result"`
		ErrorCode   int             `json:"error_code"`
		Description string          `json:"description"`
		Parameters  struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&r); err != nil {
		return fmt.Errorf("the Telegram Bot API answered %s with no JSON", resp.Status)
	}
	if !r.OK {
		return &apiError{Code: r.ErrorCode, Description: c.scrub(r.Description), RetryAfter: r.Parameters.RetryAfter}
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(r.Result, out)
}

// scrub takes the token out of what Telegram says.
func (c *conn) scrub(s string) string { return strings.ReplaceAll(s, c.token, "[token]") }

// callRetrying is call that waits the retry_after of a 429, up to three
// times.
func (c *conn) callRetrying(ctx context.Context, method string, params, out any) error {
	for i := 0; ; i++ {
		err := c.call(ctx, method, params, out)
		var ae *apiError
		if !errors.As(err, &ae) || ae.Code != http.StatusTooManyRequests || i == 3 {
			return err
		}
		wait := time.Duration(max(ae.RetryAfter, 1)) * time.Second
		c.log.Info("telegram: too many requests, waiting", "method", method, "wait", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// update is what getUpdates answers.
type update struct {
	UpdateID int64    `json:"update_id"`
	Message  *message `json:"message"`
	Callback *struct {
		ID      string   `json:"id"`
		From    user     `json:"from"`
		Message *message `json:"message"`
		Data    string   `json:"data"`
	} `json:"callback_query"`
}

type message struct {
	MessageID int64 `json:"message_id"`
	ThreadID  int64 `json:"message_thread_id"`
	From      *user `json:"from"`
	Chat      struct {
		ID   int64  `json:"id"`
		Type string `json:"type"`
	} `json:"chat"`
	Date int64  `json:"date"`
	Text string `json:"text"`
}

type user struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	Username  string `json:"username"`
}

// poll long-polls getUpdates until Close, confirming each batch by the
// next offset.
func (c *conn) poll(ctx context.Context) {
	defer c.wg.Done()
	defer close(c.done)
	var offset int64
	backoff := time.Second
	for ctx.Err() == nil {
		var ups []update
		err := c.call(ctx, "getUpdates", map[string]any{"offset": offset, "timeout": 25,
			"allowed_updates": []string{"message", "callback_query"}}, &ups)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			var ae *apiError
			if errors.As(err, &ae) && (ae.Code == http.StatusUnauthorized || ae.Code == http.StatusConflict) {
				c.fail(fmt.Errorf("the polling was stopped by Telegram: %w", err))
				return
			}
			wait := backoff
			if errors.As(err, &ae) && ae.RetryAfter > 0 {
				wait = time.Duration(ae.RetryAfter) * time.Second
			}
			c.log.Warn("telegram: getUpdates failed, polling again", "err", err, "wait", wait)
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			backoff = min(2*backoff, time.Minute)
			continue
		}
		backoff = time.Second
		for _, u := range ups {
			offset = max(offset, u.UpdateID+1)
			m, ok := c.message(ctx, u)
			if !ok {
				continue
			}
			select {
			case c.in <- m:
			case <-ctx.Done():
				return
			}
		}
	}
}

func (c *conn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failure == nil {
		c.failure = err
	}
}

// scopeOf is where a message was said.
func scopeOf(m *message) route.Scope {
	id := strconv.FormatInt(m.Chat.ID, 10)
	switch {
	case m.Chat.Type == "private":
		return route.Scope{Kind: route.Direct, ID: id}
	case m.ThreadID != 0:
		return route.Scope{Kind: route.Thread, ID: id, Thread: strconv.FormatInt(m.ThreadID, 10)}
	}
	return route.Scope{Kind: route.Group, ID: id}
}

// message is an update as a route.Message; false for what is not one
// for the bot (its own, another bot's, no text).
func (c *conn) message(ctx context.Context, u update) (route.Message, bool) {
	if cb := u.Callback; cb != nil && cb.Message != nil {
		_ = c.call(ctx, "answerCallbackQuery", map[string]any{"callback_query_id": cb.ID}, nil)
		c.mu.Lock()
		a, ok := c.asks[cb.Data]
		c.mu.Unlock()
		if !ok {
			return route.Message{}, false
		}
		return route.Message{ID: "cb:" + cb.ID, Scope: scopeOf(cb.Message), From: "telegram:" + strconv.FormatInt(cb.From.ID, 10),
			Name: name(cb.From), Text: a.Option, Answer: &a}, true
	}
	m := u.Message
	if m == nil || m.From == nil || m.From.IsBot || m.From.ID == c.me || m.Text == "" {
		return route.Message{}, false
	}
	s := scopeOf(m)
	return route.Message{ID: s.ID + ":" + strconv.FormatInt(m.MessageID, 10), Scope: s,
		From: "telegram:" + strconv.FormatInt(m.From.ID, 10), Name: name(*m.From), Text: m.Text,
		At: time.Unix(m.Date, 0)}, true
}

func name(u user) string {
	if u.Username != "" {
		return "@" + u.Username
	}
	return u.FirstName
}

// Receive returns the next message for the bot.
func (c *conn) Receive(ctx context.Context) (route.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-ctx.Done():
		return route.Message{}, ctx.Err()
	case <-c.done:
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.failure != nil {
			return route.Message{}, c.failure
		}
		return route.Message{}, errors.New("the Telegram connection was closed")
	}
}

// target is the chat and thread of a scope.
func target(to route.Scope) (map[string]any, error) {
	chat, err := strconv.ParseInt(to.ID, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%q is no Telegram chat id", to.ID)
	}
	p := map[string]any{"chat_id": chat}
	if to.Kind == route.Thread {
		thread, err := strconv.ParseInt(to.Thread, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is no Telegram topic id", to.Thread)
		}
		p["message_thread_id"] = thread
	}
	return p, nil
}

// send sends one message and answers its id.
func (c *conn) send(ctx context.Context, to route.Scope, p map[string]any) (string, error) {
	if err := c.pacer.Wait(ctx, to.ID); err != nil {
		return "", err
	}
	var sent struct {
		MessageID int64 `json:"message_id"`
	}
	if err := c.callRetrying(ctx, "sendMessage", p, &sent); err != nil {
		return "", fmt.Errorf("cannot send to the Telegram chat %s: %w", to.ID, err)
	}
	return strconv.FormatInt(sent.MessageID, 10), nil
}

// Send says markdown as Telegram HTML, split to its limit.
func (c *conn) Send(ctx context.Context, to route.Scope, md string) ([]string, error) {
	var ids []string
	for _, part := range parts(md) {
		p, err := target(to)
		if err != nil {
			return ids, err
		}
		p["text"], p["parse_mode"] = part, "HTML"
		id, err := c.send(ctx, to, p)
		if err != nil {
			return ids, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// Edit replaces a message's text.
func (c *conn) Edit(ctx context.Context, to route.Scope, id, md string) error {
	ps := parts(md)
	if len(ps) != 1 {
		return route.ErrUnsupported // longer than one message now
	}
	p, err := target(to)
	if err != nil {
		return err
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return fmt.Errorf("%q is no Telegram message id", id)
	}
	delete(p, "message_thread_id")
	p["message_id"], p["text"], p["parse_mode"] = n, ps[0], "HTML"
	if err := c.callRetrying(ctx, "editMessageText", p, nil); err != nil {
		return fmt.Errorf("cannot edit the Telegram message %s: %w", id, err)
	}
	return nil
}

// Ask sends the question with a button per option.
func (c *conn) Ask(ctx context.Context, to route.Scope, q route.Question) (string, error) {
	p, err := target(to)
	if err != nil {
		return "", err
	}
	var rows [][]map[string]string
	c.mu.Lock()
	for _, o := range q.Options {
		c.nask++
		data := "a" + strconv.Itoa(c.nask) // within 64 bytes, whatever the ids
		c.asks[data] = route.Answer{Question: q.ID, Option: o.ID}
		rows = append(rows, []map[string]string{{"text": o.Label, "callback_data": data}})
	}
	c.mu.Unlock()
	text := q.Markdown
	if text == "" {
		text = "?"
	}
	p["text"], p["parse_mode"] = first(parts(text)), "HTML"
	if len(rows) > 0 {
		p["reply_markup"] = map[string]any{"inline_keyboard": rows}
	}
	return c.send(ctx, to, p)
}

func first(ps []string) string {
	if len(ps) == 0 {
		return ""
	}
	return ps[0]
}

// Limits are Telegram's.
func (c *conn) Limits() route.Limits { return limits }

// Close stops polling and waits for it.
func (c *conn) Close() error {
	c.stop()
	c.wg.Wait()
	return nil
}
