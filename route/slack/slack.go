// Package slack is the Slack adapter of package route: a Slack app's bot
// user, which hears messages through Socket Mode (a WebSocket the
// connection opens to Slack: no address of the host's need be public) or
// the Events API (Slack posts them to the host, signed), and answers
// through the Web API (github.com/slack-go/slack).
//
// Settings: api (the Web API's address, https://slack.com/api/ unless set;
// tests point it at a fake). Secrets: token (the bot's xoxb- token), and
// appToken (the app's xapp- token with connections:write) for Socket Mode
// or else signingSecret (the app's signing secret) for the Events API.
//
// With appToken the connection opens a Socket Mode WebSocket
// (apps.connections.open) and acknowledges each envelope; when Slack asks
// it to connect again (disconnect), or the WebSocket drops, Receive ends
// and the relay dials again. With signingSecret the connection is an
// http.Handler: the host serves it where the app's Event Subscriptions and
// Interactivity request URLs point (the relay serves it at
// /hooks/<connection>). Every request is checked against the signing
// secret and refused (401) when its signature is wrong or its timestamp
// older than five minutes. Either way an event Slack sends again (a
// retry) is delivered once.
//
// Direct messages (im) are Direct scopes, channels and group DMs Group
// ones, a thread a Thread; a sender is slack:<user id>. Replies are mrkdwn
// converted from markdown, split to 4000 characters, one a second to a
// channel, waiting a rate limit's Retry-After; a question is Block Kit
// buttons, and a press comes back as an Answer.
package slack

import (
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

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/agenthost/bots/route"
)

// limits are Slack's: 4000 characters a message as its guidance says,
// about one message a second to a channel.
var limits = route.Limits{MaxText: 4000, Every: time.Second}

// seenLimit is how many event ids a connection keeps to know a retry.
const seenLimit = 4096

// Network is the Slack adapter. Its Client makes the Web API requests;
// nil is a client with a 30 s timeout.
type Network struct {
	Client *http.Client
}

var _ route.Network = Network{}

// Name is "slack".
func (Network) Name() string { return "slack" }

// Dial checks the token (auth.test) and answers a connection that hears
// Slack: through a Socket Mode WebSocket it opens, once Slack said hello
// on it, with appToken; else one that serves Slack's requests.
func (n Network) Dial(ctx context.Context, d route.Dial) (route.Conn, error) {
	token, appToken, secret := d.Secrets["token"], d.Secrets["appToken"], d.Secrets["signingSecret"]
	if token == "" || appToken == "" && secret == "" {
		return nil, errors.New("the Slack connection needs its bot's xoxb- token (the secret token) and either the app's xapp- token (appToken, for Socket Mode) or its signing secret (signingSecret, for the Events API)")
	}
	hc := n.Client
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	opts := []slack.Option{slack.OptionHTTPClient(hc)}
	if appToken != "" {
		opts = append(opts, slack.OptionAppLevelToken(appToken))
	}
	if api := d.Settings["api"]; api != "" {
		u, err := url.Parse(api)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fmt.Errorf("the Slack api setting %q is no http(s) address", api)
		}
		opts = append(opts, slack.OptionAPIURL(strings.TrimRight(api, "/")+"/"))
	}
	log := d.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &conn{api: slack.New(token, opts...), log: log, in: make(chan route.Message, 256),
		ended: make(chan struct{}), seen: map[string]bool{}, asks: map[string]route.Answer{}, pacer: route.Pacer{Every: limits.Every}}
	auth, err := c.api.AuthTestContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("the connection's token was refused by Slack, or Slack cannot be reached: %s", hide(err, token))
	}
	c.me, c.bot = auth.UserID, auth.BotID
	if appToken != "" {
		return openSocket(ctx, c, n.Client, appToken)
	}
	return &hooked{conn: c, secret: secret}, nil
}

// hide is err's text with secret left out.
func hide(err error, secret string) string {
	return strings.ReplaceAll(err.Error(), secret, "[secret]")
}

// conn is a live Slack app, whichever way it hears Slack.
type conn struct {
	api  *slack.Client
	log  *slog.Logger
	me   string // the bot's user id
	bot  string // the bot's bot id
	in   chan route.Message
	once sync.Once
	// ended is closed when the connection ends: Close, or a Socket Mode
	// WebSocket that dropped (failure says why).
	ended   chan struct{}
	failure error

	mu    sync.Mutex
	seen  map[string]bool // event ids delivered
	order []string
	asks  map[string]route.Answer // button value → the option it stands for
	pacer route.Pacer             // one message a second to a channel
	nask  int
}

// end ends the connection for why, once.
func (c *conn) end(why error) {
	c.once.Do(func() {
		c.failure = why
		close(c.ended)
	})
}

// hooked is a connection that hears Slack through the Events API: Slack
// posts to it, signed with the app's signing secret.
type hooked struct {
	*conn
	secret string
}

var _ http.Handler = (*hooked)(nil)

// ServeHTTP takes Slack's requests: the URL check, events, and button
// presses. An unsigned or stale request is refused with 401.
func (c *hooked) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "Slack posts here", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "cannot read the request", http.StatusBadRequest)
		return
	}
	sv, err := slack.NewSecretsVerifier(r.Header, c.secret)
	if err == nil {
		_, _ = sv.Write(body)
		err = sv.Ensure()
	}
	if err != nil {
		http.Error(w, "the request is not signed by this app's signing secret, or is too old", http.StatusUnauthorized)
		return
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		c.interaction(w, body)
		return
	}
	ev, err := slackevents.ParseEvent(json.RawMessage(body), slackevents.OptionNoVerifyToken())
	if err != nil {
		http.Error(w, "not an Events API request", http.StatusBadRequest)
		return
	}
	switch ev.Type {
	case slackevents.URLVerification:
		var ch slackevents.ChallengeResponse
		if err := json.Unmarshal(body, &ch); err != nil {
			http.Error(w, "no challenge", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, ch.Challenge)
	case slackevents.CallbackEvent:
		c.callback(ev)
		w.WriteHeader(http.StatusOK)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

// callback delivers an event's message, unless the event is a retry of
// one delivered.
func (c *conn) callback(ev slackevents.EventsAPIEvent) {
	cb, _ := ev.Data.(*slackevents.EventsAPICallbackEvent)
	if cb != nil && !c.first(cb.EventID) {
		return
	}
	if m, ok := ev.InnerEvent.Data.(*slackevents.MessageEvent); ok {
		c.message(m)
	}
}

// first notes an event id and reports whether it is new.
func (c *conn) first(id string) bool {
	if id == "" {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen[id] {
		return false
	}
	c.seen[id] = true
	c.order = append(c.order, id)
	if len(c.order) > seenLimit {
		delete(c.seen, c.order[0])
		c.order = c.order[1:]
	}
	return true
}

// message delivers a person's message, none of the bot's or another
// bot's, nor a change or deletion.
func (c *conn) message(m *slackevents.MessageEvent) {
	if m.SubType != "" || m.BotID != "" || m.User == "" || m.User == c.me || m.Text == "" {
		return
	}
	scope := route.Scope{Kind: route.Group, ID: m.Channel}
	switch {
	case m.ThreadTimeStamp != "" && m.ThreadTimeStamp != m.TimeStamp:
		scope = route.Scope{Kind: route.Thread, ID: m.Channel, Thread: m.ThreadTimeStamp}
	case m.ChannelType == "im":
		scope = route.Scope{Kind: route.Direct, ID: m.Channel}
	}
	msg := route.Message{ID: m.Channel + ":" + m.TimeStamp, Scope: scope, From: "slack:" + m.User, Name: m.User, Text: m.Text}
	if sec, err := strconv.ParseFloat(m.TimeStamp, 64); err == nil {
		msg.At = time.Unix(int64(sec), 0)
	}
	c.deliver(msg)
}

func (c *conn) deliver(m route.Message) {
	select {
	case c.in <- m:
	case <-c.ended:
	default:
		c.log.Warn("slack: a message was dropped: the relay is too far behind", "channel", m.Scope.ID)
	}
}

// interaction takes a posted button press (block_actions).
func (c *hooked) interaction(w http.ResponseWriter, body []byte) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		http.Error(w, "not a form", http.StatusBadRequest)
		return
	}
	var cb slack.InteractionCallback
	if err := json.Unmarshal([]byte(form.Get("payload")), &cb); err != nil {
		http.Error(w, "not an interaction", http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusOK)
	c.press(cb)
}

// press delivers a button press as the answer it stands for.
func (c *conn) press(cb slack.InteractionCallback) {
	if cb.Type != slack.InteractionTypeBlockActions || len(cb.ActionCallback.BlockActions) == 0 {
		return
	}
	act := cb.ActionCallback.BlockActions[0]
	c.mu.Lock()
	a, ok := c.asks[act.Value]
	c.mu.Unlock()
	if !ok {
		return
	}
	scope := route.Scope{Kind: route.Group, ID: cb.Channel.ID}
	switch {
	case cb.Message.ThreadTimestamp != "" && cb.Message.ThreadTimestamp != cb.Message.Timestamp:
		scope = route.Scope{Kind: route.Thread, ID: cb.Channel.ID, Thread: cb.Message.ThreadTimestamp}
	case strings.HasPrefix(cb.Channel.ID, "D"):
		scope = route.Scope{Kind: route.Direct, ID: cb.Channel.ID}
	}
	c.deliver(route.Message{ID: "press:" + cb.TriggerID + ":" + act.ActionTs, Scope: scope, From: "slack:" + cb.User.ID,
		Name: cb.User.Name, Text: a.Option, Answer: &a})
}

// Receive returns the next message for the bot.
func (c *conn) Receive(ctx context.Context) (route.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-ctx.Done():
		return route.Message{}, ctx.Err()
	case <-c.ended:
		return route.Message{}, c.failure
	}
}

// retrying calls f, waiting a rate limit's Retry-After, up to three times.
func retrying(ctx context.Context, f func() error) error {
	for i := 0; ; i++ {
		err := f()
		var rl *slack.RateLimitedError
		if !errors.As(err, &rl) || i == 3 {
			return err
		}
		t := time.NewTimer(max(rl.RetryAfter, time.Second))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// post sends one message with options to a scope, answering its ts.
func (c *conn) post(ctx context.Context, to route.Scope, opts ...slack.MsgOption) (string, error) {
	if to.ID == "" {
		return "", errors.New("a Slack message needs a channel")
	}
	if to.Kind == route.Thread {
		opts = append(opts, slack.MsgOptionTS(to.Thread))
	}
	if err := c.pacer.Wait(ctx, to.ID); err != nil {
		return "", err
	}
	var ts string
	err := retrying(ctx, func() (err error) {
		_, ts, err = c.api.PostMessageContext(ctx, to.ID, opts...)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("cannot post to the Slack channel %s: %w", to.ID, err)
	}
	return ts, nil
}

// Send says markdown as mrkdwn, split to limits.MaxText.
func (c *conn) Send(ctx context.Context, to route.Scope, md string) ([]string, error) {
	var ids []string
	for _, part := range route.Split(mrkdwn(md), limits.MaxText) {
		ts, err := c.post(ctx, to, slack.MsgOptionText(part, false))
		if err != nil {
			return ids, err
		}
		ids = append(ids, ts)
	}
	return ids, nil
}

// Edit replaces a message's text (chat.update).
func (c *conn) Edit(ctx context.Context, to route.Scope, id, md string) error {
	text := mrkdwn(md)
	if len(text) > limits.MaxText {
		return route.ErrUnsupported
	}
	err := retrying(ctx, func() error {
		_, _, _, err := c.api.UpdateMessageContext(ctx, to.ID, id, slack.MsgOptionText(text, false))
		return err
	})
	if err != nil {
		return fmt.Errorf("cannot edit the Slack message %s: %w", id, err)
	}
	return nil
}

// Ask posts the question with a button per option.
func (c *conn) Ask(ctx context.Context, to route.Scope, q route.Question) (string, error) {
	text := mrkdwn(q.Markdown)
	if len(text) > 3000 { // a section's text limit
		text = text[:3000]
	}
	if text == "" {
		text = "?"
	}
	blocks := []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil)}
	var buttons []slack.BlockElement
	c.mu.Lock()
	for i, o := range q.Options {
		c.nask++
		value := "a" + strconv.Itoa(c.nask)
		c.asks[value] = route.Answer{Question: q.ID, Option: o.ID}
		label := o.Label
		if len(label) > 75 {
			label = label[:75]
		}
		buttons = append(buttons, slack.NewButtonBlockElement("option-"+strconv.Itoa(i), value, slack.NewTextBlockObject(slack.PlainTextType, label, false, false)))
	}
	c.mu.Unlock()
	if len(buttons) > 0 {
		blocks = append(blocks, slack.NewActionBlock("question", buttons...))
	}
	return c.post(ctx, to, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...))
}

// Limits are Slack's.
func (c *conn) Limits() route.Limits { return limits }

// Close ends the connection: Receive returns, and requests are answered
// but no longer delivered.
func (c *conn) Close() error {
	c.end(errors.New("the Slack connection was closed"))
	return nil
}
