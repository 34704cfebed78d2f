package acp

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"
)

func TestAgentWordsAreItsMessageOnOneBoundedLineNeverItsJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&sdk.RequestError{Code: -32000, Message: "Authentication required"}, "Authentication required"},
		{&sdk.RequestError{Code: -32603, Message: "Internal error", Data: map[string]any{"details": "quota exceeded"}}, "Internal error: quota exceeded"},
		{&sdk.RequestError{Code: -32603, Message: "Internal error: boom", Data: "boom"}, "Internal error: boom"},
		{errors.New("line one\nline\ttwo\x1b[31m"), "line one line two [31m"},
	} {
		if got := agentWords(tc.err); got != tc.want {
			t.Errorf("agentWords(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
	long := agentWords(errors.New(strings.Repeat("é", 1000)))
	if n := utf8.RuneCountInString(long); n != maxCause+1 || !utf8.ValidString(long) || !strings.HasSuffix(long, "…") {
		t.Errorf("a long message is %d characters (valid %v), want %d and an ellipsis", n, utf8.ValidString(long), maxCause+1)
	}
}

func TestStepErrorSentence(t *testing.T) {
	t.Parallel()
	e := &StepError{Bot: "Motion", Agent: "codex", Step: StepSignIn, Cause: "Authentication required.", Hint: "Run -login codex."}
	if got, want := e.Error(), "Motion's agent codex failed while signing in: Authentication required. Run -login codex."; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	e = &StepError{Agent: "codex", Step: StepTurn, Cause: "it exited with status 1"}
	if got, want := e.Error(), "The agent codex failed during the turn: it exited with status 1."; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
