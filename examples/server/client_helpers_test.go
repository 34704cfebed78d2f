package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/bots/ahp"
	ahpclient "github.com/agenthost/bots/client"
)

// dialClient connects a Go client (package client, imported as ahpclient
// beside these tests' own client type) to the server at addr
// as token; with no token, as the server's local token when config holds
// one (<config>/local-token), else with none. Cleanup closes it.
func dialClient(t testing.TB, addr, token, config string) *ahpclient.Client {
	t.Helper()
	if token == "" && config != "" {
		if data, err := os.ReadFile(filepath.Join(config, "local-token")); err == nil {
			token = strings.TrimSpace(string(data))
		}
	}
	c, err := ahpclient.Dial(testCtx(t), "ws://"+addr+"/", token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// check fails the test when err is not nil.
func check(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// sayOnce makes the bot slug named name, opens a chat with it, says words
// and returns the turn once it ended.
func sayOnce(t testing.TB, c *ahpclient.Client, slug, name, words string) ahp.Turn {
	t.Helper()
	ctx := testCtx(t)
	_, err := c.Make(ctx, slug, ahpclient.Fields{Name: name})
	check(t, err)
	chat, err := c.OpenChat(ctx, slug)
	check(t, err)
	turn, err := chat.Send(ctx, words)
	check(t, err)
	ended, err := turn.Wait(ctx)
	check(t, err)
	return ended
}
