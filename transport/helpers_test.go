package transport

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/bots/engine"
)

// newTestServer makes a server for fakeHost; cfg.Host and cfg.Bus are
// filled in.
func newTestServer(t *testing.T, cfg Config) (*Server, *fakeHost) {
	t.Helper()
	bus := engine.NewBus(nil)
	host := newFakeHost(bus)
	cfg.Host, cfg.Bus = host, bus
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, host
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// pipeClient drives a Pipe with JSON values.
type pipeClient struct {
	t    *testing.T
	ctx  context.Context
	conn *Conn
}

func dialPipe(t *testing.T, srv *Server, token string) *pipeClient {
	t.Helper()
	ctx := testContext(t)
	c, err := srv.Pipe(ctx, token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &pipeClient{t: t, ctx: ctx, conn: c}
}

func (p *pipeClient) send(frame string) {
	p.t.Helper()
	if err := p.conn.Send(p.ctx, []byte(frame)); err != nil {
		p.t.Fatalf("send %s: %v", frame, err)
	}
}

// recv returns the next message, decoded.
func (p *pipeClient) recv() rpcMessage {
	p.t.Helper()
	data, err := p.conn.Recv(p.ctx)
	if err != nil {
		p.t.Fatalf("recv: %v", err)
	}
	var m rpcMessage
	if err := json.Unmarshal(data, &m); err != nil {
		p.t.Fatalf("recv %s: %v", data, err)
	}
	m.raw = data
	return m
}

// initialize initializes with the client id and subscriptions and returns
// the result.
func (p *pipeClient) initialize(clientID string, subs ...string) json.RawMessage {
	p.t.Helper()
	if subs == nil {
		subs = []string{}
	}
	params, _ := json.Marshal(map[string]any{"protocolVersions": []string{"1.0.0"}, "clientId": clientID, "initialSubscriptions": subs})
	p.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":` + string(params) + `}`)
	m := p.recv()
	if m.Error != nil {
		p.t.Fatalf("initialize: %s", m.raw)
	}
	return m.Result
}

// ping sends a ping and returns what arrived before its answer.
func (p *pipeClient) ping() []rpcMessage {
	p.t.Helper()
	p.send(`{"jsonrpc":"2.0","id":"ping","method":"ping"}`)
	var got []rpcMessage
	for {
		m := p.recv()
		if string(m.ID) == `"ping"` {
			return got
		}
		got = append(got, m)
	}
}

// rpcMessage is any message the server sends.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	raw []byte
}

func (m rpcMessage) envelope(t *testing.T) engine.Envelope {
	t.Helper()
	if m.Method != "action" {
		t.Fatalf("not an action: %s", m.raw)
	}
	var env engine.Envelope
	if err := json.Unmarshal(m.Params, &env); err != nil {
		t.Fatal(err)
	}
	return env
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
