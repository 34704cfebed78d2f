package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/coder/websocket"

	"github.com/agenthost/bots/internal/waittest"
)

// decodeFrameByMap is decodeFrame by encoding/json: every frame decoded
// into a map. The one pass must answer exactly as it does.
func decodeFrameByMap(data []byte) (*message, json.RawMessage, *wireError) {
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

var fastPathFrames = []string{
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"channel":"ahp-root://"}}`,
	` { "jsonrpc" : "2.0" , "id" : "a\"b" , "method" : "resourceRead" , "params" : { "uri" : "bot://x" } } `,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"channel":"ahp-root://"},"id":2}`,
	`{"jsonrpc":"2.0","ID":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","\u0069d":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1,"method":"p\u0069ng"}`,
	`{"jsonrpc":"2.0","id":1,"method":"pïng"}`,
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xffng\"}",
	`{"jsonrpc":"2.0","id":1,"method":null}`,
	`{"jsonrpc":null,"id":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":-1.5e3,"method":"x","params":[{"a":"]}"}]}`,
	`{"jsonrpc":"2.0","id":1,"result":{"a":[1,2,{"b":"}"}]},"x":{}}`,
	`{"jsonrpc":"2.0","id":1,"error":null}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":null}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":true}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":"\\"}}`,
	`{}`, `{ }`, `[]`, `null`, `""`, `1`, ``, `{`, `{"a":1}{}`, `{"jsonrpc":"2.0","id":{}}`,
}

func TestDecodeFrameFastPathAgrees(t *testing.T) {
	t.Parallel()
	for _, s := range fastPathFrames {
		checkDecodeAgrees(t, []byte(s))
	}
}

func FuzzDecodeFrameFastPath(f *testing.F) {
	for _, s := range fastPathFrames {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkDecodeAgrees(t, data) })
}

func checkDecodeAgrees(t *testing.T, data []byte) {
	t.Helper()
	m, id, werr := decodeFrame(data)
	wm, wid, wwerr := decodeFrameByMap(data)
	if !reflect.DeepEqual(werr, wwerr) || !bytes.Equal(id, wid) {
		t.Fatalf("%q: error %v id %s, want %v id %s", data, werr, id, wwerr, wid)
	}
	if (m == nil) != (wm == nil) {
		t.Fatalf("%q: message %v, want %v", data, m, wm)
	}
	if m == nil {
		return
	}
	if m.JSONRPC != wm.JSONRPC || m.Method != wm.Method || !bytes.Equal(m.ID, wm.ID) ||
		!bytes.Equal(m.Params, wm.Params) || !bytes.Equal(m.Result, wm.Result) ||
		(m.ID == nil) != (wm.ID == nil) || (m.Params == nil) != (wm.Params == nil) {
		t.Fatalf("%q: decoded %+v, want %+v", data, m, wm)
	}
}

var resourceParamsCases = []string{
	``, `{}`, `{"channel":"ahp-root://","uri":"bot://motion"}`,
	`{"URI":"bot://a","Uri":"bot://b","channel":null}`,
	`{"uri":"bot://a","uri":null}`,
	`{"uri":"bot://ä","source":"s","destination":"d","x":{"uri":1}}`,
	`{"uri":1}`, `{"channel":"a\"b"}`, `{"ur\u0069":"x"}`, `{"uri":"caf\u00e9"}`,
	"{\"uri\":\"\xff\"}", `{ "uri" : "x" , "encoding" : "base64" }`, `{"channel":1,"uri":"x"}`,
	`{"ſource":"s","destinatioN":"d"}`, `{"uri":"\ud800"}`, `{"channel":"ahp-root://","channel":[]}`,
}

func TestRouteParamsAgree(t *testing.T) {
	t.Parallel()
	for _, s := range resourceParamsCases {
		checkRouteParamsAgree(t, []byte(s))
	}
}

// FuzzRouteParams checks that the params a frame's one pass routes by are
// what json.Unmarshal decodes, and fail where it fails.
func FuzzRouteParams(f *testing.F) {
	for _, s := range resourceParamsCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) || firstByte(raw) != '{' {
			return // handle sees objects of valid frames only
		}
		checkRouteParamsAgree(t, raw)
	})
}

func checkRouteParamsAgree(t *testing.T, raw []byte) {
	t.Helper()
	frame := []byte(`{"jsonrpc":"2.0","id":1,"method":"resourceRead","params":` + string(raw) + `}`)
	if len(raw) == 0 {
		frame = []byte(`{"jsonrpc":"2.0","id":1,"method":"resourceRead"}`)
		raw = []byte("{}")
	}
	m, _, werr := decodeFrame(frame)
	if werr != nil {
		t.Fatalf("%s: %v", frame, werr)
	}
	p := m.route
	var ch struct {
		Channel *string `json:"channel"`
	}
	var want struct {
		URI         *string `json:"uri"`
		Source      *string `json:"source"`
		Destination *string `json:"destination"`
	}
	chErr, err := json.Unmarshal(raw, &ch), json.Unmarshal(raw, &want)
	if p.badChannel != (chErr != nil) || p.badRoute != (err != nil) {
		t.Fatalf("%s: bad channel %v, bad route %v; json.Unmarshal: %v, %v", raw, p.badChannel, p.badRoute, chErr, err)
	}
	str := func(s *string) string {
		if s == nil {
			return "<nil>"
		}
		return *s
	}
	opt := func(o optString) string {
		if !o.set {
			return "<nil>"
		}
		return o.v
	}
	if chErr == nil && opt(p.channel) != str(ch.Channel) {
		t.Fatalf("%s: channel %s, want %s", raw, opt(p.channel), str(ch.Channel))
	}
	if err != nil {
		return
	}
	for _, f := range []struct {
		got  optString
		want *string
	}{{p.uri, want.URI}, {p.source, want.Source}, {p.destination, want.Destination}} {
		if opt(f.got) != str(f.want) {
			t.Fatalf("%s: decoded %s, want %s", raw, opt(f.got), str(f.want))
		}
	}
}

// TestWebSocketStalledDirectWriteHandsReadingOver has a client send large
// requests without reading: the reading goroutine's direct write stalls,
// reading moves to another goroutine, and every answer still arrives, in
// order, once the client reads; answers are then written directly again.
// It happens twice on one connection: reading moves on from the goroutine
// it moved to.
func TestWebSocketStalledDirectWriteHandsReadingOver(t *testing.T) {
	t.Parallel()
	srv, hs := wsServer(t, Config{})
	c := dialWS(t, hs, "root-token")
	wsCall(t, c, wsInit, 0)
	stalled := func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		for sc := range srv.conns {
			sc.out.mu.Lock()
			m := sc.moved
			sc.out.mu.Unlock()
			if m {
				return true
			}
		}
		return false
	}
	directs := func() uint64 {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		var n uint64
		for sc := range srv.conns {
			sc.out.mu.Lock()
			n += sc.directs
			sc.out.mu.Unlock()
		}
		return n
	}
	const n = 300 // 64 KiB answers: far more than the socket buffers hold
	for round := range 2 {
		sent := make(chan error, 1)
		go func() {
			for i := range n {
				frame := `{"jsonrpc":"2.0","id":` + itoa(i) + `,"method":"resourceRead","params":{"uri":"mem://big"}}`
				if err := c.Write(context.Background(), websocket.MessageText, []byte(frame)); err != nil {
					sent <- err
					return
				}
			}
			sent <- nil
		}()
		waittest.For(t, "reading to move off the stalled writer", stalled)
		for i := range n {
			m := wsRecv(t, c)
			if m.Error != nil || string(m.ID) != itoa(i) {
				t.Fatalf("round %d, answer %d: %s", round, i, m.raw)
			}
		}
		if err := <-sent; err != nil {
			t.Fatal(err)
		}
		wsCall(t, c, wsPing, 0)

		// Once the client reads again, answers are written directly
		// again, not queued for a writer woken for each.
		before := directs()
		for range 5 {
			wsCall(t, c, wsPing, 0)
		}
		if after := directs(); after < before+5 {
			t.Errorf("round %d: %d of 5 answers after the stall were written directly", round, after-before)
		}
	}
}

// TestEncoderResultMatchesTwoPassEncoding checks that a response written in
// one pass is byte for byte what marshalling the result, then the
// response around it, gave.
func TestEncoderResultMatchesTwoPassEncoding(t *testing.T) {
	t.Parallel()
	type resultResponse struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
	}
	twoPass := func(id json.RawMessage, result any) ([]byte, error) {
		var raw json.RawMessage
		if r, ok := result.(json.RawMessage); ok {
			if !json.Valid(r) {
				return nil, errors.New("invalid JSON")
			}
			raw = compact(r)
		} else {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(result); err != nil {
				return nil, err
			}
			raw = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(resultResponse{JSONRPC: jsonrpcVersion, ID: id, Result: raw}); err != nil {
			return nil, err
		}
		return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
	}
	type ptr struct {
		A string `json:"a,omitempty"`
	}
	for _, result := range []any{
		struct{}{}, nil, map[string]any{"b": "<&>\u2028", "a": []int{1}}, json.RawMessage(` { "a" : [ 1 , "x y" ] } `),
		json.RawMessage(`{"a":`), json.RawMessage(nil), json.RawMessage(`"\u003c<"`), &ptr{A: "x"}, (*ptr)(nil),
		"str\xff", 1.5, func() {}, json.RawMessage(`1 2`),
	} {
		for _, id := range []string{`1`, `"a b<"`, `null`, `-1.5e3`} {
			want, wantErr := twoPass(json.RawMessage(id), result)
			e := getEncoder()
			err := e.result(json.RawMessage(id), result)
			got := e.bytes()
			e.free()
			if (err != nil) != (wantErr != nil) || (err == nil && !bytes.Equal(got, want)) {
				t.Errorf("%#v id %s: got %s (%v), want %s (%v)", result, id, got, err, want, wantErr)
			}
		}
	}
}
