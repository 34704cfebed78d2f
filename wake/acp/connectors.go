package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/bots/connector"
	"github.com/agenthost/bots/wake"
)

// reserved are the names of the bot's own tools; no connector takes them.
var reserved = append([]string{wake.PostMessage, wake.AskQuestion}, wake.NewToolSet(wake.WorkspaceTools, wake.ChannelTools).Names()...)

// defaultInput is the input schema of a connector tool whose own is not a
// JSON Schema of an object.
var defaultInput = json.RawMessage(`{"type":"object"}`)

// objectSchema returns schema when it is a JSON object of type "object",
// else defaultInput (the MCP server takes only object schemas).
func objectSchema(schema json.RawMessage) json.RawMessage {
	var m map[string]any
	if len(schema) == 0 || json.Unmarshal(schema, &m) != nil || m["type"] != "object" {
		return defaultInput
	}
	return schema
}

// syncConnectors makes the tool server offer one tool per connector of the
// bot's map as it is now, or none when the session does not hold the
// connector tools (on): tools of new aliases are added, tools of aliases
// taken out removed (the MCP server tells the agent the list changed). A
// failure to list leaves the tools as they were.
func (a *agent) syncConnectors(ctx context.Context, on bool) {
	src := a.h.cfg.Connectors
	if src == nil {
		return
	}
	var tools []connector.Tool
	if on {
		var err error
		if tools, err = src.List(ctx, a.info); err != nil {
			a.log.Warn("acp: listing the bot's connectors failed; its tools are left as they were", "err", err)
			return
		}
	}
	ts := a.tools
	ts.mu.Lock()
	defer ts.mu.Unlock()
	now := map[string]bool{}
	for _, t := range tools {
		if slices.Contains(reserved, t.Name) {
			a.log.Warn("acp: a connector alias takes the name of a bot tool and is left out", "alias", t.Name)
			continue
		}
		now[t.Name] = true
		desc := t.Description + "|" + string(t.InputSchema)
		if ts.connectors[t.Name] == desc {
			continue
		}
		ts.connectors[t.Name] = desc
		alias := t.Name
		ts.mcp.AddTool(&mcp.Tool{Name: alias, Description: t.Description, InputSchema: objectSchema(t.InputSchema)},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return a.callConnector(ctx, alias, req.Params.Arguments), nil
			})
	}
	var gone []string
	for name := range ts.connectors {
		if !now[name] {
			gone = append(gone, name)
			delete(ts.connectors, name)
		}
	}
	if len(gone) > 0 {
		ts.mcp.RemoveTools(gone...)
	}
}

// errorResult is a tool result that reports a failure to the agent.
func errorResult(text string) *mcp.CallToolResult {
	r := textResult(text)
	r.IsError = true
	return r
}

// callConnector calls the connector under alias for the turn's message.
func (a *agent) callConnector(ctx context.Context, alias string, args json.RawMessage) *mcp.CallToolResult {
	_, ctx, cancel, err := a.during(ctx)
	if err != nil {
		return errorResult(err.Error())
	}
	defer cancel()
	if !a.allowed(ctx).Has(wake.ConnectorTools) {
		return notHeld(alias)
	}
	res, err := a.h.cfg.Connectors.Call(ctx, a.info, alias, args)
	if err != nil {
		return errorResult(fmt.Sprintf("%s: %v", alias, err))
	}
	text := res.Text
	if res.Truncated {
		text += "\n[the answer was cut at the connector's size limit]"
	}
	r := textResult(text)
	r.IsError = res.IsError
	return r
}
