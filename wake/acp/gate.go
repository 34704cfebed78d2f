package acp

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/bots/wake"
)

// allowedNow is what the session's gate allows now, or what a host with
// no gate gives every bot.
func (a *agent) allowedNow(ctx context.Context) (wake.ToolSet, error) {
	if a.info.Gate == nil {
		return wake.DefaultToolPolicy().For(nil), nil
	}
	return a.info.Gate.Allowed(ctx, a.info)
}

// allowed is what the session holds now: what it held until now,
// narrowed by what its gate allows now. It only ever shrinks, so an edit
// of the bot's tools list never widens a running session, and a
// narrowing counts from the next call. A gate that cannot answer leaves
// post_message alone for the call, and the session's tools as they were.
func (a *agent) allowed(ctx context.Context) wake.ToolSet {
	now, err := a.allowedNow(ctx)
	if err != nil {
		a.log.Warn("acp: the session's tools could not be read; it keeps post_message alone until they can", "err", err)
		return wake.NewToolSet(wake.PostMessage)
	}
	a.heldMu.Lock()
	defer a.heldMu.Unlock()
	a.held = a.held.Intersect(now).With(wake.PostMessage)
	return a.held
}

// openTools sets what the session holds at its open: what its gate
// allows now.
func (a *agent) openTools(ctx context.Context) {
	now, err := a.allowedNow(ctx)
	if err != nil {
		a.log.Warn("acp: the session's tools could not be read; it holds post_message alone", "err", err)
		now = wake.NewToolSet(wake.PostMessage)
	}
	a.heldMu.Lock()
	a.held = now.With(wake.PostMessage)
	a.heldMu.Unlock()
}

// syncTools makes the tool server offer what the session holds now:
// ask_question, the workspace tools and the connector tools come and go
// with it (the MCP server tells the agent the list changed); post_message
// always stays.
func (a *agent) syncTools(ctx context.Context) {
	now := a.allowed(ctx)
	ts := a.tools
	ts.mu.Lock()
	var gone []string
	if now.Has(wake.AskQuestion) && !ts.own[wake.AskQuestion] {
		ts.own[wake.AskQuestion] = true
		mcp.AddTool(ts.mcp, &mcp.Tool{
			Name:        wake.AskQuestion,
			Description: "Ask the person in the main chat a question and wait for their answer.",
		}, func(ctx context.Context, _ *mcp.CallToolRequest, in askInput) (*mcp.CallToolResult, any, error) {
			if !a.allowed(ctx).Has(wake.AskQuestion) {
				return notHeld(wake.AskQuestion), nil, nil
			}
			return a.ask(ctx, in.Question)
		})
	}
	for _, d := range append(wake.WorkspaceToolDefinitions(), wake.ChannelToolDefinitions()...) {
		if !now.Has(d.Name) || ts.own[d.Name] {
			continue
		}
		ts.own[d.Name] = true
		name := d.Name
		ts.mcp.AddTool(&mcp.Tool{Name: name, Title: d.Title, Description: d.Description, InputSchema: d.InputSchema},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return a.callWorkspace(ctx, name, req.Params.Arguments), nil
			})
	}
	for name := range ts.own {
		if !now.Has(name) {
			delete(ts.own, name)
			gone = append(gone, name)
		}
	}
	ts.mu.Unlock()
	if len(gone) > 0 {
		slices.Sort(gone)
		ts.mcp.RemoveTools(gone...)
	}
	a.syncConnectors(ctx, now.Has(wake.ConnectorTools))
}

// notHeld is the answer to a call of a tool the session no longer holds.
func notHeld(name string) *mcp.CallToolResult {
	return errorResult(fmt.Sprintf("%s is not offered to this bot any more: its tools list leaves it out", name))
}

// callWorkspace calls a workspace tool through the session's gate, for
// the person the session answers, and reports the call in the back chat.
func (a *agent) callWorkspace(ctx context.Context, name string, args json.RawMessage) *mcp.CallToolResult {
	t, ctx, cancel, err := a.during(ctx)
	if err != nil {
		return errorResult(err.Error())
	}
	defer cancel()
	if !a.allowed(ctx).Has(name) {
		return notHeld(name)
	}
	if a.info.Gate == nil {
		return errorResult("this host offers no " + name)
	}
	report, _ := t.w.(wake.ToolReporter)
	id := "bot-tool-" + newCallID()
	if report != nil {
		report.ReportTool(wake.ToolReport{ID: id, Title: name, Kind: "other", Status: wake.ToolInProgress, Input: string(args), Started: true})
	}
	text, err := a.info.Gate.Call(ctx, a.info, name, args)
	if report != nil {
		status, out := wake.ToolCompleted, text
		if err != nil {
			status, out = wake.ToolFailed, err.Error()
		}
		report.ReportTool(wake.ToolReport{ID: id, Status: status, Output: out})
	}
	if err != nil {
		return errorResult(err.Error())
	}
	return textResult(text)
}

// newCallID is a fresh id for a reported tool call.
func newCallID() string { return rand.Text() }
