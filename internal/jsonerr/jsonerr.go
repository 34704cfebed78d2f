// Package jsonerr says where in a JSON text encoding/json found it wrong,
// for the files people write by hand (the users file, the agents file):
// "line 4, column 7" beside the decoder's own words.
package jsonerr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Error is a decoding error with the place in the text it is about.
type Error struct {
	// Line and Column count from 1; Column counts characters, as an
	// editor does.
	Line, Column int
	// Err is encoding/json's error.
	Err error
}

// Error says the place, then what encoding/json said (without its
// "json: ").
func (e *Error) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, strings.TrimPrefix(e.Err.Error(), "json: "))
}

// Unwrap is encoding/json's error.
func (e *Error) Unwrap() error { return e.Err }

// Locate returns err, which decoding data with encoding/json gave, as an
// *Error naming its place: the character a syntax error is at, the end of
// a value of the wrong type, the first key that an unknown field names, or
// the end of a text that ended early. Any other err, or one whose place
// is not in data, is returned as it is (nil as nil).
func Locate(data []byte, err error) error {
	if err == nil {
		return nil
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	at := -1
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF): // a Decoder's text ended early
		at = len(data)
	case errors.As(err, &syn):
		at = int(syn.Offset) - 1 // Offset counts the bytes read, the wrong one among them
	case errors.As(err, &typ):
		at = int(typ.Offset) - 1
	default:
		if key, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			at = keyAt(data, key)
		}
	}
	if syn != nil {
		at = min(at, len(data)) // Unmarshal's text ended early
	}
	if at < 0 || at > len(data) {
		return err
	}
	line := bytes.Count(data[:at], []byte("\n")) + 1
	start := bytes.LastIndexByte(data[:at], '\n') + 1
	return &Error{Line: line, Column: utf8.RuneCount(data[start:at]) + 1, Err: err}
}

// keyAt is the offset of the first member of data whose key is quoted
// (a JSON string as encoding/json quotes it), or -1.
func keyAt(data []byte, quoted string) int {
	for from := 0; ; {
		i := bytes.Index(data[from:], []byte(quoted))
		if i < 0 {
			return -1
		}
		i += from
		rest := bytes.TrimLeft(data[i+len(quoted):], " \t\r\n")
		if len(rest) > 0 && rest[0] == ':' {
			return i
		}
		from = i + 1
	}
}
