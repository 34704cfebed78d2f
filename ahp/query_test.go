package ahp

import (
	"testing"
	"time"
)

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

func TestTurnRepliesAndFailure(t *testing.T) {
	t.Parallel()
	s := ChatState{Turns: List[Turn]{}}
	for _, a := range []Action{
		TurnStarted("t1", time.Unix(0, 0), UserMessage("hi")),
		AppendPart("t1", ResponsePart{Markdown: &MarkdownPart{ID: "p1", Content: "one"}}),
		ToolCallStart("t1", "c1", "x", "X"),
		AppendPart("t1", ResponsePart{Markdown: &MarkdownPart{ID: "p2", Content: "two"}}),
		TurnFailed("t1", 0, ErrorInfo{ErrorType: "gone", Message: "no"}, false),
	} {
		s = ApplyChat(s, a)
	}
	turn := s.Turns[0]
	if got := turn.Replies(); len(got) != 2 || got[0] != "one" || got[1] != "two" {
		t.Errorf("Replies = %q, want one and two", got)
	}
	if f := turn.Failure(); f == nil || f.ErrorType != "gone" {
		t.Errorf("Failure = %+v, want the gone error", f)
	}
	if (Turn{}).Failure() != nil || (Turn{}).Replies() != nil {
		t.Error("a turn with no parts has replies or a failure")
	}
}
