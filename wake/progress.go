package wake

import (
	"context"
	"errors"
)

// progressKey is the context key of a Progress.
type progressKey struct{}

// Progress hears what a back session's start is doing ("Starting Claude
// Code…"), in words a person reads while the main turn waits.
type Progress func(text string)

// WithProgress returns ctx carrying p: a Harness's Open given ctx (through
// SessionHost.Start) reports its steps to p with ReportProgress.
func WithProgress(ctx context.Context, p Progress) context.Context {
	return context.WithValue(ctx, progressKey{}, p)
}

// ReportProgress tells ctx's Progress, if any, what a start is doing; ""
// says the start is over, so that what was shown may be cleared. A
// harness reports a start wherever it happens: at Open, and when a turn
// starts the agent again (after a restart of the server, or after its
// process ended), where the session host shows it in the turn (wake/local's Host:
// as the back chat's activity, which the Waker shows in the main turn).
func ReportProgress(ctx context.Context, text string) {
	if p, ok := ctx.Value(progressKey{}).(Progress); ok && p != nil {
		p(text)
	}
}

// Explained is an error a harness has already told in one sentence for the
// person (naming the bot, the agent and the step, and what to do when that
// is known): the wake shows Explain's sentence as it is, without words of
// its own around it.
type Explained interface {
	error
	// Explain returns the sentence.
	Explain() string
}

// explained returns the sentence of an Explained error in err's chain.
func explained(err error) (string, bool) {
	var e Explained
	if errors.As(err, &e) {
		return e.Explain(), true
	}
	return "", false
}
