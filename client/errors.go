package client

import (
	"encoding/json"
	"fmt"

	"github.com/agenthost/bots/errcode"
)

// RPCError is a JSON-RPC error the server answered, as it came. It
// unwraps to an *errcode.Error with the code the number stands for, so
// errcode.Of and errors.As find the service's code.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error is the server's message, which names what was wrong.
func (e *RPCError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("json-rpc error %d", e.Code)
	}
	return e.Message
}

// Unwrap returns the error as an *errcode.Error of Code(e.Code, e.Message).
func (e *RPCError) Unwrap() error {
	return &errcode.Error{Code: Code(e.Code, e.Message), Message: e.Message}
}

// The JSON-RPC error numbers a bots server answers with (transport's
// Code… constants; a test checks they agree).
const (
	codeParseError           = -32700
	codeInvalidRequest       = -32600
	codeMethodNotFound       = -32601
	codeInvalidParams        = -32602
	codeInternalError        = -32603
	codeSessionNotFound      = -32001
	codeSessionAlreadyExists = -32003
	codeUnsupportedProtocol  = -32005
	codeAuthRequired         = -32007
	codeNotFound             = -32008
	codePermissionDenied     = -32009
	codeAlreadyExists        = -32010
	codeConflict             = -32011
)

// internalMessage is what the server answers for an error it logs
// instead of telling.
const internalMessage = "internal error"

// Code is the errcode.Code the server's service gave for a JSON-RPC
// error: the inverse of the server's mapping. -32603 is Internal when its
// message is the server's generic one, else Unavailable (the server
// sends Unavailable as -32603 with its message, so that a caller learns
// it may try again).
func Code(rpcCode int, message string) errcode.Code {
	switch rpcCode {
	case codeInvalidParams, codeInvalidRequest, codeParseError:
		return errcode.Invalid
	case codeMethodNotFound, codeUnsupportedProtocol:
		return errcode.Unsupported
	case codeSessionNotFound, codeNotFound:
		return errcode.NotFound
	case codePermissionDenied:
		return errcode.PermissionDenied
	case codeSessionAlreadyExists, codeAlreadyExists:
		return errcode.AlreadyExists
	case codeConflict:
		return errcode.Conflict
	case codeAuthRequired:
		return errcode.Unauthenticated
	case codeInternalError:
		if message != internalMessage {
			return errcode.Unavailable
		}
	}
	return errcode.Internal
}

// asError is e as the client returns it.
func (e *RPCError) asError() error { return e }
