package local

import (
	"context"
	"encoding/json"
	"sync"
	"unicode/utf8"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/wake"
)

// What a Host does to scrub a back session: every text its agent
// hands out has the values its Scrubber knows taken out.

// stream scrubs text that arrives in pieces: it holds back the last
// Longest()-1 bytes, where a value may begin that the next piece ends,
// until the next piece or the flush.
type stream struct {
	held string
}

// next takes a piece and returns what may be shown of the text so far.
func (st *stream) next(s wake.Scrubber, piece string) string {
	clean := s.String(st.held + piece)
	keep := s.Longest() - 1
	if keep <= 0 {
		st.held = ""
		return clean
	}
	cut := len(clean) - keep
	if cut <= 0 {
		st.held = clean
		return ""
	}
	for cut > 0 && !utf8.RuneStart(clean[cut]) {
		cut--
	}
	st.held = clean[cut:]
	return clean[:cut]
}

// flush returns what is held back.
func (st *stream) flush(s wake.Scrubber) string {
	out := s.String(st.held)
	st.held = ""
	return out
}

// scrubWork is the Work a harness's agent gets when the host scrubs: every
// text the agent hands out (its reply and reasoning as they stream, the
// input of the tools it calls, its questions, approvals and tool reports)
// has every value the scrubber knows taken out before it reaches the back
// chat. What comes back to the agent is not changed.
type scrubWork struct {
	w wake.Work
	s wake.Scrubber

	mu            sync.Mutex
	reply, reason stream
}

var (
	_ wake.Reasoner     = (*scrubWork)(nil)
	_ wake.ToolReporter = (*scrubWork)(nil)
	_ wake.Notifier     = (*scrubWork)(nil)
)

func (sw *scrubWork) TurnID() string       { return sw.w.TurnID() }
func (sw *scrubWork) Message() ahp.Message { return sw.w.Message() }

func (sw *scrubWork) Reply(text string) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if out := sw.reply.next(sw.s, text); out != "" {
		sw.w.Reply(out)
	}
}

func (sw *scrubWork) Reason(text string) {
	r, ok := sw.w.(wake.Reasoner)
	if !ok {
		return
	}
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if out := sw.reason.next(sw.s, text); out != "" {
		r.Reason(out)
	}
}

// flush hands on what the streams hold back; the turn is ending.
func (sw *scrubWork) flush() {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if out := sw.reply.flush(sw.s); out != "" {
		sw.w.Reply(out)
	}
	if r, ok := sw.w.(wake.Reasoner); ok {
		if out := sw.reason.flush(sw.s); out != "" {
			r.Reason(out)
		}
	}
}

func (sw *scrubWork) Notify(text string) {
	if n, ok := sw.w.(wake.Notifier); ok {
		n.Notify(sw.s.String(text))
	}
}

func (sw *scrubWork) ReportTool(r wake.ToolReport) {
	tr, ok := sw.w.(wake.ToolReporter)
	if !ok {
		return
	}
	r.Title, r.Kind = sw.s.String(r.Title), sw.s.String(r.Kind)
	r.Input, r.Output = sw.s.String(r.Input), sw.s.String(r.Output)
	tr.ReportTool(r)
}

func (sw *scrubWork) CallTool(ctx context.Context, name string, input json.RawMessage) (ahp.ToolCallResult, error) {
	if clean := sw.s.String(string(input)); clean != string(input) {
		input = json.RawMessage(clean)
		if !json.Valid(input) {
			input = json.RawMessage(`{}`)
		}
	}
	return sw.w.CallTool(ctx, name, input)
}

func (sw *scrubWork) Ask(ctx context.Context, questions []ahp.ChatInputQuestion) (ahp.InputResponse, map[string]ahp.ChatInputAnswer, error) {
	return sw.w.Ask(ctx, wake.ScrubValue(sw.s, questions))
}

func (sw *scrubWork) Approve(ctx context.Context, a wake.Approval) (bool, error) {
	a.ToolName, a.DisplayName = sw.s.String(a.ToolName), sw.s.String(a.DisplayName)
	a.Invocation, a.Input = sw.s.String(a.Invocation), sw.s.String(a.Input)
	return sw.w.Approve(ctx, a)
}

// runScrubbed runs one turn of agent through w, scrubbed with s when s is
// not nil, handing on what the streams held back once the turn returns.
func runScrubbed(ctx context.Context, agent wake.Agent, w wake.Work, s wake.Scrubber) error {
	if s == nil {
		return runAgent(ctx, agent, w)
	}
	sw := &scrubWork{w: w, s: s}
	err := runAgent(ctx, agent, sw)
	sw.flush()
	if err != nil {
		if clean := s.String(err.Error()); clean != err.Error() {
			return &scrubbedErr{msg: clean}
		}
	}
	return err
}

// scrubbedErr is an agent's error with its values taken out.
type scrubbedErr struct{ msg string }

func (e *scrubbedErr) Error() string { return e.msg }

// Scrubber is the scrubber cfg.Scrub gave, or nil.
func (h *Host) Scrubber() wake.Scrubber { return h.scrub }

var _ wake.Scrubbing = (*Host)(nil)
