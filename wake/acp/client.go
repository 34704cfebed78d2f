package acp

import (
	"context"
	"encoding/json"
	"errors"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agenthost/bots/wake"
)

// clientSide answers one child's requests to the client.
type clientSide struct {
	a *agent
	c *child
}

var _ sdk.Client = (*clientSide)(nil)

// ours reports whether a request names the child's session.
func (cs *clientSide) ours(id sdk.SessionId) bool {
	return cs.c.session != "" && id == cs.c.session
}

func rawJSON(v any) string {
	if v == nil {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// SessionUpdate streams an update into the running turn. Updates when no
// turn runs (a loaded session's history) are dropped.
func (cs *clientSide) SessionUpdate(ctx context.Context, n sdk.SessionNotification) error {
	if !cs.ours(n.SessionId) {
		return nil
	}
	t := cs.a.current()
	if t == nil {
		return nil
	}
	t.heard()
	u := n.Update
	switch {
	case u.AgentMessageChunk != nil:
		if tb := u.AgentMessageChunk.Content.Text; tb != nil {
			t.w.Reply(tb.Text)
		}
	case u.AgentThoughtChunk != nil:
		if r, ok := t.w.(wake.Reasoner); ok && u.AgentThoughtChunk.Content.Text != nil {
			r.Reason(u.AgentThoughtChunk.Content.Text.Text)
		}
	case u.ToolCall != nil:
		if r, ok := t.w.(wake.ToolReporter); ok {
			tc := u.ToolCall
			r.ReportTool(wake.ToolReport{ID: string(tc.ToolCallId), Title: tc.Title, Kind: string(tc.Kind), Status: string(tc.Status),
				Input: rawJSON(tc.RawInput), Output: rawJSON(tc.RawOutput), Started: true})
		}
	case u.ToolCallUpdate != nil:
		if r, ok := t.w.(wake.ToolReporter); ok {
			tc := u.ToolCallUpdate
			rep := wake.ToolReport{ID: string(tc.ToolCallId), Input: rawJSON(tc.RawInput), Output: rawJSON(tc.RawOutput)}
			if tc.Title != nil {
				rep.Title = *tc.Title
			}
			if tc.Kind != nil {
				rep.Kind = string(*tc.Kind)
			}
			if tc.Status != nil {
				rep.Status = string(*tc.Status)
			}
			r.ReportTool(rep)
		}
	}
	return nil
}

// RequestPermission asks the person through Work.Approve and answers with
// their choice: the first allow option when they approve, the first reject
// option when they deny, cancelled when the request is withdrawn or no
// turn runs.
func (cs *clientSide) RequestPermission(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	cancelled := sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeCancelled()}
	if !cs.ours(p.SessionId) {
		return cancelled, nil
	}
	t, ctx, cancel, err := cs.a.during(ctx)
	if err != nil {
		return cancelled, nil
	}
	defer cancel()
	title := string(p.ToolCall.ToolCallId)
	if p.ToolCall.Title != nil && *p.ToolCall.Title != "" {
		title = *p.ToolCall.Title
	}
	name := "acp_tool"
	if p.ToolCall.Kind != nil && *p.ToolCall.Kind != "" {
		name = "acp_" + string(*p.ToolCall.Kind)
	}
	ok, err := t.w.Approve(ctx, wake.Approval{ToolName: name, DisplayName: title, Invocation: title, Input: rawJSON(p.ToolCall.RawInput)})
	if err != nil {
		return cancelled, nil
	}
	kinds := []sdk.PermissionOptionKind{sdk.PermissionOptionKindRejectOnce, sdk.PermissionOptionKindRejectAlways}
	if ok {
		kinds = []sdk.PermissionOptionKind{sdk.PermissionOptionKindAllowOnce, sdk.PermissionOptionKindAllowAlways}
	}
	for _, k := range kinds {
		for _, o := range p.Options {
			if o.Kind == k {
				return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected(o.OptionId)}, nil
			}
		}
	}
	return cancelled, nil
}

// refuse is the error a refused request is answered with.
func (cs *clientSide) refuse(method, path string, err error) error {
	if errors.Is(err, errOutside) {
		cs.a.log.Warn("acp: refused a file request outside the bot's folder", "method", method, "path", path)
	}
	return &sdk.RequestError{Code: -32602, Message: err.Error()}
}

// ReadTextFile reads a file inside the bot's folder.
func (cs *clientSide) ReadTextFile(ctx context.Context, p sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	if !cs.ours(p.SessionId) {
		return sdk.ReadTextFileResponse{}, sdk.NewInvalidParams("unknown session")
	}
	line, limit := 0, 0
	if p.Line != nil {
		line = *p.Line
	}
	if p.Limit != nil {
		limit = *p.Limit
	}
	text, err := cs.a.dir.readFile(p.Path, line, limit)
	if err != nil {
		return sdk.ReadTextFileResponse{}, cs.refuse("fs/read_text_file", p.Path, err)
	}
	return sdk.ReadTextFileResponse{Content: text}, nil
}

// WriteTextFile writes a file inside the bot's folder.
func (cs *clientSide) WriteTextFile(ctx context.Context, p sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	if !cs.ours(p.SessionId) {
		return sdk.WriteTextFileResponse{}, sdk.NewInvalidParams("unknown session")
	}
	if err := cs.a.dir.writeFile(p.Path, p.Content); err != nil {
		return sdk.WriteTextFileResponse{}, cs.refuse("fs/write_text_file", p.Path, err)
	}
	return sdk.WriteTextFileResponse{}, nil
}

// The terminals run in the bot's folder (see agent.createTerminal).

func (cs *clientSide) termError(method string, err error) error {
	if errors.Is(err, errOutside) {
		cs.a.log.Warn("acp: refused a terminal outside the bot's folder", "method", method, "err", err)
	}
	return &sdk.RequestError{Code: -32602, Message: err.Error()}
}

// CreateTerminal starts a command in the bot's folder, or a folder inside
// it.
func (cs *clientSide) CreateTerminal(ctx context.Context, p sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	if !cs.ours(p.SessionId) {
		return sdk.CreateTerminalResponse{}, sdk.NewInvalidParams("unknown session")
	}
	id, err := cs.a.createTerminal(p)
	if err != nil {
		return sdk.CreateTerminalResponse{}, cs.termError("terminal/create", err)
	}
	return sdk.CreateTerminalResponse{TerminalId: id}, nil
}

// KillTerminal kills a terminal's process group; it can still be read.
func (cs *clientSide) KillTerminal(ctx context.Context, p sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	if !cs.ours(p.SessionId) {
		return sdk.KillTerminalResponse{}, sdk.NewInvalidParams("unknown session")
	}
	t, err := cs.a.terminal(p.TerminalId)
	if err != nil {
		return sdk.KillTerminalResponse{}, cs.termError("terminal/kill", err)
	}
	t.kill(true)
	return sdk.KillTerminalResponse{}, nil
}

// TerminalOutput returns a terminal's output so far, bounded.
func (cs *clientSide) TerminalOutput(ctx context.Context, p sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	if !cs.ours(p.SessionId) {
		return sdk.TerminalOutputResponse{}, sdk.NewInvalidParams("unknown session")
	}
	t, err := cs.a.terminal(p.TerminalId)
	if err != nil {
		return sdk.TerminalOutputResponse{}, cs.termError("terminal/output", err)
	}
	status := t.exitStatus()
	out, truncated := t.out.text()
	return sdk.TerminalOutputResponse{Output: out, Truncated: truncated, ExitStatus: status}, nil
}

// ReleaseTerminal kills a terminal and forgets it.
func (cs *clientSide) ReleaseTerminal(ctx context.Context, p sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	if !cs.ours(p.SessionId) {
		return sdk.ReleaseTerminalResponse{}, sdk.NewInvalidParams("unknown session")
	}
	if err := cs.a.releaseTerminal(p.TerminalId); err != nil {
		return sdk.ReleaseTerminalResponse{}, cs.termError("terminal/release", err)
	}
	return sdk.ReleaseTerminalResponse{}, nil
}

// WaitForTerminalExit waits for a terminal's command to exit.
func (cs *clientSide) WaitForTerminalExit(ctx context.Context, p sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	if !cs.ours(p.SessionId) {
		return sdk.WaitForTerminalExitResponse{}, sdk.NewInvalidParams("unknown session")
	}
	defer cs.a.hold()() // the agent waits on its command, not idle
	st, err := cs.a.waitTerminal(ctx, p.TerminalId)
	if err != nil {
		return sdk.WaitForTerminalExitResponse{}, cs.termError("terminal/wait_for_exit", err)
	}
	return sdk.WaitForTerminalExitResponse{ExitCode: st.ExitCode, Signal: st.Signal}, nil
}
