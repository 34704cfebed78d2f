package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/local"
)

// abandoning is an agent that calls post_message with a context of its
// own, abandons the call when told to, and then keeps its turn running.
type abandoning struct {
	abandon  chan struct{} // closed by the test: end the call's context
	returned chan error    // what CallTool returned
}

func (a *abandoning) Open(context.Context, wake.SessionInfo) (wake.Agent, error) { return a, nil }
func (a *abandoning) Close() error                                               { return nil }

func (a *abandoning) Turn(ctx context.Context, w wake.Work) error {
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-a.abandon:
		case <-ctx.Done():
		}
		cancel()
	}()
	_, err := w.CallTool(cctx, wake.PostMessage, json.RawMessage(`{"text":"never read"}`))
	a.returned <- err
	<-ctx.Done()
	return ctx.Err()
}

func TestCallToolWhoseContextEndsEndsItsToolCallInTheChat(t *testing.T) {
	t.Parallel()
	agent := &abandoning{abandon: make(chan struct{}), returned: make(chan error, 1)}
	h, err := local.New(local.Config{Harnesses: map[string]wake.Harness{"abandoning": agent}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	uri, err := h.Start(t.Context(), wake.Spec{Provider: "abandoning", Dir: t.TempDir(), Owner: "user:soft",
		Client: &ahp.SessionActiveClient{ClientID: "c", Tools: ahp.List[ahp.ToolDefinition]{wake.PostMessageTool()}}})
	if err != nil {
		t.Fatal(err)
	}
	state, actions, err := h.Follow(t.Context(), uri)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Send(t.Context(), uri, wake.Pending{Kind: ahp.PendingQueued, ID: "m1", Message: ahp.UserMessage("post")}); err != nil {
		t.Fatal(err)
	}
	until := func(what string, cond func(ahp.ChatState) bool) ahp.ChatState {
		t.Helper()
		deadline := time.After(5 * time.Second)
		for !cond(state) {
			select {
			case a := <-actions:
				state = ahp.ApplyChat(state, a)
			case <-deadline:
				t.Fatalf("timed out waiting for %s; chat: %s", what, jsonOf(state))
			}
		}
		return state
	}
	call := func(c ahp.ChatState) *ahp.ToolCallState {
		if c.ActiveTurn == nil {
			return nil
		}
		for _, p := range c.ActiveTurn.ResponseParts {
			if p.ToolCall != nil && p.ToolCall.ToolName == wake.PostMessage {
				return p.ToolCall
			}
		}
		return nil
	}
	until("post_message to run", func(c ahp.ChatState) bool {
		tc := call(c)
		return tc != nil && tc.Status == ahp.ToolCallStatusRunning
	})
	close(agent.abandon)
	if err := <-agent.returned; !errors.Is(err, context.Canceled) {
		t.Fatalf("CallTool after its context ended: %v, want context.Canceled", err)
	}
	st := until("the abandoned call to end while the turn runs", func(c ahp.ChatState) bool {
		tc := call(c)
		return c.ActiveTurn == nil || (tc != nil && tc.Status != ahp.ToolCallStatusRunning)
	})
	if st.ActiveTurn == nil {
		t.Fatal("the turn ended before the abandoned call did")
	}
	if err := h.Dispatch(t.Context(), uri, ahp.ToolCallComplete(st.ActiveTurn.ID, call(st).ToolCallID, ahp.ToolCallResult{Success: true})); !errors.Is(err, wake.ErrRefused) {
		t.Fatalf("a client's late result for the abandoned call: %v, want ErrRefused", err)
	}
}

func TestRefusalCarriesItsReasonAsATypedError(t *testing.T) {
	t.Parallel()
	h, err := local.New(local.Config{Harnesses: map[string]wake.Harness{"abandoning": &abandoning{}}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	uri, err := h.Start(t.Context(), wake.Spec{Provider: "abandoning", Dir: t.TempDir(), Owner: "user:soft"})
	if err != nil {
		t.Fatal(err)
	}
	err = h.Dispatch(t.Context(), uri, ahp.TurnCancelled("no-such-turn", 0))
	var r *wake.RefusedError
	if !errors.As(err, &r) || !errors.Is(err, wake.ErrRefused) {
		t.Fatalf("Dispatch of an action that does not apply: %v, want a *wake.RefusedError that is ErrRefused", err)
	}
	if want := `turn "no-such-turn" is not in progress`; r.Reason != want {
		t.Fatalf("reason %q, want %q", r.Reason, want)
	}
	_, err = h.Start(t.Context(), wake.Spec{Provider: "nobody", Dir: t.TempDir()})
	if !errors.As(err, &r) || r.Reason != `no agent for provider "nobody"` {
		t.Fatalf("Start on an unknown provider: %v, want a *wake.RefusedError naming the provider", err)
	}
}

// jsonOf is v as JSON, for a failure's message.
func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
