package replica_test

import (
	"errors"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/replica"
)

// chatAfter is the chat the actions make from an empty one.
func chatAfter(actions ...ahp.Action) ahp.ChatState {
	s := ahp.ChatState{Turns: ahp.List[ahp.Turn]{}}
	for _, a := range actions {
		s = ahp.ApplyChat(s, a)
	}
	return s
}

var t0 = time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)

func TestDecide(t *testing.T) {
	t.Parallel()
	hello := ahp.UserMessage("hello")
	begun := ahp.TurnStarted("t1", t0, hello)
	idle := chatAfter()
	running := chatAfter(begun)
	ended := chatAfter(begun, ahp.TurnComplete("t1", time.Second))
	interrupted := chatAfter(begun, replica.Interrupted("t1", "", "", true))
	failed := chatAfter(begun, ahp.TurnFailed("t1", 0, ahp.ErrorInfo{ErrorType: "x", Message: "no"}, false))
	asking := chatAfter(begun, ahp.InputRequested(ahp.ChatInputRequest{ID: "q1", Message: "which?"}))
	confirming := chatAfter(begun, ahp.ToolCallStart("t1", "c1", "shell", "Shell"), ahp.ToolCallReady("t1", "c1", ahp.StringOrMarkdown{Text: "run"}, ""))
	clientTool := ahp.NewAction(&ahp.ChatToolCallStartAction{TurnID: "t1", ToolCallID: "c2", ToolName: "open", DisplayName: "Open",
		Contributor: &ahp.ToolCallContributor{Kind: ahp.ContributorClient, ClientID: "vscode"}})
	clientRunning := chatAfter(begun, clientTool, ahp.ToolCallReady("t1", "c2", ahp.StringOrMarkdown{Text: "open"}, ahp.ConfirmedNotNeeded))
	queued := chatAfter(begun, ahp.PendingMessageSet(ahp.PendingQueued, "m1", hello))
	steering := chatAfter(begun, ahp.PendingMessageSet(ahp.PendingSteering, "m2", hello))
	agent := ahp.Message{Text: "hi", Origin: ahp.MessageOrigin{Kind: "agent"}}
	done := ahp.ToolCallComplete("t1", "c2", ahp.ToolCallResult{Success: true})
	both := replica.Rules{Resume: true, ClientTools: true}
	vscode := &engine.Origin{ClientID: "vscode"}
	other := &engine.Origin{ClientID: "other"}

	for _, tc := range []struct {
		name   string
		s      ahp.ChatState
		a      ahp.Action
		r      replica.Rules
		origin *engine.Origin
		want   replica.Step
		refuse string // "" accepts
	}{
		{name: "a message begins a turn", s: idle, a: begun, want: replica.Begin},
		{name: "a message after a turn begins another", s: ended, a: ahp.TurnStarted("t2", t0, hello), want: replica.Begin},
		{name: "a turn without an id", s: idle, a: ahp.TurnStarted("", t0, hello), refuse: "a turn needs a turnId and the person's message"},
		{name: "a turn of the agent's message", s: idle, a: ahp.TurnStarted("t1", t0, agent), refuse: "a turn needs a turnId and the person's message"},
		{name: "a message while a turn runs", s: running, a: ahp.TurnStarted("t2", t0, hello), refuse: "a turn is in progress"},
		{name: "a queued message started by a client", s: idle, a: ahp.TurnStartedFromQueue("t1", t0, "m1", hello), refuse: "the host starts queued messages itself"},
		{name: "a turn id held already", s: ended, a: begun, refuse: `turn "t1" exists`},
		{name: "a resume of an interrupted turn", s: interrupted, a: ahp.TurnResume("t1"), r: both, want: replica.Resume},
		{name: "a resume where the chat takes none", s: interrupted, a: ahp.TurnResume("t1"), refuse: `turn "t1" is not the latest turn, ended with an error that can be resumed`},
		{name: "a resume of a turn that cannot be resumed", s: failed, a: ahp.TurnResume("t1"), r: both, refuse: `turn "t1" is not the latest turn, ended with an error that can be resumed`},
		{name: "a resume of a turn the chat does not end with", s: interrupted, a: ahp.TurnResume("t0"), r: both, refuse: `turn "t0" is not the latest turn, ended with an error that can be resumed`},
		{name: "a resume while a turn runs", s: running, a: ahp.TurnResume("t1"), r: both, refuse: `turn "t1" is not the latest turn, ended with an error that can be resumed`},
		{name: "a resume of a turn that ended well", s: ended, a: ahp.TurnResume("t1"), r: both, refuse: `turn "t1" is not the latest turn, ended with an error that can be resumed`},
		{name: "a stop of the turn that runs", s: running, a: ahp.TurnCancelled("t1", 0), want: replica.Stop},
		{name: "a stop of another turn", s: running, a: ahp.TurnCancelled("t9", 0), refuse: `turn "t9" is not in progress`},
		{name: "a stop when idle", s: idle, a: ahp.TurnCancelled("t1", 0), refuse: `turn "t1" is not in progress`},
		{name: "a queued message", s: running, a: ahp.PendingMessageSet(ahp.PendingQueued, "m1", hello), want: replica.Pend},
		{name: "a steering message", s: running, a: ahp.PendingMessageSet(ahp.PendingSteering, "m2", hello), want: replica.Pend},
		{name: "a pending message of no kind", s: running, a: ahp.PendingMessageSet("later", "m1", hello), refuse: "a pending message needs an id, the kind queued or steering, and the person's message"},
		{name: "a pending message without an id", s: running, a: ahp.PendingMessageSet(ahp.PendingQueued, "", hello), refuse: "a pending message needs an id, the kind queued or steering, and the person's message"},
		{name: "a client's pending message of the agent's", s: running, a: ahp.PendingMessageSet(ahp.PendingQueued, "m1", agent), origin: vscode, refuse: "a pending message needs an id, the kind queued or steering, and the person's message"},
		{name: "the host's pending message of the agent's", s: running, a: ahp.PendingMessageSet(ahp.PendingQueued, "m1", agent), want: replica.Pend},
		{name: "a queued message taken back", s: queued, a: ahp.PendingMessageRemoved(ahp.PendingQueued, "m1"), want: replica.Apply},
		{name: "a steering message taken back", s: steering, a: ahp.PendingMessageRemoved(ahp.PendingSteering, "m2"), want: replica.Apply},
		{name: "a message taken back that never waited", s: queued, a: ahp.PendingMessageRemoved(ahp.PendingQueued, "m9"), refuse: `no queued message "m9" is waiting`},
		{name: "a steering message taken back as queued", s: steering, a: ahp.PendingMessageRemoved(ahp.PendingQueued, "m2"), refuse: `no queued message "m2" is waiting`},
		{name: "the queue reordered", s: queued, a: ahp.QueuedMessagesReordered([]string{"m1"}), want: replica.Apply},
		{name: "a draft", s: idle, a: ahp.DraftChanged(&hello), want: replica.Apply},
		{name: "read", s: idle, a: ahp.NewAction(&ahp.ChatIsReadChangedAction{IsRead: true}), want: replica.Apply},
		{name: "archived", s: idle, a: ahp.NewAction(&ahp.ChatIsArchivedChangedAction{IsArchived: true}), want: replica.Apply},
		{name: "an answer being typed", s: asking, a: ahp.NewAction(&ahp.ChatInputAnswerChangedAction{RequestID: "q1"}), want: replica.Answer},
		{name: "an answer", s: asking, a: ahp.InputCompleted("q1", ahp.InputAccept, nil), want: replica.Answer},
		{name: "an answer to no question", s: running, a: ahp.InputCompleted("q1", ahp.InputAccept, nil), refuse: `no open input request "q1"`},
		{name: "an answer typed to no question", s: idle, a: ahp.NewAction(&ahp.ChatInputAnswerChangedAction{RequestID: "q1"}), refuse: `no open input request "q1"`},
		{name: "a confirmation", s: confirming, a: ahp.ToolCallConfirmed("t1", "c1", true), want: replica.Answer},
		{name: "a confirmation nothing waits for", s: clientRunning, a: ahp.ToolCallConfirmed("t1", "c2", true), refuse: `tool call "c2" does not wait for a confirmation`},
		{name: "a client tool's result", s: clientRunning, a: done, r: both, origin: vscode, want: replica.Answer},
		{name: "a client tool's result in process", s: clientRunning, a: done, r: both, want: replica.Answer},
		{name: "a client tool's result from another client", s: clientRunning, a: done, r: both, origin: other, refuse: `only client "vscode" completes tool call "c2"`},
		{name: "a result of a server tool", s: confirming, a: ahp.ToolCallComplete("t1", "c1", ahp.ToolCallResult{}), r: both, refuse: `tool call "c1" is not a running call of a client's tool`},
		{name: "a client tool's result where the chat takes none", s: clientRunning, a: done, origin: vscode, refuse: "this chat does not take chat/toolCallComplete"},
		{name: "a server's action", s: running, a: ahp.Delta("t1", "p1", "x"), refuse: "this chat does not take chat/delta"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			step, err := replica.Decide(tc.s, tc.a, tc.r, tc.origin)
			if tc.refuse != "" {
				var r *replica.Refusal
				if !errors.As(err, &r) || r.Reason != tc.refuse {
					t.Fatalf("Decide = %v, %v; want the refusal %q", step, err, tc.refuse)
				}
				return
			}
			if err != nil || step != tc.want {
				t.Fatalf("Decide = %v, %v; want %v", step, err, tc.want)
			}
		})
	}
}

func TestDecideIsPure(t *testing.T) {
	t.Parallel()
	s := chatAfter(ahp.TurnStarted("t1", t0, ahp.UserMessage("hello")))
	before := ahp.ApplyChat(s, ahp.Usage("t1", ahp.UsageInfo{})) // a copy to compare with
	a := ahp.TurnCancelled("t1", 0)
	first, err1 := replica.Decide(s, a, replica.Rules{}, nil)
	second, err2 := replica.Decide(s, a, replica.Rules{}, nil)
	if first != second || err1 != nil || err2 != nil {
		t.Fatalf("Decide answered %v, %v then %v, %v", first, err1, second, err2)
	}
	if s.ActiveTurn == nil || s.ActiveTurn.ID != before.ActiveTurn.ID || len(s.Turns) != len(before.Turns) {
		t.Fatalf("Decide changed the chat it decided on: %+v", s)
	}
}

func TestAnswerTo(t *testing.T) {
	t.Parallel()
	for a, want := range map[*ahp.Action]string{
		ptr(ahp.InputCompleted("q1", ahp.InputAccept, nil)):                      "q1",
		ptr(ahp.NewAction(&ahp.ChatInputAnswerChangedAction{RequestID: "q2"})):   "q2",
		ptr(ahp.ToolCallConfirmed("t1", "c1", false)):                            "c1",
		ptr(ahp.ToolCallComplete("t1", "c2", ahp.ToolCallResult{Success: true})): "c2",
		ptr(ahp.TurnCancelled("t1", 0)):                                          "",
	} {
		if got := replica.AnswerTo(*a); got != want {
			t.Errorf("AnswerTo(%s) = %q, want %q", a.Type, got, want)
		}
	}
}

func ptr[T any](v T) *T { return &v }
