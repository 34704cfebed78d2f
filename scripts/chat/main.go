// Command chat says one message to a bot through a running reference
// server and prints what happens, step by step, until the turn ends: a
// small AHP client for trying an agent by hand.
//
//	go run ./scripts/chat -bot motion -provider claude "hello"
//
// It makes the bot when it does not exist (with -provider as its agent),
// opens a new chat with it, says the message and prints each action of the
// chat with the time since the message, then the turn's replies. The exit
// status is 1 when the turn does not complete.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/agenthost/bots"
	"github.com/agenthost/bots/ahp"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "chat:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:9187", "the server's address")
	token := fs.String("token", "", "the token to connect with (the server's users file); default the local token of -config, for a server without one")
	config := fs.String("config", bots.DefaultConfigDir(), "the server's configuration folder, whose local token is presented when -token is not given")
	slug := fs.String("bot", "", "the bot to talk to (made when it does not exist)")
	provider := fs.String("provider", "", "the agent a bot made here runs on")
	timeout := fs.Duration("timeout", 5*time.Minute, "how long to wait for the turn")
	if err := fs.Parse(args); err != nil {
		return err
	}
	words := strings.Join(fs.Args(), " ")
	if *slug == "" || words == "" {
		return errors.New("usage: chat -bot SLUG [-provider AGENT] MESSAGE")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	url := "ws://" + *addr + "/"
	if *token == "" {
		// A server without a users file takes its local token alone.
		if data, err := os.ReadFile(filepath.Join(*config, bots.LocalTokenFile)); err == nil {
			*token = strings.TrimSpace(string(data))
		}
	}
	if *token != "" {
		url += "?tkn=" + *token
	}
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return err
	}
	defer ws.CloseNow()
	ws.SetReadLimit(32 << 20)
	c := &conn{ws: ws}
	if err := c.call(ctx, "initialize", map[string]any{"channel": ahp.RootURI, "protocolVersions": []string{"1.1.0"}, "clientId": "scripts-chat"}, nil); err != nil {
		return err
	}
	fields := map[string]string{"name": *slug}
	if *provider != "" {
		fields["provider"] = *provider
	}
	bot, _ := json.Marshal(fields)
	if err := c.call(ctx, "resourceWrite", map[string]any{"channel": ahp.RootURI, "uri": "bot://" + *slug, "encoding": "utf-8", "createOnly": true, "data": string(bot)}, nil); err != nil {
		fmt.Fprintf(out, "bot %s: %v (using the bot as it is)\n", *slug, err)
	}
	session := fmt.Sprintf("ahp-session:/chat-%d", time.Now().UnixNano())
	if err := c.call(ctx, "createSession", map[string]any{"channel": session, "provider": "bot-chat", "config": map[string]any{"bot": *slug}}, nil); err != nil {
		return err
	}
	chat := ahp.DefaultChatURI(session)
	var snap struct {
		Snapshot struct {
			State ahp.ChatState `json:"state"`
		} `json:"snapshot"`
	}
	if err := c.call(ctx, "subscribe", map[string]any{"channel": chat}, &snap); err != nil {
		return err
	}
	state := snap.Snapshot.State
	began := time.Now()
	start, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "dispatchAction",
		"params": map[string]any{"channel": chat, "clientSeq": 1, "action": ahp.TurnStarted("t1", began, ahp.UserMessage(words))}})
	if err := ws.Write(ctx, websocket.MessageText, start); err != nil {
		return err
	}
	fmt.Fprintf(out, "said %q to %s in %s\n", words, *slug, chat)
	for {
		env, err := c.action(ctx)
		if err != nil {
			return fmt.Errorf("waiting for the turn: %w", err)
		}
		if env.Channel != chat {
			continue
		}
		raw, _ := json.Marshal(env.Action)
		line := string(raw)
		if len(line) > 300 {
			line = line[:300] + "…"
		}
		fmt.Fprintf(out, "%8.3fs %s %s\n", time.Since(began).Seconds(), env.Action.Type, line)
		state = ahp.ApplyChat(state, env.Action)
		for _, t := range state.Turns {
			if t.ID != "t1" {
				continue
			}
			fmt.Fprintf(out, "the turn ended %s after %.1fs\n", t.State, time.Since(began).Seconds())
			for _, p := range t.ResponseParts {
				switch {
				case p.Markdown != nil:
					fmt.Fprintf(out, "reply: %s\n", p.Markdown.Content)
				case p.Error != nil:
					fmt.Fprintf(out, "error: %s\n", p.Error.Error.Message)
				}
			}
			if t.State != ahp.TurnStateComplete {
				return fmt.Errorf("the turn ended %s", t.State)
			}
			return nil
		}
	}
}

// conn is a WebSocket connection read by one goroutine: calls wait for
// their answer, and actions read meanwhile are kept for action.
type conn struct {
	ws      *websocket.Conn
	id      int
	pending []ahp.ActionEnvelope
}

// message is a JSON-RPC message from the server.
type message struct {
	ID     *int            `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (c *conn) read(ctx context.Context) (message, error) {
	var m message
	_, data, err := c.ws.Read(ctx)
	if err != nil {
		return m, err
	}
	return m, json.Unmarshal(data, &m)
}

// call sends a request and waits for its answer, decoded into out.
func (c *conn) call(ctx context.Context, method string, params, out any) error {
	c.id++
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	if err := c.ws.Write(ctx, websocket.MessageText, req); err != nil {
		return err
	}
	for {
		m, err := c.read(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		switch {
		case m.ID != nil && *m.ID == c.id && m.Error != nil:
			return fmt.Errorf("%s: %d %s", method, m.Error.Code, m.Error.Message)
		case m.ID != nil && *m.ID == c.id:
			if out != nil {
				return json.Unmarshal(m.Result, out)
			}
			return nil
		case m.Method == "action":
			var env ahp.ActionEnvelope
			if json.Unmarshal(m.Params, &env) == nil {
				c.pending = append(c.pending, env)
			}
		}
	}
}

// action returns the next action the server sends.
func (c *conn) action(ctx context.Context) (ahp.ActionEnvelope, error) {
	if len(c.pending) > 0 {
		env := c.pending[0]
		c.pending = c.pending[1:]
		return env, nil
	}
	for {
		m, err := c.read(ctx)
		if err != nil {
			return ahp.ActionEnvelope{}, err
		}
		var env ahp.ActionEnvelope
		if m.Method == "action" && json.Unmarshal(m.Params, &env) == nil {
			return env, nil
		}
	}
}
