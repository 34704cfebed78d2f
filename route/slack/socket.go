package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/agenthost/bots/route"
)

// maxEnvelope is the largest Socket Mode envelope read: Slack's events
// and interaction payloads are a few kilobytes.
const maxEnvelope = 1 << 20

// envelope is one Socket Mode message from Slack.
type envelope struct {
	EnvelopeID string          `json:"envelope_id"`
	Type       string          `json:"type"` // hello, events_api, interactive, disconnect…
	Payload    json.RawMessage `json:"payload"`
	Reason     string          `json:"reason"` // of a disconnect
}

// socket is a connection that hears Slack through Socket Mode: a
// WebSocket it opened, on which Slack sends envelopes it acknowledges.
type socket struct {
	*conn
	ws     *websocket.Conn
	cancel context.CancelFunc // ends the reader
	wg     sync.WaitGroup
}

// openSocket opens c's Socket Mode WebSocket with the app token and waits
// for Slack's hello; hc dials it (nil: the default client).
func openSocket(ctx context.Context, c *conn, hc *http.Client, appToken string) (*socket, error) {
	_, wsURL, err := c.api.StartSocketModeContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("the app token was refused by Slack for a Socket Mode connection, or Slack cannot be reached: %s", hide(err, appToken))
	}
	if err := checkSocketURL(wsURL); err != nil {
		return nil, err
	}
	opts := &websocket.DialOptions{}
	if hc != nil {
		client := *hc
		client.Timeout = 0 // the WebSocket lives on; ctx bounds the dial
		opts.HTTPClient = &client
	}
	ws, _, err := websocket.Dial(ctx, wsURL, opts)
	if err != nil {
		return nil, fmt.Errorf("cannot open Slack's Socket Mode WebSocket: %w", err)
	}
	ws.SetReadLimit(maxEnvelope)
	var hello envelope
	if err := readEnvelope(ctx, ws, &hello); err != nil || hello.Type != "hello" {
		ws.CloseNow()
		if err == nil {
			err = fmt.Errorf("it sent %q first", hello.Type)
		}
		return nil, fmt.Errorf("the Socket Mode WebSocket to Slack did not say hello: %w", err)
	}
	rctx, cancel := context.WithCancel(context.Background())
	s := &socket{conn: c, ws: ws, cancel: cancel}
	s.wg.Go(func() { s.read(rctx) })
	return s, nil
}

// checkSocketURL refuses a Socket Mode address that is not wss, but a
// ws one on this machine (a test's).
func checkSocketURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("the Socket Mode address Slack gave, %q, is no WebSocket address", raw)
	}
	switch {
	case u.Scheme == "wss":
		return nil
	case u.Scheme == "ws" && route.Loopback(hostOf(u.Host)):
		return nil
	}
	return fmt.Errorf("the Socket Mode address Slack gave is not wss://: %s", u.Redacted())
}

func hostOf(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

func readEnvelope(ctx context.Context, ws *websocket.Conn, e *envelope) error {
	_, data, err := ws.Read(ctx)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, e)
}

// read takes Slack's envelopes until the WebSocket ends, Slack asks for
// another connection, or Close: each is acknowledged, then delivered.
func (s *socket) read(ctx context.Context) {
	for {
		_, data, err := s.ws.Read(ctx)
		if err != nil {
			s.end(fmt.Errorf("the Socket Mode WebSocket to Slack ended: %w", err))
			return
		}
		var e envelope
		if err := json.Unmarshal(data, &e); err != nil {
			s.log.Warn("slack: an envelope that does not parse was left out", "err", err)
			continue
		}
		if e.EnvelopeID != "" {
			ack, _ := json.Marshal(map[string]string{"envelope_id": e.EnvelopeID})
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := s.ws.Write(wctx, websocket.MessageText, ack)
			cancel()
			if err != nil {
				s.end(fmt.Errorf("cannot acknowledge a Slack envelope: %w", err))
				return
			}
		}
		switch e.Type {
		case "events_api":
			ev, err := slackevents.ParseEvent(e.Payload, slackevents.OptionNoVerifyToken())
			if err == nil && ev.Type == slackevents.CallbackEvent {
				s.callback(ev)
			}
		case "interactive":
			var cb slack.InteractionCallback
			if json.Unmarshal(e.Payload, &cb) == nil {
				s.press(cb)
			}
		case "disconnect":
			s.end(fmt.Errorf("%w: Socket Mode's %s", route.ErrRedial, e.Reason))
			s.ws.Close(websocket.StatusNormalClosure, "")
			return
		}
	}
}

// Close ends the connection and its WebSocket, and waits for the reader.
func (s *socket) Close() error {
	s.end(errors.New("the Slack connection was closed"))
	s.cancel()
	s.ws.CloseNow()
	s.wg.Wait()
	return nil
}
