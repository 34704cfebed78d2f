// Package errcode is the error model at the service boundary: one error type
// carrying a small semantic code and a one-sentence message for the person
// who made the request.
//
// Ports return their own sentinel errors (record.ErrNotFound, …); the bot
// service turns them into an *Error with a code, and transport alone maps a
// code to a JSON-RPC number. Errors without a code are Internal: the edge logs
// them once and answers with a generic message.
package errcode

import (
	"errors"
	"fmt"
)

// Code is the kind of failure, independent of any wire protocol.
type Code int

// The codes. Internal is the zero value so that an error nobody classified is
// never mistaken for the requester's fault.
const (
	Internal         Code = iota // a bug or an I/O failure; details are logged, not answered
	Invalid                      // the request is malformed or breaks a rule
	NotFound                     // the thing named does not exist
	PermissionDenied             // the requester may not do this
	AlreadyExists                // the thing to be made exists, or its name is spent
	Conflict                     // a precondition (ifMatch) does not hold
	Unauthenticated              // the requester is not signed in
	Unavailable                  // try again later: shutting down, overloaded
	Unsupported                  // the operation or scheme is not served
)

var codeNames = [...]string{
	Internal:         "internal",
	Invalid:          "invalid",
	NotFound:         "not found",
	PermissionDenied: "permission denied",
	AlreadyExists:    "already exists",
	Conflict:         "conflict",
	Unauthenticated:  "unauthenticated",
	Unavailable:      "unavailable",
	Unsupported:      "unsupported",
}

// String names the code in lower case.
func (c Code) String() string {
	if c < 0 || int(c) >= len(codeNames) {
		return fmt.Sprintf("code(%d)", int(c))
	}
	return codeNames[c]
}

// Error is a failure with a code and a message fit to show the requester.
type Error struct {
	Code    Code
	Message string // one sentence naming what was wrong; never holds a secret
	Err     error  // the cause, for logs and errors.Is; never shown on the wire
}

// Error returns the message, followed by the cause when there is one.
func (e *Error) Error() string {
	if e.Err != nil && e.Message == "" {
		return e.Err.Error()
	}
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// New returns an *Error with the code and a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error with the code and message that keeps err as its cause.
func Wrap(code Code, err error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}

// Of returns the code of the first *Error in err's chain, Internal when there
// is none. Of(nil) is Internal too; callers check for nil first.
func Of(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// Message returns what may be shown to the requester: the message of the
// first *Error in err's chain with a code other than Internal, else "internal
// error".
func Message(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Code != Internal {
		return e.Message
	}
	return "internal error"
}
