package acp

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/wake"
)

// QuestionID is the id of the question ask_question asks.
const QuestionID = "answer"

// toolServer is one session's MCP server of the bot's tools, on loopback
// at a path holding a random token: only the agent it is given to knows
// it, so only that session posts to its main chat.
type toolServer struct {
	url  string
	addr *net.TCPAddr // where it listens
	srv  *http.Server
	mcp  *mcp.Server

	mu         sync.Mutex
	connectors map[string]string // the connector tools offered: alias → description and schema
	own        map[string]bool   // the bot's own tools offered besides post_message: ask_question, the workspace tools
}

// postInput is post_message's input.
type postInput struct {
	Text string `json:"text" jsonschema:"the text the person reads, in Markdown"`
}

// askInput is ask_question's input.
type askInput struct {
	Question string `json:"question" jsonschema:"the question the person is asked"`
}

// startTools serves a's tools on a new loopback listener.
func startTools(a *agent, log *slog.Logger) (*toolServer, error) {
	token := make([]byte, 32)
	if _, err := rand.Read(token); err != nil {
		return nil, fmt.Errorf("acp: tool server token: %w", err)
	}
	path := "/mcp/" + base64.RawURLEncoding.EncodeToString(token)
	s := mcp.NewServer(&mcp.Implementation{Name: toolServerName, Title: "The bot's tools", Version: "1"}, &mcp.ServerOptions{Logger: log})
	mcp.AddTool(s, &mcp.Tool{
		Name:        wake.PostMessage,
		Description: "Answer the person waiting in the main chat: they read the text you post. Call it as often as you need.",
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in postInput) (*mcp.CallToolResult, any, error) {
		return a.post(ctx, in.Text)
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{
		JSONResponse: true, Logger: log, PropagateRequestCancellation: true,
	})
	mux := http.NewServeMux()
	mux.Handle(path, h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("acp: tool server: %w", err)
	}
	ts := &toolServer{
		url: "http://" + ln.Addr().String() + path, addr: ln.Addr().(*net.TCPAddr), mcp: s, connectors: map[string]string{}, own: map[string]bool{},
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)},
	}
	go ts.srv.Serve(ln)
	return ts, nil
}

// port is the TCP port the tool server listens on; 0 for none.
func (ts *toolServer) port() uint16 {
	if ts == nil || ts.addr == nil {
		return 0
	}
	return uint16(ts.addr.Port)
}

func (ts *toolServer) close() error {
	if err := ts.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("acp: closing the tool server: %w", err)
	}
	return nil
}

// textResult is a tool result of text.
func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// post calls the turn's post_message with text.
func (a *agent) post(ctx context.Context, text string) (_ *mcp.CallToolResult, _ any, err error) {
	ctx, op := a.h.meters.hub.Begin(a.toolParent(ctx), a.h.meters.tools.Cell(wake.PostMessage), instr, "mcp "+wake.PostMessage)
	defer func() { op.End(err) }()
	t, ctx, cancel, err := a.during(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer cancel()
	input, err := json.Marshal(map[string]string{"text": text})
	if err != nil {
		return nil, nil, err
	}
	res, err := t.w.CallTool(ctx, wake.PostMessage, input)
	if err != nil {
		return nil, nil, fmt.Errorf("post_message: %w", err)
	}
	if !res.Success && res.Error != nil {
		return nil, nil, fmt.Errorf("post_message: %s", res.Error.Message)
	}
	return textResult("Posted."), nil, nil
}

// ask asks the person question through the turn.
func (a *agent) ask(ctx context.Context, question string) (_ *mcp.CallToolResult, _ any, err error) {
	ctx, op := a.h.meters.hub.Begin(a.toolParent(ctx), a.h.meters.tools.Cell(wake.AskQuestion), instr, "mcp "+wake.AskQuestion)
	defer func() { op.End(err) }()
	t, ctx, cancel, err := a.during(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer cancel()
	resp, answers, err := t.w.Ask(ctx, []ahp.ChatInputQuestion{{ID: QuestionID, Kind: ahp.QuestionText, Message: question}})
	if err != nil {
		return nil, nil, fmt.Errorf("ask_question: %w", err)
	}
	if resp != ahp.InputAccept {
		return textResult("The person did not answer (" + string(resp) + ")."), nil, nil
	}
	return textResult(answerText(answers[QuestionID])), nil, nil
}

func answerText(a ahp.ChatInputAnswer) string {
	if a.Value == nil || a.Value.Value == nil {
		return ""
	}
	if s, ok := a.Value.Value.(string); ok {
		return s
	}
	return fmt.Sprint(a.Value.Value)
}

// toolServers are the MCP servers an agent with caps is given: the bot's
// tool server, when the agent takes HTTP servers.
func (a *agent) toolServers(caps sdk.AgentCapabilities) []sdk.McpServer {
	if !caps.McpCapabilities.Http {
		a.log.Warn("acp: the agent takes no HTTP MCP servers, so it is not given post_message")
		return []sdk.McpServer{}
	}
	return []sdk.McpServer{{Http: &sdk.McpServerHttpInline{
		Name: toolServerName, Type: "http", Url: a.tools.url, Headers: []sdk.HttpHeader{},
	}}}
}
