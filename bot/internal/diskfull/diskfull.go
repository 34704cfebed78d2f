// Package diskfull tells a write the disk refused from any other failure,
// in a sentence a person can act on.
package diskfull

import (
	"errors"
	"syscall"

	"github.com/agenthost/bots/errcode"
)

// Reason says why the disk refused a write, when it did for a reason a
// person can act on and the server cannot: no space left, a quota
// reached, a read-only filesystem. ok is false for any other error.
func Reason(err error) (reason string, ok bool) {
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return "the server's disk is full", true
	case errors.Is(err, syscall.EROFS):
		return "the server's disk is read-only", true
	}
	return "", false
}

// Unsaved answers a write of what (e.g. "bot://motion") that the disk
// refused as Unavailable, with a sentence that says why and that nothing
// was saved; any other error, and one already given a code other than
// Internal, is returned as it is.
func Unsaved(what string, err error) error {
	if err == nil || errcode.Of(err) != errcode.Internal {
		return err
	}
	if reason, ok := Reason(err); ok {
		return errcode.Wrap(errcode.Unavailable, err, "%s: %s was not saved", reason, what)
	}
	return err
}
