package bot_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/record/memrecord"
	"github.com/agenthost/bots/transport"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/echo"
	"github.com/agenthost/bots/wake/local"
)

// applied is a toyHost with bots applied, served over a real WebSocket.
func applied(t *testing.T, sessions bool) (*toyHost, string) {
	t.Helper()
	dir := t.TempDir()
	bus := engine.NewBus(nil)
	cfg := bot.Config{Store: memrecord.New(), ConfigDir: filepath.Join(dir, "config"), HostName: "toy", Bus: bus, DefaultAgent: echo.Provider}
	if sessions {
		lh, err := local.New(local.Config{Bus: bus, Harnesses: map[string]wake.Harness{echo.Provider: echo.Harness{}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lh.Close() })
		cfg.Sessions = lh
	}
	host := newToyHost(cfg)
	svc, err := bot.Apply(t.Context(), host, bot.Options{Root: filepath.Join(dir, "bots")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	wire, err := transport.New(transport.Config{Host: host, Bus: bus})
	if err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(wire)
	t.Cleanup(func() { wire.Close(); web.Close() })
	return host, "ws" + strings.TrimPrefix(web.URL, "http") + "/"
}

// rpcClient speaks JSON-RPC over a WebSocket, one request at a time.
type rpcClient struct {
	t   *testing.T
	ctx context.Context
	ws  *websocket.Conn
	id  int
	// actions are the action notifications read while waiting for answers.
	actions []json.RawMessage
}

func dialRPC(t *testing.T, url string) *rpcClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	c := &rpcClient{t: t, ctx: ctx, ws: ws}
	c.call("initialize", map[string]any{"protocolVersions": []string{"1.0.0"}, "clientId": "t"}, nil)
	return c
}

// call sends a request and waits for its answer, decoding the result
// into out; an error answer is returned as its message.
func (c *rpcClient) call(method string, params any, out any) (errMsg string) {
	c.t.Helper()
	c.id++
	if err := wsjson.Write(c.ctx, c.ws, map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params}); err != nil {
		c.t.Fatal(err)
	}
	for {
		var m struct {
			ID     int
			Method string
			Params json.RawMessage
			Result json.RawMessage
			Error  *struct{ Message string }
		}
		if err := wsjson.Read(c.ctx, c.ws, &m); err != nil {
			c.t.Fatalf("%s: %v", method, err)
		}
		if m.Method == "action" {
			c.actions = append(c.actions, m.Params)
		}
		if m.ID != c.id {
			continue
		}
		if m.Error != nil {
			return m.Error.Message
		}
		if out != nil {
			if err := json.Unmarshal(m.Result, out); err != nil {
				c.t.Fatal(err)
			}
		}
		return ""
	}
}

// turn reads actions until the turn completes and returns what the bot
// posted in it.
func (c *rpcClient) turn() string {
	c.t.Helper()
	var said []string
	for i := 0; ; i++ {
		var env struct {
			Action struct {
				Type string
				Part struct{ Kind, Content string }
			}
		}
		if i < len(c.actions) {
			json.Unmarshal(c.actions[i], &env)
		} else {
			var m struct{ Params json.RawMessage }
			if err := wsjson.Read(c.ctx, c.ws, &m); err != nil {
				c.t.Fatal(err)
			}
			json.Unmarshal(m.Params, &env)
		}
		switch a := env.Action; {
		case a.Type == "chat/responsePart" && a.Part.Kind == "markdown":
			said = append(said, a.Part.Content)
		case a.Type == "chat/turnComplete":
			c.actions = nil
			return strings.Join(said, "\n")
		}
	}
}

func TestApplyServesChatsOverTheWireOfAHostOfItsOwn(t *testing.T) {
	t.Parallel()
	host, url := applied(t, true)
	if _, ok := host.sessions[bot.ChatProvider]; !ok {
		t.Fatalf("Apply registered no %s provider: %v", bot.ChatProvider, host.sessions)
	}
	for _, key := range []string{"ahpd.resourceProviders", "ahpd.channels"} {
		if host.meta[key] == nil {
			t.Errorf("Apply set no _meta %s", key)
		}
	}
	c := dialRPC(t, url)
	c.call("resourceWrite", map[string]any{"uri": "bot://motion", "encoding": "utf-8", "createOnly": true, "data": `{"name":"Motion"}`}, nil)
	session := "ahp-session:/toy"
	chat := ahp.DefaultChatURI(session)
	c.call("createSession", map[string]any{"channel": session, "provider": bot.ChatProvider, "config": map[string]any{"bot": "motion"}}, nil)
	c.call("subscribe", map[string]any{"channel": chat}, nil)
	c.call("dispatchAction", map[string]any{"channel": chat, "clientSeq": 1, "action": ahp.TurnStarted("t1", time.Now(), ahp.UserMessage("hello"))}, nil)
	if got := c.turn(); got != "Motion heard: hello" {
		t.Errorf("the bot answered %q, want Motion heard: hello", got)
	}
	var list ahp.ListSessionsResult
	c.call("listSessions", map[string]any{}, &list)
	found := false
	for _, s := range list.Items {
		found = found || s.Resource == session
	}
	if !found {
		t.Errorf("listSessions does not list the chat: %+v", list.Items)
	}
	c.call("disposeSession", map[string]any{"channel": session}, nil)
	if msg := c.call("disposeSession", map[string]any{"channel": session}, nil); msg == "" {
		t.Error("a disposed chat was disposed again")
	}
}

func TestApplyWithoutASessionHostRegistersNoChats(t *testing.T) {
	t.Parallel()
	host, url := applied(t, false)
	if len(host.sessions) != 0 {
		t.Errorf("Apply registered session providers with no session host: %v", host.sessions)
	}
	c := dialRPC(t, url)
	if msg := c.call("createSession", map[string]any{"channel": "ahp-session:/x", "provider": bot.ChatProvider, "config": map[string]any{"bot": "motion"}}, nil); msg == "" {
		t.Error("a chat was made with no session host")
	}
}

func TestApplyRefusesAHostWithNoStore(t *testing.T) {
	t.Parallel()
	host := newToyHost(bot.Config{ConfigDir: t.TempDir()})
	if _, err := bot.Apply(t.Context(), host, bot.Options{Root: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "no Store") {
		t.Errorf("Apply without a store: %v", err)
	}
	if len(host.providers) != 0 {
		t.Errorf("a refused Apply registered %v", host.providers)
	}
}
