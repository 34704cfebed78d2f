package bot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/record/memrecord"
	"github.com/agenthost/bots/transport"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/echo"
	"github.com/agenthost/bots/wake/local"
)

// toyHost is an agent host with a registry of its own: it keeps what
// Apply registers, and serves it on the wire as a engine.Host.
type toyHost struct {
	cfg       bot.Config
	providers map[string]engine.ResourceProvider
	prefixes  map[string]func(context.Context, engine.Caller, string) (engine.Channel, error)
	sessions  map[string]bot.SessionProvider // by agent provider
	meta      map[string]any
}

func newToyHost(cfg bot.Config) *toyHost {
	return &toyHost{cfg: cfg, providers: map[string]engine.ResourceProvider{}, meta: map[string]any{},
		prefixes: map[string]func(context.Context, engine.Caller, string) (engine.Channel, error){},
		sessions: map[string]bot.SessionProvider{}}
}

// The registry: what bot.Apply calls.

func (h *toyHost) BotConfig() bot.Config { return h.cfg }

func (h *toyHost) RegisterResourceProvider(scheme string, p engine.ResourceProvider) error {
	h.providers[scheme] = p
	return nil
}

func (h *toyHost) RegisterChannel(prefix string, open func(context.Context, engine.Caller, string) (engine.Channel, error)) error {
	h.prefixes[prefix] = open
	return nil
}

func (h *toyHost) RegisterSessions(agent ahp.AgentInfo, p bot.SessionProvider) error {
	h.sessions[agent.Provider] = p
	return nil
}

func (h *toyHost) SetMeta(key string, value any) error {
	h.meta[key] = value
	return nil
}

// The wire: what transport asks. This host has no users: everyone is root.

func (h *toyHost) Authenticate(string) (access.Principal, bool) { return access.RootPrincipal(), true }

func (h *toyHost) Meta(context.Context, engine.Caller) (map[string]any, error) { return h.meta, nil }

func (h *toyHost) Resources(scheme string) engine.ResourceProvider {
	if p, ok := h.providers[scheme]; ok {
		return p
	}
	return nil
}

func (h *toyHost) Channel(ctx context.Context, c engine.Caller, uri string) (engine.Channel, error) {
	for prefix, open := range h.prefixes {
		if strings.HasPrefix(uri, prefix) {
			return open(ctx, c, uri)
		}
	}
	for _, p := range h.sessions {
		if ch, err := p.Channel(ctx, c, uri); errcode.Of(err) != errcode.NotFound {
			return ch, err
		}
	}
	return nil, errcode.New(errcode.NotFound, "no channel %s", uri)
}

func (h *toyHost) HandleMethod(ctx context.Context, call engine.Call) (any, error) {
	if call.Method == "createSession" {
		var p struct{ Provider string }
		json.Unmarshal(call.Params, &p)
		if s, ok := h.sessions[p.Provider]; ok {
			return s.HandleMethod(ctx, call)
		}
		return nil, errcode.New(errcode.Invalid, "no agent for provider %q", p.Provider)
	}
	for _, s := range h.sessions { // one provider here; more would merge listSessions
		if res, err := s.HandleMethod(ctx, call); errcode.Of(err) != errcode.NotFound {
			return res, err
		}
	}
	return nil, errcode.New(errcode.NotFound, "no session %s", call.URI)
}

// A host with a registry of its own hands it to Apply, with its store, bus
// and session host; a client of the host's wire then makes a bot and
// chats with it.
func ExampleApply() {
	dir, err := os.MkdirTemp("", "bots-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	bus := engine.NewBus(nil)
	sessions, err := local.New(local.Config{Bus: bus, Harnesses: map[string]wake.Harness{echo.Provider: echo.Harness{}}})
	if err != nil {
		log.Fatal(err)
	}
	defer sessions.Close()
	host := newToyHost(bot.Config{Store: memrecord.New(), ConfigDir: filepath.Join(dir, "config"), HostName: "my-host",
		Bus: bus, Sessions: sessions, DefaultAgent: echo.Provider})
	svc, err := bot.Apply(ctx, host, bot.Options{Root: filepath.Join(dir, "bots")})
	if err != nil {
		log.Fatal(err)
	}
	defer svc.Close()
	wire, err := transport.New(transport.Config{Host: host, Bus: bus})
	if err != nil {
		log.Fatal(err)
	}
	defer wire.Close()

	// A client, in memory: the same JSON-RPC messages as over a WebSocket.
	conn, err := wire.Pipe(ctx, "")
	if err != nil {
		log.Fatal(err)
	}
	id := 0
	rpc := func(method string, params any) {
		id++
		msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if err := conn.Send(ctx, msg); err != nil {
			log.Fatal(err)
		}
	}
	chat := ahp.DefaultChatURI("ahp-session:/1")
	rpc("initialize", map[string]any{"protocolVersions": []string{"1.0.0"}, "clientId": "example"})
	rpc("resourceWrite", map[string]any{"uri": "bot://motion", "encoding": "utf-8", "createOnly": true, "data": `{"name":"Motion"}`})
	rpc("createSession", map[string]any{"channel": "ahp-session:/1", "provider": bot.ChatProvider, "config": map[string]any{"bot": "motion"}})
	rpc("subscribe", map[string]any{"channel": chat})
	rpc("dispatchAction", map[string]any{"channel": chat, "clientSeq": 1, "action": ahp.TurnStarted("t1", time.Now(), ahp.UserMessage("hello"))})
	for {
		data, err := conn.Recv(ctx)
		if err != nil {
			log.Fatal(err)
		}
		var m struct {
			Error  *struct{ Message string }
			Method string
			Params struct {
				Action struct {
					Type string
					Part struct{ Kind, Content string }
				}
			}
		}
		json.Unmarshal(data, &m)
		switch a := m.Params.Action; {
		case m.Error != nil:
			log.Fatal(m.Error.Message)
		case a.Type == "chat/responsePart" && a.Part.Kind == "markdown":
			fmt.Println(a.Part.Content)
		case a.Type == "chat/turnComplete":
			return
		}
	}
	// Output:
	// Motion heard: hello
}

// ExampleService_ListShared lists the bots a person may read without
// copying a record: the entries are the store's own, to read and not to
// change. A bot whose persona lives in its AGENTS.md has no name here;
// Read answers it from the file as it is now.
func ExampleService_ListShared() {
	base, err := os.MkdirTemp("", "bots-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(base)
	ctx := context.Background()
	store := memrecord.New()
	defer store.Close()
	svc, err := bot.New(ctx, bot.Config{
		Store: store, ConfigDir: filepath.Join(base, "config"), HostName: "example",
		Options: bot.Options{Root: filepath.Join(base, "bots")}, PersonaIn: bot.PersonaInRecord,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer svc.Close()
	ann := access.Principal{User: "ann", Grants: []string{"bot:put"}, Memberships: []string{"backend"}}
	for _, b := range []struct{ id, body string }{
		{"reviewer", `{"name":"Reviewer","owner":"team:backend"}`},
		{"private", `{"name":"Private","owner":"user:someone"}`},
		{"deployer", `{"name":"Deployer"}`},
	} {
		if _, err := svc.Make(ctx, access.RootPrincipal(), b.id, []byte(b.body)); err != nil {
			log.Fatal(err)
		}
	}
	list, err := svc.ListShared(ctx, ann)
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range list {
		fmt.Println(e.Record.ID, e.Record.Name, e.Record.Owner)
	}
	// Output:
	// reviewer Reviewer team:backend
}
