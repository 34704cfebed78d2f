package acp

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"unicode"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agenthost/bots/wake"
)

// Step is what a back session's agent was doing when it failed.
type Step string

// The steps an agent fails at.
const (
	// StepStart is starting the child and initialize.
	StepStart Step = "starting"
	// StepSignIn is authenticate.
	StepSignIn Step = "signing in"
	// StepOpen is session/new or session/load.
	StepOpen Step = "opening the session"
	// StepTurn is a turn: session/prompt and what it streams.
	StepTurn Step = "the turn"
)

// during is the step as the failure sentence says it.
func (s Step) during() string {
	if s == StepTurn {
		return "during the turn"
	}
	return "while " + string(s)
}

// StepError is a failure of a back session's agent told the way a person
// reads it in the chat: one sentence naming the bot, the agent and the
// step, with the cause in words, then what to do when it is known.
type StepError struct {
	// Bot is the bot's name; "" when the session names none.
	Bot string
	// Agent is the agent's provider name, as the agents file names it.
	Agent string
	// Step is what the agent was doing.
	Step Step
	// Cause is what went wrong, in words: the agent's own message, how its
	// child ended, or which limit stopped it.
	Cause string
	// Said is the agent's own line (on stderr, or in the debug log it
	// keeps) that told the cause, else its last meaningful one, cleaned
	// and scrubbed; "" when it said nothing more than Cause.
	Said string
	// Hint says what to do next, as a sentence.
	Hint string
	// Err is the error underneath, for errors.Is and errors.As.
	Err error
}

// Error is the sentence the person reads, the agent's own line, then
// what to do.
func (e *StepError) Error() string {
	who := "The agent " + e.Agent
	if e.Bot != "" {
		who = e.Bot + "'s agent " + e.Agent
	}
	s := fmt.Sprintf("%s failed %s: %s.", who, e.Step.during(), strings.TrimRight(e.Cause, ". "))
	if e.Said != "" {
		s += fmt.Sprintf(" It wrote: \"%s\".", strings.TrimRight(e.Said, "."))
	}
	if e.Hint != "" {
		s += " " + e.Hint
	}
	return s
}

// Unwrap returns the error underneath.
func (e *StepError) Unwrap() error { return e.Err }

// Is reports a failure of any step but the turn as wake.ErrNotStarted.
func (e *StepError) Is(target error) bool { return target == wake.ErrNotStarted && e.Step != StepTurn }

// Explain returns the sentence, so that the wake shows it as it is: it
// already names the bot, the agent and the step.
func (e *StepError) Explain() string { return e.Error() }

// maxCause bounds the agent's own words in a failure sentence.
const maxCause = 300

// agentWords returns what an agent said in err, as words: a JSON-RPC
// error's message (and its data when that is text), never its JSON.
func agentWords(err error) string {
	var re *sdk.RequestError
	if !errors.As(err, &re) {
		return clean(err.Error())
	}
	msg := re.Message
	if d := dataText(re.Data); d != "" && !strings.Contains(msg, d) {
		msg += ": " + d
	}
	return clean(msg)
}

// dataText is a JSON-RPC error's data when it says something in words.
func dataText(data any) string {
	switch d := data.(type) {
	case string:
		return d
	case map[string]any:
		for _, k := range []string{"message", "details", "error"} {
			if s, ok := d[k].(string); ok {
				return s
			}
		}
	}
	return ""
}

// clean makes untrusted words one short line.
func clean(s string) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if r := []rune(s); len(r) > maxCause {
		s = string(r[:maxCause]) + "…"
	}
	return s
}

// exitWords says how a reaped process ended: its exit status or the
// signal that ended it.
func exitWords(err error) string {
	if err == nil {
		return "it exited with status 0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ProcessState != nil {
		return stateWords(ee.ProcessState)
	}
	return "it ended: " + clean(err.Error())
}

// stateWords says how a process ended from its state.
func stateWords(ps *os.ProcessState) string {
	type signaled interface {
		Signaled() bool
		Signal() syscall.Signal
	}
	if ws, ok := ps.Sys().(signaled); ok && ws.Signaled() {
		return fmt.Sprintf("it was killed by signal %d (%s)", int(ws.Signal()), ws.Signal())
	}
	return fmt.Sprintf("it exited with status %d", ps.ExitCode())
}
