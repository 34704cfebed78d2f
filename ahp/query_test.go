package ahp

import "testing"

func TestActiveTurnQueries(t *testing.T) {
	t.Parallel()
	var none *ActiveTurn
	if none.OpenInputRequest("q") || none.ToolCall("t", "c") != nil {
		t.Fatal("a nil turn answered")
	}
	at := &ActiveTurn{ID: "t", ResponseParts: []ResponsePart{
		{ToolCall: &ToolCallState{ToolCallID: "c"}},
		{InputRequest: &InputRequestPart{Request: ChatInputRequest{ID: "open"}}},
		{InputRequest: &InputRequestPart{Request: ChatInputRequest{ID: "done"}, Response: InputAccept}},
	}}
	if !at.OpenInputRequest("open") || at.OpenInputRequest("done") || at.OpenInputRequest("other") {
		t.Fatal("OpenInputRequest misjudges the requests")
	}
	if at.ToolCall("t", "c") == nil || at.ToolCall("other-turn", "c") != nil || at.ToolCall("t", "x") != nil {
		t.Fatal("ToolCall misjudges the calls")
	}
}
