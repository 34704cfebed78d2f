package bots_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/agenthost/bots"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/wake/acp"
)

// A Server is the whole system behind one http.Handler: here on an
// httptest server, with one AHP round trip over its WebSocket.
func Example_server() {
	dir, err := os.MkdirTemp("", "bots-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	srv := &bots.Server{
		ConfigDir: filepath.Join(dir, "config"),
		HostName:  "my-host",
		Options:   bot.Options{Root: filepath.Join(dir, "bots")},
	}
	defer srv.Close()
	ctx := context.Background()
	if err := srv.Start(ctx); err != nil {
		log.Fatal(err)
	}
	web := httptest.NewServer(srv.Handler())
	defer web.Close()

	// With no users file, every connection presents the local token.
	url := "ws" + strings.TrimPrefix(web.URL, "http") + "/?tkn=" + srv.LocalToken()
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ws.CloseNow()
	err = wsjson.Write(ctx, ws, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize",
		"params": map[string]any{"protocolVersions": []string{"1.0.0"}, "clientId": "example"}})
	if err != nil {
		log.Fatal(err)
	}
	var reply struct {
		Result struct {
			ProtocolVersion string
			ServerInfo      struct{ Name string }
			Meta            map[string]any `json:"_meta"`
		}
	}
	if err := wsjson.Read(ctx, ws, &reply); err != nil {
		log.Fatal(err)
	}
	fmt.Println(reply.Result.ServerInfo.Name, "speaks", reply.Result.ProtocolVersion)
	fmt.Println("you are", reply.Result.Meta["ahpd.principal"])
	// Output:
	// agenthost-bots speaks 1.0.0
	// you are root:my-host
}

// Example_agents gives a Server the ACP agents of an agents file, and
// checks them as -check-agents does. Only a program that imports package
// wake/acp links the ACP and MCP SDKs: Server.Agents takes any
// agents.Set.
func Example_agents() {
	dir, err := os.MkdirTemp("", "bots-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "agents.json")
	if err := os.WriteFile(file, []byte(`{"agents": {"mine": {"command": "/no/such/agent-acp"}}}`), 0o600); err != nil {
		log.Fatal(err)
	}
	agents, err := acp.ReadAgents(file, dir)
	if err != nil {
		log.Fatal(err)
	}
	srv := &bots.Server{ConfigDir: dir, Agents: agents, DefaultAgent: "mine"}
	defer srv.Close()
	if err := srv.CheckAgents(context.Background(), os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output:
	// mine: not ready: command /no/such/agent-acp not found; install it there, or give where it is in the agents file's command
	// 1 of 1 agents are not ready
}
