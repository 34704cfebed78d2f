package acp

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/wake"
)

// fakeGate allows a set that a test changes, and answers workspace calls
// with the tool's name and the session's person.
type fakeGate struct {
	mu  sync.Mutex
	set wake.ToolSet
}

func (g *fakeGate) Allowed(context.Context, wake.SessionInfo) (wake.ToolSet, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.set, nil
}

func (g *fakeGate) allow(names ...string) {
	g.mu.Lock()
	g.set = wake.NewToolSet(names...)
	g.mu.Unlock()
}

func (g *fakeGate) Call(_ context.Context, s wake.SessionInfo, name string, _ json.RawMessage) (string, error) {
	return name + " for " + s.Owner, nil
}

func openGated(t *testing.T, g wake.ToolGate) *agent {
	t.Helper()
	ag, err := newHarness(t, nil).Open(testCtx(t), wake.SessionInfo{URI: "ahp-session:/g", Provider: "fake", Dir: t.TempDir(),
		SystemPrompt: wake.SystemPrompt, Owner: "user:soft", Gate: g})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ag.Close() })
	return ag.(*agent)
}

func TestSystemPromptNamesExactlyTheToolsTheGateAllows(t *testing.T) {
	t.Parallel()
	for _, allowed := range [][]string{{wake.PostMessage}, {wake.PostMessage, wake.AskQuestion, wake.WorkspaceTools}} {
		g := &fakeGate{}
		g.allow(allowed...)
		a := openGated(t, g)
		prompt := mustTurn(t, a, "prompt").replied()
		offered := strings.Split(mustTurn(t, a, "tools").replied(), ",")
		named := toolNames.FindAllString(prompt, -1)
		slices.Sort(named)
		named = slices.Compact(named)
		if !slices.Equal(named, offered) || !slices.Equal(offered, wake.NewToolSet(allowed...).Names()) {
			t.Errorf("allowed %q: the prompt names %q and the tools offered are %q", allowed, named, offered)
		}
	}
}

func TestWorkspaceToolActsForTheSessionsPersonThroughTheGate(t *testing.T) {
	t.Parallel()
	g := &fakeGate{}
	g.allow(wake.PostMessage, wake.WorkspaceTools)
	a := openGated(t, g)
	w := mustTurn(t, a, `tool bot_list {}`)
	if got := w.replied(); got != "tool: bot_list for user:soft" {
		t.Errorf("bot_list says %q", got)
	}
	w.mu.Lock()
	reports := slices.Clone(w.tools)
	w.mu.Unlock()
	if len(reports) != 2 || reports[0].Title != wake.BotList || reports[1].Status != wake.ToolCompleted {
		t.Errorf("the call was reported as %+v, want its start and its completion", reports)
	}
}

// stallWork is a turn's Work whose question waits until the test lets it
// go, so that the test can call the tool server mid-turn.
type stallWork struct {
	*fakeWork
	asked, release chan struct{}
}

func (w *stallWork) Ask(ctx context.Context, qs []ahp.ChatInputQuestion) (ahp.InputResponse, map[string]ahp.ChatInputAnswer, error) {
	close(w.asked)
	select {
	case <-w.release:
	case <-ctx.Done():
	}
	return w.fakeWork.Ask(ctx, qs)
}

func TestNarrowingCountsFromTheNextCallOfARunningTurnAndNeverWidensBack(t *testing.T) {
	t.Parallel()
	g := &fakeGate{}
	g.allow(wake.PostMessage, wake.AskQuestion, wake.WorkspaceTools)
	a := openGated(t, g)
	w := &stallWork{fakeWork: &fakeWork{text: "ask wait?"}, asked: make(chan struct{}), release: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- a.Turn(testCtx(t), w) }()
	<-w.asked

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(testCtx(t),
		&mcp.StreamableClientTransport{Endpoint: a.tools.url, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func() *mcp.CallToolResult {
		res, err := cs.CallTool(testCtx(t), &mcp.CallToolParams{Name: wake.BotList, Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := call(); res.IsError {
		t.Fatalf("bot_list before the narrowing failed: %+v", res.Content)
	}
	g.allow(wake.PostMessage, wake.AskQuestion)
	res := call()
	if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.Contains(text, "bot_list is not offered to this bot any more") {
		t.Errorf("bot_list after the narrowing answers %q (error %v)", text, res.IsError)
	}
	g.allow(wake.PostMessage, wake.AskQuestion, wake.WorkspaceTools)
	if res := call(); !res.IsError {
		t.Error("bot_list after a widening was taken: a running session never widens")
	}
	close(w.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := mustTurn(t, a, "tools").replied(); got != "ask_question,post_message" {
		t.Errorf("the next turn is offered %q", got)
	}
}

// failingGate cannot say what a session may hold.
type failingGate struct{ fakeGate }

func (*failingGate) Allowed(context.Context, wake.SessionInfo) (wake.ToolSet, error) {
	return wake.ToolSet{}, errors.New("the store is down")
}

func TestPostMessageIsHeldWhateverTheGateLeavesOut(t *testing.T) {
	t.Parallel()
	g := &fakeGate{}
	g.allow(wake.AskQuestion)
	a := openGated(t, g)
	if got := mustTurn(t, a, "tools").replied(); got != "ask_question,post_message" {
		t.Errorf("a gate allowing ask_question alone gives %q, want post_message too", got)
	}
	g.allow()
	if got := mustTurn(t, a, "tools").replied(); got != "post_message" {
		t.Errorf("a gate allowing nothing gives %q, want post_message", got)
	}
	if w := mustTurn(t, a, "post hello"); !slices.Equal(w.posts, []string{"hello"}) {
		t.Errorf("a post with a gate allowing nothing reached the main turn as %q", w.posts)
	}
	b := openGated(t, &failingGate{})
	if got := mustTurn(t, b, "tools").replied(); got != "post_message" {
		t.Errorf("a gate that cannot answer gives %q, want post_message alone", got)
	}
	if w := mustTurn(t, b, "post hello"); !slices.Equal(w.posts, []string{"hello"}) {
		t.Errorf("a post with a gate that cannot answer reached the main turn as %q", w.posts)
	}
}
