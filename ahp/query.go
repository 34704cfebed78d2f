package ahp

// OpenInputRequest reports whether the turn holds the input request id,
// still unanswered. A nil turn holds none.
func (t *ActiveTurn) OpenInputRequest(id string) bool {
	if t == nil {
		return false
	}
	for _, p := range t.ResponseParts {
		if p.InputRequest != nil && p.InputRequest.Response == "" && p.InputRequest.Request.ID == id {
			return true
		}
	}
	return false
}

// ToolCall returns the tool call id of the turn turnID, or nil when t is not
// that turn or holds no such call. The result points into t: treat it as
// read-only, as every reduced state.
func (t *ActiveTurn) ToolCall(turnID, id string) *ToolCallState {
	if t == nil || t.ID != turnID {
		return nil
	}
	for _, p := range t.ResponseParts {
		if p.ToolCall != nil && p.ToolCall.ToolCallID == id {
			return p.ToolCall
		}
	}
	return nil
}

// Replies returns the markdown parts of the turn, in order: what the
// agent (or the bot) answered.
func (t Turn) Replies() []string {
	var out []string
	for _, p := range t.ResponseParts {
		if p.Markdown != nil {
			out = append(out, p.Markdown.Content)
		}
	}
	return out
}

// Failure returns the error the turn ended with, nil when it ended
// without one. The result points into t: treat it as read-only.
func (t Turn) Failure() *ErrorInfo {
	for _, p := range t.ResponseParts {
		if p.Error != nil {
			return &p.Error.Error
		}
	}
	return nil
}
