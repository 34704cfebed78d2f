// Command chat says one message to a bot through a running reference
// server and prints what happens, step by step, until the turn ends: a
// small program on package client, for trying an agent by hand.
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

	"github.com/agenthost/bots"
	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/client"
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
	if *token == "" {
		// A server without a users file takes its local token alone.
		if data, err := os.ReadFile(filepath.Join(*config, bots.LocalTokenFile)); err == nil {
			*token = strings.TrimSpace(string(data))
		}
	}
	c, err := client.Dial(ctx, "ws://"+*addr+"/", *token)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Make(ctx, *slug, client.Fields{Name: *slug, Provider: *provider}); err != nil {
		fmt.Fprintf(out, "bot %s: %v (using the bot as it is)\n", *slug, err)
	}
	chat, err := c.OpenChat(ctx, *slug)
	if err != nil {
		return err
	}
	began := time.Now()
	turn, err := chat.Send(ctx, words)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "said %q to %s in %s\n", words, *slug, chat.URI())
	for e, err := range turn.Events(ctx) {
		if err != nil {
			return fmt.Errorf("waiting for the turn: %w", err)
		}
		raw, _ := json.Marshal(e.Action)
		line := string(raw)
		if len(line) > 300 {
			line = line[:300] + "…"
		}
		if e.Kind != client.EventEnd {
			fmt.Fprintf(out, "%8.3fs %s %s\n", time.Since(began).Seconds(), e.Action.Type, line)
			continue
		}
		t := e.Turn
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
	}
	return nil
}
