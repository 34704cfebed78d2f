package transport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/internal/jsonx"
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

// notification is what the server sends unasked.
type notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

var nullID = json.RawMessage("null")

// frameFields are the members of a frame's object that the server reads,
// as raw JSON, with whether each was present.
type frameFields struct {
	id, jsonrpc, method, params, result     json.RawMessage
	hasID, hasJSONRPC, hasMethod, hasParams bool
	hasResult, hasError                     bool
}

// decodeFrame decodes one text frame into a JSON-RPC message. On failure
// it returns the error to answer and the id to answer it with (null when
// the id could not be read).
func decodeFrame(data []byte) (*message, json.RawMessage, *wireError) {
	var f frameFields
	if !scanFrame(data, &f) {
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
		f.id, f.hasID = fields["id"]
		f.jsonrpc, f.hasJSONRPC = fields["jsonrpc"]
		f.method, f.hasMethod = fields["method"]
		f.params, f.hasParams = fields["params"]
		f.result, f.hasResult = fields["result"]
		_, f.hasError = fields["error"]
	}
	return checkFrame(&f)
}

// checkFrame makes a message of a frame's members.
func checkFrame(f *frameFields) (*message, json.RawMessage, *wireError) {
	m := &message{}
	if f.hasID {
		switch firstByte(f.id) {
		case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			m.ID = f.id // a scalar, so already compact
		default:
			return nil, nullID, &wireError{Code: CodeInvalidRequest, Message: "invalid request: id must be a string or a number"}
		}
	}
	answerID := m.ID
	if answerID == nil {
		answerID = nullID
	}
	if !f.hasJSONRPC || !stringValue(f.jsonrpc, &m.JSONRPC) || m.JSONRPC != jsonrpcVersion {
		return nil, answerID, &wireError{Code: CodeInvalidRequest, Message: `invalid request: jsonrpc must be "2.0"`}
	}
	if f.hasMethod {
		if !stringValue(f.method, &m.Method) || m.Method == "" {
			return nil, answerID, &wireError{Code: CodeInvalidRequest, Message: "invalid request: method must be a non-empty string"}
		}
	}
	if m.Method == "" {
		// A response: it needs an id and a result or an error.
		if !f.hasID || f.hasResult == f.hasError {
			return nil, answerID, &wireError{Code: CodeInvalidRequest, Message: "invalid request: no method"}
		}
		m.Result = f.result
		return m, nil, nil
	}
	if p := f.params; f.hasParams && firstByte(p) != 'n' {
		if firstByte(p) != '{' {
			return nil, answerID, &wireError{Code: CodeInvalidParams, Message: "invalid params: params must be an object"}
		}
		m.Params = p
	}
	return m, nil, nil
}

// stringValue decodes the JSON value raw into *s as json.Unmarshal does
// (null leaves *s as it is); false when raw is not a string.
func stringValue(raw []byte, s *string) bool {
	if v, ok := plainString(raw); ok {
		if known, ok := knownStrings[string(v)]; ok {
			*s = known
		} else {
			*s = string(v)
		}
		return true
	}
	return json.Unmarshal(raw, s) == nil
}

// knownStrings spares an allocation for the strings every frame carries.
var knownStrings = map[string]string{
	jsonrpcVersion: jsonrpcVersion, "ping": "ping", "initialize": "initialize",
	"reconnect": "reconnect", "subscribe": "subscribe", "unsubscribe": "unsubscribe",
	"dispatchAction": "dispatchAction", "resourceRead": "resourceRead",
	"resourceWrite": "resourceWrite", "resourceList": "resourceList",
	"resourceResolve": "resourceResolve", "resourceDelete": "resourceDelete",
	"resourceMove": "resourceMove", "resourceCopy": "resourceCopy",
	"resourceMkdir": "resourceMkdir", "resourceRequest": "resourceRequest",
	"createResourceWatch": "createResourceWatch",
}

// plainString returns the contents of raw when it is a JSON string that
// decodes to exactly those bytes: no escapes, valid UTF-8 (json.Unmarshal
// would replace invalid bytes).
func plainString(raw []byte) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil, false
	}
	v := raw[1 : len(raw)-1]
	ascii := true
	for _, c := range v {
		if c == '\\' || c == '"' || c < 0x20 {
			return nil, false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	if !ascii && !utf8.Valid(v) {
		return nil, false
	}
	return v, true
}

// scanFrame reads the top-level members of data into f without copying,
// as decoding into a map[string]json.RawMessage would. It answers false,
// leaving the frame to that slower decoding, when data is not valid JSON,
// not an object, or has a key that is not plain ASCII.
func scanFrame(data []byte, f *frameFields) bool {
	if !validJSON(data) {
		return false
	}
	ok := scanObject(data, func(key, val []byte) bool {
		switch string(key) {
		case "id":
			f.id, f.hasID = val, true
		case "jsonrpc":
			f.jsonrpc, f.hasJSONRPC = val, true
		case "method":
			f.method, f.hasMethod = val, true
		case "params":
			f.params, f.hasParams = val, true
		case "result":
			f.result, f.hasResult = val, true
		case "error":
			f.hasError = true
		}
		return true
	})
	if !ok {
		*f = frameFields{}
	}
	return ok
}

// scanObject calls fn with each member of the JSON object data, which must
// be valid JSON, in order: its key, unquoted, and its value, without the
// space around it. It answers false when data is not an object, a key is
// not plain printable ASCII (escapes, other characters: encoding/json
// decodes those, and matches them to fields by folding), or fn answers
// false.
func scanObject(data []byte, fn func(key, val []byte) bool) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return true
	}
	for i < len(data) {
		if data[i] != '"' {
			return false
		}
		start := i + 1
		j := start
		for j < len(data) && data[j] != '"' {
			if c := data[j]; c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
				return false
			}
			j++
		}
		if j >= len(data) {
			return false
		}
		key := data[start:j]
		i = skipSpace(data, j+1)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		i = skipSpace(data, i+1)
		end := skipValue(data, i)
		if end <= i {
			return false
		}
		if !fn(key, data[i:end]) {
			return false
		}
		i = skipSpace(data, end)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case '}':
			return true
		case ',':
			i = skipSpace(data, i+1)
		default:
			return false
		}
	}
	return false
}

// maxValidDepth is the nesting validJSON follows itself; deeper frames
// are left to json.Valid, which allows 10,000 levels.
const maxValidDepth = 64

// validJSON reports json.Valid(data): one pass over the bytes without the
// per-byte state machine encoding/json steps through.
func validJSON(data []byte) bool {
	var objects uint64 // bit d is set when level d+1 is an object
	depth := 0
	i := skipSpace(data, 0)
	for {
		// a value starts at i.
		if i >= len(data) {
			return false
		}
		switch c := data[i]; c {
		case '{', '[':
			if depth == maxValidDepth {
				return json.Valid(data)
			}
			objects &^= 1 << depth
			if c == '{' {
				objects |= 1 << depth
			}
			depth++
			i = skipSpace(data, i+1)
			if i < len(data) && (c == '{' && data[i] == '}' || c == '[' && data[i] == ']') {
				depth--
				i++
				break // an empty object or array: a value ends
			}
			if c == '{' {
				if i = validKey(data, i); i < 0 {
					return false
				}
			}
			continue // a member's value starts
		case '"':
			if i = validString(data, i); i < 0 {
				return false
			}
		case 't':
			if i = validLiteral(data, i, "true"); i < 0 {
				return false
			}
		case 'f':
			if i = validLiteral(data, i, "false"); i < 0 {
				return false
			}
		case 'n':
			if i = validLiteral(data, i, "null"); i < 0 {
				return false
			}
		default:
			if i = validNumber(data, i); i < 0 {
				return false
			}
		}
		// a value ended before i: what follows closes its containers,
		// or separates it from the next.
		for {
			i = skipSpace(data, i)
			if depth == 0 {
				return i == len(data)
			}
			if i >= len(data) {
				return false
			}
			inObject := objects&(1<<(depth-1)) != 0
			c := data[i]
			if c == '}' && inObject || c == ']' && !inObject {
				depth--
				i++
				continue
			}
			if c != ',' {
				return false
			}
			i = skipSpace(data, i+1)
			if inObject {
				if i = validKey(data, i); i < 0 {
					return false
				}
			}
			break
		}
	}
}

// validKey reads an object's key at data[i] with the colon after it: the
// index after the space that follows the colon, or -1.
func validKey(data []byte, i int) int {
	if i >= len(data) || data[i] != '"' {
		return -1
	}
	if i = validString(data, i); i < 0 {
		return -1
	}
	i = skipSpace(data, i)
	if i >= len(data) || data[i] != ':' {
		return -1
	}
	return skipSpace(data, i+1)
}

// validString reads the string starting at data[i], a quote: the index
// after it, or -1. Any byte from 0x20 on may appear unescaped, as
// encoding/json allows.
func validString(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c == '\\':
			i++
			if i >= len(data) {
				return -1
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(data) {
					return -1
				}
				for _, h := range data[i+1 : i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return -1
					}
				}
				i += 4
			default:
				return -1
			}
		}
	}
	return -1
}

// validLiteral reads lit at data[i]: the index after it, or -1.
func validLiteral(data []byte, i int, lit string) int {
	if len(data)-i < len(lit) || string(data[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// validNumber reads the number at data[i]: the index after it, or -1.
func validNumber(data []byte, i int) int {
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && '1' <= data[i] && data[i] <= '9':
		i = skipDigits(data, i+1)
	default:
		return -1
	}
	if i < len(data) && data[i] == '.' {
		j := skipDigits(data, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := skipDigits(data, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func skipDigits(data []byte, i int) int {
	for i < len(data) && '0' <= data[i] && data[i] <= '9' {
		i++
	}
	return i
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// skipValue returns the end of the valid JSON value starting at data[i]; i
// itself when there is none.
func skipValue(data []byte, i int) int {
	if i >= len(data) {
		return i
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				j = skipString(data, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return i
	}
	j := i
	for j < len(data) {
		switch data[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return j
		}
		j++
	}
	return j
}

// skipString returns the end of the JSON string starting at data[i].
func skipString(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(data)
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
		if msg == internalMessage || msg == "" {
			msg = unavailableMessageDefault
		}
		return &wireError{Code: CodeInternalError, Message: msg}, false
	}
	return &wireError{Code: CodeInternalError, Message: internalMessage}, true
}

// encoder is a reusable buffer with a JSON encoder writing into it.
type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// maxPooledBuffer is the largest buffer put back into encoders: a rare
// large answer does not stay in memory.
const maxPooledBuffer = 64 << 10

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

func getEncoder() *encoder { return encoders.Get().(*encoder) }

// free puts e back for reuse; its bytes must no longer be used.
func (e *encoder) free() {
	if e.buf.Cap() > maxPooledBuffer {
		return
	}
	e.buf.Reset()
	encoders.Put(e)
}

// value appends v as encode writes it.
func (e *encoder) value(v any) error {
	n := e.buf.Len()
	if err := e.enc.Encode(v); err != nil {
		e.buf.Truncate(n)
		return err
	}
	e.buf.Truncate(e.buf.Len() - 1) // the newline Encode ends with
	return nil
}

// rawValue appends v as marshalRaw writes it.
func (e *encoder) rawValue(v any) error {
	switch r := v.(type) {
	case struct{}:
		e.buf.WriteString("{}")
		return nil
	case json.RawMessage:
		// a host's own JSON: checked and compacted (Compact fails, and
		// writes nothing, on invalid JSON).
		if len(r) == 0 {
			return errors.New("invalid JSON")
		}
		return json.Compact(&e.buf, r)
	case ahp.ResourceReadResult:
		// the answer of every read, written without reflection.
		e.readResult(r)
		return nil
	}
	return e.value(v)
}

// readResult appends r exactly as value would: {"data":…,"encoding":…,
// "contentType":…}, the content type left out when empty, HTML characters
// not escaped.
func (e *encoder) readResult(r ahp.ResourceReadResult) {
	// room for the escapes of JSON data too: a quote every few bytes.
	e.buf.Grow(len(r.Data) + len(r.Data)/4 + len(r.Encoding) + len(r.ContentType) + len(`{"data":"","encoding":"","contentType":""}`) + 16)
	b := e.buf.AvailableBuffer()
	b = append(b, `{"data":`...)
	b = jsonx.AppendStringNoHTML(b, r.Data)
	b = append(b, `,"encoding":`...)
	b = jsonx.AppendStringNoHTML(b, r.Encoding)
	if r.ContentType != "" {
		b = append(b, `,"contentType":`...)
		b = jsonx.AppendStringNoHTML(b, r.ContentType)
	}
	b = append(b, '}')
	e.buf.Write(b)
}

// result writes the success response to id: {"jsonrpc":"2.0","id":id,
// "result":result}, result as marshalRaw writes it (and always present,
// even when null). id is compact JSON: a decoded frame's id.
func (e *encoder) result(id json.RawMessage, result any) error {
	e.buf.WriteString(`{"jsonrpc":"2.0","id":`)
	e.buf.Write(id)
	e.buf.WriteString(`,"result":`)
	if err := e.rawValue(result); err != nil {
		e.buf.Reset()
		return err
	}
	e.buf.WriteByte('}')
	return nil
}

// bytes returns a copy of what e holds, for a message that is queued.
func (e *encoder) bytes() []byte { return bytes.Clone(e.buf.Bytes()) }

// encode marshals v without escaping HTML characters.
func encode(v any) ([]byte, error) {
	e := getEncoder()
	defer e.free()
	if err := e.value(v); err != nil {
		return nil, err
	}
	return e.bytes(), nil
}

// marshalRaw marshals v for use as a json.RawMessage; a RawMessage is
// checked and compacted.
func marshalRaw(v any) (json.RawMessage, error) {
	e := getEncoder()
	defer e.free()
	if err := e.rawValue(v); err != nil {
		return nil, err
	}
	return e.bytes(), nil
}
