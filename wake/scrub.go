package wake

import (
	"context"
	"encoding/json"
	"sync"
	"unicode/utf8"

	"github.com/agenthost/bots/ahp"
)

// Scrubber takes secret values (connector credentials) out of text that
// leaves a back session. connector.Scrubber is one. It must be safe to use
// concurrently.
type Scrubber interface {
	// String returns s with every secret value it knows replaced.
	String(s string) string
	// Longest is the length in bytes of the longest text String replaces;
	// 0 when it knows none.
	Longest() int
}

// Scrubbing is an optional interface of a SessionHost whose sessions may
// hold secrets: the Waker takes every value its Scrubber knows out of what
// it carries from those sessions into a main chat, unless Config.Scrub
// names a scrubber of its own. LocalHost is one.
type Scrubbing interface {
	Scrubber() Scrubber
}

// scrubAction returns a with every value s knows taken out of its text. An
// action holding none is returned as it is; one holding some is rebuilt
// from its scrubbed JSON (a value's JSON-escaped form is among those a
// connector.Scrubber replaces).
func scrubAction(s Scrubber, a ahp.Action) ahp.Action {
	if s == nil || s.Longest() == 0 {
		return a
	}
	data, err := json.Marshal(a)
	if err != nil {
		return a
	}
	clean := s.String(string(data))
	if clean == string(data) {
		return a
	}
	var out ahp.Action
	if err := json.Unmarshal([]byte(clean), &out); err != nil {
		// Never the unscrubbed action: an action of no known body, which
		// reducers leave alone, carries the scrubbed JSON.
		return ahp.Action{Type: a.Type, Raw: json.RawMessage(clean)}
	}
	return out
}

// scrubValue returns v with every value s knows taken out of its JSON.
func scrubValue[T any](s Scrubber, v T) T {
	data, err := json.Marshal(v)
	if err != nil {
		return v
	}
	clean := s.String(string(data))
	if clean == string(data) {
		return v
	}
	var out T
	if err := json.Unmarshal([]byte(clean), &out); err != nil {
		return out
	}
	return out
}

// scrubMain is a Main that scrubs every action before it reaches the main
// chat: post_message's text, relayed questions and approvals, tool
// results, a back turn's final text and errors.
type scrubMain struct {
	main Main
	s    Scrubber
}

func (m scrubMain) Chat(a ahp.Action) bool { return m.main.Chat(scrubAction(m.s, a)) }
func (m scrubMain) Session(a ahp.Action)   { m.main.Session(scrubAction(m.s, a)) }

// scrubbing returns main scrubbed with s, or main itself when s is nil.
func scrubbing(main Main, s Scrubber) Main {
	if s == nil {
		return main
	}
	return scrubMain{main: main, s: s}
}

// stream scrubs text that arrives in pieces: it holds back the last
// Longest()-1 bytes, where a value may begin that the next piece ends,
// until the next piece or the flush.
type stream struct {
	held string
}

// next takes a piece and returns what may be shown of the text so far.
func (st *stream) next(s Scrubber, piece string) string {
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
func (st *stream) flush(s Scrubber) string {
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
	w Work
	s Scrubber

	mu            sync.Mutex
	reply, reason stream
}

var (
	_ Reasoner     = (*scrubWork)(nil)
	_ ToolReporter = (*scrubWork)(nil)
	_ Notifier     = (*scrubWork)(nil)
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
	r, ok := sw.w.(Reasoner)
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
	if r, ok := sw.w.(Reasoner); ok {
		if out := sw.reason.flush(sw.s); out != "" {
			r.Reason(out)
		}
	}
}

func (sw *scrubWork) Notify(text string) {
	if n, ok := sw.w.(Notifier); ok {
		n.Notify(sw.s.String(text))
	}
}

func (sw *scrubWork) ReportTool(r ToolReport) {
	tr, ok := sw.w.(ToolReporter)
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
	return sw.w.Ask(ctx, scrubValue(sw.s, questions))
}

func (sw *scrubWork) Approve(ctx context.Context, a Approval) (bool, error) {
	a.ToolName, a.DisplayName = sw.s.String(a.ToolName), sw.s.String(a.DisplayName)
	a.Invocation, a.Input = sw.s.String(a.Invocation), sw.s.String(a.Input)
	return sw.w.Approve(ctx, a)
}

// runScrubbed runs one turn of agent through w, scrubbed with s when s is
// not nil, handing on what the streams held back once the turn returns.
func runScrubbed(ctx context.Context, agent Agent, w Work, s Scrubber) error {
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
func (h *LocalHost) Scrubber() Scrubber { return h.scrub }

var _ Scrubbing = (*LocalHost)(nil)
