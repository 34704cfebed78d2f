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
