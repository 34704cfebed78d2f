package transport

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/agenthost/bots/errcode"
)

func TestDecodeFrame(t *testing.T) {
	for _, tc := range []struct {
		frame    string
		wantCode int    // 0: decodes
		wantID   string // the id answered with, or the message's id
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, 0, `1`},
		{`{"jsonrpc":"2.0","id":"a b","method":"ping","params":{"channel":"ahp-root://"}}`, 0, `"a b"`},
		{`{"jsonrpc":"2.0","method":"unsubscribe","params":{"channel":"x"}}`, 0, ``},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","params":null}`, 0, `1`},
		{` { "jsonrpc" : "2.0" , "id" : 1 , "result" : {} } `, 0, `1`},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, 0, `null`},
		{``, CodeParseError, `null`},
		{`{`, CodeParseError, `null`},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}{}`, CodeParseError, `null`},
		{`[]`, CodeInvalidRequest, `null`},
		{`null`, CodeInvalidRequest, `null`},
		{`{"id":1,"method":"ping"}`, CodeInvalidRequest, `1`},
		{`{"jsonrpc":2,"id":1,"method":"ping"}`, CodeInvalidRequest, `1`},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, CodeInvalidRequest, `null`},
		{`{"jsonrpc":"2.0","id":[1],"method":"ping"}`, CodeInvalidRequest, `null`},
		{`{"jsonrpc":"2.0","id":1,"method":""}`, CodeInvalidRequest, `1`},
		{`{"jsonrpc":"2.0","id":1,"method":["ping"]}`, CodeInvalidRequest, `1`},
		{`{"jsonrpc":"2.0","id":1}`, CodeInvalidRequest, `1`},
		{`{"jsonrpc":"2.0","id":1,"result":1,"error":{}}`, CodeInvalidRequest, `1`},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}`, CodeInvalidParams, `1`},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}`, CodeInvalidParams, `1`},
	} {
		m, id, werr := decodeFrame([]byte(tc.frame))
		switch {
		case tc.wantCode == 0 && werr != nil:
			t.Errorf("%s: error %v", tc.frame, werr)
		case tc.wantCode == 0 && string(m.ID) != tc.wantID:
			t.Errorf("%s: id %s, want %s", tc.frame, m.ID, tc.wantID)
		case tc.wantCode != 0 && (werr == nil || werr.Code != tc.wantCode):
			t.Errorf("%s: error %v, want code %d", tc.frame, werr, tc.wantCode)
		case tc.wantCode != 0 && string(id) != tc.wantID:
			t.Errorf("%s: answered id %s, want %s", tc.frame, id, tc.wantID)
		}
	}
}

func TestErrorForMapsEveryCode(t *testing.T) {
	for _, tc := range []struct {
		method   string
		err      error
		code     int
		message  string
		internal bool
	}{
		{"resourceRead", errcode.New(errcode.Invalid, "bad slug"), CodeInvalidParams, "bad slug", false},
		{"resourceRead", errcode.New(errcode.NotFound, "no bot x"), CodeNotFound, "no bot x", false},
		{"disposeSession", errcode.New(errcode.NotFound, "no session"), CodeSessionNotFound, "no session", false},
		{"resourceRead", errcode.New(errcode.PermissionDenied, "not yours"), CodePermissionDenied, "not yours", false},
		{"resourceWrite", errcode.New(errcode.AlreadyExists, "taken"), CodeAlreadyExists, "taken", false},
		{"createSession", errcode.New(errcode.AlreadyExists, "exists"), CodeSessionAlreadyExists, "exists", false},
		{"resourceWrite", errcode.New(errcode.Conflict, "stale"), CodeConflict, "stale", false},
		{"resourceRead", errcode.New(errcode.Unauthenticated, "sign in"), CodeAuthRequired, "sign in", false},
		{"resourceRead", errcode.New(errcode.Unsupported, "no"), CodeMethodNotFound, "no", false},
		{"resourceRead", errcode.New(errcode.Unavailable, "shutting down"), CodeInternalError, "shutting down", false},
		{"resourceWrite", fmt.Errorf("make: %w", errcode.Wrap(errcode.Unavailable, errors.New("/secret/path: no space"), "the server's disk is full: bot://x was not saved")), CodeInternalError, "the server's disk is full: bot://x was not saved", false},
		{"resourceWrite", errcode.Wrap(errcode.Unavailable, errors.New("/secret/path: busy"), ""), CodeInternalError, unavailableMessageDefault, false},
		{"resourceRead", errcode.New(errcode.Internal, "secret detail"), CodeInternalError, "internal error", true},
		{"resourceRead", errors.New("secret detail"), CodeInternalError, "internal error", true},
		{"resourceRead", fmt.Errorf("wrapped: %w", errcode.New(errcode.NotFound, "deep")), CodeNotFound, "deep", false},
	} {
		e, internal := errorFor(tc.method, tc.err)
		if e.Code != tc.code || e.Message != tc.message || internal != tc.internal {
			t.Errorf("%s %v: got %d %q internal=%v; want %d %q internal=%v", tc.method, tc.err, e.Code, e.Message, internal, tc.code, tc.message, tc.internal)
		}
	}
	e, _ := errorFor("resourceRead", errcode.New(errcode.Unauthenticated, "x"))
	if data, _ := json.Marshal(e.Data); string(data) != `{"resources":[]}` {
		t.Errorf("-32007 data %s, want the required resources list", data)
	}
}

// FuzzDecodeFrame checks that no frame panics the decoder, and that what
// it answers is a well-formed JSON-RPC error with a valid id.
func FuzzDecodeFrame(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"channel":"ahp-root://"}}`,
		`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"c","clientSeq":1,"action":{"type":"x"}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`[{"jsonrpc":"2.0"}]`, `{`, ``, `null`, `"x"`, `{"id":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, id, werr := decodeFrame(data)
		if werr == nil {
			if m == nil || m.JSONRPC != "2.0" {
				t.Fatalf("decoded %q without jsonrpc 2.0", data)
			}
			if m.Method == "" && m.ID == nil {
				t.Fatalf("decoded %q as neither request nor response", data)
			}
			if m.Params != nil && firstByte(m.Params) != '{' {
				t.Fatalf("decoded %q with params %s", data, m.Params)
			}
			return
		}
		switch werr.Code {
		case CodeParseError, CodeInvalidRequest, CodeInvalidParams:
		default:
			t.Fatalf("%q: code %d", data, werr.Code)
		}
		out, err := encode(errorResponse{JSONRPC: jsonrpcVersion, ID: id, Error: werr})
		if err != nil || !json.Valid(out) {
			t.Fatalf("%q: the error response does not encode: %v %s", data, err, out)
		}
	})
}
