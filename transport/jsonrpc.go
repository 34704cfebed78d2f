package transport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/internal/jsonx"
)

// The JSON-RPC error codes the server answers with. transport is the only
// package that knows these numbers.
const (
	CodeParseError           = -32700 // the frame is not JSON
	CodeInvalidRequest       = -32600 // JSON, but not a JSON-RPC request the server can take now
	CodeMethodNotFound       = -32601 // an unknown method, an unserved scheme or operation (errcode.Unsupported)
	CodeInvalidParams        = -32602 // params of the wrong shape (errcode.Invalid)
	CodeInternalError        = -32603 // errcode.Internal (generic message) and errcode.Unavailable
	CodeSessionNotFound      = -32001 // errcode.NotFound on disposeSession
	CodeSessionAlreadyExists = -32003 // errcode.AlreadyExists on createSession
	CodeUnsupportedProtocol  = -32005 // initialize offered no version the server speaks
	CodeAuthRequired         = -32007 // errcode.Unauthenticated
	CodeNotFound             = -32008 // errcode.NotFound
	CodePermissionDenied     = -32009 // errcode.PermissionDenied
	CodeAlreadyExists        = -32010 // errcode.AlreadyExists
	CodeConflict             = -32011 // errcode.Conflict
	jsonrpcVersion           = "2.0"
	rootChannel              = "ahp-root://"
	internalMessage          = "internal error"
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
	// route is what params hold that a request is routed by, read with
	// the frame.
	route routeParams
}

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
// as raw JSON, with whether each was present; jsonrpc and method decoded.
type frameFields struct {
	id, params, result                      json.RawMessage
	jsonrpc, method                         string
	hasID, hasJSONRPC, hasMethod, hasParams bool
	hasResult, hasError                     bool
	// jsonrpcOK and methodOK say each was a string or null, which
	// json.Unmarshal decodes into a string without an error.
	jsonrpcOK, methodOK bool
	route               routeParams
}

// routeParams are the members of a request's params that the transport
// routes by, decoded with the frame: they are decoded for every method,
// and used by those that take them.
type routeParams struct {
	channel, uri, source, destination optString
	// badChannel is set when params.channel is neither a string nor
	// null; badRoute when params.uri, .source or .destination is not.
	// decodeParams then says which, as it would have.
	badChannel, badRoute bool
}

// optString is a member that may be absent: set is false when it is, or
// is null.
type optString struct {
	v   string
	set bool
}

// readMessage decodes one text frame into m, which the caller may keep on
// its stack, reading it once. On failure it returns the error to answer
// and the id to answer it with (null when the id could not be read).
func readMessage(data []byte, m *message) (json.RawMessage, *wireError) {
	var f frameFields
	var d jsonx.Decoder
	d.Reset(data)
	if d.Peek() == '{' {
		readFrame(&d, &f)
	}
	if !d.End() {
		switch {
		case !jsonx.Valid(data):
			return nullID, &wireError{Code: CodeParseError, Message: "parse error: the frame is not valid JSON"}
		case d.Peek() == '[':
			return nullID, &wireError{Code: CodeInvalidRequest, Message: "invalid request: batches are not supported; send one message per frame"}
		}
		return nullID, &wireError{Code: CodeInvalidRequest, Message: "invalid request: a JSON-RPC message is a JSON object"}
	}
	return checkFrame(&f, m)
}

// readFrame reads the members of the frame's object into f, as decoding
// it into a map[string]json.RawMessage would (the last of a repeated key
// counts), with the members of params that route a request.
func readFrame(d *jsonx.Decoder, f *frameFields) {
	for key := range d.Object {
		switch string(key) {
		case "id":
			f.id, f.hasID = d.Skip(), true
		case "jsonrpc":
			f.jsonrpc, f.jsonrpcOK = readName(d)
			f.hasJSONRPC = true
		case "method":
			f.method, f.methodOK = readName(d)
			f.hasMethod = true
		case "params":
			f.hasParams = true
			f.route = routeParams{}
			if d.Peek() != '{' {
				f.params = d.Skip()
				continue
			}
			start := d.Offset()
			readRoute(d, &f.route)
			f.params = d.Data()[start:d.Offset()]
		case "result":
			f.result, f.hasResult = d.Skip(), true
		case "error":
			f.hasError = true
		}
	}
}

// readName reads the value of jsonrpc or method as json.Unmarshal decodes
// it into a string: false when it is neither a string nor null.
func readName(d *jsonx.Decoder) (string, bool) {
	switch d.Peek() {
	case '"':
		v := d.String()
		if known, ok := knownStrings[string(v)]; ok {
			return known, true
		}
		return string(v), true
	case 'n':
		d.Skip()
		return "", true
	}
	d.Skip()
	return "", false
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

// readRoute reads the params object into p as json.Unmarshal decodes it
// into a struct of *string fields named channel, uri, source and
// destination: keys matched without regard to case, the last of a
// repeated key counting, null setting nil.
func readRoute(d *jsonx.Decoder, p *routeParams) {
	for key := range d.Object {
		var field *optString
		bad := &p.badRoute
		switch {
		case jsonx.KeyIs(key, "channel"):
			field, bad = &p.channel, &p.badChannel
		case jsonx.KeyIs(key, "uri"):
			field = &p.uri
		case jsonx.KeyIs(key, "source"):
			field = &p.source
		case jsonx.KeyIs(key, "destination"):
			field = &p.destination
		default:
			continue
		}
		switch d.Peek() {
		case '"':
			v := d.String()
			if string(v) == rootChannel {
				*field = optString{rootChannel, true}
			} else {
				*field = optString{string(v), true}
			}
		case 'n':
			*field = optString{}
		default:
			*bad = true
		}
	}
}

// checkFrame makes m of a frame's members.
func checkFrame(f *frameFields, m *message) (json.RawMessage, *wireError) {
	if f.hasID {
		switch firstByte(f.id) {
		case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			m.ID = f.id // a scalar, so already compact
		default:
			return nullID, &wireError{Code: CodeInvalidRequest, Message: "invalid request: id must be a string or a number"}
		}
	}
	answerID := m.ID
	if answerID == nil {
		answerID = nullID
	}
	m.JSONRPC = f.jsonrpc
	if !f.hasJSONRPC || !f.jsonrpcOK || m.JSONRPC != jsonrpcVersion {
		return answerID, &wireError{Code: CodeInvalidRequest, Message: `invalid request: jsonrpc must be "2.0"`}
	}
	m.Method = f.method
	if f.hasMethod && (!f.methodOK || m.Method == "") {
		return answerID, &wireError{Code: CodeInvalidRequest, Message: "invalid request: method must be a non-empty string"}
	}
	if m.Method == "" {
		// A response: it needs an id and a result or an error.
		if !f.hasID || f.hasResult == f.hasError {
			return answerID, &wireError{Code: CodeInvalidRequest, Message: "invalid request: no method"}
		}
		m.Result = f.result
		return nil, nil
	}
	if p := f.params; f.hasParams && firstByte(p) != 'n' {
		if firstByte(p) != '{' {
			return answerID, &wireError{Code: CodeInvalidParams, Message: "invalid params: params must be an object"}
		}
		m.Params = p
		m.route = f.route
	}
	return nil, nil
}

// firstByte is the first byte of b after space; 0 when there is none.
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
	code, msg := errcode.Of(err), errcode.Message(err)
	if strings.TrimSpace(msg) == "" || code == errcode.Unavailable && msg == internalMessage {
		// an Unavailable that says "internal error" would hide that a
		// retry may succeed.
		msg = emptyMessage(method, code)
	}
	switch code {
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
		return &wireError{Code: CodeInternalError, Message: msg}, false
	}
	return &wireError{Code: CodeInternalError, Message: internalMessage}, true
}

// emptyMessages say what went wrong for a host error of each code whose
// message says nothing, after the method's name.
var emptyMessages = map[errcode.Code]string{
	errcode.Invalid:          "was refused: the request is not valid",
	errcode.NotFound:         "failed: what it names does not exist",
	errcode.PermissionDenied: "was refused: permission denied",
	errcode.AlreadyExists:    "was refused: what it would make exists already",
	errcode.Conflict:         "was refused: what it names changed since it was read",
	errcode.Unauthenticated:  "was refused: authenticate first",
	errcode.Unavailable:      "cannot be served now: try again later",
	errcode.Unsupported:      "is not served here",
}

// emptyMessage is the sentence answered for a host error of code that
// carries none.
func emptyMessage(method string, code errcode.Code) string {
	if what, ok := emptyMessages[code]; ok {
		return method + " " + what
	}
	return internalMessage
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
	case engine.JSONAppender:
		// a result that writes itself (a read of a bot, in one pass).
		e.buf.Grow(1024)
		e.buf.Write(r.AppendJSON(e.buf.AvailableBuffer()))
		return nil
	case ahp.ResourceListResult:
		// a listing of thousands of entries, written in one pass: through
		// reflection, ahp.List's MarshalJSON wrote it, and the encoder
		// then compacted it again.
		e.listResult(r)
		return nil
	}
	return e.value(v)
}

// listResult appends r exactly as value would: {"entries":[{"name":…,
// "type":…},…]}, the entries' strings with HTML characters escaped, as
// ahp.List's json.Marshal escapes them.
func (e *encoder) listResult(r ahp.ResourceListResult) {
	n := len(`{"entries":[]}`)
	for _, d := range r.Entries {
		n += len(d.Name) + len(d.Type) + len(`{"name":"","type":""},`)
	}
	e.buf.Grow(n + n/8)
	b := e.buf.AvailableBuffer()
	b = append(b, `{"entries":[`...)
	for i, d := range r.Entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = jsonx.AppendString(b, d.Name)
		b = append(b, `,"type":`...)
		b = jsonx.AppendString(b, d.Type)
		b = append(b, '}')
	}
	b = append(b, "]}"...)
	e.buf.Write(b)
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
