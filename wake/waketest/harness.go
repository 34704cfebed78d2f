package waketest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/wake"
)

// Harness is a wake.Harness under test.
type Harness struct {
	// Open returns the harness under test, for one check. Required.
	Open func(t *testing.T) wake.Harness
	// Provider is the provider its sessions run on (SessionInfo.Provider).
	Provider string
	// Script makes its agent act. Required.
	Script Script
	// Wait bounds each wait of a check; zero is DefaultWait.
	Wait time.Duration
}

// harnessChecks are RunHarness's checks, each on an agent of its own.
var harnessChecks = []struct {
	name string
	fn   func(testing.TB, Harness, wake.Agent)
}{
	{"TurnPostsThroughCallTool", checkHarnessPost},
	{"TurnsRunOneAfterAnotherOnOneAgent", checkHarnessTwoTurns},
	{"QuestionGoesThroughAskAndItsAnswerComesBack", checkHarnessAsk},
	{"ApprovalGoesThroughApprove", checkHarnessApprove},
	{"StoppedTurnReturnsPromptly", checkHarnessStop},
	{"TurnWaitingOnThePersonReturnsPromptlyWhenStopped", checkHarnessStopWhileAsking},
	{"TurnEndsWhenPostMessageIsDenied", checkHarnessDenied},
}

// RunHarness runs the conformance suite of wake.Harness against h.
func RunHarness(t *testing.T, h Harness) {
	if h.Open == nil || h.Script.Post == nil || h.Script.Ask == nil {
		t.Fatal("waketest: Harness needs Open and a Script with Post and Ask")
	}
	for _, c := range harnessChecks {
		t.Run(c.name, func(t *testing.T) {
			c.fn(t, h, openAgent(t, h))
		})
	}
	t.Run("CloseAfterTurnsReturns", func(t *testing.T) {
		a := openAgentUnclosed(t, h)
		msg, _ := h.Script.Post("before closing")
		if _, err := runTurn(t, h, a, msg, nil); err != nil {
			t.Fatalf("turn: %v", err)
		}
		closed := make(chan error, 1)
		go func() { closed <- a.Close() }()
		select {
		case err := <-closed:
			if err != nil {
				t.Fatalf("Close: %v", err)
			}
		case <-time.After(waitOr(h.Wait)):
			t.Fatal("Close did not return")
		}
	})
}

// sessionInfo is the session the suite opens agents for, in a new folder.
func sessionInfo(t testing.TB, provider string) wake.SessionInfo {
	return wake.SessionInfo{
		URI: "ahp-session:/waketest", Provider: provider, Dir: t.TempDir(), Title: "Suite",
		SystemPrompt: wake.SystemPrompt, Tools: []ahp.ToolDefinition{wake.PostMessageTool()}, Owner: "user:suite",
	}
}

func openAgentUnclosed(t *testing.T, h Harness) wake.Agent {
	t.Helper()
	a, err := h.Open(t).Open(testCtx(t, waitOr(h.Wait)), sessionInfo(t, h.Provider))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return a
}

func openAgent(t *testing.T, h Harness) wake.Agent {
	t.Helper()
	a := openAgentUnclosed(t, h)
	t.Cleanup(func() { a.Close() })
	return a
}

// work is a wake.Work that records what an agent does through it. Its
// zero value answers questions by declining and approvals by denying.
type work struct {
	id  string
	msg ahp.Message
	// answer is the answer Ask gives ("" declines); approve is what
	// Approve reports. block makes Ask wait for its ctx to end.
	answer  string
	approve bool
	block   bool
	// deny makes CallTool answer wake.ErrDenied.
	deny bool

	mu       sync.Mutex
	over     bool
	late     []string // calls made after Turn returned
	posts    []string
	asked    []ahp.ChatInputQuestion
	approved []wake.Approval
	asking   chan struct{} // closed when Ask is first called
}

var (
	_ wake.Work         = (*work)(nil)
	_ wake.Reasoner     = (*work)(nil)
	_ wake.ToolReporter = (*work)(nil)
)

func (w *work) called(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.over {
		w.late = append(w.late, name)
		return false
	}
	return true
}

func (w *work) TurnID() string             { return w.id }
func (w *work) Message() ahp.Message       { return w.msg }
func (w *work) Reply(string)               { w.called("Reply") }
func (w *work) Reason(string)              { w.called("Reason") }
func (w *work) ReportTool(wake.ToolReport) { w.called("ReportTool") }

func (w *work) CallTool(ctx context.Context, name string, input json.RawMessage) (ahp.ToolCallResult, error) {
	if !w.called("CallTool " + name) {
		return ahp.ToolCallResult{}, errors.New("the turn is over")
	}
	if w.deny {
		return ahp.ToolCallResult{}, wake.ErrDenied
	}
	if name != wake.PostMessage {
		return ahp.ToolCallResult{Success: false, Error: &ahp.ToolError{Message: "no tool named " + name}}, nil
	}
	var in struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return ahp.ToolCallResult{Success: false, Error: &ahp.ToolError{Message: "bad input"}}, nil
	}
	w.mu.Lock()
	w.posts = append(w.posts, in.Text)
	w.mu.Unlock()
	return ahp.ToolCallResult{Success: true, PastTenseMessage: ahp.Plain("Posted")}, nil
}

func (w *work) Ask(ctx context.Context, qs []ahp.ChatInputQuestion) (ahp.InputResponse, map[string]ahp.ChatInputAnswer, error) {
	if !w.called("Ask") {
		return "", nil, errors.New("the turn is over")
	}
	w.mu.Lock()
	w.asked = append(w.asked, qs...)
	if w.asking != nil {
		select {
		case <-w.asking:
		default:
			close(w.asking)
		}
	}
	w.mu.Unlock()
	if w.block {
		<-ctx.Done()
		return "", nil, ctx.Err()
	}
	if w.answer == "" || len(qs) == 0 {
		return ahp.InputDecline, nil, nil
	}
	return ahp.InputAccept, map[string]ahp.ChatInputAnswer{
		qs[0].ID: {State: "submitted", Value: &ahp.ChatInputAnswerValue{Kind: "text", Value: w.answer}},
	}, nil
}

func (w *work) Approve(ctx context.Context, a wake.Approval) (bool, error) {
	if !w.called("Approve") {
		return false, errors.New("the turn is over")
	}
	w.mu.Lock()
	w.approved = append(w.approved, a)
	w.mu.Unlock()
	return w.approve, nil
}

// end marks the turn over: a call after it is recorded as late.
func (w *work) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.over = true
}

func (w *work) lateCalls() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.late)
}

func (w *work) posted() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.posts)
}

// runTurn runs one turn of text on a through w (a new work when nil),
// bounded by the harness's wait.
func runTurn(t testing.TB, h Harness, a wake.Agent, text string, w *work) (*work, error) {
	t.Helper()
	if w == nil {
		w = &work{}
	}
	w.id = "turn-" + ulid.Make().String()
	w.msg = ahp.UserMessage(text)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Turn(ctx, w) }()
	select {
	case err := <-done:
		w.end()
		return w, err
	case <-time.After(waitOr(h.Wait)):
		cancel()
		t.Fatalf("the turn of %q did not end within %s", text, waitOr(h.Wait))
	}
	return w, nil
}

func wantPosts(t testing.TB, w *work, want ...string) {
	t.Helper()
	if got := w.posted(); !slices.Equal(got, want) {
		t.Fatalf("posted %q, want %q", got, want)
	}
	if late := w.lateCalls(); len(late) > 0 {
		t.Fatalf("the agent called %v after its turn returned", late)
	}
}

func checkHarnessPost(t testing.TB, h Harness, a wake.Agent) {
	msg, posted := h.Script.Post("hello there")
	w, err := runTurn(t, h, a, msg, nil)
	if err != nil {
		t.Fatalf("turn: %v", err)
	}
	wantPosts(t, w, posted)
}

func checkHarnessTwoTurns(t testing.TB, h Harness, a wake.Agent) {
	for _, words := range []string{"first words", "second words"} {
		msg, posted := h.Script.Post(words)
		w, err := runTurn(t, h, a, msg, nil)
		if err != nil {
			t.Fatalf("turn %q: %v", words, err)
		}
		wantPosts(t, w, posted)
	}
}

func checkHarnessAsk(t testing.TB, h Harness, a wake.Agent) {
	msg, answered := h.Script.Ask("Which colour?")
	w, err := runTurn(t, h, a, msg, &work{answer: "teal"})
	if err != nil {
		t.Fatalf("turn: %v", err)
	}
	w.mu.Lock()
	asked := slices.Clone(w.asked)
	w.mu.Unlock()
	if len(asked) != 1 || !strings.Contains(asked[0].Message+asked[0].Title, "Which colour?") {
		t.Fatalf("asked %+v, want one question saying %q", asked, "Which colour?")
	}
	wantPosts(t, w, answered("teal"))
}

func checkHarnessApprove(t testing.TB, h Harness, a wake.Agent) {
	if h.Script.Approve == "" {
		t.Skip("the script has no Approve")
	}
	for _, give := range []bool{true, false} {
		w, err := runTurn(t, h, a, h.Script.Approve, &work{approve: give})
		if err != nil {
			t.Fatalf("turn (approval %v): %v", give, err)
		}
		w.mu.Lock()
		n := len(w.approved)
		w.mu.Unlock()
		if n != 1 {
			t.Fatalf("the agent asked %d approvals, want 1", n)
		}
		want := h.Script.Denied
		if give {
			want = h.Script.Approved
		}
		wantPosts(t, w, want)
	}
}

// stopTurn starts a turn of text through w, cancels its ctx once ready
// returns, and fails t unless Turn returns within the wait.
func stopTurn(t testing.TB, h Harness, a wake.Agent, text string, w *work, ready func()) {
	t.Helper()
	w.id, w.msg = "turn-stopped", ahp.UserMessage(text)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Turn(ctx, w) }()
	ready()
	cancel()
	select {
	case <-done:
		w.end()
	case <-time.After(waitOr(h.Wait)):
		t.Fatalf("the stopped turn of %q did not return within %s", text, waitOr(h.Wait))
	}
}

func checkHarnessStop(t testing.TB, h Harness, a wake.Agent) {
	if h.Script.Wait == "" {
		t.Skip("the script has no Wait")
	}
	stopTurn(t, h, a, h.Script.Wait, &work{}, func() {})
	// The agent still works after a stopped turn.
	msg, posted := h.Script.Post("after the stop")
	w, err := runTurn(t, h, a, msg, nil)
	if err != nil {
		t.Fatalf("turn after a stopped one: %v", err)
	}
	wantPosts(t, w, posted)
}

func checkHarnessStopWhileAsking(t testing.TB, h Harness, a wake.Agent) {
	msg, _ := h.Script.Ask("Still there?")
	w := &work{block: true, asking: make(chan struct{})}
	stopTurn(t, h, a, msg, w, func() {
		select {
		case <-w.asking:
		case <-time.After(waitOr(h.Wait)):
			t.Fatalf("the agent did not ask within %s", waitOr(h.Wait))
		}
	})
	if late := w.lateCalls(); len(late) > 0 {
		t.Fatalf("the agent called %v after its stopped turn returned", late)
	}
	msg, posted := h.Script.Post("after the question")
	w2, err := runTurn(t, h, a, msg, nil)
	if err != nil {
		t.Fatalf("turn after a stopped one: %v", err)
	}
	wantPosts(t, w2, posted)
}

func checkHarnessDenied(t testing.TB, h Harness, a wake.Agent) {
	msg, _ := h.Script.Post("denied words")
	w, _ := runTurn(t, h, a, msg, &work{deny: true}) // an error or not: the turn ends
	wantPosts(t, w)
}
