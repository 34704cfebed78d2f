package wake

import (
	"encoding/json"

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
// names a scrubber of its own, as wake/local's Host does.
type Scrubbing interface {
	Scrubber() Scrubber
}

// ScrubAction returns a with every value s knows taken out of its text. An
// action holding none is returned as it is; one holding some is rebuilt
// from its scrubbed JSON (a value's JSON-escaped form is among those a
// connector.Scrubber replaces).
func ScrubAction(s Scrubber, a ahp.Action) ahp.Action {
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

// ScrubValue returns v with every value s knows taken out of its JSON.
func ScrubValue[T any](s Scrubber, v T) T {
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

func (m scrubMain) Chat(a ahp.Action) bool { return m.main.Chat(ScrubAction(m.s, a)) }
func (m scrubMain) Session(a ahp.Action)   { m.main.Session(ScrubAction(m.s, a)) }

// scrubbing returns main scrubbed with s, or main itself when s is nil.
func scrubbing(main Main, s Scrubber) Main {
	if s == nil {
		return main
	}
	return scrubMain{main: main, s: s}
}
