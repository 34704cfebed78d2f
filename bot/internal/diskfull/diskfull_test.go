package diskfull_test

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/agenthost/bots/bot/internal/diskfull"
	"github.com/agenthost/bots/errcode"
)

func TestReasonNamesOnlyWhatTheDiskRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want string
	}{
		{&fs.PathError{Op: "write", Path: "/x", Err: syscall.ENOSPC}, "the server's disk is full"},
		{fmt.Errorf("save: %w", syscall.EDQUOT), "the server's disk is full"},
		{fmt.Errorf("save: %w", syscall.EROFS), "the server's disk is read-only"},
		{syscall.EACCES, ""},
		{errors.New("no space"), ""},
		{nil, ""},
	} {
		got, ok := diskfull.Reason(c.err)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("Reason(%v) = %q, %v; want %q", c.err, got, ok, c.want)
		}
	}
}

func TestUnsavedSaysWhatWasNotSavedAndKeepsOtherErrors(t *testing.T) {
	t.Parallel()
	full := fmt.Errorf("write bot.md: %w", syscall.ENOSPC)
	err := diskfull.Unsaved("bot://motion", full)
	if errcode.Of(err) != errcode.Unavailable || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a full disk: %v (%v), want Unavailable wrapping ENOSPC", err, errcode.Of(err))
	}
	if msg := errcode.Message(err); !strings.Contains(msg, "disk is full") || !strings.Contains(msg, "bot://motion was not saved") {
		t.Errorf("the sentence %q does not say why and what was not saved", msg)
	}
	other := errors.New("the store is closed")
	if got := diskfull.Unsaved("bot://motion", other); got != other {
		t.Errorf("another error came back as %v", got)
	}
	coded := errcode.Wrap(errcode.Conflict, full, "changed meanwhile")
	if got := diskfull.Unsaved("bot://motion", coded); got != coded {
		t.Errorf("an error with a code of its own came back as %v", got)
	}
	if diskfull.Unsaved("bot://motion", nil) != nil {
		t.Error("no error came back as one")
	}
}
