package transport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/agenthost/bots/bot/errcode"
)

// The JSON-RPC error codes the server answers with. transport is the only
// package that knows these numbers.
const (
	CodeParseError            = -32700 // the frame is not JSON
	CodeInvalidRequest        = -32600 // JSON, but not a JSON-RPC request the server can take now
	CodeMethodNotFound        = -32601 // an unknown method, an unserved scheme or operation (errcode.Unsupported)
	CodeInvalidParams         = -32602 // params of the wrong shape (errcode.Invalid)
	CodeInternalError         = -32603 // errcode.Internal (generic message) and errcode.Unavailable
	CodeSessionNotFound       = -32001 // errcode.NotFound on disposeSession
	CodeSessionAlreadyExists  = -32003 // errcode.AlreadyExists on createSession
	CodeUnsupportedProtocol   = -32005 // initialize offered no version the server speaks
	CodeAuthRequired          = -32007 // errcode.Unauthenticated
	CodeNotFound              = -32008 // errcode.NotFound
	CodePermissionDenied      = -32009 // errcode.PermissionDenied
	CodeAlreadyExists         = -32010 // errcode.AlreadyExists
	CodeConflict              = -32011 // errcode.Conflict
	jsonrpcVersion            = "2.0"
	rootChannel               = "ahp-root://"
	internalMessage           = "internal error"
	unavailableMessageDefault = "unavailable: try again later"
)

// message is one JSON-RPC 2.0 message: a request (id and method), a
// notification (method, no id) or a response (id and result or error).
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *wireError      `json:"error,omitempty"`
}

// isRequest reports whether m expects a response.
func (m *message) isRequest() bool { return m.Method != "" && m.ID != nil }

// isResponse reports whether m answers a request (the server sends none,
// so responses are ignored).
func (m *message) isResponse() bool { return m.Method == "" }

// wireError is the error object of a JSON-RPC error response.
type wireError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *wireError) Error() string { return fmt.Sprintf("json-rpc error %d: %s", e.Code, e.Message) }

// resultResponse is a success response; its result is always present, even
// when null.
type resultResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
}

// notification is what the server sends unasked.
type notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

// Envelope is the params of an action notification: one action on one
// channel, with the serverSeq it was given.
type Envelope struct {
	// Channel is the channel URI as the receiving client spelled it.
	Channel string `json:"channel"`
	// Action is the action, a JSON object with a string "type".
	Action json.RawMessage `json:"action"`
	// ServerSeq is the action's place in the one global sequence.
	ServerSeq int64 `json:"serverSeq"`
	// Origin is the dispatch the action echoes; nil for the server's own.
	Origin *Origin `json:"origin,omitempty"`
	// RejectionReason is set on a rejected dispatch, sent to its sender
	// alone.
	RejectionReason string `json:"rejectionReason,omitempty"`
}

var nullID = json.RawMessage("null")

// decodeFrame decodes one text frame into a JSON-RPC message. On failure
// it returns the error to answer and the id to answer it with (null when
// the id could not be read).
func decodeFrame(data []byte) (*message, json.RawMessage, *wireError) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
		if !json.Valid(data) {
			return nil, nullID, &wireError{Code: CodeParseError, Message: "parse error: the frame is not valid JSON"}
		}
		if firstByte(data) == '[' {
			return nil, nullID, &wireError{Code: CodeInvalidRequest, Message: "invalid request: batches are not supported; send one message per frame"}
		}
		return nil, nullID, &wireError{Code: CodeInvalidRequest, Message: "invalid request: a JSON-RPC message is a JSON object"}
	}
	m := &message{}
	id, hasID := fields["id"]
	if hasID {
		switch firstByte(id) {
		case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			m.ID = compact(id)
		default:
			return nil, nullID, &wireError{Code: CodeInvalidRequest, Message: "invalid request: id must be a string or a number"}
		}
	}
	answerID := m.ID
	if answerID == nil {
		answerID = nullID
	}
	if v, ok := fields["jsonrpc"]; !ok || json.Unmarshal(v, &m.JSONRPC) != nil || m.JSONRPC != jsonrpcVersion {
		return nil, answerID, &wireError{Code: CodeInvalidRequest, Message: `invalid request: jsonrpc must be "2.0"`}
	}
	if v, ok := fields["method"]; ok {
		if json.Unmarshal(v, &m.Method) != nil || m.Method == "" {
			return nil, answerID, &wireError{Code: CodeInvalidRequest, Message: "invalid request: method must be a non-empty string"}
		}
	}
	if m.Method == "" {
		// A response: it needs an id and a result or an error.
		_, hasResult := fields["result"]
		_, hasError := fields["error"]
		if !hasID || hasResult == hasError {
			return nil, answerID, &wireError{Code: CodeInvalidRequest, Message: "invalid request: no method"}
		}
		m.Result = fields["result"]
		return m, nil, nil
	}
	if p, ok := fields["params"]; ok && firstByte(p) != 'n' {
		if firstByte(p) != '{' {
			return nil, answerID, &wireError{Code: CodeInvalidParams, Message: "invalid params: params must be an object"}
		}
		m.Params = p
	}
	return m, nil, nil
}

func firstByte(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

func compact(b []byte) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

// decodeParams decodes a request's params object into v, answering a
// missing or mistyped field with -32602 and a sentence naming it.
func decodeParams(raw json.RawMessage, v any) *wireError {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	err := json.Unmarshal(raw, v)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return invalidParams("params.%s must be %s", te.Field, describeType(te.Type))
	}
	if errors.As(err, &te) {
		return invalidParams("params must be an object")
	}
	return invalidParams("params: %v", err)
}

func describeType(t reflect.Type) string {
	if t == nil {
		return "of another type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(describeType(t.Elem()), "a "), "an ") + "s"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "of another type"
}

func invalidParams(format string, args ...any) *wireError {
	return &wireError{Code: CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

func invalidRequest(format string, args ...any) *wireError {
	return &wireError{Code: CodeInvalidRequest, Message: fmt.Sprintf(format, args...)}
}

func methodNotFound(format string, args ...any) *wireError {
	return &wireError{Code: CodeMethodNotFound, Message: fmt.Sprintf(format, args...)}
}

// errorFor maps a host error to the JSON-RPC error to answer. internal is
// true when the error is Internal: the caller logs it, once.
func errorFor(method string, err error) (e *wireError, internal bool) {
	var we *wireError
	if errors.As(err, &we) {
		return we, false
	}
	msg := errcode.Message(err)
	switch errcode.Of(err) {
	case errcode.Invalid:
		return &wireError{Code: CodeInvalidParams, Message: msg}, false
	case errcode.NotFound:
		if method == "disposeSession" {
			return &wireError{Code: CodeSessionNotFound, Message: msg}, false
		}
		return &wireError{Code: CodeNotFound, Message: msg}, false
	case errcode.PermissionDenied:
		return &wireError{Code: CodePermissionDenied, Message: msg}, false
	case errcode.AlreadyExists:
		if method == "createSession" {
			return &wireError{Code: CodeSessionAlreadyExists, Message: msg}, false
		}
		return &wireError{Code: CodeAlreadyExists, Message: msg}, false
	case errcode.Conflict:
		return &wireError{Code: CodeConflict, Message: msg}, false
	case errcode.Unauthenticated:
		// AuthRequired's data is required: the protected resources to
		// authenticate with. The host names none here.
		return &wireError{Code: CodeAuthRequired, Message: msg, Data: map[string]any{"resources": []any{}}}, false
	case errcode.Unsupported:
		return &wireError{Code: CodeMethodNotFound, Message: msg}, false
	case errcode.Unavailable:
		// AHP has no "try again" code and -32000..-32099 are its to
		// assign, so Unavailable is an InternalError that keeps its
		// message: the requester learns it may try again.
		if msg == internalMessage {
			msg = unavailableMessageDefault
		}
		return &wireError{Code: CodeInternalError, Message: msg}, false
	}
	return &wireError{Code: CodeInternalError, Message: internalMessage}, true
}

// encode marshals v without escaping HTML characters.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// marshalRaw marshals v for use as a json.RawMessage; a RawMessage is
// compacted as is.
func marshalRaw(v any) (json.RawMessage, error) {
	if r, ok := v.(json.RawMessage); ok {
		if !json.Valid(r) {
			return nil, errors.New("invalid JSON")
		}
		return compact(r), nil
	}
	return encode(v)
}
